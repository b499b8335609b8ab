"""Protobuf schemas from the registry as descriptors, and the Spark and Arrow types of
their messages.

:func:`load_file` asks the registry for a schema's serialized ``FileDescriptorProto``
(``?format=serialized``, Confluent's API; its references fetched the same way, by the
names its imports use) and builds it, with protobuf's well-known types, into a fresh
``DescriptorPool``: messages are protobuf's dynamic messages (no generated code).
:func:`message_types` maps a message descriptor to the Spark type of the column and the
Arrow type the decoder builds, as Spark's ``from_protobuf`` does:

| Protobuf | Spark |
|---|---|
| message (nested too) | struct, fields in field order; a ``oneof``'s fields are fields of the struct (null unless set) |
| int32, sint32, sfixed32 | int |
| int64, sint64, sfixed64 | bigint |
| uint32, fixed32 | bigint (Spark's ``upcast.unsigned.ints``: no overflow) |
| uint64, fixed64 | decimal(20,0) (idem) |
| float, double, bool, string, bytes | float, double, boolean, string, binary |
| enum | string (the value's name) |
| repeated T | array<T> |
| map<K, V> | map<K, V> |
| google.protobuf.Timestamp | timestamp |
| google.protobuf wrappers (Int32Value, StringValue ...) | the wrapped scalar, null when unset |
| other well-known types (Duration, Any ...) | their message's struct (Duration: struct<seconds, nanos>, where Spark's ``from_protobuf`` gives a day-time interval) |

Unset proto3 scalars read as their default value (0, "", false), as ``from_protobuf`` with
``emit.default.values``; message fields, ``optional`` fields, oneof members and proto2
fields read null when unset. Recursive messages are refused naming the field (Spark's
default, ``recursive.fields.max.depth`` -1), as are the message index paths that name no
message.

:func:`to_python` / :func:`from_python` convert between a message and the plain values
of its Spark row (dicts of fields). Pure functions; descriptors are immutable and shared.
"""

from __future__ import annotations

import base64
import datetime
import decimal
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor, FileDescriptor

from broker_sim.protocol.errors import PyqError

from .client import RegistryError

_F = FieldDescriptor
SCALARS: dict[int, tuple[str, pa.DataType]] = {
    _F.TYPE_INT32: ("int", pa.int32()), _F.TYPE_SINT32: ("int", pa.int32()),
    _F.TYPE_SFIXED32: ("int", pa.int32()),
    _F.TYPE_INT64: ("bigint", pa.int64()), _F.TYPE_SINT64: ("bigint", pa.int64()),
    _F.TYPE_SFIXED64: ("bigint", pa.int64()),
    _F.TYPE_UINT32: ("bigint", pa.int64()), _F.TYPE_FIXED32: ("bigint", pa.int64()),
    _F.TYPE_UINT64: ("decimal(20,0)", pa.decimal128(20, 0)),
    _F.TYPE_FIXED64: ("decimal(20,0)", pa.decimal128(20, 0)),
    _F.TYPE_FLOAT: ("float", pa.float32()), _F.TYPE_DOUBLE: ("double", pa.float64()),
    _F.TYPE_BOOL: ("boolean", pa.bool_()), _F.TYPE_STRING: ("string", pa.string()),
    _F.TYPE_BYTES: ("binary", pa.binary()), _F.TYPE_ENUM: ("string", pa.string()),
}
UNSIGNED_64 = (_F.TYPE_UINT64, _F.TYPE_FIXED64)
TIMESTAMP = "google.protobuf.Timestamp"
WRAPPERS = {f"google.protobuf.{n}Value" for n in
            ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")}
_WELL_KNOWN_MODULES = ("any_pb2", "api_pb2", "duration_pb2", "empty_pb2", "field_mask_pb2",
                       "source_context_pb2", "struct_pb2", "timestamp_pb2", "type_pb2",
                       "wrappers_pb2")
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class UnsupportedProtobuf(PyqError, ValueError):
    """A Protobuf message with a field that has no Spark column here; names the field."""


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    if not name.startswith("google/protobuf/"):
        return None
    import importlib

    for module in _WELL_KNOWN_MODULES:
        importlib.import_module(f"google.protobuf.{module}")
    try:
        found = descriptor_pool.Default().FindFileByName(name)
    except KeyError:
        return None
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto


def load_file(client: Any, record: dict[str, Any]) -> FileDescriptor:
    """The file descriptor of a registry record fetched with ``format=serialized``
    (``schema`` the base64 FileDescriptorProto, ``references`` by subject and version)."""
    if record.get("schemaType") != "PROTOBUF":
        raise RegistryError(f"schema {record.get('id', '')} is "
                            f"{record.get('schemaType') or 'AVRO'}, not PROTOBUF")
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, rec: dict[str, Any]) -> None:
        proto = descriptor_pb2.FileDescriptorProto()
        try:
            proto.ParseFromString(base64.b64decode(rec["schema"], validate=True))
        except Exception as e:  # binascii.Error, DecodeError
            raise RegistryError(f"the registry's schema {rec.get('id', '')} is not a serialized "
                                f"FileDescriptorProto (format=serialized): {e}") from None
        refs = {r["name"]: r for r in rec.get("references") or []}
        for dep in proto.dependency:
            if dep in added:
                continue
            known = _well_known(dep)
            if known is not None and dep not in refs:
                pool.Add(known)
                added.add(dep)
                continue
            if dep not in refs:
                raise RegistryError(f"schema {rec.get('id', '')} imports {dep}, which is "
                                    "neither a reference nor a well-known type")
            ref = refs[dep]
            add(dep, client.request("GET", f"/subjects/{_quote(ref['subject'])}/versions/"
                                    f"{ref['version']}", format="serialized"))
        proto.name = name
        pool.Add(proto)
        added.add(name)

    main = f"pyq_schema_{record.get('id', 'main')}.proto"
    add(main, record)
    return pool.FindFileByName(main)


def _quote(subject: str) -> str:
    import urllib.parse

    return urllib.parse.quote(subject, safe="")


def message_at(file: FileDescriptor, indexes: Sequence[int]) -> Descriptor:
    """The message of a message-index path (ValueError when it names none)."""
    types = list(file.message_types_by_name.values())
    desc = None
    for i in indexes:
        if i >= len(types):
            raise ValueError(f"message indexes {list(indexes)} name no message of the schema")
        desc = types[i]
        types = list(desc.nested_types)
    if desc is None:
        raise ValueError("empty message indexes")
    return desc


def index_path(desc: Descriptor) -> list[int]:
    """The message-index path of ``desc`` in its file."""
    path = []
    d: Descriptor | None = desc
    while d is not None:
        siblings = (list(d.containing_type.nested_types) if d.containing_type is not None
                    else list(d.file.message_types_by_name.values()))
        path.append(next(i for i, s in enumerate(siblings) if s.full_name == d.full_name))
        d = d.containing_type
    return path[::-1]


def choose_message(file: FileDescriptor, name: str | None, option: str) -> Descriptor:
    """The file's first message, or the one ``name``d (full or short name, nested with
    dots); ValueError naming ``option`` and the messages there are."""
    top = list(file.message_types_by_name.values())
    if not top:
        raise ValueError(f"the Protobuf schema ({file.package or 'no package'}) has no message")
    if name is None:
        return top[0]
    everything: list[Descriptor] = []
    stack = list(top)
    while stack:
        d = stack.pop(0)
        everything.append(d)
        stack.extend(d.nested_types)
    wanted = name.strip().lstrip(".")
    for d in everything:
        relative = d.full_name[len(file.package) + 1:] if file.package else d.full_name
        if wanted in (d.full_name, relative):
            return d
    raise ValueError(f"{option}={name}: no such message; the schema has "
                     f"{', '.join(d.full_name for d in everything)}")


def _quote_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _is_map(f: FieldDescriptor) -> bool:
    return (f.type == _F.TYPE_MESSAGE and f.message_type.GetOptions().map_entry
            and _is_repeated(f))


def _is_repeated(f: FieldDescriptor) -> bool:
    return bool(f.is_repeated)


def message_types(desc: Descriptor, where: str = "value") -> tuple[str, pa.DataType]:
    """(Spark DDL type, Arrow type) of messages ``desc``; every field nullable."""
    return _message(desc, where, ())


def _message(desc: Descriptor, where: str, stack: tuple[str, ...]) -> tuple[str, pa.DataType]:
    if desc.full_name in stack:
        raise UnsupportedProtobuf(f"{where}: message {desc.full_name} is recursive (no Spark "
                                  "type)")
    ddls, fields = [], []
    for f in desc.fields:
        ddl, arrow = _field(f, f"{where}.{f.name}", stack + (desc.full_name,))
        ddls.append(f"{_quote_name(f.name)}: {ddl}")
        fields.append(pa.field(f.name, arrow, True))
    if not fields:
        raise UnsupportedProtobuf(f"{where}: message {desc.full_name} has no fields (Spark has "
                                  "no empty struct)")
    return f"struct<{', '.join(ddls)}>", pa.struct(fields)


def _single(f: FieldDescriptor, where: str, stack: tuple[str, ...]) -> tuple[str, pa.DataType]:
    if f.type in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        name = f.message_type.full_name
        if name == TIMESTAMP:
            return "timestamp", pa.timestamp("us", tz="UTC")
        if name in WRAPPERS:
            return SCALARS[f.message_type.fields_by_name["value"].type]
        return _message(f.message_type, where, stack)
    return SCALARS[f.type]


def _field(f: FieldDescriptor, where: str, stack: tuple[str, ...]) -> tuple[str, pa.DataType]:
    if _is_map(f):
        k, v = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        kd, ka = _single(k, where + "{key}", stack)
        vd, va = _single(v, where + "{}", stack)
        return f"map<{kd},{vd}>", pa.map_(pa.field("key", ka, False), pa.field("value", va, True))
    ddl, arrow = _single(f, where, stack)
    if _is_repeated(f):
        return f"array<{ddl}>", pa.list_(pa.field("element", arrow, True))
    return ddl, arrow


def _has_presence(f: FieldDescriptor) -> bool:
    return bool(f.has_presence)


# ---- message <-> plain values ------------------------------------------------------------
def to_python(msg: Any) -> dict[str, Any]:
    """The row of a message: a dict per the types above."""
    out: dict[str, Any] = {}
    for f in msg.DESCRIPTOR.fields:
        value = getattr(msg, f.name)
        if _is_map(f):
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = {k: _value(vf, value[k]) for k in value}
        elif _is_repeated(f):
            out[f.name] = [_value(f, v) for v in value]
        elif _has_presence(f) and not msg.HasField(f.name):
            out[f.name] = None
        else:
            out[f.name] = _value(f, value)
    return out


def _value(f: FieldDescriptor, v: Any) -> Any:
    t = f.type
    if t in (_F.TYPE_MESSAGE, _F.TYPE_GROUP):
        name = f.message_type.full_name
        if name == TIMESTAMP:
            return EPOCH + datetime.timedelta(seconds=v.seconds, microseconds=v.nanos // 1000)
        if name in WRAPPERS:
            return _value(f.message_type.fields_by_name["value"], v.value)
        return to_python(v)
    if t == _F.TYPE_ENUM:
        value = f.enum_type.values_by_number.get(v)
        return str(v) if value is None else value.name
    if t in UNSIGNED_64:
        return decimal.Decimal(v)
    return v


def from_python(cls: type, row: dict[str, Any]) -> Any:
    """A message of class ``cls`` from a row (dict of fields, None for unset); ValueError
    naming the field that does not fit."""
    msg = cls()
    _fill(msg, row, "")
    return msg


def _fill(msg: Any, row: dict[str, Any], where: str) -> None:
    for f in msg.DESCRIPTOR.fields:
        v = row.get(f.name)
        if v is None:
            continue
        path = f"{where}{f.name}"
        try:
            if _is_map(f):
                target = getattr(msg, f.name)
                vf = f.message_type.fields_by_name["value"]
                items = v.items() if isinstance(v, dict) else v
                for k, item in items:
                    if vf.type == _F.TYPE_MESSAGE:
                        _set_message(target[k], vf, item, path)
                    else:
                        target[k] = _scalar(vf, item)
            elif _is_repeated(f):
                target = getattr(msg, f.name)
                for item in v:
                    if f.type == _F.TYPE_MESSAGE:
                        _set_message(target.add(), f, item, path)
                    else:
                        target.append(_scalar(f, item))
            elif f.type == _F.TYPE_MESSAGE:
                _set_message(getattr(msg, f.name), f, v, path)
            else:
                setattr(msg, f.name, _scalar(f, v))
        except ValueError as e:
            if str(e).startswith("field "):
                raise
            raise ValueError(f"field {path}: {e}") from None
        except TypeError as e:
            raise ValueError(f"field {path}: {e}") from None


def _set_message(target: Any, f: FieldDescriptor, v: Any, path: str) -> None:
    name = f.message_type.full_name
    if name == TIMESTAMP:
        if not isinstance(v, datetime.datetime):
            raise ValueError(f"a timestamp, not {type(v).__name__}")
        if v.tzinfo is None:  # PySpark's rows give local time (Arrow batches give UTC)
            v = v.astimezone(datetime.timezone.utc)
        delta = v - EPOCH
        seconds = delta.days * 86400 + delta.seconds
        target.seconds, target.nanos = seconds, delta.microseconds * 1000
    elif name in WRAPPERS:
        target.value = _scalar(f.message_type.fields_by_name["value"], v)
    else:
        if not isinstance(v, dict):
            raise ValueError(f"a struct, not {type(v).__name__}")
        target.SetInParent()
        _fill(target, v, path + ".")


def _scalar(f: FieldDescriptor, v: Any) -> Any:
    if f.type == _F.TYPE_ENUM:
        if isinstance(v, str):
            value = f.enum_type.values_by_name.get(v)
            if value is None:
                raise ValueError(f"{v!r} is not a value of enum {f.enum_type.full_name} "
                                 f"({', '.join(f.enum_type.values_by_name)})")
            return value.number
        return int(v)
    if f.type in UNSIGNED_64 and isinstance(v, decimal.Decimal):
        return int(v)
    if f.type == _F.TYPE_BYTES and isinstance(v, bytearray):
        return bytes(v)
    return v

