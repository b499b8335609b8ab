"""What ``Producer.send()`` returns: a future per record, one shared result per batch.

A batch of N records is acknowledged by one produce response, so the outcome is stored
once, in the batch's :class:`ProduceRequestResult`; each record's :class:`RecordFuture`
holds only a reference to it and the record's position in the batch, and computes its
:class:`RecordMetadata` on demand::

    offset    = base_offset + relative_offset          (-1 when acks=0: no offsets known)
    timestamp = log_append_time if the topic uses LogAppendTime else the record's timestamp

This keeps ``send()`` cheap (no lock, event or condition per record) and makes completing
a batch O(1) plus one call per record that registered a callback.

Threading: the sender thread completes a result exactly once (:meth:`done`); any thread
may wait on it. Callbacks run on the thread that completes it (the sender thread), or at
once on the registering thread if it is already complete — keep them short, as in Kafka.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

from .errors import KafkaTimeoutError

log = logging.getLogger(__name__)

SendCallback = Callable[["RecordMetadata | None", "BaseException | None"], None]


class RecordMetadata(NamedTuple):
    topic: str
    partition: int
    offset: int
    timestamp: int


class ProduceRequestResult:
    """The outcome of one batch, shared by its records' futures (module docstring)."""

    __slots__ = ("topic", "partition", "base_offset", "log_append_time", "error", "_event",
                 "_lock", "_callbacks")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.base_offset = -1
        self.log_append_time = -1
        self.error: BaseException | None = None
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] | None = []

    @property
    def is_done(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        return self._event.wait(timeout_s)

    def done(self, base_offset: int, log_append_time: int, error: BaseException | None) -> None:
        with self._lock:
            if self._callbacks is None:
                raise RuntimeError("ProduceRequestResult completed twice")
            self.base_offset = base_offset
            self.log_append_time = log_append_time
            self.error = error
            callbacks, self._callbacks = self._callbacks, None
            self._event.set()
        for cb in callbacks:
            try:
                cb()
            except Exception:
                log.exception("producer callback %r failed", cb)

    def add_callback(self, cb: Callable[[], None]) -> None:
        with self._lock:
            if self._callbacks is not None:
                self._callbacks.append(cb)
                return
        cb()


class RecordFuture:
    """The future of one sent record; resolves to :class:`RecordMetadata`.

    Mirrors :class:`concurrent.futures.Future` (``result``, ``exception``, ``done``,
    ``add_done_callback``); ``get`` is an alias of ``result`` as in kafka-python.
    """

    __slots__ = ("_result", "relative_offset", "timestamp")

    def __init__(self, result: ProduceRequestResult, relative_offset: int, timestamp: int) -> None:
        self._result = result
        self.relative_offset = relative_offset
        self.timestamp = timestamp

    def done(self) -> bool:
        return self._result.is_done

    def _wait(self, timeout: float | None) -> ProduceRequestResult:
        r = self._result
        if not r.wait(timeout):
            raise KafkaTimeoutError(f"record to {r.topic}-{r.partition} not acknowledged "
                                    f"within {timeout} s")
        return r

    def result(self, timeout: float | None = None) -> RecordMetadata:
        r = self._wait(timeout)
        if r.error is not None:
            raise r.error
        return self._metadata(r)

    get = result

    def exception(self, timeout: float | None = None) -> BaseException | None:
        return self._wait(timeout).error

    def metadata(self) -> RecordMetadata | None:
        """The metadata of a completed, successful send (None otherwise)."""
        r = self._result
        return self._metadata(r) if r.is_done and r.error is None else None

    def _metadata(self, r: ProduceRequestResult) -> RecordMetadata:
        offset = r.base_offset + self.relative_offset if r.base_offset >= 0 else -1
        ts = r.log_append_time if r.log_append_time >= 0 else self.timestamp
        return RecordMetadata(r.topic, r.partition, offset, ts)

    def add_done_callback(self, fn: Callable[[RecordFuture], Any]) -> None:
        self._result.add_callback(lambda: fn(self))

    def add_send_callback(self, fn: SendCallback) -> None:
        """``fn(metadata, None)`` on success, ``fn(None, error)`` on failure (Kafka's style)."""
        def call() -> None:
            r = self._result
            if r.error is None:
                fn(self._metadata(r), None)
            else:
                fn(None, r.error)
        self._result.add_callback(call)
