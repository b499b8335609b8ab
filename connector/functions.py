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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connector.option_values import OptionError, parse_positive_int
from connector.registry.avro_decoding import AvroDecoder, resolve_reader
from connector.registry.avro_encoding import writer_schema
from connector.registry.settings import OPTIONS as REGISTRY_OPTIONS
from connector.registry.settings import getter, parse_registry_settings

__all__ = ["from_confluent_avro", "to_confluent_avro"]


def from_confluent_avro(col: Any, schemaRegistryUrl: str | None = None, subject: str | None = None,
                        schemaId: int | None = None, version: int | str | None = None,
                        options: Mapping[str, str] | None = None) -> Any:
    """The decoded struct column of binary ``col`` (a Column or a column name); see the
    module doc. Invalid arguments are refused here, naming them."""
    from pyspark.sql.functions import udf

    opts = {str(k): str(v) for k, v in (options or {}).items()}
    known = {n.lower() for n in (*REGISTRY_OPTIONS, "mode")}
    for name, value in opts.items():
        if name.lower() not in known:
            raise OptionError(name, value, "one of mode, " + ", ".join(REGISTRY_OPTIONS))
    if schemaRegistryUrl is not None:
        opts["schemaRegistry.url"] = schemaRegistryUrl
    get = getter(opts)
    registry = parse_registry_settings(get, "from_confluent_avro")
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
    spec = resolve_reader("value", registry, subject, None if version is None else str(version), sid)
    permissive = mode == "PERMISSIVE"
    decoders: dict[str, AvroDecoder] = {}  # one per Python worker, made there

    def decode(data):  # no hints: PySpark would read them as a pandas UDF's
        if data is None:
            return None
        decoder = decoders.get("d")
        if decoder is None:
            decoder = decoders["d"] = AvroDecoder(spec)
        try:
            return decoder.decode_one(bytes(data))
        except ValueError as e:
            if permissive:
                return None
            raise ValueError(f"from_confluent_avro: a value does not decode: {e} (mode=FAILFAST;"
                             " mode=PERMISSIVE gives null)") from None

    return udf(decode, spec.ddl)(col)


def to_confluent_avro(col: Any, schemaRegistryUrl: str | None = None, subject: str | None = None,
                      schema: str | None = None, schemaId: int | None = None,
                      autoRegisterSchemas: bool = True,
                      options: Mapping[str, str] | None = None) -> Any:
    """The Confluent-framed Avro bytes of ``col`` (a Column or a column name); see the
    module doc. Invalid arguments, and a schema the registry refuses, fail here."""
    from pyspark.sql import Row
    from pyspark.sql.functions import udf

    opts = {str(k): str(v) for k, v in (options or {}).items()}
    known = {n.lower() for n in REGISTRY_OPTIONS}
    for name, value in opts.items():
        if name.lower() not in known:
            raise OptionError(name, value, "one of " + ", ".join(REGISTRY_OPTIONS))
    if schemaRegistryUrl is not None:
        opts["schemaRegistry.url"] = schemaRegistryUrl
    registry = parse_registry_settings(getter(opts), "to_confluent_avro")
    if schema is not None and schemaId is not None:
        raise OptionError("schema/schemaId", schemaId, "one of schema and schemaId")
    if schemaId is None and subject is None:
        raise OptionError("subject", None, "a subject (with schema, or for its latest version) "
                          "unless schemaId is given")
    sid = None if schemaId is None else parse_positive_int("schemaId", str(schemaId), 0)
    writer = writer_schema(registry, subject, schema, sid, autoRegisterSchemas)

    def encode(value):  # no hints: PySpark would read them as a pandas UDF's
        if value is None:
            return None
        datum = value.asDict(recursive=True) if isinstance(value, Row) else value
        try:
            return writer.encode(datum)
        except ValueError as e:
            raise ValueError(f"to_confluent_avro: {e}") from None

    return udf(encode, "binary")(col)
