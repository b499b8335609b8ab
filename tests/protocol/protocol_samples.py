"""Helpers shared by the protocol tests: representative values and a plain comparison form.

``sample(message, version)`` builds a value with every field present in ``version`` set to
a non-default value (two entries in every array, so nested structs are exercised);
``plain(value, message, version)`` reduces a ``Data``/dict to nested dicts/lists of only
the fields present in ``version`` (defaults filled in, memoryviews as bytes), which is
what the tests compare.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from broker_sim.protocol.api import APIS
from broker_sim.protocol.primitives import (
    Array,
    Boolean,
    Bytes,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    NullableBytes,
    NullableString,
    String,
    Type,
    UInt16,
    UInt32,
    Uuid,
)
from broker_sim.protocol.schema import Message, NullableStruct, Struct

ARRAY_LEN = 2


def all_versions() -> list[tuple[str, int, int]]:
    """(name, api_key, version) for every version of every API we implement."""
    return [(spec.name, spec.key, v) for spec in APIS.values()
            for v in range(spec.min_version, spec.max_version + 1)]


def _scalar(t: Type, default: Any, k: int, nulls: bool) -> Any:
    """A value of primitive ``t`` that differs from ``default`` (unless ``nulls``)."""
    if t is Int8:
        return 1 + k % 100
    if t is Int16:
        return 1000 + k
    if t is Int32:
        return 100_000 + k
    if t is UInt16:
        return 40_000 + k
    if t is UInt32:
        return 3_000_000_000 + k
    if t is Int64:
        return 2**40 + k
    if t is Float64:
        return 0.5 + k
    if t is Boolean:
        return not default
    if t is Uuid:
        return uuid.UUID(int=k + 1)
    if t is String:
        return f"s{k}-\u00e9\u4e2d"  # non-ASCII: byte length != character length
    if t is NullableString:
        return None if nulls else f"n{k}-\u00e9"
    if t is Bytes:
        return bytes([k % 256]) * 3 + b"\x00b"
    if t is NullableBytes:  # also Records
        return None if nulls else bytes([k % 256]) * 5 + b"\x00rec"
    raise AssertionError(f"no sample for type {t!r}")


# Fields declared nullable but, per Kafka's schemas, nullable only from this version on.
NULLABLE_FROM = {
    ("MetadataRequest", "topics"): 1,     # v0: an empty array means "all topics"
    ("OffsetFetchRequest", "topics"): 2,
    ("MetadataRequestTopic", "name"): 10,    # null (look up by id) only means something from v12
    ("MetadataResponseTopic", "name"): 12,
}


def sample(message: Struct, version: int, nulls: bool = False) -> dict[str, Any]:
    """Every field present in ``version`` set; ``nulls`` puts None in every slot that is
    nullable in ``version``."""
    counter = itertools.count(1)

    def value(t: Any, default: Any, nullable: bool) -> Any:
        if isinstance(t, NullableStruct):
            return None if nulls else value(t.inner, None, True)
        if isinstance(t, Struct):
            return {f.name: value(f.type, f.default,
                                  version >= NULLABLE_FROM.get((t.name, f.name), 0))
                    for f in t.fields if f.present_in(version)}
        if isinstance(t, Array):
            if nulls and nullable and t.nullable:
                return None
            return [value(t.inner, t.inner.default, True) for _ in range(ARRAY_LEN)]
        return _scalar(t, default, next(counter), nulls and nullable)

    return value(message, None, True)


def plain(value: Any, t: Any, version: int) -> Any:
    """``value`` (Data, dict, list, memoryview...) as comparable plain Python data."""
    if isinstance(t, NullableStruct):
        return None if value is None else plain(value, t.inner, version)
    if isinstance(t, Struct):
        if value is None:  # a tagged struct left out
            return None
        return {f.name: plain(value.get(f.name, f.default), f.type, version)
                for f in t.fields if f.present_in(version)}
    if isinstance(t, Array):
        return None if value is None else [plain(v, t.inner, version) for v in value]
    if isinstance(value, (memoryview, bytearray)):
        return bytes(value)
    return value


def message(api_key: int, kind: str) -> Message:
    spec = APIS[api_key]
    return spec.request if kind == "request" else spec.response
