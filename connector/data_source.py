"""The ``pyq`` Spark data source: ``spark.read/readStream.format("pyq")`` (and the sink).

Installing the project makes the format available with no registration: PySpark imports
modules named ``pyspark_*`` and registers their ``DefaultSource`` (see ``pyspark_pyq``).

>>> df = (spark.readStream.format("pyq")                          # doctest: +SKIP
...       .option("kafka.bootstrap.servers", "127.0.0.1:9092")
...       .option("subscribe", "clicks")
...       .option("startingOffsets", "earliest")
...       .option("maxOffsetsPerTrigger", "100000")
...       .load())

The options are listed in :mod:`connector.source.options`; invalid ones fail at
``load()``/``start()`` with a message naming the option, the value and what is allowed.
Writing: ``df.write/writeStream.format("pyq")`` with a ``value`` column (and optional
``key``, ``topic``, ``partition``, ``headers``); every write is acks=all and a task
returns only once all its rows are acknowledged (see :mod:`connector.sink.writer`, also
for ``exactlyOnce``).

Rows read have Spark's Kafka source schema (``key, value, topic, partition, offset, timestamp,
timestampType``), plus ``headers`` with ``includeHeaders=true`` and ``attempt`` (0 on first
delivery, k on the k-th redelivery of a failed record) when a ``groupId`` is set.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from .source.options import check_names, formats_of, parse_source_options
from .source.schema import spark_schema


class PyqDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pyq"

    def schema(self) -> str:
        # Spark asks for the schema at load(): refuse unknown options there, before any read
        # (the checks that depend on batch or streaming follow in reader/streamReader).
        check_names(self.options)
        include_headers = str(self.options.get("includeHeaders", "false")).lower() == "true"
        return spark_schema(include_headers, include_attempt="groupId" in self.options,
                            formats=formats_of(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        from .source.spark_readers import PyqBatchReader

        return PyqBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .source.spark_readers import PyqStreamReader

        options = parse_source_options(self.options, streaming=True)
        reader = PyqStreamReader(options)
        reader.driver  # noqa: B018 - connect now: a wrong address fails at start(), not later
        return reader

    def _sink_options(self, schema: StructType):  # the return type is imported lazily
        from .sink.options import check_schema, parse_sink_options

        options = parse_sink_options(self.options)
        check_schema(schema, options)
        if options.topic is not None:
            from broker_sim.protocol.errors import TopicAuthorizationFailed
            from connector.client import Admin

            from .sink.writer import TOPIC_WAIT_MS

            with Admin(options.client()) as admin:
                try:
                    count = admin.await_topic(options.topic, TOPIC_WAIT_MS)
                except TopicAuthorizationFailed as e:
                    raise PermissionError(f"pyq sink: {e.message}; the sink needs Write on "
                                          f"{options.topic!r}") from e
                if count is None:
                    raise ValueError(f"pyq sink: topic {options.topic!r} does not exist (create it "
                                     "first, or enable auto.create.topics.enable on the brokers)")
        return options

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from .sink.spark_writers import PyqBatchWriter

        if overwrite:
            raise ValueError("pyq sink: save mode Overwrite is not supported (a log is append-only); "
                             "use Append")
        return PyqBatchWriter(self._sink_options(schema))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from .sink.spark_writers import PyqStreamWriter

        return PyqStreamWriter(self._sink_options(schema))
