"""The request-handler thread pool: take a request off the channel, dispatch it.

Each thread loops on :meth:`RequestHandler.run_once`; a failing request is logged by
KafkaApis and never kills a thread. ``None`` on the channel is the shutdown signal.
"""

from __future__ import annotations

import logging
from typing import Protocol

from ..common.shutdownable_thread import ShutdownableThread
from .request_channel import Request, RequestChannel


class RequestDispatcher(Protocol):
    """What handler threads call: the broker's KafkaApis, or the controller's ControllerApis."""

    def handle(self, request: Request) -> None: ...

log = logging.getLogger(__name__)


class RequestHandler(ShutdownableThread):
    """Takes requests off the shared channel and dispatches them, one at a time."""

    def __init__(self, index: int, channel: RequestChannel, apis: RequestDispatcher) -> None:
        super().__init__(f"request-handler-{index}")
        self.channel = channel
        self.apis = apis

    def run_once(self, timeout: float = 1.0) -> None:
        request = self.channel.receive_request(timeout)
        if request is None:
            return
        self.apis.handle(request)


class RequestHandlerPool:
    def __init__(self, size: int, channel: RequestChannel, apis: RequestDispatcher) -> None:
        self.channel = channel
        self.handlers = [RequestHandler(i, channel, apis) for i in range(size)]

    def start(self) -> None:
        for h in self.handlers:
            h.start()

    def shutdown(self) -> None:
        for h in self.handlers:
            h.request_stop()
        self.channel.wake_handlers(len(self.handlers))
        for h in self.handlers:
            h.stop()
