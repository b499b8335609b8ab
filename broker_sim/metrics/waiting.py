"""Metrics of the purgatories and the timing wheels under them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from ..purgatory import DelayedOperationPurgatory
from ..timer import SystemTimer


class WaitingCollector(Collector):
    """Sizes of purgatories and timers, read when scraped.

    - ``pyq_purgatory_size{purgatory}``: operations in watcher lists (Kafka's
      ``PurgatorySize``; one watched on k keys counts k times);
    - ``pyq_purgatory_delayed_operations{purgatory}``: operations waiting for their timeout
      (Kafka's ``NumDelayedOperations``);
    - ``pyq_timer_tasks{timer}``: tasks on each timing wheel (purgatories may share one).

    ``purgatories`` and ``timers`` are called at each scrape, so a component created after
    the endpoint started is seen too. Each size takes the owner's lock briefly.
    """

    def __init__(self, purgatories: Callable[[], Iterable[DelayedOperationPurgatory[Any]]],
                 timers: Callable[[], Iterable[SystemTimer]] = lambda: ()) -> None:
        self.purgatories = purgatories
        self.timers = timers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        size = GaugeMetricFamily("pyq_purgatory_size", "Operations watched in a purgatory",
                                 labels=["purgatory"])
        delayed = GaugeMetricFamily("pyq_purgatory_delayed_operations",
                                    "Operations in a purgatory waiting for their timeout",
                                    labels=["purgatory"])
        timers: dict[str, SystemTimer] = {}
        for p in self.purgatories():
            size.add_metric([p.name], p.watched())
            delayed.add_metric([p.name], p.num_delayed())
            timers.setdefault(p.timer.executor_name, p.timer)
        for t in self.timers():
            timers.setdefault(t.executor_name, t)
        yield size
        yield delayed
        tasks = GaugeMetricFamily("pyq_timer_tasks", "Tasks waiting on a timing wheel",
                                  labels=["timer"])
        for name, t in sorted(timers.items()):
            tasks.add_metric([name], t.size)
        yield tasks
