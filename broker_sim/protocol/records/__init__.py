"""The record layer of the codec: RecordBatch v2 headers, records, compression.

* :mod:`.batch_header` — the fixed 61-byte batch header, CRC validation, offset patching.
* :mod:`.record` — :class:`Record` and :class:`Header`, and the per-record varint layout.
* :mod:`.builder` — :class:`RecordBatchBuilder` (producer side).
* :mod:`.reader` — :func:`iter_records`, :func:`decode_batch` (consumer side).
* :mod:`.compression` — codec ids and :func:`compress` / :func:`decompress`.
"""

from .batch_header import (
    HEADER_SIZE,
    BatchHeader,
    assign_offsets,
    iter_batches,
    peek_batch_size,
    validate_batch,
)
from .builder import RecordBatchBuilder
from .compression import (
    CODEC_IDS,
    CODEC_NAMES,
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    codec_id,
    codec_name,
    compress,
    decompress,
)
from .reader import decode_batch, decode_records, iter_records
from .record import Header, Record

__all__ = [
    "CODEC_IDS", "CODEC_NAMES", "GZIP", "HEADER_SIZE", "LZ4", "NONE", "SNAPPY", "ZSTD",
    "BatchHeader", "Header", "Record", "RecordBatchBuilder", "assign_offsets", "codec_id",
    "codec_name", "compress", "decode_batch", "decode_records", "decompress", "iter_batches",
    "iter_records", "peek_batch_size", "validate_batch",
]
