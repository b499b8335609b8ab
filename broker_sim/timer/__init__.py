"""Hierarchical timing wheels for the broker's delayed operations (after Kafka's
``kafka.utils.timer``): O(1) add and cancel, a delay queue of buckets so an idle timer
sleeps, and a reaper-driven :class:`SystemTimer` that runs due tasks on an executor.
"""

from ..common.clock import Clock, ManualClock, SystemClock
from .delay_queue import DelayQueue
from .reaper import TimerReaper
from .system_timer import SystemTimer
from .task_counter import TaskCounter
from .timer_task import TimerTask
from .timer_task_list import TimerTaskEntry, TimerTaskList
from .timing_wheel import TimingWheel

__all__ = [
    "Clock",
    "DelayQueue",
    "ManualClock",
    "SystemClock",
    "SystemTimer",
    "TaskCounter",
    "TimerReaper",
    "TimerTask",
    "TimerTaskEntry",
    "TimerTaskList",
    "TimingWheel",
]
