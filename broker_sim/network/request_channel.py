"""The hand-off between network processors and request handler threads.

Processors put parsed :class:`Request`\\ s on one bounded queue (``queued.max.requests``);
when it is full a processor blocks, which stops it reading from its sockets: back
pressure reaches the clients through TCP instead of through unbounded memory. Handlers
take requests off the queue and, when the answer is ready (at once, or later from the
purgatory), call :meth:`RequestChannel.send_response`, which puts the response on the
owning processor's response queue and wakes that processor. Handlers never touch sockets.
"""

from __future__ import annotations

import queue
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol.api import ResponseParts
from ..protocol.header import RequestHeader
from ..protocol.primitives import ExternalBytes

if TYPE_CHECKING:
    from .session import Session


@dataclass
class Request:
    processor_id: int
    connection_id: str
    client_address: str
    header: RequestHeader
    body: Any
    size: int
    received_ns: int = field(default_factory=time.monotonic_ns)
    #: The connection's security state (listener, principal, SASL progress); None only for
    #: requests made up in process (tests).
    session: Session | None = None


@dataclass
class Response:
    """``payload`` is the framed response, or None when the API sends no response
    (acks=0 produce): the processor then only unmutes the connection. A zero-copy
    response (Fetch) is a list of parts in wire order: buffers and
    :class:`~broker_sim.protocol.primitives.ExternalBytes` (segment file ranges the
    processor ``sendfile``\\ s, then releases; :meth:`release` if it never will).
    ``close_connection`` closes it at once; ``close_after_send`` once the payload is out
    (a failed authentication: the client reads the error, then the connection ends)."""

    request: Request
    payload: bytes | bytearray | ResponseParts | None
    close_connection: bool = False
    close_after_send: bool = False

    @property
    def size(self) -> int:
        """Bytes of the framed response (0 for none)."""
        payload = self.payload
        if payload is None:
            return 0
        if isinstance(payload, list):
            return sum(len(part) for part in payload)
        return len(payload)

    def release(self) -> None:
        """Release the file ranges of a response that will not be sent (idempotent)."""
        if isinstance(self.payload, list):
            for part in self.payload:
                if isinstance(part, ExternalBytes):
                    part.release()


class ResponseQueue(Protocol):
    """What the channel needs of a processor (:class:`~.processor.Processor`): its id, which
    each of its requests carries, and a thread-safe way to hand it a response and wake it."""

    processor_id: int

    def enqueue_response(self, response: Response) -> None: ...


class RequestChannel:
    """Thread-safe: any number of processors and handlers use one channel."""

    def __init__(self, queue_size: int) -> None:
        self._requests: queue.Queue[Request | None] = queue.Queue(maxsize=queue_size)
        self._processors: dict[int, ResponseQueue] = {}

    def add_processor(self, processor: ResponseQueue) -> None:
        self._processors[processor.processor_id] = processor

    def send_request(self, request: Request) -> None:
        self._requests.put(request)

    def receive_request(self, timeout: float | None = None) -> Request | None:
        try:
            return self._requests.get(timeout=timeout)
        except queue.Empty:
            return None

    def send_response(self, response: Response) -> None:
        processor = self._processors.get(response.request.processor_id)
        if processor is not None:
            processor.enqueue_response(response)
        else:
            response.release()

    def wake_handlers(self, count: int) -> None:
        """Unblock ``count`` handlers waiting in receive_request (used at shutdown)."""
        for _ in range(count):
            try:
                self._requests.put_nowait(None)
            except queue.Full:
                break

    @property
    def queued(self) -> int:
        return self._requests.qsize()
