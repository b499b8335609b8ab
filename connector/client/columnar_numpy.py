"""The numpy engine of :mod:`.columnar`: steps 2 to 4 of its module docstring, vectorised.

What every read did before the C scanner (:mod:`.record_scan`) existed, and what runs
where the extension is not built (a source tree). It is the reference the C scanner is
held to: :func:`numpy_fields` answers the same :data:`FIELD_COLUMNS` as
:meth:`~.record_scan.RecordScan.records`, with the same checks, and :func:`take_binary`
the same Arrow layout as :meth:`~.record_scan.RecordScan.gather`.

Its reads look up to 8 bytes past a varint's start: a buffer it reads ends with
:data:`PAD`, or, decoded in place, it answers :data:`NEEDS_PADDING` when a read would
reach past the end (the caller then decodes a padded copy).

Threading: stateless functions over the caller's buffers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from broker_sim.protocol.errors import CorruptMessage
from broker_sim.protocol.primitives import read_uvarint
from broker_sim.protocol.records import BatchHeader

INT32_MAX = (1 << 31) - 1
PAD = b"\x00" * 16  # vectorised reads may look up to 8 bytes past a varint's start

FIELD_COLUMNS = 9  # (ts delta, offset delta, key start, key length, value start,
#                    value length, header count position, header count, record end)


class NeedsPadding:
    """:func:`~.columnar._decode` of a record set in place met a record whose vectorised
    reads would go past its end (a tiny last record, a long varint): decode a padded copy."""


NEEDS_PADDING = NeedsPadding()


def _record_starts(data: Any, buf: np.ndarray, sections: list[tuple[int, int]],
                   batches: list[BatchHeader]) -> np.ndarray:
    """Start position (in ``data``) of every record of every batch, in order."""
    parts: list[Any] = []
    for (pos, end), header in zip(sections, batches, strict=True):
        _chunk_starts(data, buf, pos, end, header.records_count, parts)
    return np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])


_MIN_RUN = 8  # gallop only when it pays: fewer equal-size records are walked in Python
_MAX_WALK = 512
_DELTA_WIDENS = 64  # offset deltas 0..63 are one varint byte, 64..8191 two


def _chunk_starts(data: bytes, buf: np.ndarray, pos: int, end: int, count: int,
                  parts: list[Any]) -> None:
    """Record starts of one batch's records section ``data[pos:end]``, into ``parts``.

    Each record starts with its length, so start ``i + 1`` depends on record ``i``. Runs of
    records of the same size are common (fixed-size payloads; offset and timestamp deltas
    change their varint width only at 64, 8192, ...), so this *gallops*: read one record's
    length prefix, assume the next ``k`` records have the same one, and check all ``k``
    prefixes at once with numpy. Up to the first mismatch the assumption is proven (by
    induction: a matching prefix means the same size, hence the next start is where it
    was assumed), and the mismatch itself is the next true start. Where sizes vary, it
    walks records one by one in Python instead, doubling the walk after each failed
    gallop, so the worst case costs little more than walking everything.
    """
    found = 0
    walk = _MIN_RUN
    while found < count:
        b1 = data[pos]
        if b1 < 0x80:
            hl, u = 1, b1
        elif (b2 := data[pos + 1]) < 0x80:
            hl, u = 2, (b1 & 0x7F) | (b2 << 7)
        elif (b3 := data[pos + 2]) < 0x80:
            hl, u = 3, (b1 & 0x7F) | ((b2 & 0x7F) << 7) | (b3 << 14)
        else:
            break  # a record of 1 MiB or more: walked below
        size = hl + (u >> 1)
        k = min(count - found, (end - pos) // size if size else 0)
        if found < _DELTA_WIDENS:  # the offset delta (= index) gets a byte longer there
            k = min(k, _DELTA_WIDENS - found)
        if k >= _MIN_RUN:
            cand = np.arange(pos, pos + size * k, size, dtype=np.int64)
            ok = buf[cand] == buf[pos]
            for j in range(1, hl):
                ok &= buf[cand + j] == buf[pos + j]
            m = int(ok.argmin())  # the first mismatch, or 0 if there is none
            if ok[m]:
                m = k
            parts.append(cand[:m])
            found += m
            pos += m * size
            if m >= _MIN_RUN:
                walk = _MIN_RUN
                continue
            walk = min(walk * 2, _MAX_WALK)
        pos, n = _walk(data, pos, min(walk, count - found), parts)
        found += n
    if found < count:
        pos, _ = _walk(data, pos, count - found, parts)
    if pos != end:
        raise CorruptMessage(f"records do not add up to their batch's size ({pos - end:+d} bytes)")


def _walk(data: bytes, pos: int, n: int, parts: list[Any]) -> tuple[int, int]:
    """Walk ``n`` records one by one from ``pos``; append their starts to ``parts``."""
    starts: list[int] = []
    add = starts.append
    for _ in range(n):
        add(pos)
        u = data[pos]
        if u < 0x80:
            pos += 1 + (u >> 1)
        else:
            u2 = data[pos + 1]
            if u2 < 0x80:
                pos += 2 + (((u & 0x7F) | (u2 << 7)) >> 1)
            else:
                u, p = read_uvarint(data, pos)
                pos = p + (u >> 1)
    parts.append(starts)
    return pos, n


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints at every position of ``pos``: (values, positions after).

    Nearly every varint of a record is one or two bytes (lengths under 8 KiB, deltas under
    8192): both bytes are read at every position at once and combined without a loop. If
    any varint is longer, :func:`_long_varints` decodes the column byte by byte.
    """
    b0 = buf[pos]
    b1 = buf[pos + 1]  # may be the next field's byte: only used where b0 continues
    m0 = b0 >> 7
    if ((b1 >> 7) & m0).any():
        return _long_varints(buf, pos)
    raw = (b0 & 0x7F).astype(np.int32)
    raw |= ((b1 & 0x7F) * m0).astype(np.int32) << 7
    return (raw >> 1) ^ -(raw & 1), pos + 1 + m0


def _long_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_varints` for columns with varints of any length (up to 10 bytes)."""
    b = buf[pos]
    raw = (b & 0x7F).astype(np.uint64)
    after = pos + 1
    idx = np.flatnonzero(b & 0x80)
    shift = 7
    while idx.size:
        if shift > 63:
            raise CorruptMessage("varint longer than 10 bytes")
        b = buf[after[idx]]
        raw[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        after[idx] += 1
        idx = idx[(b & 0x80) != 0]
        shift += 7
    values = (raw >> np.uint64(1)).astype(np.int64) ^ -(raw & np.uint64(1)).astype(np.int64)
    return values, after


def _zigzag(raw: np.ndarray) -> np.ndarray:
    """Zig-zag decoding of unsigned 64-bit values (negative ones are rare: -1, a null)."""
    values = (raw >> _U1).view(np.int64)
    sign = raw & _U1
    if sign.any():
        values ^= -sign.view(np.int64)
    return values


_WORD = np.dtype("<u8")
_B = np.uint64(0xFF)
_LOW7 = np.uint64(0x7F)
_U1, _U3, _U7, _U8, _U14, _U16, _U64 = (np.uint64(k) for k in (1, 3, 7, 8, 14, 16, 64))


def _words(buf: np.ndarray) -> np.ndarray:
    """Every 8 bytes of ``buf`` from every position, as little-endian uint64 (a strided
    view, no copy): ``_words(buf)[p]`` is ``buf[p : p + 8]``, one gather instead of eight."""
    return np.ndarray((len(buf) - 7,), _WORD, buffer=buf, strides=(1,))


def _var3(word: np.ndarray, shift: np.uint64 | np.ndarray) -> tuple[np.ndarray, Any] | None:
    """The zig-zag varint at bit ``shift`` of each ``word`` (1 to 3 bytes; None if longer):
    (values, shift after it). A shift of 64 or more reads zero bytes: callers check that
    the last field ended within the word."""
    x = word >> shift
    b0 = x & _B
    cont = b0 >> _U7
    if not cont.any():  # one byte everywhere: the shift stays one number
        return _zigzag(b0), shift + _U8
    b1 = (x >> _U8) & _B
    cont2 = cont & (b1 >> _U7)
    b0 &= _LOW7
    b1 &= _LOW7
    if not cont2.any():
        if cont.all():  # two bytes everywhere
            return _zigzag(b0 | (b1 << _U7)), shift + _U16
        return _zigzag(b0 | ((b1 * cont) << _U7)), shift + _U8 + (cont << _U3)
    b2 = (x >> _U16) & _B  # offset deltas from 8192 on, lengths from 8 KiB on
    if (cont2 & (b2 >> _U7)).any():
        return None
    raw = b0 | ((b1 * cont) << _U7) | (((b2 & _LOW7) * cont2) << _U14)
    return _zigzag(raw), shift + _U8 + ((cont + cont2) << _U3)


def _fields_fast(buf: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """The record fields of :func:`_fields` with 8-byte gathers instead of two byte gathers
    per field (varints of 1 to 3 bytes): the first word read at each record's start holds
    its length, attributes, timestamp delta, offset delta and usually the key length; a
    field that does not end within the word is read again from a word at its start; the
    word at the value length holds it. None if a varint is longer (1 MiB and more) or a
    word would reach past the end of ``buf``: then :func:`_fields` decodes it field by
    field."""
    words = _words(buf)
    if starts[-1] >= len(words):  # the last record is within 8 bytes of an unpadded end
        return None
    word = words[starts]
    got = _var3(word, np.uint64(0))
    if got is None:
        return None
    length, shift = got
    record_end = starts + (shift >> _U3).astype(np.int64) + length
    shift = shift + _U8  # the attributes byte
    base = starts
    fields = []
    for _ in range(3):  # timestamp delta, offset delta, key length
        got = _var3(word, shift)
        if got is None:
            return None
        value, after = got
        if np.any(after > _U64):  # not within the word everywhere: read from its start
            base = base + (shift >> _U3).astype(np.int64)
            if base.max() >= len(words):
                return None
            word = words[base]
            got = _var3(word, np.uint64(0))
            if got is None:
                return None
            value, after = got
        fields.append(value)
        shift = after
    ts_delta, offset_delta, key_len = fields
    key_start = base + (shift >> _U3).astype(np.int64)
    value_len_pos = key_start + np.maximum(key_len, 0)
    if value_len_pos[-1] >= len(words):
        return None
    word = words[value_len_pos]
    got = _var3(word, np.uint64(0))
    if got is None:  # values of 1 MiB or more
        return None
    value_len, shift = got
    value_start = value_len_pos + (shift >> _U3).astype(np.int64)
    return length, record_end, ts_delta, offset_delta, key_len, key_start, value_len, value_start


def _fields(buf: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, ...]:
    """(length, record end, timestamp delta, offset delta, key length, key start, value
    length, value start) of every record, field by field (varints of any length)."""
    length, pos = _varints(buf, starts)
    record_end = pos + length
    ts_delta, pos = _varints(buf, pos + 1)  # + 1: the attributes byte
    offset_delta, pos = _varints(buf, pos)
    key_len, pos = _varints(buf, pos)
    key_start = pos
    value_len, pos = _varints(buf, pos + np.maximum(key_len, 0))
    return length, record_end, ts_delta, offset_delta, key_len, key_start, value_len, pos


def _header_counts(buf: np.ndarray, pos: np.ndarray,
                   padded: bool = True) -> tuple[np.ndarray, np.ndarray] | None:
    """Header counts at ``pos``: (counts, positions after); nearly always one byte each.
    None if a count is longer and ``buf`` is not padded (:func:`_varints` reads ahead)."""
    b0 = buf[pos]
    if not (b0 & 0x80).any():
        return (b0 >> 1).astype(np.int64) ^ -(b0 & 1).astype(np.int64), pos + 1
    return _varints(buf, pos) if padded else None



def numpy_fields(data: Any, buf: np.ndarray, sections: list[tuple[int, int]],
                  batches: list[BatchHeader], padded: bool) -> tuple[np.ndarray, ...] | NeedsPadding:
    """The :data:`FIELD_COLUMNS` of every record, vectorised with numpy (steps 2 and 3),
    validated as :class:`~.record_scan.RecordScan` validates them; headers are left to the caller."""
    starts = _record_starts(data, buf, sections, batches)
    fields = _fields_fast(buf, starts)
    if fields is None:
        if not padded:
            return NEEDS_PADDING
        fields = _fields(buf, starts)
    length, record_end, ts_delta, offset_delta, key_len, key_start, value_len, value_start = fields
    header_pos = value_start + np.maximum(value_len, 0)
    header_counts = _header_counts(buf, header_pos, padded)
    if header_counts is None:
        return NEEDS_PADDING
    header_count, pos = header_counts
    if (length < 6).any() or (key_len < -1).any() or (value_len < -1).any() or (
            header_count < 0).any():
        raise CorruptMessage("negative or impossible length in a record")
    plain = header_count == 0
    if (pos[plain] != record_end[plain]).any():
        raise CorruptMessage("record length does not match its fields")
    return (ts_delta, offset_delta, key_start, key_len, value_start, value_len, header_pos,
            header_count, record_end)


def take_binary(data_buffer: pa.Buffer, starts: np.ndarray, lengths: np.ndarray,
                valid: np.ndarray, null_count: int) -> pa.Array:
    """Step 4 with Arrow's ``take`` (see :func:`~.columnar._binary`)."""
    n = len(starts)
    ends = starts + (np.maximum(lengths, 0) if null_count else lengths)
    if n > 1 and (starts[1:] < ends[:-1]).any():
        raise CorruptMessage("record fields overlap")
    wide = len(data_buffer) > INT32_MAX
    bounds = np.empty(2 * n + 1, np.int64 if wide else np.int32)
    bounds[0 : 2 * n : 2] = starts
    bounds[1 : 2 * n : 2] = ends
    bounds[2 * n] = ends[-1]
    spans = pa.Array.from_buffers(pa.large_binary() if wide else pa.binary(), 2 * n,
                                  [None, pa.py_buffer(bounds), data_buffer], 0)
    # Not pa.array(indices): for numpy input it imports pandas (hundreds of modules) first.
    indices = np.arange(0, 2 * n, 2, dtype=np.int64)
    taken = spans.take(pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(indices)]))
    if wide:
        taken = taken.cast(pa.binary())
    if not null_count:
        return taken
    validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    _, offsets, values = taken.buffers()
    return pa.Array.from_buffers(pa.binary(), n, [validity, offsets, values], null_count)
