"""Small types shared by the broker and the connector: time, topic-partitions, threads.

This package is the bottom of the import graph: it imports nothing else from pyq, so the
broker (:mod:`broker_sim`) and the client (:mod:`connector.client`) can both build on it
without depending on each other. It is to pyq what Kafka's ``common`` module is to the
broker and its Java clients.
"""

from .clock import SYSTEM_CLOCK, Clock, ManualClock, SystemClock
from .shutdownable_thread import PeriodicThread, ShutdownableThread
from .topic_partition import TopicPartition

__all__ = [
    "SYSTEM_CLOCK",
    "Clock",
    "ManualClock",
    "PeriodicThread",
    "ShutdownableThread",
    "SystemClock",
    "TopicPartition",
]
