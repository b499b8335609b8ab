"""pyq's Kafka client: producer, range fetcher and admin, on the project's own codec.

Every byte on the wire is encoded and decoded by :mod:`broker_sim.protocol` (the same
sans-I/O codec the broker uses); time, topic-partitions and the sender's thread shape come
from :mod:`broker_sim.common`. Nothing here depends on another Kafka client library.

Modules, one concept each::

    config            typed, validated options with Kafka's names and defaults
    security          TLS context and SASL mechanisms (PLAIN, SCRAM) for connections
    errors            client-side errors (plus the shared Kafka errors re-exported here)
    connection        one broker connection: connect, ApiVersions, in-flight FIFO
    network_client    all connections on one selector, poll(), metadata refresh
    sync_client       blocking request/response on the caller's thread
    metadata          cluster snapshot (brokers, leaders, partition counts) and refresh policy
    partitioner       murmur2 for keys, sticky partitions for null keys
    buffer_pool       buffer.memory accounting; send() blocks here when it is used up
    producer_batch    one batch of one partition; record_future: what send() returns
    accumulator       per-partition batch deques: ready / drain / expire / reenqueue
    idempotence       producer id, epoch and per-partition sequence numbers
    sender            the producer's I/O thread
    producer          Producer
    columnar          fetched batches -> numpy / Arrow columns without per-record objects
    offsets           ListOffsets (earliest, latest, by timestamp)
    delete_records    DeleteRecords: move partitions' log start offsets up
    offset_fetch      OffsetFetch bodies and answers for one group, at any version
    fetcher           Fetcher: read [from, until) of partitions from their leaders
    config_admin      topic and broker configs (Describe/Alter/IncrementalAlterConfigs)
    admin             Admin: topics, configs, offsets, group offsets, cluster
"""

from broker_sim.protocol.errors import (
    KafkaError,
    NotLeaderOrFollower,
    OffsetOutOfRange,
    PyqError,
    UnknownTopicOrPartition,
    error_for_code,
)

from .admin import Admin, ClusterDescription, NewTopic, OffsetAndMetadata, TopicDescription
from .columnar import KAFKA_SCHEMA, KAFKA_SCHEMA_WITH_HEADERS, RecordColumns
from .config import AdminConfig, ClientConfig, ConsumerConfig, FetcherConfig, ProducerConfig
from .config_admin import AlterConfigOp, ConfigEntry, ConfigSynonym
from .consumer import Consumer, NoOffsetForPartitionError
from .errors import (
    AuthenticationError,
    BufferExhaustedError,
    ClientError,
    ConfigError,
    DisconnectError,
    IncompatibleBrokerError,
    KafkaTimeoutError,
    NodeNotReadyError,
    OffsetOutOfRangeError,
    ProducerClosedError,
    RecordTooLargeError,
    RequestTimeoutError,
)
from .fetcher import Fetcher, FetchRange
from .group_admin import GroupDescription, GroupListing, MemberDescription
from .group_member import CommitFailedError
from .metadata import TopicPartition
from .offsets import EARLIEST, LATEST, OffsetAndTimestamp
from .producer import Producer
from .record_future import RecordFuture, RecordMetadata

__all__ = [
    "EARLIEST", "KAFKA_SCHEMA", "KAFKA_SCHEMA_WITH_HEADERS", "LATEST",
    "Admin", "AlterConfigOp", "AuthenticationError", "AdminConfig", "BufferExhaustedError", "ClientConfig", "ClientError",
    "ClusterDescription", "CommitFailedError", "ConfigEntry", "ConfigError", "ConfigSynonym", "Consumer", "ConsumerConfig",
    "DisconnectError", "FetchRange", "Fetcher", "FetcherConfig", "GroupDescription", "GroupListing",
    "MemberDescription", "NoOffsetForPartitionError",
    "IncompatibleBrokerError", "KafkaError", "KafkaTimeoutError", "NewTopic",
    "NodeNotReadyError", "NotLeaderOrFollower", "OffsetAndMetadata", "OffsetAndTimestamp",
    "OffsetOutOfRange", "OffsetOutOfRangeError", "Producer", "ProducerClosedError",
    "ProducerConfig", "PyqError", "RecordColumns", "RecordFuture", "RecordMetadata",
    "RecordTooLargeError", "RequestTimeoutError", "TopicDescription", "TopicPartition",
    "UnknownTopicOrPartition", "error_for_code",
]
