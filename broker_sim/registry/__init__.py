"""pyq's schema registry: the Confluent Schema Registry REST API, served by brokers.

Modules, from the wire inwards:

- :mod:`.server` -- a broker's registry: the HTTP server (werkzeug) and its wiring;
- :mod:`.http_api` -- the REST routes, JSON in and out, the error model on the wire;
- :mod:`.registry` -- the operations (register, lookup, delete, config, mode, checks);
- :mod:`.store` -- the record log and reading it to the end before answering;
- :mod:`.kafka_log` -- the ``_schemas`` topic over the Kafka protocol;
- :mod:`.state` -- the state machine the records build (ids decided by log order);
- :mod:`.compatibility` -- which schema pairs each compatibility level checks;
- :mod:`.formats` -- the schema-format seam: ``schemaType`` -> parse, canonical form, rules;
- :mod:`.avro_schema` -- Avro parsing, canonical forms and reader/writer rules (``avro``);
- :mod:`.json_schema` -- JSON Schema: meta-schema checks and ``$ref`` (``jsonschema``),
  Confluent's open/closed content-model rules;
- :mod:`.protobuf_schema` -- Protobuf: ``.proto`` compiled by protoc (``grpcio-tools``) or
  a base64 ``FileDescriptorProto``, Confluent's Protobuf rules over the descriptors;
- :mod:`.errors`, :mod:`.listener` -- the error codes; the ``schema.registry.*`` options.

Schema types: ``AVRO`` (the default), ``JSON`` and ``PROTOBUF``.
"""
