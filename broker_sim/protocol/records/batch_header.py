"""The fixed 61-byte header of a RecordBatch v2 (magic 2), read and patched in place.

On-disk and on-wire layout (big-endian)::

    offset  size  field
    0       8     base_offset
    8       4     batch_length            bytes that follow this field
    12      4     partition_leader_epoch
    16      1     magic                   always 2
    17      4     crc                     CRC-32C of bytes [21, end)
    21      2     attributes              bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
    23      4     last_offset_delta
    27      8     base_timestamp
    35      8     max_timestamp
    43      8     producer_id
    51      2     producer_epoch
    53      4     base_sequence
    57      4     records_count
    61      ...   records (compressed as a whole when codec != 0)

Because the CRC starts at ``attributes``, the leader can assign ``base_offset`` and
``partition_leader_epoch`` by patching bytes 0-7 and 12-15 without recomputing the CRC
and without decompressing: the broker stores the bytes it received.

>>> h = BatchHeader.parse(example_batch())
>>> (h.base_offset, h.last_offset, h.records_count)
(0, 2, 3)
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import struct
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import CorruptMessage

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base_offset + batch_length: bytes not counted in batch_length
MAGIC = 2
CRC_START = 21

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_Q = struct.Struct(">q")
_I = struct.Struct(">i")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20


def _crc32c_extension() -> Any:
    """The ``crc32c`` package's C extension module, loaded without running the package's
    ``__init__``, which looks its own version up with ``importlib.metadata``: that walks
    every ``sys.path`` entry, and a Spark Python worker's path holds Spark's jars and zips
    (0.17-0.38 s in each such process, and every streaming query starts one to plan it).
    Any other layout of the package is imported the ordinary way."""
    spec = importlib.util.find_spec("crc32c")  # finds the package without running it
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(location) / f"_crc32c{suffix}"
            if path.is_file():
                ext_spec = importlib.util.spec_from_file_location("crc32c._crc32c", path)
                if ext_spec is not None and ext_spec.loader is not None:
                    module = importlib.util.module_from_spec(ext_spec)
                    ext_spec.loader.exec_module(module)
                    return module
    import crc32c

    return crc32c


_crc32c = _crc32c_extension()


def has_transactional_batch(records: Any) -> bool:
    """Whether any v2 batch in ``records`` (bytes or a memoryview of whole batches) has the
    transactional bit: each batch's attributes are read in place, batch to batch by its
    length field; a truncated tail is left to the log's validation."""
    view = memoryview(records)
    pos, end = 0, len(view)
    while pos + 23 <= end:
        if view[pos + 22] & TRANSACTIONAL_MASK:
            return True
        pos += 12 + _I.unpack_from(view, pos + 8)[0]
    return False


def crc32c(data: Any, value: int = 0) -> int:
    """CRC-32C of any buffer (bytes, bytearray, memoryview, numpy), read where it lies,
    continuing from ``value``: C, with the CPU's CRC instruction where it has one, the GIL
    released for large buffers."""
    return _crc32c.crc32c(data, value)


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @classmethod
    def parse(cls, buf: Any, pos: int = 0) -> BatchHeader:
        if len(buf) - pos < HEADER_SIZE:
            raise CorruptMessage("record batch is shorter than its header")
        return cls._make(_HEADER.unpack_from(buf, pos))

    @property
    def size(self) -> int:
        """Total bytes of the batch including the 12-byte offset/length prefix."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)


def peek_batch_size(buf: Any, pos: int = 0) -> int | None:
    """Total size of the batch starting at ``pos``, or None if fewer than 12 bytes remain."""
    if len(buf) - pos < LOG_OVERHEAD:
        return None
    return _OFFSET_AND_LENGTH.unpack_from(buf, pos)[1] + LOG_OVERHEAD


def validate_batch(buf: Any, pos: int = 0) -> BatchHeader:
    """Parse the batch at ``pos`` and check magic, length and CRC; raise CorruptMessage."""
    header = BatchHeader.parse(buf, pos)
    if header.magic != MAGIC:
        raise CorruptMessage(f"record batch magic {header.magic} is not supported (only 2)")
    end = pos + header.size
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or end > len(buf):
        raise CorruptMessage("record batch length does not match the bytes received")
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptMessage("record batch has a negative count")
    actual = crc32c(memoryview(buf)[pos + CRC_START : end])
    if actual != header.crc:
        raise CorruptMessage(f"record batch CRC mismatch (stored {header.crc:#010x}, computed {actual:#010x})")
    return header


def iter_batches(buf: Any) -> Any:
    """Yield (position, BatchHeader) for each whole batch in ``buf``, validated.

    Raises CorruptMessage for a batch that fails validation; a trailing partial batch
    (which a fetch response may legitimately end with) stops the iteration quietly.
    """
    pos = 0
    n = len(buf)
    while pos < n:
        size = peek_batch_size(buf, pos)
        if size is None or pos + size > n:
            return
        yield pos, validate_batch(buf, pos)
        pos += size


def seal_crc(header: bytearray, *records: Any) -> None:
    """Write a batch's CRC-32C into its CRC field. ``header`` is the batch from its start
    (the 61 header bytes, or the whole batch); the CRC covers it from the attributes on,
    then ``records`` (the rest of the records section, in pieces), each read where it
    lies."""
    crc = crc32c(memoryview(header)[CRC_START:])
    for piece in records:
        crc = crc32c(piece, crc)
    header[CRC_START - 4 : CRC_START] = crc.to_bytes(4, "big")


def assign_offsets(buf: bytearray | memoryview, pos: int, base_offset: int, leader_epoch: int) -> None:
    """Patch a batch's base offset and partition leader epoch in place (CRC unaffected)."""
    _Q.pack_into(buf, pos, base_offset)
    _I.pack_into(buf, pos + 12, leader_epoch)


def example_batch() -> bytes:
    """A tiny valid uncompressed batch of three empty records (for docs and tests)."""
    records = b"".join(bytes([12, 0, 0, i * 2, 1, 1, 0]) for i in range(3))  # 6 bytes each
    body = struct.pack(">hiqqqhii", 0, 2, 0, 0, -1, -1, -1, 3) + records
    crc = crc32c(body)
    return struct.pack(">qiibI", 0, len(body) + 9, 0, MAGIC, crc) + body
