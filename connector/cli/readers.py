"""How ``pyq consume`` reads: where ``-o`` starts each partition (:class:`StartOffset`,
:func:`resolve_start`), the rounds without a group (:class:`TopicReader`) and those of a
group consumer with the commits of what was printed (:class:`GroupReader`).

The command (:mod:`connector.cli.consume`) drives them and its module docstring describes
the rounds, the positions and the commits as a user sees them.

>>> start_offset("-10"), str(start_offset("s@1700000000000")), start_offset("stored")
(StartOffset(kind='tail', value=10), 's@1700000000000', StartOffset(kind='stored', value=0))
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from .record_output import Message

if TYPE_CHECKING:
    from connector.client import Admin, Consumer, Fetcher, TopicPartition

GROUP_POLL_MS = 500.0  # the longest a --group poll waits for records (a fetch's long poll)


class StartOffset(NamedTuple):
    """Where ``-o`` starts each partition (kcat's meanings)."""

    kind: str  # "beginning", "end", "stored", "offset" (absolute), "tail" (N from the end),
    #            "timestamp" (first offset at or after ``value`` ms)
    value: int = 0

    def __str__(self) -> str:
        return {"offset": str(self.value), "tail": f"-{self.value}",
                "timestamp": f"s@{self.value}"}.get(self.kind, self.kind)


def start_offset(text: str) -> StartOffset:
    """An option type: ``beginning``, ``end``, ``stored``, ``N``, ``-N`` or ``s@MS``."""
    if text in ("beginning", "end", "stored"):
        return StartOffset(text)
    if re.fullmatch(r"s@\d+", text):
        return StartOffset("timestamp", int(text[2:]))
    if re.fullmatch(r"-?\d+", text):
        value = int(text)
        return StartOffset("tail", -value) if value < 0 else StartOffset("offset", value)
    raise argparse.ArgumentTypeError(
        f"{text!r} is not allowed: must be beginning, end, stored, an offset N, -N (N from "
        "the end) or s@MS (the first record at or after MS milliseconds since the epoch)")


def resolve_start(admin: Admin, topic: str, partitions: list[int],
                  start: StartOffset) -> dict[int, int]:
    """The first offset to read in each partition for ``-o`` (see :class:`StartOffset`)."""
    from connector.client import TopicPartition

    tps = [TopicPartition(topic, p) for p in partitions]
    if start.kind == "timestamp":
        found = admin.list_offsets(dict.fromkeys(tps, start.value))
    else:
        found = {}
    earliest = admin.list_offsets(dict.fromkeys(tps, "earliest"))
    latest = admin.list_offsets(dict.fromkeys(tps, "latest"))
    positions = {}
    for tp in tps:
        low, high = earliest[tp].offset, latest[tp].offset
        if start.kind == "beginning":
            offset = low
        elif start.kind == "end":
            offset = high
        elif start.kind == "offset":
            offset = min(max(start.value, low), high)
        elif start.kind == "tail":
            offset = max(high - start.value, low)
        elif start.kind == "timestamp":
            offset = found[tp].offset if found[tp].offset >= 0 else high
        else:
            raise ValueError(f"no position for -o {start}")
        positions[tp.partition] = offset
    return positions


class TopicReader:
    """Positions in some partitions of a topic, and one read round (see the module doc).

    With ``exit_at_end``, a partition whose position reached the end a round listed is
    done and read no more; :attr:`finished` once every partition is.
    Owned by one thread (its admin client and fetcher are single-threaded).
    """

    def __init__(self, admin: Admin, fetcher: Fetcher, topic: str,
                 positions: Mapping[int, int], leaders: Mapping[int, int] | None = None,
                 exit_at_end: bool = False) -> None:
        self.admin = admin
        self.fetcher = fetcher
        self.topic = topic
        self.positions = dict(positions)
        self.leaders = dict(leaders or {})
        self.exit_at_end = exit_at_end
        self.done: set[int] = set()

    @property
    def finished(self) -> bool:
        return self.exit_at_end and len(self.done) == len(self.positions)

    def poll(self) -> Iterator[Message]:
        """The records between each position and its partition's high watermark."""
        from connector.client import TopicPartition

        reading = [p for p in sorted(self.positions) if p not in self.done]
        if not reading:
            return
        latest = self.admin.list_offsets(
            {TopicPartition(self.topic, p): "latest" for p in reading})
        for partition in reading:
            end = latest[TopicPartition(self.topic, partition)].offset
            if self.positions[partition] < end:
                yield from self._read(partition, self.positions[partition], end)
            if self.exit_at_end and self.positions[partition] >= end:
                self.done.add(partition)

    def _read(self, partition: int, start: int, end: int) -> Iterator[Message]:
        from connector.client import OffsetOutOfRangeError

        try:
            for message in self._messages(partition, start, end):
                self.positions[partition] = message.offset + 1
                yield message
        except OffsetOutOfRangeError as e:
            if not 0 <= e.offset < e.log_start_offset:
                raise
            print(f"pyq consume: warning: {self.topic}-{partition}: offsets {e.offset} to "
                  f"{e.log_start_offset - 1} were deleted; continuing at {e.log_start_offset}",
                  file=sys.stderr)
            self.positions[partition] = e.log_start_offset

    def _messages(self, partition: int, start: int, end: int) -> Iterator[Message]:
        """:meth:`Fetcher.iter_records` with each batch's timestamp type kept; once a
        batch is done the position moves past it, so batches without a printable record
        (transaction markers, aborted data, records the cleaner removed) are stepped over
        and a partition ending in one is still read to its end (``-e``)."""
        from broker_sim.protocol.records import decode_records
        from connector.client.columnar import iter_batch_headers

        leader = self.leaders.get(partition, -1)
        for record_set, aborted in self.fetcher.fetches(self.topic, partition, start, end):
            for pos, header in iter_batch_headers(record_set, self.fetcher.config.check_crcs):
                if header.next_offset <= start or header.base_offset >= end:
                    continue
                if not header.is_control and (aborted is None or aborted.keeps(header)):
                    for r in decode_records(record_set, pos, header):
                        if start <= r.offset < end:
                            yield Message(self.topic, partition, r.offset, r.timestamp,
                                          header.timestamp_type, r.key, r.value, r.headers,
                                          leader)
                self.positions[partition] = max(self.positions[partition],
                                                min(header.next_offset, end))


class GroupReader:
    """Rounds of a group consumer subscribed to ``topics``, and the commits of what was
    printed (see the module doc).

    :meth:`printed` is told of each record once it is out; :meth:`commit` commits the
    offset after the last printed record of each partition that moved since the last
    commit. ``start`` (``-o``) moves each partition the first time it is assigned.
    With ``exit_at_end``, :attr:`finished` once a poll found nothing and every assigned
    partition's position is at its end. Owned by one thread (the consumer's).
    """

    def __init__(self, consumer: Consumer, topics: list[str], poll_ms: float = GROUP_POLL_MS, *,
                 admin: Admin | None = None, start: StartOffset | None = None,
                 leaders: Mapping[TopicPartition, int] | None = None,
                 exit_at_end: bool = False) -> None:
        self.consumer = consumer
        self.topics = list(topics)
        self.poll_ms = poll_ms
        self.admin = admin
        self.start = start if start is not None and start.kind != "stored" else None
        self.leaders = dict(leaders or {})
        self.exit_at_end = exit_at_end
        self.finished = False
        self.started: set[TopicPartition] = set()  # partitions -o has moved
        self.next_offsets: dict[TopicPartition, int] = {}  # offset after the last printed
        self.committed: dict[TopicPartition, int] = {}
        consumer.subscribe(self.topics, on_assign=self._assigned, on_revoke=self._revoked)

    def poll(self) -> Iterator[Message]:
        """The records of one poll; once all of them are printed, they are committed."""
        table = self.consumer.poll(self.poll_ms)
        if not table.num_rows:
            self._check_end()
            return
        import pyarrow as pa

        timestamps = table.column("timestamp").cast(pa.int64()).to_pylist()  # microseconds
        from connector.client import TopicPartition

        columns = [table.column(name).to_pylist()
                   for name in ("topic", "partition", "offset", "key", "value",
                                "timestampType", "headers")]
        for (topic, partition, offset, key, value, ts_type, headers), ts in zip(
                zip(*columns, strict=True), timestamps, strict=True):
            yield Message(topic, partition, offset, ts // 1000, ts_type, key, value,
                          [(h["key"], h["value"]) for h in headers or ()],
                          self.leaders.get(TopicPartition(topic, partition), -1))
        self.commit()

    def _check_end(self) -> None:
        assigned = self.consumer.assignment()
        if not self.exit_at_end or not assigned or self.admin is None:
            return
        latest = self.admin.list_offsets(dict.fromkeys(assigned, "latest"))
        self.finished = all(self.consumer.position(tp) >= latest[tp].offset for tp in assigned)

    def printed(self, record: Message) -> None:
        from connector.client import TopicPartition

        self.next_offsets[TopicPartition(record.topic, record.partition)] = record.offset + 1

    def commit(self) -> None:
        """Commit what was printed and not yet committed (CommitFailedError: the group
        rebalanced and the partitions may have moved; a warning, and consuming goes on)."""
        from connector.client import CommitFailedError

        pending = {tp: o for tp, o in self.next_offsets.items() if self.committed.get(tp) != o}
        if not pending:
            return
        try:
            self.consumer.commit(pending)
        except CommitFailedError as e:
            shown = ", ".join(f"{tp.topic}-{tp.partition}@{o}" for tp, o in sorted(pending.items()))
            print(f"pyq consume: warning: could not commit offsets {shown}: {e}; the group "
                  "rebalanced, so another member may print these records again",
                  file=sys.stderr)
        else:
            self.committed.update(pending)

    def _assigned(self, partitions: list[TopicPartition]) -> None:
        """-o moves each partition the first time this process is given it (kcat -G moves
        them at every assignment; a rebalance would then re-read)."""
        fresh = [tp for tp in partitions if tp not in self.started]
        if self.start is None or self.admin is None or not fresh:
            return
        from connector.client import TopicPartition

        for topic in sorted({tp.topic for tp in fresh}):
            mine = [tp.partition for tp in fresh if tp.topic == topic]
            for partition, offset in resolve_start(self.admin, topic, mine, self.start).items():
                self.consumer.seek(TopicPartition(topic, partition), offset)
                self.started.add(TopicPartition(topic, partition))

    def _revoked(self, partitions: list[TopicPartition]) -> None:
        """The group takes the partitions back: commit what was printed of them first."""
        self.commit()
        for tp in partitions:
            self.next_offsets.pop(tp, None)
            self.committed.pop(tp, None)
