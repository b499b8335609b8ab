"""The metadata log on disk: ``DATA_DIR/__cluster_metadata-0/``.

Three kinds of file, as in KRaft's directory of the same name:

- ``quorum-state``: the hard state (epoch, voted-for) as JSON, replaced atomically (temporary
  file, fsync, rename, fsync of the directory);
- ``metadata.log``: the entries after the latest snapshot, append-only. Each record is
  ``length (u32) | crc32 (u32) | offset (i64) | epoch (i32) | kind (u8) | value``, the CRC
  over everything after it. A torn or corrupt tail (a crash mid-append) is cut off on open;
- ``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint``: a snapshot (a JSON header line
  with its end offset, epoch and voter set, then the application's bytes). Only the latest is
  kept; saving one rewrites the log without the entries it covers.

Every method flushes (fsync) before it returns, so what the driver has persisted is on disk
before anything is sent or acknowledged. Owned by the quorum's driver thread only.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

from ..raft import DATA, LEADER_CHANGE, VOTERS, Entry, HardState, Snapshot, Stored

_KINDS = {DATA: 0, LEADER_CHANGE: 1, VOTERS: 2}
_KIND_NAMES = {v: k for k, v in _KINDS.items()}
_HEAD = struct.Struct(">II")
_BODY = struct.Struct(">qiB")

LOG_DIR = "__cluster_metadata-0"
LOG_FILE = "metadata.log"
STATE_FILE = "quorum-state"


def encode_value(kind: str, value: object) -> bytes:
    if kind == DATA:
        if not isinstance(value, bytes):
            raise TypeError(f"a metadata record is bytes, not {type(value).__name__}")
        return value
    if kind == LEADER_CHANGE:
        return struct.pack(">i", value)
    return json.dumps(sorted(value)).encode()  # type: ignore[call-overload]


def decode_value(kind: str, raw: bytes) -> object:
    if kind == DATA:
        return raw
    if kind == LEADER_CHANGE:
        return struct.unpack(">i", raw)[0]
    return frozenset(json.loads(raw))


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class MetadataLogStore:
    """The durable side of one quorum member. ``load()`` reads what a core restarts from;
    the other methods carry out a :class:`~broker_sim.raft.Ready`'s persist operations.

    Invariant: ``_positions[i]`` is the file position of the entry at ``start_offset + i``
    and the file ends right after the last entry."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = Path(data_dir) / LOG_DIR
        self.dir.mkdir(parents=True, exist_ok=True)
        self._log_path = self.dir / LOG_FILE
        self._positions: list[int] = []
        self.start_offset = 0
        self._file = open(self._log_path, "ab+")

    # ---- reading back ----------------------------------------------------------------
    def load(self) -> Stored:
        hard = HardState(0, None)
        state = self.dir / STATE_FILE
        if state.exists():
            raw = json.loads(state.read_text())
            hard = HardState(int(raw["epoch"]), raw["voted_for"])
        snapshot = self._load_snapshot()
        self.start_offset = snapshot.end_offset if snapshot else 0
        entries = self._read_entries()
        return Stored(hard, snapshot, tuple(entries))

    def _snapshot_files(self) -> list[Path]:
        return sorted(self.dir.glob("*.checkpoint"))

    def _load_snapshot(self) -> Snapshot | None:
        files = self._snapshot_files()
        if not files:
            return None
        header, _, image = files[-1].read_bytes().partition(b"\n")
        meta = json.loads(header)
        return Snapshot(meta["end_offset"], meta["epoch"], frozenset(meta["voters"]), image)

    def _read_entries(self) -> list[Entry]:
        data = self._log_path.read_bytes()
        entries: list[Entry] = []
        self._positions = []
        pos = 0
        while pos + _HEAD.size <= len(data):
            length, crc = _HEAD.unpack_from(data, pos)
            body = data[pos + _HEAD.size:pos + _HEAD.size + length]
            if len(body) < length or zlib.crc32(body) != crc or length < _BODY.size:
                break  # a torn or corrupt tail
            offset, epoch, kind = _BODY.unpack_from(body)
            if offset < self.start_offset:  # below the snapshot (a crash mid-rewrite)
                pos += _HEAD.size + length
                continue
            if offset != self.start_offset + len(entries):
                break
            name = _KIND_NAMES[kind]
            entries.append(Entry(offset, epoch, name, decode_value(name, body[_BODY.size:])))
            self._positions.append(pos)
            pos += _HEAD.size + length
        if pos != len(data) or (entries == [] and data):
            self._rewrite(entries)
        return entries

    # ---- persisting ----------------------------------------------------------------------
    def save_hard_state(self, hard: HardState) -> None:
        _write_atomically(self.dir / STATE_FILE, json.dumps(
            {"epoch": hard.epoch, "voted_for": hard.voted_for}).encode())

    @staticmethod
    def _frame(entry: Entry) -> bytes:
        body = _BODY.pack(entry.offset, entry.epoch, _KINDS[entry.kind]) + \
            encode_value(entry.kind, entry.value)
        return _HEAD.pack(len(body), zlib.crc32(body)) + body

    def append(self, entries: tuple[Entry, ...]) -> None:
        self._file.seek(0, os.SEEK_END)
        pos = self._file.tell()
        chunks = []
        for entry in entries:
            frame = self._frame(entry)
            self._positions.append(pos)
            pos += len(frame)
            chunks.append(frame)
        self._file.write(b"".join(chunks))
        self._file.flush()
        os.fsync(self._file.fileno())

    def truncate(self, offset: int) -> None:
        index = max(0, offset - self.start_offset)
        if index >= len(self._positions):
            return
        self._file.truncate(self._positions[index])
        del self._positions[index:]
        self._file.flush()
        os.fsync(self._file.fileno())

    def save_snapshot(self, snapshot: Snapshot, keep_log: bool) -> None:
        """Store ``snapshot`` and rewrite the log without the entries it covers (without any
        entry when ``keep_log`` is False: an installed snapshot the log does not match)."""
        kept = [e for e in self._read_entries() if e.offset >= snapshot.end_offset] \
            if keep_log else []
        image = snapshot.image if isinstance(snapshot.image, bytes) else b""
        header = json.dumps({"end_offset": snapshot.end_offset, "epoch": snapshot.epoch,
                             "voters": sorted(snapshot.voters)}).encode()
        name = f"{snapshot.end_offset:020d}-{snapshot.epoch:010d}.checkpoint"
        _write_atomically(self.dir / name, header + b"\n" + image)
        self.start_offset = snapshot.end_offset
        self._rewrite(kept)
        for old in self._snapshot_files():
            if old.name != name:
                old.unlink()

    def _rewrite(self, entries: list[Entry]) -> None:
        frames = [self._frame(e) for e in entries]
        _write_atomically(self._log_path, b"".join(frames))
        self._file.close()
        self._file = open(self._log_path, "ab+")
        self._positions = []
        pos = 0
        for frame in frames:
            self._positions.append(pos)
            pos += len(frame)

    def close(self) -> None:
        self._file.close()
