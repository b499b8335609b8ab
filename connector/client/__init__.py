"""pyq's Kafka client: producer, range fetcher, group consumer and admin, on the project's
own codec.

Every byte on the wire is encoded and decoded by :mod:`broker_sim.protocol` (the same
sans-I/O codec the broker uses); time, topic-partitions and the threads' shape come from
:mod:`broker_sim.common`, TLS contexts and SCRAM from :mod:`broker_sim.security`. Nothing
here depends on another Kafka client library.

Modules, one concept each::

    config                typed, validated options with Kafka's names and defaults
    option_kinds          what each kind of option accepts (parsers, rules, sasl.jaas.config)
    security_config       security options checked against security.protocol (stores, SASL)
    security              TLS context and SASL mechanisms (PLAIN, SCRAM) for connections
    errors                client-side errors (plus the shared Kafka errors re-exported here)
    connection            one broker connection: connect, ApiVersions, in-flight FIFO
    network_client        all connections on one selector, poll(), metadata refresh
    request_future        the outcome of one request, completed by the I/O thread
    sync_client           blocking request/response on the caller's thread
    metadata              cluster snapshot (brokers, leaders, partition counts) and refresh policy
    retry                 when a failed produce may be tried again (producer and sink)

    partitioner           murmur2 for keys, sticky partitions for null keys
    buffer_pool           buffer.memory accounting; send() blocks here when it is used up
    producer_batch        one batch of one partition
    record_future         what send() returns: a future per record, one result per batch
    accumulator           per-partition batch deques: ready / drain / expire / reenqueue
    produce_request       the Produce request body (the sender's and the sink's)
    idempotence           producer id, epoch and per-partition sequence numbers
    sender                the producer's I/O thread
    transaction_channel   requests to a transactional id's coordinator, with Kafka's retries
    transaction_manager   a transactional producer's side of transactions (its adder thread)
    producer              Producer

    fetcher               Fetcher: read [from, until) of partitions from their leaders
    columnar              fetched batches -> numpy / Arrow columns without per-record objects
    columnar_numpy        columnar's numpy engine (where the C scanner is not built)
    record_scan           the C record scanner (_record_scan.c), loaded through ctypes
    aborted               read_committed: dropping aborted transactions by batch headers
    offsets               ListOffsets (earliest, latest, by timestamp)
    leader_requests       a per-partition request to each leader, retried until all answer
    offset_fetch          OffsetFetch bodies and answers for one group, at any version
    delete_records        DeleteRecords: move partitions' log start offsets up

    consumer              Consumer: subscribe, poll into Arrow, commit
    coordinator_client    a member's link to its group coordinator; offsets as a member
    group_member          the classic protocol's member (join, sync, heartbeat thread)
    consumer_protocol     the classic protocol's subscription and assignment bytes
    assignors             the classic protocol's client-side assignors (range, roundrobin)
    consumer_group_member the consumer protocol's member (KIP-848, its heartbeat thread)
    consumer_membership   the KIP-848 member's state machine, without I/O

    config_admin          topic and broker configs (Describe/Alter/IncrementalAlterConfigs)
    group_admin           groups: committed offsets, list, describe, delete
    admin                 Admin: topics, configs, offsets, group offsets, users, ACLs, cluster
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

#: Where each name of this package lives. The package imports a module only when one of
#: its names is first asked for: a Spark query's planning process needs the admin client,
#: not the producer, the consumer or the columnar decoder (which imports pyarrow.compute),
#: and every streaming query start pays for what that process imports.
_WHERE = {
    **dict.fromkeys(("KafkaError", "NotLeaderOrFollower", "OffsetOutOfRange", "PyqError",
                     "UnknownTopicOrPartition", "error_for_code"), "broker_sim.protocol.errors"),
    **dict.fromkeys(("Admin", "ClusterDescription", "NewTopic", "OffsetAndMetadata",
                     "TopicDescription"), ".admin"),
    **dict.fromkeys(("KAFKA_SCHEMA", "KAFKA_SCHEMA_WITH_HEADERS", "RecordColumns"), ".columnar"),
    **dict.fromkeys(("AdminConfig", "ClientConfig", "ConsumerConfig", "FetcherConfig",
                     "ProducerConfig"), ".config"),
    **dict.fromkeys(("AlterConfigOp", "ConfigEntry", "ConfigSynonym"), ".config_admin"),
    **dict.fromkeys(("Consumer", "NoOffsetForPartitionError"), ".consumer"),
    **dict.fromkeys(("AuthenticationError", "BufferExhaustedError", "ClientError", "ConfigError",
                     "DisconnectError", "IncompatibleBrokerError", "KafkaTimeoutError",
                     "NodeNotReadyError", "OffsetOutOfRangeError", "ProducerClosedError",
                     "RecordTooLargeError", "RequestTimeoutError"), ".errors"),
    **dict.fromkeys(("Fetcher", "FetchRange"), ".fetcher"),
    **dict.fromkeys(("GroupDescription", "GroupListing", "MemberDescription"), ".group_admin"),
    "CommitFailedError": ".group_member",
    "TopicPartition": ".metadata",
    **dict.fromkeys(("EARLIEST", "LATEST", "OffsetAndTimestamp"), ".offsets"),
    "Producer": ".producer",
    **dict.fromkeys(("RecordFuture", "RecordMetadata"), ".record_future"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # the next look-up finds it without this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


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
