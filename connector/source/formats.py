"""``valueFormat`` / ``keyFormat``: the source's key and value columns decoded from
Confluent-framed Avro, Protobuf or JSON Schema into structs, and what happens to records that do not decode.

The options are declared once, in :class:`FormatOptions` (and the registry's in
:class:`~connector.registry.settings.RegistrySettings`); ``docs/options.md`` lists them with
their rules.

With ``groupId`` and ``deadLetterTopic`` set (and ``mode`` unset), a record that does not
decode takes the failed-records way instead (:mod:`connector.source.failures`): the task
reports it with its reason and leaves it out of the rows; it is redelivered up to
``maxRetries`` times (an unknown schema id may be registered meanwhile) and then copied to
the dead-letter topic with the reason in its ``pyq.reason`` header.

The reader schema is resolved on the driver when the query is defined (``load()``) and
again when it starts; each record is read with its own writer schema (fetched by id once)
and resolved into the reader schema by the format's rules (Avro's resolution; Protobuf's
field numbers, the message indexes naming the reader's message; JSON's properties by
name). Types: :mod:`connector.registry.avro_types`, :mod:`connector.registry.protobuf_types`,
:mod:`connector.registry.json_schema_codec`. A subject that gets a new latest
version between ``load()`` and the start of the query changes the column's type under
Spark's feet: pin ``valueSchemaVersion`` for queries that must not move.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from broker_sim.common import options as o
from broker_sim.common.options import option
from broker_sim.protocol.errors import PyqError
from connector.option_values import OptionError, parse_option
from connector.registry.avro_decoding import resolve_reader
from connector.registry.avro_types import UnsupportedAvro
from connector.registry.client import RegistryError
from connector.registry.json_schema_codec import UnsupportedJsonSchema, resolve_json_reader
from connector.registry.protobuf_codec import resolve_protobuf_reader
from connector.registry.protobuf_types import UnsupportedProtobuf
from connector.registry.settings import OPTIONS as REGISTRY_OPTIONS
from connector.registry.settings import getter, parse_registry_settings

FORMATS = ("binary", "avro", "protobuf", "json-schema")
SCHEMA_FORMATS = FORMATS[1:]
MODES = ("FAILFAST", "PERMISSIVE")


def _version(raw: Any) -> str:
    text = str(raw).strip()
    if text.lower() != "latest" and (not text.isdigit() or int(text) < 1):
        raise ValueError(raw)
    return text


FORMAT = o.choice(FORMATS, allowed=", ".join(FORMATS))
VERSION = o.custom("version", _version, "latest or an integer of at least 1")
SCHEMA_ID = o.integer(0, None, optional=True)


def _column_options(column: str) -> dict[str, Any]:
    """The options of one column (``value...`` or ``key...``), declared alike."""
    return {
        f"{column}_format": option(
            f"{column}Format", "binary", FORMAT, doc=f"`binary` (the bytes), or the {column} in "
            "Confluent's wire format with schemas in a registry: `avro`, `protobuf` or `json-schema`"),
        f"{column}_schema_version": option(
            f"{column}SchemaVersion", None, VERSION, default_doc="latest at query start",
            doc=f"the reader schema: this version of the subject `<topic>-{column}`"),
        f"{column}_schema_id": option(
            f"{column}SchemaId", None, SCHEMA_ID,
            doc="the reader schema by its id (the only way with several topics)"),
        f"{column}_protobuf_message": option(
            f"{column}ProtobufMessage", None, o.OPTIONAL_STRING,
            default_doc="the schema's first message",
            doc="protobuf: the message the column holds (full name, or relative to the package)"),
        f"{column}_validate": option(
            f"{column}Validate", False, o.BOOL,
            doc="json-schema: check each value against its writer schema; a value it refuses "
            "is a bad record"),
    }


@dataclass(frozen=True)
class FormatOptions:
    """The source's decoding options (``valueFormat``/``keyFormat`` and what goes with them);
    the registry's are :class:`~connector.registry.settings.RegistrySettings`'. Declared
    here, read by :func:`parse_formats`."""

    value_format: str = _column_options("value")["value_format"]
    value_schema_version: str | None = _column_options("value")["value_schema_version"]
    value_schema_id: int | None = _column_options("value")["value_schema_id"]
    value_protobuf_message: str | None = _column_options("value")["value_protobuf_message"]
    value_validate: bool = _column_options("value")["value_validate"]
    key_format: str = _column_options("key")["key_format"]
    key_schema_version: str | None = _column_options("key")["key_schema_version"]
    key_schema_id: int | None = _column_options("key")["key_schema_id"]
    key_protobuf_message: str | None = _column_options("key")["key_protobuf_message"]
    key_validate: bool = _column_options("key")["key_validate"]
    mode: str = option(
        "mode", "FAILFAST", o.choice(MODES, case="upper", allowed="FAILFAST or PERMISSIVE"),
        doc="a record that does not decode: FAILFAST fails the query naming topic, partition, "
        "offset and the reason; PERMISSIVE gives a null column and the reason in the "
        "corrupt-record column")
    corrupt_column: str = option(
        "columnNameOfCorruptRecord", "_corrupt_record", o.STRING,
        doc="with mode=PERMISSIVE: the corrupt-record column's name")


OPTIONS = (*o.declared(FormatOptions), *REGISTRY_OPTIONS)


def _parsed(get: Callable[[str], str | None], name: str) -> Any:
    """The declared option ``name`` parsed (None when unset); refused: OptionError."""
    return parse_option(FormatOptions, get, name)


@dataclass(frozen=True)
class Formats:
    """The decoded columns of a query and its bad-record handling (picklable: it travels
    with each task's ranges). ``report_to``: (groupId, client options) when bad records
    take the failed-records way."""

    key: Any  # AvroColumn, ProtobufColumn or JsonColumn (each has .ddl, .decoder())
    value: Any
    mode: str = "FAILFAST"
    corrupt_column: str = "_corrupt_record"
    report_to: tuple[str, tuple[tuple[str, str], ...]] | None = None

    def ddl(self, column: str) -> str:
        spec = self.key if column == "key" else self.value
        return "binary" if spec is None else spec.ddl

    def decoders(self) -> dict[str, Any]:
        return {s.column: s.decoder() for s in (self.key, self.value) if s is not None}

    def apply(self, batch: Any, decoders: Mapping[str, Any],
              report: Callable[[list[dict[str, Any]]], None]) -> Any:
        """``batch`` (Arrow, binary key/value) with its columns decoded; bad records as
        :attr:`mode` or :attr:`report_to` say (``report`` sends failed-record reports)."""
        import pyarrow as pa

        reasons: list[str | None] = [None] * batch.num_rows
        columns = dict(zip(batch.schema.names, batch.columns, strict=True))
        fields = {f.name: f for f in batch.schema}
        for name, decoder in decoders.items():
            column, why = decoder.decode(columns[name].to_pylist())
            columns[name] = column
            fields[name] = pa.field(name, column.type, True)
            reasons = [r if w is None else (w if r is None else f"{r}; {w}")
                       for r, w in zip(reasons, why, strict=True)]
        out = pa.RecordBatch.from_arrays(list(columns.values()), schema=pa.schema(fields.values()))
        bad = [i for i, r in enumerate(reasons) if r is not None]
        if self.report_to is not None:
            if bad:
                topics, parts, offsets = (batch.column(n).to_pylist() for n in
                                          ("topic", "partition", "offset"))
                report([{"topic": topics[i], "partition": parts[i], "offset": offsets[i],
                         "reason": reasons[i]} for i in bad])
                keep = pa.array([r is None for r in reasons])
                out = out.filter(keep)
            return out
        if bad and self.mode == "FAILFAST":
            i = bad[0]
            where = (f"{batch.column('topic')[i].as_py()}-{batch.column('partition')[i].as_py()}"
                     f" offset {batch.column('offset')[i].as_py()}")
            raise BadRecordError(f"pyq source: the record at {where} does not decode: "
                                 f"{reasons[i]} (mode=FAILFAST; mode=PERMISSIVE keeps such "
                                 f"records with a null column and the reason in "
                                 f"{self.corrupt_column})")
        if self.mode == "PERMISSIVE":
            out = out.append_column(pa.field(self.corrupt_column, pa.string(), True),
                                    pa.array(reasons, pa.string()))
        return out


class BadRecordError(PyqError, RuntimeError):
    """A record that does not decode, under mode=FAILFAST."""


def parse_formats(options: Mapping[str, str], topics: tuple[str, ...] | None,
                  group_id: str | None, dead_letter_topic: str | None,
                  client: Mapping[str, Any]) -> Formats | None:
    """The query's formats (None when key and value are binary); asks the registry for the
    reader schemas. ``topics``: the single-topic subscription's topics (None for a pattern)."""
    get = getter(options)
    chosen: dict[str, str] = {}
    for column in ("key", "value"):
        fmt = _parsed(get, f"{column}Format") or "binary"
        chosen[column] = fmt
        for pin, only in (("SchemaVersion", SCHEMA_FORMATS), ("SchemaId", SCHEMA_FORMATS),
                          ("ProtobufMessage", ("protobuf",)), ("Validate", ("json-schema",))):
            if fmt not in only and get(column + pin) is not None:
                raise OptionError(column + pin, get(column + pin),
                                  f"only with {column}Format={' or '.join(only)}")
    mode_raw = get("mode")
    mode = _parsed(get, "mode") or "FAILFAST"
    corrupt = get("columnNameOfCorruptRecord")
    if set(chosen.values()) == {"binary"}:
        for name in ("mode", "columnNameOfCorruptRecord", *REGISTRY_OPTIONS):
            if get(name) is not None:
                shown = "<hidden>" if "password" in name or "user.info" in name else get(name)
                raise OptionError(name, shown, "only with valueFormat or keyFormat avro, "
                                  "protobuf or json-schema")
        return None
    if corrupt is not None and mode != "PERMISSIVE":
        raise OptionError("columnNameOfCorruptRecord", corrupt, "only with mode=PERMISSIVE")
    if corrupt is not None and (not corrupt.strip() or corrupt in
                                ("key", "value", "topic", "partition", "offset", "timestamp",
                                 "timestampType", "headers", "attempt")):
        raise OptionError("columnNameOfCorruptRecord", corrupt,
                          "a name that is not one of the source's columns")
    report_to = None
    if group_id and dead_letter_topic:
        if mode_raw is not None:
            raise OptionError("mode", mode_raw, "unset when groupId and deadLetterTopic are set "
                              "(bad records then go to the failed-records way and "
                              "deadLetterTopic)")
        report_to = (group_id, tuple(sorted((k, str(v)) for k, v in client.items())))
    decoded = [c for c in ("key", "value") if chosen[c] != "binary"]
    registry = parse_registry_settings(get, f"{decoded[0]}Format={chosen[decoded[0]]}")
    specs: dict[str, Any] = {}
    for column in decoded:
        fmt = chosen[column]
        version, schema_id = get(f"{column}SchemaVersion"), get(f"{column}SchemaId")
        if version is not None and schema_id is not None:
            raise OptionError(f"{column}SchemaVersion", version, f"not with {column}SchemaId "
                              "(one reader schema: a version of the subject, or an id)")
        _parsed(get, f"{column}SchemaVersion")
        sid = _parsed(get, f"{column}SchemaId")
        subject = None
        if sid is None:
            if topics is None or len(topics) != 1:
                shown = "a subscribePattern" if topics is None else ", ".join(topics)
                raise OptionError(f"{column}Format", fmt, f"with one topic, whose subject "
                                  f"<topic>-{column} gives the reader schema; {shown} has no "
                                  f"single subject: pin the reader schema with {column}SchemaId")
            subject = f"{topics[0]}-{column}"
        try:
            if fmt == "avro":
                specs[column] = resolve_reader(column, registry, subject, version, sid)
            elif fmt == "protobuf":
                specs[column] = resolve_protobuf_reader(
                    column, registry, subject, version, sid, get(f"{column}ProtobufMessage"),
                    f"{column}ProtobufMessage")
            else:
                specs[column] = resolve_json_reader(
                    column, registry, subject, version, sid,
                    bool(_parsed(get, f"{column}Validate")))
        except UnsupportedAvro as e:
            raise OptionError(f"{column}Format", "avro", f"an Avro schema with a Spark type: "
                              f"{e}") from None
        except (UnsupportedProtobuf, UnsupportedJsonSchema) as e:
            kind = "a Protobuf message" if fmt == "protobuf" else "a JSON Schema"
            raise OptionError(f"{column}Format", fmt, f"{kind} with a Spark type: {e}") from None
        except ValueError as e:  # the named message is not there
            if fmt != "protobuf" or isinstance(e, OptionError):
                raise
            raise OptionError(f"{column}ProtobufMessage", get(f"{column}ProtobufMessage"),
                              f"a message of the schema: {e}") from None
        except RegistryError as e:
            which = f"subject {subject} version {version or 'latest'}" if sid is None \
                else f"schema id {sid}"
            raise ValueError(f"pyq source: cannot get the {column} reader schema ({which}) from "
                             f"the schema registry {registry.url}: {e}") from None
    return Formats(specs.get("key"), specs.get("value"), mode,
                   corrupt if corrupt is not None else "_corrupt_record", report_to)
