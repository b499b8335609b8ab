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
Rows have Spark's Kafka source schema (``key, value, topic, partition, offset, timestamp,
timestampType``), plus ``headers`` with ``includeHeaders=true`` and ``attempt`` (0 on first
delivery, k on the k-th redelivery of a failed record) when a ``groupId`` is set.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from .source.options import parse_source_options
from .source.schema import spark_schema


class PyqDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "pyq"

    def schema(self) -> str:
        include_headers = str(self.options.get("includeHeaders", "false")).lower() == "true"
        return spark_schema(include_headers, include_attempt="groupId" in self.options)

    def reader(self, schema: StructType) -> DataSourceReader:
        from .source.spark_readers import PyqBatchReader

        return PyqBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from .source.spark_readers import PyqStreamReader

        options = parse_source_options(self.options, streaming=True)
        reader = PyqStreamReader(options)
        reader.driver  # noqa: B018 - connect now: a wrong address fails at start(), not later
        return reader
