"""Planning one micro-batch across partitions: share the read limit, split into input partitions.

**Sharing ``maxOffsetsPerTrigger``.** As in Spark's Kafka source, each partition gets a share
of the limit in proportion to its lag (``lag / total_lag * limit``). pyq rounds in integers
so that the shares never add up to more than the limit and every lagging partition moves
when the limit allows it: each lagging partition first gets one offset, the rest of the limit
is shared in proportion to the remaining lag (largest remainders get the leftover units).
With fewer units than lagging partitions, the most-lagging partitions get one each.

    lags {a: 100, b: 300}, limit 100      ->  {a: 25, b: 75}
    lags {a: 1, b: 1_000_000}, limit 10   ->  {a: 1, b: 9}      (a is not starved)
    lags {a: 5, b: 7, c: 9}, limit 2      ->  {a: 0, b: 1, c: 1}

**Splitting for ``minPartitions``.** When a batch has fewer ranges than ``minPartitions``,
each range is cut into ``ceil(size / total * minPartitions)`` nearly equal pieces (Spark's
``KafkaOffsetRangeCalculator`` does the same), so there are at least ``minPartitions`` input
partitions unless there are fewer offsets than that. The split depends only on the ranges,
so the same (start, end) always gives the same input partitions.

**Packing small ranges.** Every input partition is a Spark task, with a fixed cost (tens of
milliseconds in a Python data source) however few records it reads. Ranges smaller than
``minRecordsPerPartition`` are packed together — only with ranges whose partitions have the
same preferred leader (first replica), so that a task fetches from one broker, with one
Fetch request for all its ranges (:mod:`connector.source.read`) — in order, until a pack
holds that many records. Larger ranges stay alone. The packing depends only on
the ranges and the replica assignment, so a replayed (start, end) is packed the same way.

>>> [[(r.partition, r.size) for r in pack] for pack in pack_ranges(
...     [OffsetRange("t", p, 0, n) for p, n in enumerate([30, 30, 500, 30, 30])],
...     target=50, group_of=lambda r: r.partition % 2)]
[[(0, 30), (4, 30)], [(1, 30), (3, 30)], [(2, 500)]]

>>> split_budget({"a": 100, "b": 300}, 100)
{'a': 25, 'b': 75}
>>> [(r.start, r.end) for r in split_ranges([OffsetRange("t", 0, 0, 10)], min_partitions=3)]
[(0, 4), (4, 7), (7, 10)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .offset_range import OffsetRange, TopicPartition
from .partition_manager import PartitionManager
from .partition_plan import PartitionPlan


class _Ordered(Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=_Ordered)


def split_budget(lags: Mapping[K, int], limit: int | None) -> dict[K, int]:
    """How many offsets each key may take this batch (see the module docstring).

    Keys must be sortable: ties are broken by key order, so the result is deterministic.
    Each share is at most the key's lag; the shares add up to ``min(limit, total lag)``.
    """
    budget = {key: 0 for key in lags}
    lagging = sorted(key for key, lag in lags.items() if lag > 0)
    total = sum(lags[key] for key in lagging)
    if limit is None or total <= limit:
        budget.update({key: lags[key] for key in lagging})
        return budget
    if limit <= 0:
        return budget
    if limit < len(lagging):
        for key in sorted(lagging, key=lambda k: -lags[k])[:limit]:  # stable: key order on ties
            budget[key] = 1
        return budget
    rest = limit - len(lagging)
    capacity = total - len(lagging)  # > rest, since limit < total
    remainders: list[tuple[int, K]] = []
    for key in lagging:
        share, remainder = divmod(rest * (lags[key] - 1), capacity)
        budget[key] = 1 + share
        remainders.append((remainder, key))
    leftover = limit - sum(budget.values())
    # The leftover is the sum of the fractional parts, so only keys with a remainder get one.
    for _, key in sorted(remainders, key=lambda rk: -rk[0])[:leftover]:
        budget[key] += 1
    return budget


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Non-empty ranges, cut so there are at least ``min_partitions`` of them if possible."""
    ranges = [r for r in ranges if r.size]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    pieces: list[OffsetRange] = []
    for r in ranges:
        parts = max(1, -(-r.size * min_partitions // total))  # ceil without floats
        pieces.extend(r.split(parts))
    return pieces


R = TypeVar("R", bound="_Sized")


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


def pack_ranges(ranges: Iterable[R], target: int, group_of: Any) -> list[list[R]]:
    """Ranges packed into input partitions (see the module docstring); ``group_of(range)``
    names the broker a range is read from. ``target`` 0: one range per partition."""
    ranges = list(ranges)
    if target <= 0:
        return [[r] for r in ranges]
    packs: list[list[R]] = []
    open_pack: dict[Any, list[R]] = {}
    for r in ranges:
        if r.size >= target:
            packs.append([r])
            continue
        group = group_of(r)
        pack = open_pack.get(group)
        if pack is None:
            pack = open_pack[group] = []
            packs.append(pack)
        pack.append(r)
        if sum(x.size for x in pack) >= target:
            del open_pack[group]
    return packs


@dataclass(frozen=True)
class BatchPlan:
    """One micro-batch: each partition's plan, and the ranges to read as input partitions."""

    plans: dict[TopicPartition, PartitionPlan]
    input_ranges: tuple[OffsetRange, ...]

    @property
    def size(self) -> int:
        return sum(plan.size for plan in self.plans.values())


def plan_batch(managers: Mapping[TopicPartition, PartitionManager],
               latest_offsets: Mapping[TopicPartition, int],
               max_offsets_per_trigger: int | None,
               min_partitions: int | None,
               now_ms: int) -> BatchPlan:
    """Plan the next micro-batch over every partition in ``managers``.

    ``latest_offsets`` holds each partition's log end (a partition missing from it is planned
    with no new data, only due retries). Each manager's plan is pending until acknowledged.
    """
    if max_offsets_per_trigger is not None and max_offsets_per_trigger < 0:
        raise ValueError(f"maxOffsetsPerTrigger must be >= 0, got {max_offsets_per_trigger}")
    keys = sorted(managers)
    latest = {key: latest_offsets.get(key, managers[key].emitted_to) for key in keys}
    lags = {key: managers[key].lag(latest[key], now_ms) for key in keys}
    budget = split_budget(lags, max_offsets_per_trigger)
    plans = {key: managers[key].plan(latest[key], budget[key], now_ms) for key in keys}
    ranges = [r for key in keys for r in plans[key].ranges()]
    return BatchPlan(plans, tuple(split_ranges(ranges, min_partitions)))
