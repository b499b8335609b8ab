"""When a failed produce may be tried again: one rule for the producer and the sink.

A write may be retried while the error says so (``retriable``: a leader moved, replicas
fell behind, a connection dropped) and ``delivery.timeout.ms`` has not passed since the
write was first attempted. Both the producer's :class:`~connector.client.sender.Sender`
and the sink's :class:`~connector.sink.batch_sender.BatchSender` ask these two functions,
so a record handed to either gives up at the same moment for the same reasons.
"""

from __future__ import annotations

from broker_sim.protocol.errors import is_retriable


def delivery_expired(first_attempt_ms: float, delivery_timeout_ms: float, now_ms: float) -> bool:
    """True once ``delivery_timeout_ms`` has passed since ``first_attempt_ms`` (monotonic)."""
    return now_ms - first_attempt_ms >= delivery_timeout_ms


def may_retry(error: BaseException, first_attempt_ms: float, delivery_timeout_ms: float,
              now_ms: float) -> bool:
    """A retriable error, and time left before the delivery timeout."""
    return is_retriable(error) and not delivery_expired(
        first_attempt_ms, delivery_timeout_ms, now_ms)
