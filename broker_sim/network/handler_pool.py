"""The request-handler thread pool: take a request off the channel, dispatch it.

Each thread loops on :meth:`RequestHandler.run_once`; a failing request is logged by
KafkaApis and never kills a thread. ``None`` on the channel is the shutdown signal.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from .request_channel import Request, RequestChannel


class RequestDispatcher(Protocol):
    """What handler threads call: the broker's KafkaApis, or the controller's ControllerApis."""

    def handle(self, request: Request) -> None: ...

log = logging.getLogger(__name__)


class RequestHandler(threading.Thread):
    def __init__(self, index: int, channel: RequestChannel, apis: RequestDispatcher) -> None:
        super().__init__(name=f"request-handler-{index}", daemon=True)
        self.channel = channel
        self.apis = apis
        self._stopped = threading.Event()

    def run(self) -> None:
        while not self._stopped.is_set():
            try:
                self.run_once(1.0)
            except Exception:
                log.exception("%s: unexpected error", self.name)

    def run_once(self, timeout: float) -> None:
        request = self.channel.receive_request(timeout)
        if request is None:
            return
        self.apis.handle(request)

    def stop(self) -> None:
        self._stopped.set()


class RequestHandlerPool:
    def __init__(self, size: int, channel: RequestChannel, apis: RequestDispatcher) -> None:
        self.channel = channel
        self.handlers = [RequestHandler(i, channel, apis) for i in range(size)]

    def start(self) -> None:
        for h in self.handlers:
            h.start()

    def shutdown(self) -> None:
        for h in self.handlers:
            h.stop()
        self.channel.wake_handlers(len(self.handlers))
        for h in self.handlers:
            h.join(5)
