"""Delayed operations and the purgatory that holds them until their condition holds or
they time out (after Kafka's ``DelayedOperation`` and ``DelayedOperationPurgatory``)."""

from .delayed_operation import DelayedOperation, OperationLock
from .purgatory import DelayedOperationPurgatory
from .watchers import Watchers

__all__ = [
    "DelayedOperation",
    "DelayedOperationPurgatory",
    "OperationLock",
    "Watchers",
]
