"""Avro in Confluent's wire format for ``pyq consume`` and ``pyq produce``.

Confluent's framing: a magic byte 0, the schema id (4 bytes, big-endian), then the Avro
binary encoding of the datum (no container file header). :class:`AvroDecoder` reads a
framed value into the JSON text of its datum, fetching each schema id once from the
registry (``/schemas/ids/{id}``, with its references); :class:`AvroEncoder` registers a
schema under a subject (``TOPIC-value`` / ``TOPIC-key``, Confluent's TopicNameStrategy;
the registry answers the existing id if it is there already, and refuses a schema its
compatibility level does not allow) and frames the Avro encoding of each JSON line.

The Avro work is fastavro's (``parse_schema``, ``schemaless_reader``/``writer``): no schema
parser here. JSON output follows the datum's Python types: bytes and fixed become strings
of their bytes as code points 0-255 (Avro's own JSON encoding of bytes), decimals strings,
dates, times and timestamps ISO 8601, UUIDs their text.

Threading: a decoder's cache is not locked; one thread (the consuming one) owns it.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import io
import json
import struct
import uuid
from typing import Any

from connector.registry.avro_types import parse_registry_schema as _parse
from connector.registry.client import RegistryClient

from .errors import EXIT_USAGE, CommandError

MAGIC = 0
FORMATS = ("binary", "avro")


def data_format(text: str) -> str:
    """An option type: ``binary`` (the bytes as they are) or ``avro``."""
    if text.strip().lower() not in FORMATS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be one of {', '.join(FORMATS)}")
    return text.strip().lower()


data_format.__name__ = "format"


def serde(text: str) -> tuple[str, str]:
    """An option type, kcat's ``-s``: ``key=FORMAT``, ``value=FORMAT`` or ``FORMAT`` (both)."""
    field, sep, fmt = text.rpartition("=")
    if sep and field.strip().lower() not in ("key", "value"):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be key=FORMAT, value=FORMAT or FORMAT")
    return (field.strip().lower() if sep else "both"), data_format(fmt)


serde.__name__ = "serde"


def add_format_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--key-format``/``--value-format`` and kcat's ``-s`` (``what``: decode or encode),
    then the registry's options."""
    from .schemas import add_registry_options

    group = parser.add_argument_group("schema'd data")
    for field in ("key", "value"):
        group.add_argument(f"--{field}-format", type=data_format, metavar="FORMAT",
                           help=f"{what} the {field}s as: binary (default) or avro "
                                "(Confluent-framed, schemas in the registry)")
    group.add_argument("-s", dest="serdes", type=serde, action="append", default=[],
                       metavar="[key=|value=]FORMAT",
                       help="kcat's spelling of --key-format/--value-format (repeatable; "
                            "without key= or value=, both)")
    if what == "encode":
        for field in ("key", "value"):
            group.add_argument(f"--{field}-schema", metavar="FILE",
                               help=f"the Avro schema of the {field}s (implies "
                                    f"--{field}-format avro): registered under "
                                    f"TOPIC-{field}, each {field} a JSON text encoded with it")
    add_registry_options(parser)


def formats(args: argparse.Namespace) -> dict[str, str]:
    """{"key": FORMAT, "value": FORMAT} from --key-format/--value-format and -s; the two
    spellings must agree."""
    chosen = {"key": getattr(args, "key_format", None), "value": getattr(args, "value_format", None)}
    for field, fmt in getattr(args, "serdes", []):
        for name in (("key", "value") if field == "both" else (field,)):
            if chosen[name] not in (None, fmt):
                raise CommandError(f"-s {field}={fmt} conflicts with {name} format "
                                   f"{chosen[name]}", EXIT_USAGE)
            chosen[name] = fmt
    for name in chosen:  # pyq produce: a schema file means avro
        if getattr(args, f"{name}_schema", None) is not None:
            if chosen[name] not in (None, "avro"):
                raise CommandError(f"--{name}-schema needs {name} format avro, not "
                                   f"{chosen[name]}", EXIT_USAGE)
            chosen[name] = "avro"
    return {name: fmt or "binary" for name, fmt in chosen.items()}


def registry_of(args: argparse.Namespace) -> RegistryClient:
    return RegistryClient(args.schema_registry, args.registry_ca, args.registry_user,
                          args.api_timeout_ms / 1000)


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def to_json(datum: Any) -> str:
    return json.dumps(datum, ensure_ascii=False, default=_json_default)


class AvroDecoder:
    """Confluent-framed Avro bytes -> the datum's JSON text (see the module doc)."""

    def __init__(self, client: RegistryClient) -> None:
        self.client = client
        self._schemas: dict[int, Any] = {}

    def schema(self, schema_id: int) -> Any:
        if schema_id not in self._schemas:
            record = {"id": schema_id, **self.client.schema_by_id(schema_id)}
            self._schemas[schema_id] = _parse(self.client, record, {})
        return self._schemas[schema_id]

    def decode(self, data: bytes | None, where: str) -> bytes | None:
        """The JSON of a framed datum (None stays None); ``where`` names the record in
        errors (``clicks-0@17 value``)."""
        from fastavro import schemaless_reader

        if data is None:
            return None
        if len(data) < 5 or data[0] != MAGIC:
            why = "too short" if data[:1] == bytes([MAGIC]) else "no magic byte 0"
            raise CommandError(f"{where} is not Confluent-framed Avro: {why} "
                               f"(first bytes {bytes(data[:5]).hex() or 'none'})")
        (schema_id,) = struct.unpack_from(">I", data, 1)
        schema = self.schema(schema_id)
        try:
            datum = schemaless_reader(io.BytesIO(data[5:]), schema, None)
        except (EOFError, ValueError, IndexError, UnicodeDecodeError) as e:
            raise CommandError(f"{where} does not decode with schema {schema_id}: "
                               f"{type(e).__name__}: {e}") from None
        return to_json(datum).encode()


class AvroEncoder:
    """JSON text -> Confluent-framed Avro bytes with a schema registered under
    ``subject`` (see the module doc)."""

    def __init__(self, client: RegistryClient, subject: str, schema_text: str) -> None:
        self.schema_id = client.register(subject, {"schema": schema_text})
        self.schema = _parse(client, {"id": self.schema_id, "schema": schema_text}, {})
        self._prefix = struct.pack(">bI", MAGIC, self.schema_id)

    def encode(self, text: bytes | None, where: str) -> bytes | None:
        from fastavro import schemaless_writer
        from fastavro.validation import ValidationError, validate

        if text is None:
            return None
        try:
            datum = json.loads(text)
        except ValueError as e:
            raise CommandError(f"{where} is not JSON: {e}") from None
        try:
            validate(datum, self.schema, raise_errors=True)
        except ValidationError as e:
            raise CommandError(f"{where} does not match schema {self.schema_id}: "
                               f"{' '.join(str(e).split())}") from None
        out = io.BytesIO()
        out.write(self._prefix)
        schemaless_writer(out, self.schema, datum)
        return out.getvalue()
