"""Column functions for users of any source (pyq's, Spark's ``format("kafka")``, files).

``from_confluent_avro(col, schemaRegistryUrl=..., subject=... | schemaId=..., options)``
decodes a binary column of Confluent-framed Avro (magic byte 0, 4-byte schema id, Avro
binary) into the struct of the reader schema — the subject's latest version when the
query is defined, a pinned ``version`` of it, or ``schemaId`` — with each record's writer
schema fetched once by id and resolved into the reader schema by Avro's rules. Types as in
:mod:`connector.registry.avro_types`.

>>> from connector.functions import from_confluent_avro                  # doctest: +SKIP
>>> df = spark.read.format("kafka").option(...).load()                   # doctest: +SKIP
>>> df.select(from_confluent_avro("value", schemaRegistryUrl=url, subject="clicks-value")
...           .alias("click")).select("click.*")                         # doctest: +SKIP

``options``: the ``schemaRegistry.*`` settings (:mod:`connector.registry.settings`) besides
the URL, and ``mode``: ``FAILFAST`` (default: the query fails naming the reason) or
``PERMISSIVE`` (a value that does not decode gives null), as Spark's ``from_avro``.

``to_confluent_avro(col, schemaRegistryUrl=..., subject=..., schema=AVRO_JSON |
schemaId=..., autoRegisterSchemas=True)`` is the other way: a struct column (or any column
whose values match the schema) encoded as Confluent-framed Avro bytes, ready for a sink's
``value`` column. The writer schema is ``schema`` registered under ``subject`` (looked up
only, with ``autoRegisterSchemas=False``; a schema the subject's compatibility level
refuses fails here with the registry's 409 naming the subject and the rule), or
``schemaId``, or the subject's latest version.

The Protobuf and JSON Schema twins take the same arguments:
``from_confluent_protobuf(col, ..., message=None)`` / ``to_confluent_protobuf(col, ...,
schema=PROTO_TEXT, message=None)`` read and write the schema's first message, or the one
``message`` names (types as in :mod:`connector.registry.protobuf_types`; the message
indexes of the wire format are read and written); ``from_confluent_json(col, ...,
validate=False)`` / ``to_confluent_json(col, ..., schema=JSON_SCHEMA_TEXT)`` read (checked
against the writer schema with ``validate=True``) and write JSON Schema data (types and
checks as in :mod:`connector.registry.json_schema_codec`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from connector.option_values import OptionError, parse_positive_int
from connector.registry.avro_decoding import resolve_reader
from connector.registry.avro_encoding import writer_schema
from connector.registry.json_schema_codec import json_writer, resolve_json_reader
from connector.registry.protobuf_codec import protobuf_writer, resolve_protobuf_reader
from connector.registry.settings import OPTIONS as REGISTRY_OPTIONS
from connector.registry.settings import RegistrySettings, getter, parse_registry_settings

__all__ = ["from_confluent_avro", "from_confluent_json", "from_confluent_protobuf",
           "to_confluent_avro", "to_confluent_json", "to_confluent_protobuf"]


def _reader_args(function: str, schemaRegistryUrl: str | None, subject: str | None,
                 schemaId: int | None, version: int | str | None,
                 options: Mapping[str, str] | None
                 ) -> tuple[RegistrySettings, bool, str | None, int | None]:
    """(registry, permissive, version, schema id) of a from_* call; refuses bad arguments."""
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    known = {n.lower() for n in (*REGISTRY_OPTIONS, "mode")}
    for name, value in opts.items():
        if name.lower() not in known:
            raise OptionError(name, value, "one of mode, " + ", ".join(REGISTRY_OPTIONS))
    if schemaRegistryUrl is not None:
        opts["schemaRegistry.url"] = schemaRegistryUrl
    get = getter(opts)
    registry = parse_registry_settings(get, function)
    mode = (get("mode") or "FAILFAST").strip().upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise OptionError("mode", get("mode"), "FAILFAST or PERMISSIVE")
    if (subject is None) == (schemaId is None):
        raise OptionError("subject/schemaId", subject if schemaId is None else schemaId,
                          "exactly one of subject and schemaId")
    if version is not None and subject is None:
        raise OptionError("version", version, "only with subject")
    if version is not None and str(version).strip().lower() != "latest":
        parse_positive_int("version", str(version), 1)
    sid = None if schemaId is None else parse_positive_int("schemaId", str(schemaId), 0)
    return registry, mode == "PERMISSIVE", None if version is None else str(version), sid


def _decoding_udf(function: str, spec: Any, permissive: bool, col: Any) -> Any:
    from pyspark.sql.functions import udf

    decoders: dict[str, Any] = {}  # one per Python worker, made there

    def decode(data):  # no hints: PySpark would read them as a pandas UDF's
        if data is None:
            return None
        decoder = decoders.get("d")
        if decoder is None:
            decoder = decoders["d"] = spec.decoder()
        try:
            return decoder.decode_one(bytes(data))
        except ValueError as e:
            if permissive:
                return None
            raise ValueError(f"{function}: a value does not decode: {e} (mode=FAILFAST;"
                             " mode=PERMISSIVE gives null)") from None

    return udf(decode, spec.ddl)(col)


def from_confluent_avro(col: Any, schemaRegistryUrl: str | None = None, subject: str | None = None,
                        schemaId: int | None = None, version: int | str | None = None,
                        options: Mapping[str, str] | None = None) -> Any:
    """The decoded struct column of binary ``col`` (a Column or a column name); see the
    module doc. Invalid arguments are refused here, naming them."""
    registry, permissive, ver, sid = _reader_args("from_confluent_avro", schemaRegistryUrl,
                                                  subject, schemaId, version, options)
    spec = resolve_reader("value", registry, subject, ver, sid)
    return _decoding_udf("from_confluent_avro", spec, permissive, col)


def from_confluent_protobuf(col: Any, schemaRegistryUrl: str | None = None,
                            subject: str | None = None, schemaId: int | None = None,
                            version: int | str | None = None, message: str | None = None,
                            options: Mapping[str, str] | None = None) -> Any:
    """The decoded struct column of binary ``col`` holding Confluent-framed Protobuf
    messages (``message``, or the schema's first); see the module doc."""
    registry, permissive, ver, sid = _reader_args("from_confluent_protobuf", schemaRegistryUrl,
                                                  subject, schemaId, version, options)
    try:
        spec = resolve_protobuf_reader("value", registry, subject, ver, sid, message, "message")
    except ValueError as e:
        if isinstance(e, OptionError):
            raise
        raise OptionError("message", message, f"a message of the schema with a Spark type: "
                          f"{e}") from None
    return _decoding_udf("from_confluent_protobuf", spec, permissive, col)


def from_confluent_json(col: Any, schemaRegistryUrl: str | None = None,
                        subject: str | None = None, schemaId: int | None = None,
                        version: int | str | None = None, validate: bool = False,
                        options: Mapping[str, str] | None = None) -> Any:
    """The decoded struct column of binary ``col`` holding Confluent-framed JSON Schema
    data (checked against each writer schema with ``validate``); see the module doc."""
    registry, permissive, ver, sid = _reader_args("from_confluent_json", schemaRegistryUrl,
                                                  subject, schemaId, version, options)
    try:
        spec = resolve_json_reader("value", registry, subject, ver, sid, bool(validate))
    except ValueError as e:
        if isinstance(e, OptionError):
            raise
        raise OptionError("subject/schemaId", subject or schemaId, f"a JSON Schema with a "
                          f"Spark type: {e}") from None
    return _decoding_udf("from_confluent_json", spec, permissive, col)


def _writer_args(function: str, schemaRegistryUrl: str | None, subject: str | None,
                 schema: str | None, schemaId: int | None,
                 options: Mapping[str, str] | None) -> tuple[RegistrySettings, int | None]:
    opts = {str(k): str(v) for k, v in (options or {}).items()}
    known = {n.lower() for n in REGISTRY_OPTIONS}
    for name, value in opts.items():
        if name.lower() not in known:
            raise OptionError(name, value, "one of " + ", ".join(REGISTRY_OPTIONS))
    if schemaRegistryUrl is not None:
        opts["schemaRegistry.url"] = schemaRegistryUrl
    registry = parse_registry_settings(getter(opts), function)
    if schema is not None and schemaId is not None:
        raise OptionError("schema/schemaId", schemaId, "one of schema and schemaId")
    if schemaId is None and subject is None:
        raise OptionError("subject", None, "a subject (with schema, or for its latest version) "
                          "unless schemaId is given")
    return registry, None if schemaId is None else parse_positive_int("schemaId", str(schemaId), 0)


def _encoding_udf(function: str, encode_one: Callable[[Any], bytes], col: Any) -> Any:
    from pyspark.sql import Row
    from pyspark.sql.functions import udf

    def encode(value):  # no hints: PySpark would read them as a pandas UDF's
        if value is None:
            return None
        datum = value.asDict(recursive=True) if isinstance(value, Row) else value
        try:
            return encode_one(datum)
        except ValueError as e:
            raise ValueError(f"{function}: {e}") from None

    return udf(encode, "binary")(col)


def to_confluent_avro(col: Any, schemaRegistryUrl: str | None = None, subject: str | None = None,
                      schema: str | None = None, schemaId: int | None = None,
                      autoRegisterSchemas: bool = True,
                      options: Mapping[str, str] | None = None) -> Any:
    """The Confluent-framed Avro bytes of ``col`` (a Column or a column name); see the
    module doc. Invalid arguments, and a schema the registry refuses, fail here."""
    registry, sid = _writer_args("to_confluent_avro", schemaRegistryUrl, subject, schema,
                                 schemaId, options)
    writer = writer_schema(registry, subject, schema, sid, autoRegisterSchemas)
    return _encoding_udf("to_confluent_avro", writer.encode, col)


def to_confluent_protobuf(col: Any, schemaRegistryUrl: str | None = None,
                          subject: str | None = None, schema: str | None = None,
                          schemaId: int | None = None, message: str | None = None,
                          autoRegisterSchemas: bool = True,
                          options: Mapping[str, str] | None = None) -> Any:
    """The Confluent-framed Protobuf bytes (message indexes included) of ``col``, as
    ``message`` (or the schema's first) of ``schema`` (.proto text); see the module doc."""
    registry, sid = _writer_args("to_confluent_protobuf", schemaRegistryUrl, subject, schema,
                                 schemaId, options)
    try:
        writer = protobuf_writer(registry, subject, schema, sid, autoRegisterSchemas, message,
                                 "message")
    except ValueError as e:
        if isinstance(e, OptionError) or not str(e).startswith("message="):
            raise
        raise OptionError("message", message, f"a message of the schema: {e}") from None
    return _encoding_udf("to_confluent_protobuf", writer.encode, col)


def to_confluent_json(col: Any, schemaRegistryUrl: str | None = None, subject: str | None = None,
                      schema: str | None = None, schemaId: int | None = None,
                      autoRegisterSchemas: bool = True,
                      options: Mapping[str, str] | None = None) -> Any:
    """The Confluent-framed JSON of ``col``, checked against ``schema`` (a JSON Schema);
    see the module doc."""
    registry, sid = _writer_args("to_confluent_json", schemaRegistryUrl, subject, schema,
                                 schemaId, options)
    writer = json_writer(registry, subject, schema, sid, autoRegisterSchemas)
    return _encoding_udf("to_confluent_json", writer.encode, col)
