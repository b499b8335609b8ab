"""The reference pyq is judged against: Apache Kafka, run from its own jars.

Nothing here is shipped with pyq; the test suite and the benchmarks use it.

- :mod:`reference.jars` fetches Kafka's jars (the broker ``kafka_2.13`` and ``kafka-tools``,
  with their runtime dependencies) from Maven Central into ``.cache/`` (ignored by git) the
  first time they are needed, through the committed ``reference/kafka/pom.xml``.
- :mod:`reference.kafka_cluster` starts KRaft clusters of real Kafka JVMs on loopback.
- :mod:`reference.kafka_tools` runs Kafka's command-line tools (``kafka-topics.sh`` and the
  rest, by their main classes) against any cluster, ours or Kafka's.

``python -m reference kafka`` (what ``make kafka`` runs) fetches the jars and says where
they are.
"""
