"""Protobuf schemas as the registry keeps them (``schemaType: PROTOBUF``), parsed by protoc.

Two spellings are taken, as Confluent's registry takes them:

- ``.proto`` text: compiled by the ``protoc`` that ``grpcio-tools`` bundles, in-process
  (``grpc_tools.protoc``), into a ``FileDescriptorProto``. The text is written to a
  temporary directory; its references are handed to protoc as an input descriptor set,
  each file named by its reference *name* (``import "address.proto";`` with a reference
  named ``address.proto``); protobuf's well-known types (``google/protobuf/*.proto``) come
  from grpcio-tools' include directory. When protoc refuses the text, it is compiled once
  more in a child process to get protoc's reason (the in-process compiler prints it to the
  process's stderr), which the 42201 carries.
- a base64 serialized ``FileDescriptorProto`` (what confluent-kafka's
  ``ProtobufSerializer`` registers): decoded and built into a fresh
  ``google.protobuf.descriptor_pool.DescriptorPool`` with its references, which checks it.

:attr:`ProtobufSchema.canonical` (identity) is the base64 of the ``FileDescriptorProto``
serialized deterministically, with what does not change the schema cleared: its file name,
``source_code_info``, the ``json_name`` protoc fills in, and ``syntax = "proto2"`` (the
default). So a ``.proto`` text and the descriptor the serializer sends for it are the same
schema (same id). :attr:`ProtobufSchema.text` -- what ``GET /schemas/ids/{id}`` serves --
is the text as first registered under that identity: the ``.proto`` text when it came as
text (protobuf's Python library has no ``.proto`` printer, and a hand-written one would be
a second source of truth), the base64 descriptor when it came so.
``?format=serialized`` serves :meth:`ProtobufSchema.serialized` (the canonical base64),
which confluent-kafka's deserializer asks for.

Compatibility (:func:`reader_incompatibilities`) is Confluent's Protobuf rule list, over
the descriptors: ``PACKAGE_CHANGED``, ``MESSAGE_REMOVED``; per field number
``FIELD_KIND_CHANGED`` (scalar / message / enum), ``FIELD_SCALAR_KIND_CHANGED`` (outside
the wire-compatible groups int32/uint32/int64/uint64/bool, sint32/sint64,
fixed32/sfixed32, fixed64/sfixed64, string/bytes), ``FIELD_NAMED_TYPE_CHANGED``,
``FIELD_LABEL_CHANGED`` (singular <-> repeated), ``REQUIRED_FIELD_ADDED`` /
``REQUIRED_FIELD_REMOVED`` (proto2), ``ONEOF_FIELD_REMOVED``,
``FIELD_MOVED_TO_EXISTING_ONEOF``, ``MULTIPLE_FIELDS_MOVED_TO_ONEOF``. Compatible, as in
Confluent's: messages, fields, enums and enum values added or removed, a field renamed,
oneofs added.

Threading: protoc runs under :data:`_PROTOC_LOCK` (one compile at a time per process);
instances are immutable after parse and safe to share.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import grpc_tools
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message import DecodeError
from grpc_tools import protoc

from .errors import invalid_schema

SCHEMA_TYPE = "PROTOBUF"
_MAIN_FILE = "pyq_registry_schema.proto"
_WELL_KNOWN = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_PROTOC_LOCK = threading.Lock()
_FDP = descriptor_pb2.FieldDescriptorProto


class ProtobufSchema:
    """One parsed Protobuf schema (see the module docstring)."""

    schema_type = SCHEMA_TYPE

    def __init__(self, text: str, file: descriptor_pb2.FileDescriptorProto,
                 references: Sequence[tuple[str, ProtobufSchema]]) -> None:
        self.text = text
        self.file = file
        self.references = tuple(references)
        self.canonical = base64.standard_b64encode(
            file.SerializeToString(deterministic=True)).decode("ascii")

    def serialized(self) -> str:
        """The ``FileDescriptorProto`` as base64 (``?format=serialized``)."""
        return self.canonical

    @classmethod
    def parse(cls, text: str, references: Sequence[tuple[str, ProtobufSchema]] = ()) -> ProtobufSchema:
        if text.strip() and _BASE64.match(text):
            file = _from_base64(text, references)
        else:
            file = _compile(text, references)
        return cls(text, _normalized(file), references)

    def types(self) -> dict[str, Any]:
        """Every message and enum of this file by full name (``.pkg.Outer.Inner``)."""
        out: dict[str, Any] = {}
        prefix = f".{self.file.package}" if self.file.package else ""

        def walk(scope: str, messages: Any, enums: Any) -> None:
            for e in enums:
                out[f"{scope}.{e.name}"] = e
            for m in messages:
                out[f"{scope}.{m.name}"] = m
                walk(f"{scope}.{m.name}", m.nested_type, m.enum_type)
        walk(prefix, self.file.message_type, self.file.enum_type)
        return out

    def __repr__(self) -> str:
        return f"ProtobufSchema(package={self.file.package!r})"


def _normalized(file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    out = descriptor_pb2.FileDescriptorProto()
    out.CopyFrom(file)
    out.ClearField("name")
    out.ClearField("source_code_info")
    if out.syntax == "proto2":
        out.ClearField("syntax")

    def clear(messages: Any) -> None:
        for m in messages:
            for f in list(m.field) + list(m.extension):
                f.ClearField("json_name")
            clear(m.nested_type)
    clear(out.message_type)
    for f in out.extension:
        f.ClearField("json_name")
    return out


def _reference_files(references: Sequence[tuple[str, ProtobufSchema]]) -> Iterator[descriptor_pb2.FileDescriptorProto]:
    """Each reference's file (named by its reference name) after its own references."""
    seen: set[str] = set()

    def visit(name: str, schema: ProtobufSchema) -> Iterator[descriptor_pb2.FileDescriptorProto]:
        for sub_name, sub in schema.references:
            yield from visit(sub_name, sub)
        if name not in seen:
            seen.add(name)
            named = descriptor_pb2.FileDescriptorProto()
            named.CopyFrom(schema.file)
            named.name = name
            yield named
    for name, schema in references:
        yield from visit(name, schema)


def _compile(text: str, references: Sequence[tuple[str, ProtobufSchema]]) -> descriptor_pb2.FileDescriptorProto:
    with tempfile.TemporaryDirectory(prefix="pyq-proto-") as tmp:
        with open(os.path.join(tmp, _MAIN_FILE), "w", encoding="utf-8") as f:
            f.write(text)
        refs = descriptor_pb2.FileDescriptorSet(file=list(_reference_files(references)))
        args = [f"-I{tmp}", f"-I{_WELL_KNOWN}", f"--descriptor_set_out={tmp}/out.pb"]
        if refs.file:
            with open(os.path.join(tmp, "refs.pb"), "wb") as f:
                f.write(refs.SerializeToString())
            args.append(f"--descriptor_set_in={tmp}/refs.pb")
        args.append(_MAIN_FILE)
        with _PROTOC_LOCK:
            code = protoc.main(["protoc", *args])
        if code != 0:
            raise invalid_schema(_protoc_reason(args, tmp))
        out = descriptor_pb2.FileDescriptorSet()
        with open(os.path.join(tmp, "out.pb"), "rb") as f:
            out.ParseFromString(f.read())
    return out.file[-1]


def _protoc_reason(args: list[str], tmp: str) -> str:
    """protoc's message for a refused text: the same compile in a child process."""
    done = subprocess.run([sys.executable, "-m", "grpc_tools.protoc", *args], cwd=tmp,
                          capture_output=True, text=True, timeout=60)
    reason = (done.stderr or done.stdout).strip().replace(f"{tmp}/", "")
    reason = reason.replace(_MAIN_FILE, "schema.proto")
    return f"protoc: {reason or f'exit code {done.returncode}'}"


def _from_base64(text: str, references: Sequence[tuple[str, ProtobufSchema]]) -> descriptor_pb2.FileDescriptorProto:
    try:
        raw = base64.b64decode("".join(text.split()), validate=True)
        file = descriptor_pb2.FileDescriptorProto.FromString(raw)
    except (binascii.Error, ValueError, DecodeError) as e:
        raise invalid_schema(f"neither .proto text nor a base64 FileDescriptorProto: {e}") from None
    file.name = _MAIN_FILE
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()
    try:
        for ref in _reference_files(references):
            pool.Add(ref)
            added.add(ref.name)
        for dep in file.dependency:
            if dep not in added and dep.startswith("google/protobuf/"):
                _add_well_known(pool, dep, added)
        pool.Add(file)
        pool.FindFileByName(_MAIN_FILE)
    except (TypeError, KeyError, ValueError) as e:
        raise invalid_schema(f"the FileDescriptorProto does not build: {e}") from None
    return file


def _add_well_known(pool: descriptor_pool.DescriptorPool, name: str, added: set[str]) -> None:
    """Add protobuf's well-known ``name`` (and what it imports) from the protobuf package."""
    if name in added:
        return
    module = "google.protobuf." + name[len("google/protobuf/"):-len(".proto")].replace("/", ".")
    try:
        descriptor = importlib.import_module(module + "_pb2").DESCRIPTOR
    except ImportError:
        raise KeyError(f"import {name!r} is neither a reference nor a well-known type") from None
    proto = descriptor_pb2.FileDescriptorProto()
    descriptor.CopyToProto(proto)
    for dep in proto.dependency:
        _add_well_known(pool, dep, added)
    pool.Add(proto)
    added.add(name)


# ---- compatibility --------------------------------------------------------------------
_SCALAR_GROUPS = [
    {_FDP.TYPE_INT32, _FDP.TYPE_UINT32, _FDP.TYPE_INT64, _FDP.TYPE_UINT64, _FDP.TYPE_BOOL},
    {_FDP.TYPE_SINT32, _FDP.TYPE_SINT64},
    {_FDP.TYPE_FIXED32, _FDP.TYPE_SFIXED32},
    {_FDP.TYPE_FIXED64, _FDP.TYPE_SFIXED64},
    {_FDP.TYPE_STRING, _FDP.TYPE_BYTES},
]
_NAMED = {_FDP.TYPE_MESSAGE: "message", _FDP.TYPE_GROUP: "message", _FDP.TYPE_ENUM: "enum"}


def _kind(field: Any) -> str:
    return _NAMED.get(field.type, "scalar")


def _type_name(field: Any) -> str:
    return field.type_name if field.type in _NAMED else _FDP.Type.Name(field.type)[5:].lower()


def _oneof(message: Any, field: Any) -> str | None:
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return str(message.oneof_decl[field.oneof_index].name)


def _compare_messages(name: str, r: Any, w: Any) -> list[str]:
    out: list[str] = []
    r_fields = {f.number: f for f in r.field}
    w_fields = {f.number: f for f in w.field}
    w_oneofs = {_oneof(w, f) for f in w.field} - {None}
    moved_to_new_oneof: dict[str, int] = {}
    for number in sorted(set(r_fields) | set(w_fields)):
        where = f"{name[1:]}.{(r_fields.get(number) or w_fields[number]).name} (#{number})"
        rf, wf = r_fields.get(number), w_fields.get(number)
        if wf is None:
            assert rf is not None
            if rf.label == _FDP.LABEL_REQUIRED:
                out.append(f"REQUIRED_FIELD_ADDED: {where}")
            continue
        if rf is None:
            if wf.label == _FDP.LABEL_REQUIRED:
                out.append(f"REQUIRED_FIELD_REMOVED: {where}")
            if _oneof(w, wf) is not None:
                out.append(f"ONEOF_FIELD_REMOVED: {where} left oneof {_oneof(w, wf)}")
            continue
        if _kind(rf) != _kind(wf):
            out.append(f"FIELD_KIND_CHANGED: {where} {_kind(wf)} -> {_kind(rf)}")
        elif _kind(rf) == "scalar" and rf.type != wf.type and not any(
                rf.type in g and wf.type in g for g in _SCALAR_GROUPS):
            out.append(f"FIELD_SCALAR_KIND_CHANGED: {where} {_type_name(wf)} -> {_type_name(rf)}")
        elif _kind(rf) != "scalar" and rf.type_name != wf.type_name:
            out.append(f"FIELD_NAMED_TYPE_CHANGED: {where} {wf.type_name} -> {rf.type_name}")
        if (rf.label == _FDP.LABEL_REPEATED) != (wf.label == _FDP.LABEL_REPEATED):
            out.append(f"FIELD_LABEL_CHANGED: {where} repeated is "
                       f"{wf.label == _FDP.LABEL_REPEATED} -> {rf.label == _FDP.LABEL_REPEATED}")
        elif rf.label == _FDP.LABEL_REQUIRED and wf.label != _FDP.LABEL_REQUIRED:
            out.append(f"REQUIRED_FIELD_ADDED: {where} became required")
        elif wf.label == _FDP.LABEL_REQUIRED and rf.label != _FDP.LABEL_REQUIRED:
            out.append(f"REQUIRED_FIELD_REMOVED: {where} is no longer required")
        r_oneof, w_oneof = _oneof(r, rf), _oneof(w, wf)
        if w_oneof is not None and r_oneof is None:
            out.append(f"ONEOF_FIELD_REMOVED: {where} left oneof {w_oneof}")
        elif r_oneof is not None and w_oneof is None:
            if r_oneof in w_oneofs:
                out.append(f"FIELD_MOVED_TO_EXISTING_ONEOF: {where} into {r_oneof}")
            else:
                moved_to_new_oneof[r_oneof] = moved_to_new_oneof.get(r_oneof, 0) + 1
    for oneof, count in sorted(moved_to_new_oneof.items()):
        if count > 1:
            out.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF: {count} fields of {name[1:]} into "
                       f"{oneof}")
    return out


def reader_incompatibilities(reader: ProtobufSchema, writer: ProtobufSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``; empty if it can."""
    out: list[str] = []
    if reader.file.package != writer.file.package:
        out.append(f"PACKAGE_CHANGED: {writer.file.package!r} -> {reader.file.package!r}")
        return out
    r_types, w_types = reader.types(), writer.types()
    for name, w in w_types.items():
        if not isinstance(w, descriptor_pb2.DescriptorProto):
            continue
        r = r_types.get(name)
        if not isinstance(r, descriptor_pb2.DescriptorProto):
            out.append(f"MESSAGE_REMOVED: {name[1:]}")
            continue
        out += _compare_messages(name, r, w)
    return out
