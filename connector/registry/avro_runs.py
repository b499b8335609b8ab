"""The fast path of the source's Avro decoding: a run of values of one writer schema read
as one in-memory Avro object container file by polars, into Arrow, without a Python object
per record.

:class:`RunReader` is made per reader schema when the writer's schema *is* the reader's
(same id, or the same fully expanded schema, logical types included: schema evolution
keeps the per-record fastavro path, which applies Avro's resolution rules). The container
is the magic ``Obj\\x01``, a metadata map (``avro.schema`` the reader's JSON,
``avro.codec`` ``null``), a sync marker, then one block holding the payloads (after
Confluent's 5-byte header) one after the other. polars' columns are cast to exactly the Arrow types of
:func:`~connector.registry.avro_types.avro_types` (large strings/binary to plain ones, enum
dictionaries to strings, millisecond timestamps to microseconds).

Not every schema takes this path: :func:`eligible` refuses maps, unions of several non-null
types, enums other than a field of the top record (polars panics on them), ``time-*``, ``uuid`` on ``fixed``, decimals on ``bytes`` (their length is the
writer's choice) and a non-record top level; those keep the fastavro path.

polars checks less than fastavro: it ignores bytes left at the end of a block, and reads
any non-null branch index of a ``[null, T]`` union as ``T``. So :meth:`RunReader.read` also
computes each row's encoded length from the decoded columns and compares it with the
payload's: when all are equal, each row was decoded from exactly its own value's bytes (a
row that read into its neighbour's bytes, or left some, differs); otherwise the run falls
back (``None``) to the per-record path, which names the bad record as before. (A writer's
unusual but valid encoding — an array in several blocks, an over-long varint — also
differs: that run is merely decoded the slow way.) One block, not one per value: polars
reads a block per value ~30x slower. What is still not caught: a one-byte branch index of a nullable
union that is out of range but the same width (fastavro refuses it; polars takes it as the
non-null branch).

Threading: a reader holds no mutable state; any thread may use it.
"""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

HEADER = 5  # Confluent's: magic byte 0, the schema id
_SYNC = b"pyq-avro-run\x00\x00\x00\x00"
_LOGICAL_OK = {"date", "timestamp-millis", "timestamp-micros", "local-timestamp-millis",
               "local-timestamp-micros"}


def _zigzag_varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def expanded(schema: Any) -> Any:
    """fastavro's parsed ``schema`` with named types written out where first used and
    fastavro's own keys dropped (what a container's ``avro.schema`` carries)."""
    from fastavro.schema import expand_schema

    def clean(s: Any) -> Any:
        if isinstance(s, dict):
            return {k: clean(v) for k, v in s.items() if not k.startswith("__")}
        if isinstance(s, list):
            return [clean(v) for v in s]
        return s
    return clean(expand_schema(copy.deepcopy(schema)))  # expand_schema changes its argument


def eligible(schema: Any, top: bool = True, nested: bool = False) -> bool:
    """Whether polars reads data of the expanded ``schema`` as the source's types (see
    the module doc)."""
    if top and not (isinstance(schema, dict) and schema.get("type") == "record"):
        return False
    if isinstance(schema, str):
        return schema in ("boolean", "int", "long", "float", "double", "string", "bytes")
    if isinstance(schema, list):
        members = [m for m in schema if m != "null"]
        return len(schema) == 2 and len(members) == 1 and eligible(members[0], False, True)
    kind, logical = schema["type"], schema.get("logicalType")
    if isinstance(kind, (dict, list)):
        return eligible(kind, False, nested)
    if logical is not None:
        if logical == "decimal":
            return kind == "fixed" and int(schema["precision"]) <= 38
        if logical == "uuid":
            return kind == "string"
        return logical in _LOGICAL_OK
    if kind == "record":
        return all(eligible(f["type"], False, not top) for f in schema["fields"])
    if kind == "array":
        return eligible(schema["items"], False, True)
    if kind == "enum":
        return not nested  # polars panics on an enum in an array, a union or a nested record
    return kind == "fixed" or eligible(kind, False)


def _varint_len(values: np.ndarray) -> np.ndarray:
    v = values.astype(np.int64)
    zz = ((v << 1) ^ (v >> 63)).view(np.uint64)
    n = np.ones(len(zz), np.int64)
    for k in range(1, 10):
        n += zz >= np.uint64(1 << (7 * k))
    return n


def _ints(array: pa.Array) -> np.ndarray:
    """The stored integers of ``array`` (timestamps, dates too), 0 for nulls."""
    storage = array if pa.types.is_integer(array.type) else \
        array.view(pa.int32() if array.type.bit_width == 32 else pa.int64())
    return np.asarray(storage.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _sizes(array: pa.Array, schema: Any) -> np.ndarray:
    """Each row's Avro binary length, from the decoded ``array`` of ``schema``."""
    if isinstance(schema, list):
        inner = [m for m in schema if m != "null"][0]
        valid = np.asarray(array.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        return 1 + np.where(valid, _sizes(array, inner), 0)
    if isinstance(schema, dict) and isinstance(schema["type"], (dict, list)):
        return _sizes(array, schema["type"])
    kind = schema if isinstance(schema, str) else schema["type"]
    n = len(array)
    if kind == "boolean":
        return np.ones(n, np.int64)
    if kind == "float":
        return np.full(n, 4, np.int64)
    if kind == "double":
        return np.full(n, 8, np.int64)
    if kind == "fixed":
        return np.full(n, int(schema["size"]), np.int64)
    if kind in ("int", "long"):
        return _varint_len(_ints(array))
    if kind in ("string", "bytes"):
        import pyarrow.compute as pc  # here: the driver's planning path must not load it

        lengths = np.asarray(pc.binary_length(array).fill_null(0).to_numpy(zero_copy_only=False),
                             dtype=np.int64)
        return _varint_len(lengths) + lengths
    if kind == "enum":
        indices = np.asarray(array.indices.fill_null(0).to_numpy(zero_copy_only=False))
        return _varint_len(indices)
    if kind == "record":
        total = np.zeros(n, np.int64)
        for i, f in enumerate(schema["fields"]):
            total += _sizes(array.field(i), f["type"])
        return total
    if kind == "array":
        offsets = np.asarray(array.offsets.to_numpy(), dtype=np.int64)
        counts = np.diff(offsets)
        child = _sizes(array.values, schema["items"])
        per_row = np.add.reduceat(np.append(child, 0), offsets[:-1]) if len(child) else \
            np.zeros(n, np.int64)
        per_row = np.where(counts > 0, per_row, 0)
        return np.where(counts > 0, _varint_len(counts) + per_row + 1, 1)
    raise AssertionError(f"not an eligible Avro type: {kind}")


class RunReader:
    """Reads runs of payloads (Confluent's header stripped) of one eligible schema into
    the Arrow type of the source's column (see the module doc)."""

    def __init__(self, schema: Any, arrow_type: pa.DataType) -> None:
        self.schema = schema  # expanded
        self.arrow_type = arrow_type
        meta = {"avro.schema": json.dumps(schema).encode(), "avro.codec": b"null"}
        head = bytearray(b"Obj\x01") + _zigzag_varint(len(meta))
        for k, v in meta.items():
            head += _zigzag_varint(len(k)) + k.encode() + _zigzag_varint(len(v)) + v
        self._head = bytes(head + _zigzag_varint(0) + _SYNC)

    def read(self, values: Sequence[bytes]) -> pa.Array | None:
        """The Arrow column of framed ``values`` (each Confluent's 5-byte header, then one
        Avro datum), or None when polars cannot read them all exactly (the caller then
        decodes them one by one)."""
        import polars

        framed = np.frombuffer(b"".join(values), np.uint8)
        lengths = np.fromiter(map(len, values), np.int64, len(values)) - HEADER
        starts = np.cumsum(lengths + HEADER) - (lengths + HEADER)
        keep = np.ones(len(framed), bool)
        keep[(starts[:, None] + np.arange(HEADER)).ravel()] = False
        body = framed[keep].tobytes()  # the payloads, one after the other
        block = b"".join((self._head, _zigzag_varint(len(values)), _zigzag_varint(len(body)),
                          body, _SYNC))
        try:
            table = polars.read_avro(io.BytesIO(block)).to_arrow()
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException:  # polars' errors, and pyo3's PanicException (a BaseException)
            return None
        if table.num_rows != len(values):
            return None
        table = table.combine_chunks()
        column = pa.StructArray.from_arrays(
            [c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in table.columns],
            names=table.schema.names)
        try:
            if not np.array_equal(_sizes(column, self.schema), lengths):
                return None
            return column.cast(self.arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
                OverflowError):
            return None
