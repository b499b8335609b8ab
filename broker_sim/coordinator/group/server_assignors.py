"""The consumer protocol's server-side assignors (KIP-848): ``uniform`` and ``range``.

Both take each member's subscribed topics, the partitions of every subscribed topic, and
the current target assignment, and return a new target for every member.

* ``uniform`` (the default) spreads all partitions so that, when every member subscribes to
  the same topics, member partition counts differ by at most one; it is sticky: a member
  keeps the partitions it already had as long as that stays within its share, so adding
  or removing a member moves as few partitions as balance needs. With different
  subscriptions it is greedy: each partition goes to the least-loaded member subscribed to
  its topic.
* ``range`` assigns each topic on its own: its subscribers, sorted by member id, get
  consecutive ranges, the first ``partitions % members`` one extra — so members with the
  same subscriptions get the same partition numbers of co-partitioned topics.
"""

from __future__ import annotations

from collections.abc import Mapping

from .consumer_group import Assignment


def uniform(subscriptions: Mapping[str, tuple[str, ...]], partitions: Mapping[str, int],
            current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    members = sorted(subscriptions)
    out: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    if not members:
        return {}
    every = [(t, p) for t in sorted({t for ts in subscriptions.values() for t in ts})
             for p in range(partitions.get(t, 0))]
    homogeneous = len({frozenset(ts) for ts in subscriptions.values()}) == 1
    floor, extra = divmod(len(every), len(members))

    # 1. sticky: keep what each member had, within its share (homogeneous) ...
    taken: set[tuple[str, int]] = set()
    by_previous = sorted(members, key=lambda m: -sum(len(ps) for ps in current.get(m, {}).values()))
    for m in by_previous:
        mine = sorted((t, p) for t, ps in current.get(m, {}).items() for p in ps
                      if t in subscriptions[m] and p < partitions.get(t, 0))
        if homogeneous:
            share = floor + 1 if extra > 0 and len(mine) > floor else floor
            if share > floor:
                extra -= 1
            mine = mine[:share]
        for tp in mine:
            if tp not in taken:
                out[m].add(tp)
                taken.add(tp)

    # 2. ... then every other partition to the least-loaded member subscribed to its topic.
    for tp in every:
        if tp in taken:
            continue
        eligible = [m for m in members if tp[0] in subscriptions[m]]
        if homogeneous:
            # members still under their share first; a member may reach floor+1 only while
            # there are extras left to hand out.
            eligible = [m for m in eligible if len(out[m]) < floor] or \
                [m for m in eligible if len(out[m]) == floor and extra > 0] or eligible
        chosen = min(eligible, key=lambda m: (len(out[m]), m))
        if homogeneous and len(out[chosen]) == floor:
            extra -= 1
        out[chosen].add(tp)
        taken.add(tp)
    return {m: _grouped(tps) for m, tps in out.items()}


def range_(subscriptions: Mapping[str, tuple[str, ...]], partitions: Mapping[str, int],
           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    out: dict[str, set[tuple[str, int]]] = {m: set() for m in subscriptions}
    for topic in sorted({t for ts in subscriptions.values() for t in ts}):
        subscribers = sorted(m for m, ts in subscriptions.items() if topic in ts)
        per, extra = divmod(partitions.get(topic, 0), len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            n = per + (1 if i < extra else 0)
            out[m].update((topic, p) for p in range(start, start + n))
            start += n
    return {m: _grouped(tps) for m, tps in out.items()}


def _grouped(tps: set[tuple[str, int]]) -> Assignment:
    grouped: dict[str, set[int]] = {}
    for t, p in tps:
        grouped.setdefault(t, set()).add(p)
    return {t: frozenset(ps) for t, ps in grouped.items()}


ASSIGNORS = {"uniform": uniform, "range": range_}
