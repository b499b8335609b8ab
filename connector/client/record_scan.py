"""The C record scanner of :mod:`.columnar` (``_record_scan.c``, built with the package),
loaded through ctypes; :func:`load_record_scan` answers None where it is not built."""

from __future__ import annotations

import ctypes

import numpy as np
import pyarrow as pa

from broker_sim.protocol.errors import CorruptMessage

from .columnar_numpy import FIELD_COLUMNS, INT32_MAX


class RecordScan:
    """The per-record steps in C (``_record_scan.c``, built with the package), called
    through ctypes: :meth:`records` finds every record's fields in one pass (steps 2 and
    3 of :mod:`.columnar`'s docstring, with their checks) and :meth:`gather` copies key
    or value slices into Arrow's binary layout (step 4 without ``take``).

    The C code reads untrusted bytes with every read bounded by its record, its batch's
    section and the buffer, so malformed input is a :class:`CorruptMessage`, never a read
    outside the buffer. The numpy engine (:func:`~.columnar_numpy.numpy_fields`,
    :func:`~.columnar_numpy.take_binary`) does the same work where the extension is not
    built (running from a source tree) and is what the tests compare this one with.

    Threading: stateless; ctypes releases the GIL for each call, so the process's other
    Python threads run while a response is scanned. The buffers passed in must stay alive
    and unchanged for the call (they are numpy arrays or Arrow buffers held by the caller).
    """

    ERRORS = {
        -1: "varint longer than 10 bytes",
        -2: "a field runs past the end of its record",
        -3: "negative or impossible length in a record",
        -4: "record length does not match its fields",
        -5: "records do not add up to their batch's size",
        -6: "more records than their batches count",
        -7: "a key or value lies outside the fetched bytes",
    }

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        i64, ptr = ctypes.c_int64, ctypes.c_void_p
        self._scan = lib.pyq_scan_records
        self._scan.argtypes = [ptr, i64, ptr, i64, ptr, i64, ctypes.POINTER(i64)]
        self._scan.restype = i64
        self._gather = lib.pyq_gather_slices
        self._gather.argtypes = [ptr, i64, ptr, ptr, i64, ptr, ptr, i64, ctypes.POINTER(i64)]
        self._gather.restype = i64

    def records(self, buf: np.ndarray, sections: list[tuple[int, int]],
                counts: np.ndarray) -> np.ndarray:
        """The :data:`FIELD_COLUMNS` of every record of ``buf``'s sections (``counts``
        records each), as the rows of one int64 array."""
        table = np.empty((len(sections), 3), np.int64)
        table[:, :2] = sections
        table[:, 2] = counts
        n = int(counts.sum())
        out = np.empty((FIELD_COLUMNS, n), np.int64)
        where = ctypes.c_int64(0)
        got = self._scan(buf.ctypes.data, len(buf), table.ctypes.data, len(table),
                         out.ctypes.data, n, ctypes.byref(where))
        if got < 0:
            raise CorruptMessage(f"{self.ERRORS.get(got, got)} (at byte {where.value})")
        if got != n:
            raise CorruptMessage(f"{got} records where their batches count {n}")
        return out

    def gather(self, data: pa.Buffer, starts: np.ndarray,
               lengths: np.ndarray) -> tuple[np.ndarray, pa.Buffer] | None:
        """(int32 offsets, data buffer) of the slices ``data[starts[i] :][: lengths[i]]``
        (-1: null, no bytes); None if they exceed int32 offsets (the caller's other path
        handles those)."""
        starts = np.ascontiguousarray(starts, np.int64)
        lengths = np.ascontiguousarray(lengths, np.int64)
        total = int(np.maximum(lengths, 0).sum())
        if total > INT32_MAX:
            return None
        offsets = np.empty(len(starts) + 1, np.int32)
        values = pa.allocate_buffer(total)
        where = ctypes.c_int64(0)
        got = self._gather(data.address, data.size, starts.ctypes.data, lengths.ctypes.data,
                           len(starts), offsets.ctypes.data, values.address, total,
                           ctypes.byref(where))
        if got < 0:
            raise CorruptMessage(f"{self.ERRORS.get(got, got)} (slice {where.value})")
        return offsets, values


def load_record_scan() -> RecordScan | None:
    try:
        from . import _record_scan
    except ImportError:  # a source tree where the extension was not built
        return None
    return RecordScan(_record_scan.__file__)

