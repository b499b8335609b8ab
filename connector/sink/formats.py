"""``valueFormat`` / ``keyFormat`` of the sink: a struct column written in Confluent's wire
format (magic byte 0, the schema id, then the Avro binary encoding, the Protobuf message
indexes and message, or the JSON text).

The options are declared once, in :class:`SinkFormatOptions` (and the registry's in
:class:`~connector.registry.settings.RegistrySettings`); ``docs/options.md`` lists them with
their rules.

The writer schema is looked up or registered on the driver when the query starts, so a
schema the subject's compatibility level refuses fails ``save()``/``start()`` — before any
row is written — with the registry's message (it names the subject and the rule, error
409). With avro the ``topic`` option is required (one subject for the query). Rows are
encoded on the executors, one Arrow batch at a time; a row that does not match the schema
fails its task naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from broker_sim.common import options as o
from broker_sim.common.options import option
from connector.registry.avro_encoding import writer_schema
from connector.registry.client import RegistryError
from connector.registry.json_schema_codec import json_writer
from connector.registry.protobuf_codec import protobuf_writer
from connector.registry.settings import OPTIONS as REGISTRY_OPTIONS
from connector.registry.settings import getter, parse_registry_settings

from ..option_values import OptionError, parse_option

STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
FORMATS = ("binary", "avro", "protobuf", "json-schema")
FORMAT = o.choice(FORMATS, allowed=", ".join(FORMATS))
#: Confluent's class names are accepted too (``io.confluent...TopicNameStrategy``).
def _strategy(raw: Any) -> str:
    for strategy in STRATEGIES:
        if strategy.lower() == str(raw).strip().split(".")[-1].lower():
            return strategy
    raise ValueError(raw)


STRATEGY = o.custom("strategy", _strategy, ", ".join(STRATEGIES))


def _column_options(column: str) -> dict[str, Any]:
    """The options of one column (``value...`` or ``key...``), declared alike."""
    return {
        "format": option(f"{column}Format", "binary", FORMAT,
                         doc=f"`binary` (a string or binary {column} column, as it is), or "
                         "`avro`, `protobuf`, `json-schema` (a struct column, encoded)"),
        "schema": option(f"{column}Schema", None, o.OPTIONAL_STRING,
                         default_doc="the subject's latest version",
                         doc="the writer schema (Avro JSON, `.proto` text, or JSON Schema)"),
        "strategy": option(f"{column}SubjectNameStrategy", "TopicNameStrategy", STRATEGY,
                           doc=f"the subject: TopicNameStrategy (`<topic>-{column}`), "
                           "RecordNameStrategy (the record's full name) or "
                           "TopicRecordNameStrategy (`<topic>-<full name>`); the last two need "
                           "the schema"),
        "message": option(f"{column}ProtobufMessage", None, o.OPTIONAL_STRING,
                          default_doc="the schema's first message",
                          doc="protobuf: the message written"),
    }


_VALUE, _KEY = _column_options("value"), _column_options("key")


@dataclass(frozen=True)
class SinkFormatOptions:
    """The sink's encoding options; the registry's are
    :class:`~connector.registry.settings.RegistrySettings`'. Declared here, read by
    :func:`parse_sink_formats`."""

    value_format: str = _VALUE["format"]
    value_schema: str | None = _VALUE["schema"]
    value_strategy: str = _VALUE["strategy"]
    value_protobuf_message: str | None = _VALUE["message"]
    key_format: str = _KEY["format"]
    key_schema: str | None = _KEY["schema"]
    key_strategy: str = _KEY["strategy"]
    key_protobuf_message: str | None = _KEY["message"]
    auto_register_schemas: bool = option(
        "autoRegisterSchemas", True, o.BOOL,
        doc="register the given schema under the subject (the registry answers the existing "
        "id when it is there); false: it must be registered already")


OPTIONS = (*o.declared(SinkFormatOptions), *REGISTRY_OPTIONS)


def _parsed(get: Any, name: str) -> Any:
    """The declared option ``name`` parsed (None when unset); refused: OptionError."""
    return parse_option(SinkFormatOptions, get, name)


@dataclass(frozen=True)
class SinkFormats:
    """The columns the sink encodes (picklable: it travels to the executors)."""

    writers: dict[str, Any]  # Avro, Protobuf or JSON writer schemas (.encode, .description)
    formats: dict[str, str]  # column -> avro, protobuf or json-schema

    def encode(self, batches: Iterator[Any]) -> Iterator[Any]:
        """Each Arrow batch with its encoded columns replaced by their binary encoding."""
        import pyarrow as pa

        for batch in batches:
            columns = dict(zip(batch.schema.names, batch.columns, strict=True))
            for name, writer in self.writers.items():
                values = columns[name].to_pylist(maps_as_pydicts="strict")
                out = []
                for i, v in enumerate(values):
                    try:
                        out.append(None if v is None else writer.encode(v))
                    except ValueError as e:
                        raise ValueError(f"pyq sink: row {i} of a batch: the {name} {e}") from None
                columns[name] = pa.array(out, pa.binary())
            yield pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


def _full_name(fmt: str, schema_text: str, option: str, message: str | None,
               message_option: str) -> str:
    if fmt == "protobuf":
        if message is None:
            raise OptionError(message_option, None, "the message's full name (package.Message), "
                              "required with a record subject name strategy")
        return message.strip().lstrip(".")
    if fmt == "json-schema":
        try:
            title = json.loads(schema_text).get("title")
        except (ValueError, AttributeError):
            title = None
        if not isinstance(title, str) or not title:
            raise OptionError(option, schema_text[:80], "a JSON Schema with a title (the record "
                              "name of the record subject name strategies)")
        return title
    try:
        schema = json.loads(schema_text)
        name, namespace = schema["name"], schema.get("namespace")
    except (ValueError, TypeError, KeyError):
        raise OptionError(option, schema_text[:80], "an Avro record schema (JSON with a name)") from None
    return name if "." in name or not namespace else f"{namespace}.{name}"


def parse_sink_formats(opts: dict[str, str], topic: str | None) -> SinkFormats | None:
    """The sink's encoded columns (None when both are binary); registers or looks up the
    writer schemas."""
    get = getter(opts)
    encoded: dict[str, str] = {}
    for column in ("key", "value"):
        fmt = _parsed(get, f"{column}Format") or "binary"
        if fmt != "binary":
            encoded[column] = fmt
        else:
            for name in (f"{column}Schema", f"{column}SubjectNameStrategy"):
                if get(name) is not None:
                    raise OptionError(name, get(name)[:80], f"only with {column}Format avro, "
                                      "protobuf or json-schema")
        if fmt != "protobuf" and get(f"{column}ProtobufMessage") is not None:
            raise OptionError(f"{column}ProtobufMessage", get(f"{column}ProtobufMessage"),
                              f"only with {column}Format=protobuf")
    if not encoded:
        for name in ("autoRegisterSchemas", *REGISTRY_OPTIONS):
            if get(name) is not None:
                raise OptionError(name, "<hidden>" if "password" in name or "user.info" in name
                                  else get(name), "only with valueFormat or keyFormat avro, "
                                  "protobuf or json-schema")
        return None
    first = next(iter(encoded))
    if topic is None:
        raise OptionError("topic", None, f"required with {first}Format={encoded[first]} (the "
                          "subject names the topic; a topic column is not supported with it)")
    registry = parse_registry_settings(get, f"{first}Format={encoded[first]}")
    auto = _parsed(get, "autoRegisterSchemas")
    auto = True if auto is None else auto
    writers: dict[str, Any] = {}
    for column, fmt in encoded.items():
        message = get(f"{column}ProtobufMessage")
        schema_text = get(f"{column}Schema")
        raw = get(f"{column}SubjectNameStrategy")
        strategy = _parsed(get, f"{column}SubjectNameStrategy") or "TopicNameStrategy"
        if strategy == "TopicNameStrategy":
            subject = f"{topic}-{column}"
        else:
            if schema_text is None:
                raise OptionError(f"{column}SubjectNameStrategy", raw,
                                  f"TopicNameStrategy unless {column}Schema is given (the "
                                  "subject is the record's name)")
            name = _full_name(fmt, schema_text, f"{column}Schema", message,
                              f"{column}ProtobufMessage")
            subject = name if strategy == "RecordNameStrategy" else f"{topic}-{name}"
        try:
            if fmt == "avro":
                writers[column] = writer_schema(registry, subject, schema_text, None, auto)
            elif fmt == "protobuf":
                writers[column] = protobuf_writer(registry, subject, schema_text, None, auto,
                                                  message, f"{column}ProtobufMessage")
            else:
                writers[column] = json_writer(registry, subject, schema_text, None, auto)
        except ValueError as e:  # a message that is not in the Protobuf schema
            if isinstance(e, OptionError):
                raise
            raise OptionError(f"{column}ProtobufMessage", message, f"a message of the schema: "
                              f"{e}") from None
        except RegistryError as e:
            raise ValueError(f"pyq sink: the {column} schema of subject {subject} from "
                             f"{registry.url}: {e}") from None
    return SinkFormats(writers, encoded)
