"""Where the registry's records live, and reading them to the end before answering.

:class:`SchemaStore` couples a :class:`RecordLog` (the ``_schemas`` topic over the wire,
:class:`~.kafka_log.KafkaRecordLog`, or :class:`MemoryLog` for a registry that needs no
broker) with the :class:`~.state.RegistryState` those records build:

- :meth:`SchemaStore.sync` reads from the state's position to the log's end (the
  partition's high watermark at the time of the read) and applies every record. Every
  request the HTTP API answers syncs first, so a write that returned on one broker is
  seen by the next request on any other broker (read your writes, with no writer
  election).
- :meth:`SchemaStore.write` appends one record (acks=all), then syncs until the state has
  applied it and returns its outcome (see :mod:`.state`).

Threading: any thread may call :meth:`sync` and :meth:`write`; applying is serialised by
``_sync_lock`` (one reader of the log at a time; the others wait and find the state
current). :attr:`write_lock` is taken by the registry around check-then-write sequences so
that writers of one broker never race each other (writers on different brokers are kept
apart by the records' ``expect`` guard).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

from .errors import RegistryError, timeout_error
from .state import RegistryState

#: (offset, key, value) of one record.
Entry = tuple[int, bytes | None, bytes | None]


class RecordLog(Protocol):
    """An ordered, durable record log (one partition)."""

    def append(self, key: bytes, value: bytes | None) -> int:
        """Append one record, acknowledged by every in-sync replica; its offset."""
        ...

    def read(self, start: int) -> tuple[list[Entry], int]:
        """Records from offset ``start`` on (possibly not all of them) and the end offset
        (high watermark) at the time of the read."""
        ...

    def close(self) -> None:
        ...


class MemoryLog:
    """A :class:`RecordLog` in memory: a registry that keeps nothing across restarts (unit
    tests of the API, a registry without a broker). Thread-safe."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self._lock = threading.Lock()

    def append(self, key: bytes, value: bytes | None) -> int:
        with self._lock:
            offset = len(self._entries)
            self._entries.append((offset, key, value))
            return offset

    def read(self, start: int) -> tuple[list[Entry], int]:
        with self._lock:
            return self._entries[start:], len(self._entries)

    def close(self) -> None:
        pass


class SchemaStore:
    """See the module docstring."""

    def __init__(self, log: RecordLog, state: RegistryState | None = None,
                 write_timeout_s: float = 30.0) -> None:
        self.log = log
        self.state = state or RegistryState()
        self.write_timeout_s = write_timeout_s
        self.write_lock = threading.RLock()
        self._sync_lock = threading.Lock()

    def sync(self) -> None:
        """Apply every record up to the log's end as of now."""
        with self._sync_lock:
            while True:
                entries, end = self.log.read(self.state.position)
                for offset, key, value in entries:
                    if offset >= self.state.position:
                        self.state.apply(offset, key, value)
                if self.state.position >= end or not entries:
                    return

    def write(self, key: bytes, value: bytes | None) -> Any:
        """Append one record and return its outcome once this broker has applied it."""
        offset = self.log.append(key, value)
        deadline = time.monotonic() + self.write_timeout_s
        while True:
            self.sync()
            if self.state.position > offset:
                outcome = self.state.outcome(offset)
                if isinstance(outcome, RegistryError):
                    raise outcome
                return outcome
            if time.monotonic() > deadline:
                raise timeout_error(f"record at offset {offset} written, not yet readable")
            time.sleep(0.02)  # a new leader's high watermark catching up with the write

    def close(self) -> None:
        self.log.close()
