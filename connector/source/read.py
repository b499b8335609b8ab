"""Executor side: read one planned input partition into Arrow record batches.

An :class:`InputRange` names a topic-partition, a new-data range ``[start, end)`` and
single offsets to deliver again (retries, each with its attempt number). ``read()`` runs
on an executor: it fetches from the partition's leader with our client's columnar path
(no Python object per record) and yields ``pyarrow.RecordBatch``es matching the Spark
schema exactly. The same ``InputRange`` always yields the same rows, so a re-executed task
or a replayed micro-batch reads exactly what the first attempt read.

Out of range while reading (retention deleted part of the range after it was planned):
with ``failOnDataLoss`` the task fails with a message naming the topic, the partition and
the lost offsets; without it, the rows still in the log are returned and the loss logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InputRange:
    bootstrap_servers: str
    topic: str
    partition: int
    start: int
    end: int
    retries: tuple[tuple[int, int], ...] = ()  # (offset, attempt)
    include_headers: bool = False
    include_attempt: bool = False
    fail_on_data_loss: bool = True
    client_options: dict[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return max(0, self.end - self.start) + len(self.retries)


class DataLossDuringRead(RuntimeError):
    pass


def _with_attempt(batch: Any, attempt: int) -> Any:
    import pyarrow as pa

    column = pa.array([attempt] * batch.num_rows, type=pa.int32())
    return pa.RecordBatch.from_arrays(batch.columns + [column],
                                      schema=batch.schema.append(pa.field("attempt", pa.int32())))


def _runs(retries: tuple[tuple[int, int], ...]) -> list[tuple[int, int, int]]:
    """Consecutive offsets with the same attempt -> (start, end, attempt) runs."""
    runs: list[tuple[int, int, int]] = []
    for offset, attempt in sorted(retries):
        if runs and runs[-1][1] == offset and runs[-1][2] == attempt:
            runs[-1] = (runs[-1][0], offset + 1, attempt)
        else:
            runs.append((offset, offset + 1, attempt))
    return runs


def read_range(r: InputRange) -> Iterator[Any]:
    from connector.client import Fetcher, OffsetOutOfRangeError

    fetcher = Fetcher({"bootstrap.servers": r.bootstrap_servers})
    try:
        pieces = [(o0, o1, a) for o0, o1, a in _runs(r.retries)]
        if r.end > r.start:
            pieces.append((r.start, r.end, 0))
        for start, end, attempt in pieces:
            try:
                batches = list(fetcher.iter_arrow(r.topic, r.partition, start, end,
                                                  include_headers=r.include_headers))
            except OffsetOutOfRangeError as e:
                log_start, log_end = e.log_start_offset, e.log_end_offset
                lost_end = min(end, log_start) if log_start > start else end
                message = (f"{r.topic}-{r.partition}: offsets [{start}, {lost_end}) are no longer "
                           f"available (log start {log_start}, log end {log_end})")
                if attempt:  # a retried record that is gone: nothing to deliver again
                    log.warning("%s; the retry is dropped", message)
                    continue
                if r.fail_on_data_loss or log_start < 0:
                    raise DataLossDuringRead(message + "; set failOnDataLoss=false to continue") from e
                log.warning("%s; continuing from %d (failOnDataLoss=false)", message, log_start)
                if log_start >= end:
                    continue
                batches = list(fetcher.iter_arrow(r.topic, r.partition, max(start, log_start), end,
                                                  include_headers=r.include_headers))
            for batch in batches:
                yield _with_attempt(batch, attempt) if r.include_attempt else batch
    finally:
        fetcher.close()
