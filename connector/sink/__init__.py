"""The Spark sink: rows with ``value`` (and optional key, topic, partition, headers) to pyq."""
