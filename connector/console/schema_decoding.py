"""Keys and values in Confluent's wire format, decoded for the message browser through the
schema registry the console is given.

The framing: a magic byte 0, the schema id (4 bytes, big-endian), then the payload, which
the schema's type (``schemaType``, the registry's formats) says how to read:

* ``AVRO``: the Avro binary encoding of the datum (fastavro, references fetched first);
  shown as JSON;
* ``JSON``: JSON text; shown pretty-printed;
* ``PROTOBUF``: the message indexes (a zigzag varint count, then that many zigzag
  varints; a single 0 for the first message of the file) then the Protobuf encoding;
  the schema and its references are fetched as serialized ``FileDescriptorProto`` messages
  (``?format=serialized``; ``.proto`` text is compiled by grpcio-tools' protoc instead)
  into a fresh descriptor pool per schema id, with the well-known files they import, and
  the message is shown as JSON with the field names of the ``.proto``.

:meth:`SchemaDecoder.decode` gives the text, the schema id, its type and the subjects that
hold it (``/schemas/ids/{id}/versions``), or None when the bytes are not framed, the id is
not the registry's, or the payload does not decode with that schema: the browser then
shows the bytes as text or hex, as without a registry.

Threading: request threads call :meth:`SchemaDecoder.decode` at once; the cache of schemas
(one entry per id, an id the registry refuses included, so it is asked once; not an
unreachable registry's) is under a lock, and protoc runs under it (one compile at a
time).
"""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any, NamedTuple

from connector.registry.avro_types import parse_registry_schema
from connector.registry.client import RegistryClient, RegistryError, RegistryRefusal
from connector.registry.framing import read_message_indexes, split_header


class Decoded(NamedTuple):
    text: str
    schema_id: int
    schema_type: str  # AVRO, JSON or PROTOBUF
    subjects: list[str]  # "subject v3" for each subject version holding the schema


class _Schema(NamedTuple):
    schema_type: str
    parsed: Any  # fastavro's parsed schema; Protobuf: (pool, FileDescriptorProto); JSON: None
    subjects: list[str]


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


class SchemaDecoder:
    """Decodes Confluent-framed bytes through ``client`` (see the module doc)."""

    def __init__(self, client: RegistryClient) -> None:
        self.client = client
        self._schemas: dict[int, _Schema | None] = {}
        self._lock = threading.Lock()

    def decode(self, data: bytes | None) -> Decoded | None:
        if data is None:
            return None
        try:
            schema_id, _ = split_header(data)
        except ValueError:  # not framed
            return None
        schema = self._schema(schema_id)
        if schema is None:
            return None
        try:
            text = self._payload(schema, data[5:])
        except Exception:  # not this schema's encoding: the bytes are shown as they are
            return None
        return Decoded(text, schema_id, schema.schema_type, schema.subjects)

    def _payload(self, schema: _Schema, payload: bytes) -> str:
        if schema.schema_type == "AVRO":
            from fastavro import schemaless_reader

            stream = io.BytesIO(payload)
            datum = schemaless_reader(stream, schema.parsed, None)
            if stream.tell() != len(payload):
                raise ValueError("trailing bytes")
            return json.dumps(datum, indent=2, ensure_ascii=False, default=_json_default)
        if schema.schema_type == "JSON":
            return json.dumps(json.loads(payload), indent=2, ensure_ascii=False)
        from google.protobuf import json_format, message_factory

        pool, file = schema.parsed
        indexes, pos = read_message_indexes(payload, 0)
        top = file.message_type[indexes[0]].name
        descriptor = pool.FindMessageTypeByName(f"{file.package}.{top}" if file.package else top)
        for index in indexes[1:]:
            descriptor = descriptor.nested_types[index]
        message = message_factory.GetMessageClass(descriptor)()
        message.ParseFromString(payload[pos:])
        return str(json_format.MessageToJson(message, preserving_proto_field_name=True, indent=2))

    def _schema(self, schema_id: int) -> _Schema | None:
        """The schema of ``schema_id``; None (remembered) when the registry refuses the id
        or its schema does not parse, None (asked again next time) when the registry
        cannot be reached."""
        with self._lock:
            if schema_id not in self._schemas:
                try:
                    self._schemas[schema_id] = self._fetch(schema_id)
                except (RegistryRefusal, ValueError):
                    self._schemas[schema_id] = None
                except (RegistryError, OSError):
                    return None
            return self._schemas[schema_id]

    def _fetch(self, schema_id: int) -> _Schema:
        record = {"id": schema_id, **self.client.schema_by_id(schema_id)}
        schema_type = record.get("schemaType") or "AVRO"
        held = self.client.request("GET", f"/schemas/ids/{schema_id}/versions")
        subjects = [f"{v['subject']} v{v['version']}" for v in held or []]
        if schema_type == "AVRO":
            return _Schema("AVRO", parse_registry_schema(self.client, record, {}), subjects)
        if schema_type == "JSON":
            return _Schema("JSON", None, subjects)
        if schema_type == "PROTOBUF":
            return _Schema("PROTOBUF", self._compile(record), subjects)
        raise ValueError(f"schema type {schema_type}")

    def _compile(self, record: dict[str, Any]) -> tuple[Any, Any]:
        """A fresh pool holding the schema's file, its references and the well-known files
        it imports; (pool, the schema's FileDescriptorProto). The registry is asked for
        the serialized form (``?format=serialized``: a base64 ``FileDescriptorProto``);
        a registry that answers ``.proto`` text has it compiled by protoc."""
        from google.protobuf import descriptor_pool

        pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()
        served = self.client.request("GET", f"/schemas/ids/{record['id']}", format="serialized")
        self._add_references(pool, record.get("references") or [], added)
        file = self._file(served["schema"], "schema.proto", record.get("references") or [])
        self._add(pool, file, added)
        return pool, file

    def _add_references(self, pool: Any, references: list[dict[str, Any]],
                        added: set[str]) -> None:
        for ref in references:
            if ref["name"] in added:
                continue
            found = self.client.request(
                "GET", f"/subjects/{_quote(ref['subject'])}/versions/{ref['version']}",
                format="serialized")
            self._add_references(pool, found.get("references") or [], added)
            self._add(pool, self._file(found["schema"], ref["name"],
                                       found.get("references") or []), added)

    def _add(self, pool: Any, file: Any, added: set[str]) -> None:
        """``file`` into ``pool`` after the well-known files (google/protobuf/...) it
        imports, which protobuf's own default pool holds."""
        import importlib

        from google.protobuf import descriptor_pb2, descriptor_pool

        for dependency in file.dependency:
            if dependency in added or not dependency.startswith("google/protobuf/"):
                continue
            module = dependency.removesuffix(".proto").replace("/", ".") + "_pb2"
            importlib.import_module(module)
            known = descriptor_pb2.FileDescriptorProto()
            descriptor_pool.Default().FindFileByName(dependency).CopyToProto(known)
            self._add(pool, known, added)
        pool.Add(file)
        added.add(file.name)

    def _file(self, text: str, name: str, references: list[dict[str, Any]]) -> Any:
        """The FileDescriptorProto of a served schema: base64 (serialized), or ``.proto``
        text compiled by protoc."""
        import binascii

        from google.protobuf import descriptor_pb2
        from google.protobuf.message import DecodeError

        try:
            file = descriptor_pb2.FileDescriptorProto.FromString(
                base64.b64decode(text, validate=True))
        except (binascii.Error, DecodeError, ValueError):
            file = self._protoc(text, references)
        file.name = name
        return file

    def _protoc(self, text: str, references: list[dict[str, Any]]) -> Any:
        import grpc_tools
        from google.protobuf import descriptor_pb2
        from grpc_tools import protoc

        with tempfile.TemporaryDirectory(prefix="pyq-console-proto-") as tmp:
            root = Path(tmp)
            self._write_references(root, references, set())
            (root / "schema.proto").write_text(text)
            well_known = Path(grpc_tools.__file__).parent / "_proto"
            code = protoc.main(["protoc", f"-I{tmp}", f"-I{well_known}",
                                f"--descriptor_set_out={tmp}/out.pb", "schema.proto"])
            if code != 0:
                raise ValueError("protoc refused the schema")
            files = descriptor_pb2.FileDescriptorSet.FromString((root / "out.pb").read_bytes())
        return files.file[0]

    def _write_references(self, root: Path, references: list[dict[str, Any]],
                          seen: set[str]) -> None:
        for ref in references:
            if ref["name"] in seen:
                continue
            seen.add(ref["name"])
            found = self.client.version(ref["subject"], str(ref["version"]))
            self._write_references(root, found.get("references") or [], seen)
            path = root / ref["name"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(found["schema"])


def _quote(subject: str) -> str:
    import urllib.parse

    return urllib.parse.quote(subject, safe="")
