"""The acceptor: accepts connections on one listener and deals them to processors.

One acceptor per listener; all listeners share the processors, and each connection
carries its :class:`~.listener.Listener` (its security protocol and TLS context).

Runs on its own thread. A new connection is first counted against ConnectionQuotas (one
past ``max.connections.per.ip`` is closed at once, with one log line), then handed to the
next processor in round-robin order; from then on only that processor touches it.
"""

from __future__ import annotations

import dataclasses
import logging
import selectors
import socket

from ..common.shutdownable_thread import ShutdownableThread
from .connection_quotas import ConnectionQuotas, TooManyConnections
from .listener import Listener
from .processor import Processor

log = logging.getLogger(__name__)


class Acceptor(ShutdownableThread):
    """Accepts connections on the listening socket and deals them round-robin to processors.

    Owns the listening socket and its selector (closed by :meth:`on_stopped`); the quotas
    are shared with the processors, which release a slot when a connection closes.
    :meth:`wake` (called by ``stop()`` from another thread) writes to a socket pair in the
    same selector, so stopping does not wait out the select timeout.
    """

    def __init__(self, listener: Listener, processors: list[Processor], quotas: ConnectionQuotas,
                 backlog: int = 128) -> None:
        super().__init__(f"network-acceptor-{listener.name}")
        self.processors = processors
        self.quotas = quotas
        self._sock = socket.create_server((listener.host, listener.port), backlog=backlog,
                                          reuse_port=False)
        self._sock.setblocking(False)
        self.host, self.port = self._sock.getsockname()[:2]
        #: The listener as bound (port 0 replaced by the port the system picked).
        self.listener = dataclasses.replace(listener, port=self.port)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._sock, selectors.EVENT_READ)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._next = 0

    def wake(self) -> None:
        try:
            self._wake_w.send(b"\x00")
        except OSError:
            pass  # a wake-up is already pending, or the acceptor has stopped

    def on_stopped(self) -> None:
        self._selector.close()
        self._sock.close()
        self._wake_r.close()
        self._wake_w.close()

    def run_once(self, timeout: float = 0.5) -> None:
        if not self._selector.select(timeout) or self.stopping.is_set():
            return
        while True:
            try:
                sock, addr = self._sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                log.warning("acceptor: accept failed: %s", e)
                return
            ip, port = addr[0], addr[1]
            try:
                self.quotas.inc(ip)
            except TooManyConnections as e:
                log.warning("refused connection from %s:%d: %s", ip, port, e)
                sock.close()
                continue
            processor = self.processors[self._next % len(self.processors)]
            self._next += 1
            processor.accept(sock, ip, port, self.listener)
