"""Errors the client raises on its own, beside the Kafka errors a broker answers with.

Two families, as in :mod:`broker_sim.protocol.errors` (one hierarchy shared by broker and
client):

* **Remote**: a response carried a Kafka error code. The client raises the shared class
  for that code (``error_for_code(code)``), e.g. ``NotLeaderOrFollower``; these live in
  :mod:`broker_sim.protocol.errors` and are re-exported by :mod:`connector.client`.
* **Local** (this module, all :class:`ClientError`): something went wrong on this side of
  the wire — a timeout while waiting for memory or metadata, a dropped connection, a bad
  configuration, an operation on a closed producer.

Both families carry ``retriable`` (trying the same thing again may succeed) and
``invalid_metadata`` (refresh metadata before retrying), declared on
:class:`~broker_sim.protocol.errors.PyqError`, so the sender and fetcher decide with one
predicate, :func:`~broker_sim.protocol.errors.is_retriable`, whatever the error's origin:

>>> is_retriable(DisconnectError("gone")), is_retriable(ConfigError("x"))
(True, False)

:class:`ConfigError` (a refused option) is the shared class of
:mod:`broker_sim.protocol.errors`, re-exported here: the broker's and the client's options
fail with the same class.

:class:`OffsetOutOfRangeError` is the one remote error that is subclassed here: the
fetcher attaches what a caller needs to recover (the partition's current log start and
end offsets) to Kafka's OFFSET_OUT_OF_RANGE (code 1).
"""

from __future__ import annotations

from broker_sim.protocol.errors import ConfigError as ConfigError  # shared with the broker
from broker_sim.protocol.errors import OffsetOutOfRange, PyqError
from broker_sim.protocol.errors import is_retriable as is_retriable


class ClientError(PyqError):
    """An error detected by the client itself (not an error code from a broker)."""


class KafkaTimeoutError(ClientError):
    """A client-side wait ran out: metadata, buffer memory, flush, or delivery timeout."""

    retriable = True


class BufferExhaustedError(KafkaTimeoutError):
    """``buffer.memory`` stayed exhausted for ``max.block.ms``."""


class RequestTimeoutError(ClientError):
    """No response within ``request.timeout.ms``; the connection was closed."""

    retriable = True
    invalid_metadata = True


class DisconnectError(ClientError):
    """The connection to a broker failed or closed with requests in flight."""

    retriable = True
    invalid_metadata = True


class NodeNotReadyError(ClientError):
    """A request was sent to a broker whose connection is not (yet) usable."""

    retriable = True


class AuthenticationError(ClientError):
    """The TLS handshake or SASL authentication with a broker failed (wrong password, an
    unknown user, an untrusted certificate, a TLS client on a plaintext port or the other
    way round). Not retriable: the same settings would fail the same way."""


class IncompatibleBrokerError(ClientError):
    """The broker implements no version of an API this client needs."""


class RecordTooLargeError(ClientError):
    """A record is larger than ``max.request.size`` or ``buffer.memory``."""


class ProducerClosedError(ClientError):
    """``send()`` after ``close()``, or a batch aborted because the producer closed."""


class OffsetOutOfRangeError(OffsetOutOfRange):
    """OFFSET_OUT_OF_RANGE for one partition, with the partition's current bounds.

    ``log_start_offset`` is the first offset still in the log (retention moves it up);
    ``log_end_offset`` is the offset the next record will get (consumers read below the
    high watermark, which is what is reported here). Either is ``-1`` if the broker could
    not tell. A requested ``offset`` below ``log_start_offset`` means records were deleted;
    above ``log_end_offset`` means the log was truncated or the offset never existed.
    """

    def __init__(self, topic: str, partition: int, offset: int, log_start_offset: int,
                 log_end_offset: int) -> None:
        where = ("below the log start" if 0 <= offset < log_start_offset
                 else "above the log end" if log_end_offset >= 0 and offset > log_end_offset
                 else "out of range")
        super().__init__(
            f"offset {offset} of {topic}-{partition} is {where} "
            f"(log start {log_start_offset}, log end {log_end_offset})")
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset
