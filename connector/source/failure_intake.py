"""Failure reports in, dead letters out: the driver's side of :mod:`.failures`."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from broker_sim.common import TopicPartition

from .failed_offsets import DeadLetter
from .failures import dead_letter, failures_topic, read_reports
from .options import SourceOptions
from .partition_discovery import PartitionDiscovery
from .partition_manager import PartitionManager

log = logging.getLogger(__name__)


class FailureIntake:
    """Reads the failure reports a pipeline wrote and routes the records given up.

    Pipelines report failed records (with a groupId) to the group's failures topic while a
    batch runs; the driver reads them from the position its offsets carry, hands each to its
    partition's manager (which schedules a retry or gives the record up), and sends what is
    given up to ``deadLetterTopic`` — or, without one, counts and logs it.

    Threading: the driver's thread only.
    """

    def __init__(self, options: SourceOptions, discovery: PartitionDiscovery) -> None:
        self.options = options
        self.discovery = discovery

    def _end(self, default: int) -> int:
        """The failures topic's end offset; ``default`` while the topic does not exist.

        The topic is created by the first report, so a pipeline that never failed has
        none: that is expected, and asked with a metadata lookup, not by an offset lookup
        that would fail (and be retried, and warned about) at every batch."""
        name = failures_topic(self.options.group_id or "")
        if name not in self.discovery.admin.list_topics():
            return default
        topic = TopicPartition(name, 0)
        try:
            _, latest = self.discovery.bounds([topic])
        except Exception:  # deleted meanwhile: nothing to read
            return default
        return latest.get(topic, default)

    def ingest(self, position: int, managers: Mapping[TopicPartition, PartitionManager], now_ms: int,
               letters: list[DeadLetter]) -> int:
        """Hand reports from ``position`` on to the managers; returns the new position."""
        o = self.options
        if not o.group_id:
            return position
        end = self._end(position)
        by_tp: dict[TopicPartition, list[dict]] = {}
        for report in read_reports(o.client(), o.group_id, position, end):
            by_tp.setdefault(TopicPartition(report["topic"], int(report["partition"])), []).append(report)
        for tp, reports in by_tp.items():
            pm = managers.get(tp)
            if pm is None:
                continue
            for report in reports:
                outcome = pm.fail([int(report["offset"])], report.get("reason", ""), now_ms)
                letters.extend(outcome.dead_letters)
        return end

    def unread(self, position: int) -> bool:
        """Are there reports past ``position``?"""
        if not self.options.group_id:
            return False
        return self._end(0) > position

    def dead_letter(self, letters: list[DeadLetter]) -> None:
        if not letters:
            return
        o = self.options
        if o.dead_letter_topic:
            dead_letter(o.client(), o.dead_letter_topic, letters)
        else:
            log.warning("%d record(s) given up (%s) and no deadLetterTopic is set: dropped and "
                        "counted (set the deadLetterTopic option to keep them)",
                        len(letters), letters[0].reason)
