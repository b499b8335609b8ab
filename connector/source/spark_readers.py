"""The Spark side of the source: batch and streaming readers over :class:`SourceDriver`.

Driver-side methods (planning) delegate to :class:`~connector.source.driver.SourceDriver`;
``read()`` runs on executors and only uses the picklable :class:`PyqPartition` it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from .driver import SourceDriver, offsets_json, parse_offsets
from .options import SourceOptions
from .read import InputRange, read_ranges

log = logging.getLogger(__name__)


@dataclass
class PyqPartition(InputPartition):
    """One Spark task's share of a micro-batch: one range, or several small ones packed
    together (picklable; read on an executor)."""

    ranges: tuple[InputRange, ...]


def _read(partition: InputPartition) -> Iterator[Any]:
    if not isinstance(partition, PyqPartition):
        return  # PySpark reads one InputPartition(None) when there are none: nothing to read
    yield from read_ranges(partition.ranges)


def _ending_option(options: SourceOptions) -> str:
    if options.ending_timestamp is not None:
        return f"endingTimestamp {options.ending_timestamp}"
    if options.ending_by_timestamp is not None:
        return "endingOffsetsByTimestamp"
    return "endingOffsets"


class PyqBatchReader(DataSourceReader):
    """``spark.read.format("pyq")``: offsets resolved once, when the DataFrame is planned."""

    def __init__(self, options: SourceOptions) -> None:
        driver = SourceDriver(options)
        try:
            start = driver.initial_offsets()
            end = driver.discovery.ending_offsets(sorted(start))
            for tp in start:
                if end[tp] < start[tp]:
                    raise ValueError(f"the end of {tp.topic}-{tp.partition} ({end[tp]}, from "
                                     f"{_ending_option(options)}) is before its start ({start[tp]})")
            self.packs = driver.input_partitions(offsets_json(start), offsets_json(end))
        finally:
            driver.close()

    def partitions(self) -> list[InputPartition]:
        return [PyqPartition(p) for p in self.packs]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)


class PyqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("pyq")``: Storm-style planning, Arrow reads."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._driver: SourceDriver | None = None

    def __getstate__(self) -> dict:
        # Spark pickles the reader with read() for the executors; the driver (sockets,
        # locks, planning state) stays in the planning process.
        return {"options": self.options, "_driver": None}

    @property
    def driver(self) -> SourceDriver:
        if self._driver is None:
            self._driver = SourceDriver(self.options)
        return self._driver

    def initialOffset(self) -> dict:
        return offsets_json(self.driver.initial_offsets(), 0 if self.options.group_id else None)

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.options
        if o.min_offsets_per_trigger is not None:
            return ReadMinRows(o.min_offsets_per_trigger)
        if o.max_offsets_per_trigger is not None:
            return ReadMaxRows(o.max_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        o = self.options
        max_rows = min_rows = None
        if isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif isinstance(limit, ReadMinRows):
            min_rows = limit.min_rows
            max_rows = o.max_offsets_per_trigger
        return self.driver.plan(start, max_rows, min_rows)

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self.driver.topic_partitions()
        _, latest = self.driver.bounds(tps)
        self.driver.available_now_target = latest
        log.info("Trigger.AvailableNow: reading up to %s", {f"{t.topic}-{t.partition}": o for t, o in latest.items()})

    def reportLatestOffset(self) -> dict | None:
        latest = self.driver.latest
        return offsets_json(latest) if latest else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        if parse_offsets(start) == parse_offsets(end) and not end.get("retries"):
            return []
        return [PyqPartition(p) for p in self.driver.input_partitions(start, end)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return _read(partition)

    def commit(self, end: dict) -> None:
        self.driver.commit(end)

    def stop(self) -> None:
        if self._driver is not None:
            self._driver.close()
