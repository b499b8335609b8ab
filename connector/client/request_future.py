"""The outcome of one request to a broker, completed by the network client's I/O thread.

A :class:`RequestFuture` is completed exactly once, either with the decoded response body
(:meth:`success`) or with an exception (:meth:`failure`); callbacks registered before or
after completion run exactly once, in registration order::

    >>> f = RequestFuture()
    >>> seen = []
    >>> f.add_callback(seen.append)
    >>> f.success("body")
    >>> f.add_callback(seen.append)
    >>> seen, f.succeeded, f.value
    (['body', 'body'], True, 'body')

Threading: not thread-safe, on purpose. A future belongs to the thread that owns the
:class:`~connector.client.network_client.NetworkClient` which completes it (the sender
thread of a producer; the caller's thread for the fetcher and admin), so neither locks
nor events are needed. Code on other threads waits on higher-level objects (a producer's
record futures) instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class RequestFuture:
    __slots__ = ("is_done", "value", "exception", "_callbacks", "_errbacks")

    def __init__(self) -> None:
        self.is_done = False
        self.value: Any = None
        self.exception: BaseException | None = None
        self._callbacks: list[Callable[[Any], None]] = []
        self._errbacks: list[Callable[[BaseException], None]] = []

    @property
    def succeeded(self) -> bool:
        return self.is_done and self.exception is None

    @property
    def failed(self) -> bool:
        return self.is_done and self.exception is not None

    def success(self, value: Any) -> None:
        if self.is_done:
            raise RuntimeError("RequestFuture completed twice")
        self.is_done = True
        self.value = value
        for cb in self._callbacks:
            self._call(cb, value)

    def failure(self, exception: BaseException) -> None:
        if self.is_done:
            raise RuntimeError("RequestFuture completed twice")
        self.is_done = True
        self.exception = exception
        for eb in self._errbacks:
            self._call(eb, exception)

    def add_callback(self, fn: Callable[[Any], None]) -> None:
        if self.is_done:
            if self.exception is None:
                self._call(fn, self.value)
        else:
            self._callbacks.append(fn)

    def add_errback(self, fn: Callable[[BaseException], None]) -> None:
        if self.is_done:
            if self.exception is not None:
                self._call(fn, self.exception)
        else:
            self._errbacks.append(fn)

    @staticmethod
    def _call(fn: Callable[[Any], None], arg: Any) -> None:
        # A failing callback must not stop the others nor the I/O loop that runs it.
        try:
            fn(arg)
        except Exception:
            log.exception("request callback %r failed", fn)
