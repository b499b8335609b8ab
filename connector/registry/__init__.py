"""Schema'd data in Confluent's wire format, shared by the CLI, the Spark source and
:mod:`connector.functions`: the Schema Registry REST client (:mod:`.client`), the
``schemaRegistry.*`` settings (:mod:`.settings`), the Avro to Spark/Arrow type mapping
(:mod:`.avro_types`) and the batched decoder of framed values (:mod:`.avro_decoding`)."""
