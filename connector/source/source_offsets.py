"""The source's offsets, typed: what one micro-batch ends at, as Spark checkpoints it.

Spark asks the source for an *offset* object per micro-batch, stores it in the query's
checkpoint as JSON, and hands it back after a restart. pyq's offset holds more than a
position per partition, because retries and their bookkeeping must survive a restart::

    {"offsets": {"clicks": {"0": 1200, "1": 1187}},      next new offset per partition
     "retries": {"clicks": {"0": [[42, 1]]}},            redeliveries in this batch (offset, attempt)
     "failures": 3,                                      position in the failures topic
     "state": {"clicks": {"0": {"from": 1100,            retry bookkeeping (with a groupId):
                                "failed": [[17, 1, 1732240000000, "bad json"]],
                                "counters": {"delivered": 1200, "retried": 4}}}},
     "from": {"clicks": {"1": 1100}}}                    a new range not beginning at the start
                                                         offset (maxOffsetBehind skip, reset)

:class:`SourceOffsets` is that object; :meth:`SourceOffsets.to_json` writes exactly the
bytes the source has always written (keys in this order, partitions in numeric order,
absent sections omitted), so checkpoints written by earlier versions keep working and an
idle trigger reproduces the previous batch's offsets exactly — Spark compares them as
strings to decide whether there is a new batch.

The retry due times (``failed``' third column) are **wall-clock** milliseconds: they travel
in the checkpoint and are compared after a restart, possibly on another machine, where a
monotonic reading would mean nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from broker_sim.common import TopicPartition

V = TypeVar("V")


def _by_partition(values: Mapping[TopicPartition, V]) -> dict[str, dict[str, V]]:
    """``{tp: v}`` as ``{"topic": {"partition": v}}``, partitions in numeric order."""
    out: dict[str, dict[str, V]] = {}
    for tp in sorted(values):
        out.setdefault(tp.topic, {})[str(tp.partition)] = values[tp]
    return out


def _from_partitions(data: Mapping[str, Mapping[str, Any]]) -> Iterable[tuple[TopicPartition, Any]]:
    for topic, partitions in data.items():
        for partition, value in partitions.items():
            yield TopicPartition(topic, int(partition)), value


class WaitingRetry(NamedTuple):
    """A failed offset waiting for its next delivery: due at ``due_ms`` (wall clock)."""

    offset: int
    failures: int
    due_ms: int
    reason: str


@dataclass(frozen=True)
class PartitionCheckpoint:
    """One partition's retry bookkeeping (see :meth:`PartitionManager.checkpoint`).

    ``planned_from``: where the latest plan's new range began; ``failed``: offsets waiting
    for a retry; ``counters``: the partition's non-zero running totals, by name.
    """

    planned_from: int
    failed: tuple[WaitingRetry, ...] = ()
    counters: Mapping[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.planned_from}
        if self.failed:
            out["failed"] = [list(w) for w in self.failed]
        if self.counters:
            out["counters"] = dict(self.counters)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], default_from: int) -> PartitionCheckpoint:
        return cls(
            planned_from=int(data.get("from", default_from)),
            failed=tuple(WaitingRetry(int(o), int(f), int(due), str(reason))
                         for o, f, due, reason in data.get("failed", [])),
            counters={str(k): int(v) for k, v in data.get("counters", {}).items()},
        )


@dataclass(frozen=True)
class SourceOffsets:
    """Where a micro-batch ends, and what a restarted driver needs to go on from there.

    ``offsets``: the next new offset per partition. ``retries``: redeliveries planned in
    this batch, ``(offset, attempt)``. ``failures``: how far the failures topic has been
    read (None without a groupId). ``state``: per-partition retry bookkeeping (only with a
    groupId). ``moved_from``: partitions whose new range does not begin at the previous
    batch's offset (the JSON's ``from``).
    """

    offsets: Mapping[TopicPartition, int]
    retries: Mapping[TopicPartition, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    failures: int | None = None
    state: Mapping[TopicPartition, PartitionCheckpoint] = field(default_factory=dict)
    moved_from: Mapping[TopicPartition, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"offsets": _by_partition(self.offsets)}
        retries = {tp: [list(r) for r in rs] for tp, rs in self.retries.items() if rs}
        if retries:
            out["retries"] = _by_partition(retries)
        if self.failures is not None:
            out["failures"] = self.failures
        if self.state:
            out["state"] = _by_partition({tp: c.to_json() for tp, c in self.state.items()})
        if self.moved_from:
            out["from"] = _by_partition(self.moved_from)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SourceOffsets:
        offsets = {tp: int(o) for tp, o in _from_partitions(data.get("offsets", {}))}
        failures = data.get("failures")
        return cls(
            offsets=offsets,
            retries={tp: tuple((int(o), int(a)) for o, a in rs)
                     for tp, rs in _from_partitions(data.get("retries", {}))},
            failures=None if failures is None else int(failures),
            state={tp: PartitionCheckpoint.from_json(st, offsets.get(tp, 0))
                   for tp, st in _from_partitions(data.get("state", {}))},
            moved_from={tp: int(o) for tp, o in _from_partitions(data.get("from", {}))},
        )

    def without_batch(self) -> SourceOffsets:
        """The same position with nothing planned in it (no retries, no moved ranges)."""
        return SourceOffsets(self.offsets, failures=self.failures, state=self.state)
