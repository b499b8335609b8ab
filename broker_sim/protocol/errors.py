"""One error hierarchy for broker and client, carrying Kafka's real error codes.

Every error pyq raises on purpose is a :class:`PyqError`, and every :class:`PyqError`
carries ``retriable`` (trying the same thing again may succeed: Kafka's split between
``RetriableException`` and the rest) and ``invalid_metadata`` (refresh metadata first).
Callers ask :func:`is_retriable`, which is False for anything that is not a
:class:`PyqError` (a ``TypeError`` is a bug, never worth a retry). Two families, kept apart
on purpose (as h11 separates local and remote protocol errors):

* :class:`KafkaError` subclasses are *protocol* errors with a Kafka ``code``: the broker
  answers with them, the client raises them when a response carries their code. Each has
  ``retriable`` (the client may retry the same request) and ``invalid_metadata`` (the
  client should refresh its metadata before retrying).
* :class:`MalformedFrame` is raised by the sans-I/O codec when bytes from the peer cannot
  be parsed; the network layer answers it by closing that one connection.

Errors detected on this side of the wire derive from :class:`PyqError` too: the client's
(:mod:`connector.client.errors`), :class:`ConfigError` (one class for a refused option of
the broker, the client, the source and the sink) and the connector's.

>>> error_for_code(6).__name__
'NotLeaderOrFollower'
>>> NotLeaderOrFollower.retriable, NotLeaderOrFollower.code
(True, 6)
>>> is_retriable(NotLeaderOrFollower()), is_retriable(ConfigError("x")), is_retriable(TypeError())
(True, False, False)
"""

from __future__ import annotations

from .pyq_error import KafkaError as KafkaError
from .pyq_error import MalformedFrame as MalformedFrame
from .pyq_error import PyqError as PyqError
from .pyq_error import is_retriable as is_retriable


class ConfigError(PyqError, ValueError):
    """A configuration value is invalid; the message names the option, its value and what
    is allowed. One class for the broker's, the client's and the connector's options."""


# The classes below were generated once from a (name, code, flags) table and are edited by
# hand from now on: one class per Kafka error code pyq sends or understands, in code order.
# ``retriable`` is also true wherever ``invalid_metadata`` is (refresh, then retry).


class UnknownServerError(KafkaError):
    """Kafka error -1, ``UNKNOWN_SERVER_ERROR``."""
    code = -1


class OffsetOutOfRange(KafkaError):
    """Kafka error 1, ``OFFSET_OUT_OF_RANGE``."""
    code = 1


class CorruptMessage(KafkaError):
    """Kafka error 2, ``CORRUPT_MESSAGE``."""
    code = 2
    retriable = True


class UnknownTopicOrPartition(KafkaError):
    """Kafka error 3, ``UNKNOWN_TOPIC_OR_PARTITION``."""
    code = 3
    retriable = True
    invalid_metadata = True


class InvalidFetchSize(KafkaError):
    """Kafka error 4, ``INVALID_FETCH_SIZE``."""
    code = 4


class LeaderNotAvailable(KafkaError):
    """Kafka error 5, ``LEADER_NOT_AVAILABLE``."""
    code = 5
    retriable = True
    invalid_metadata = True


class NotLeaderOrFollower(KafkaError):
    """Kafka error 6, ``NOT_LEADER_OR_FOLLOWER``."""
    code = 6
    retriable = True
    invalid_metadata = True


class RequestTimedOut(KafkaError):
    """Kafka error 7, ``REQUEST_TIMED_OUT``."""
    code = 7
    retriable = True


class BrokerNotAvailable(KafkaError):
    """Kafka error 8, ``BROKER_NOT_AVAILABLE``."""
    code = 8


class ReplicaNotAvailable(KafkaError):
    """Kafka error 9, ``REPLICA_NOT_AVAILABLE``."""
    code = 9
    retriable = True
    invalid_metadata = True


class MessageTooLarge(KafkaError):
    """Kafka error 10, ``MESSAGE_TOO_LARGE``."""
    code = 10


class OffsetMetadataTooLarge(KafkaError):
    """Kafka error 12, ``OFFSET_METADATA_TOO_LARGE``."""
    code = 12


class NetworkException(KafkaError):
    """Kafka error 13, ``NETWORK_EXCEPTION``."""
    code = 13
    retriable = True
    invalid_metadata = True


class CoordinatorLoadInProgress(KafkaError):
    """Kafka error 14, ``COORDINATOR_LOAD_IN_PROGRESS``."""
    code = 14
    retriable = True


class CoordinatorNotAvailable(KafkaError):
    """Kafka error 15, ``COORDINATOR_NOT_AVAILABLE``."""
    code = 15
    retriable = True


class NotCoordinator(KafkaError):
    """Kafka error 16, ``NOT_COORDINATOR``."""
    code = 16
    retriable = True


class InvalidTopic(KafkaError):
    """Kafka error 17, ``INVALID_TOPIC``."""
    code = 17


class RecordListTooLarge(KafkaError):
    """Kafka error 18, ``RECORD_LIST_TOO_LARGE``."""
    code = 18


class NotEnoughReplicas(KafkaError):
    """Kafka error 19, ``NOT_ENOUGH_REPLICAS``."""
    code = 19
    retriable = True


class NotEnoughReplicasAfterAppend(KafkaError):
    """Kafka error 20, ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``."""
    code = 20
    retriable = True


class InvalidRequiredAcks(KafkaError):
    """Kafka error 21, ``INVALID_REQUIRED_ACKS``."""
    code = 21


class IllegalGeneration(KafkaError):
    """Kafka error 22, ``ILLEGAL_GENERATION``."""
    code = 22


class InconsistentGroupProtocol(KafkaError):
    """Kafka error 23, ``INCONSISTENT_GROUP_PROTOCOL``."""
    code = 23


class InvalidGroupId(KafkaError):
    """Kafka error 24, ``INVALID_GROUP_ID``."""
    code = 24


class UnknownMemberId(KafkaError):
    """Kafka error 25, ``UNKNOWN_MEMBER_ID``."""
    code = 25


class InvalidSessionTimeout(KafkaError):
    """Kafka error 26, ``INVALID_SESSION_TIMEOUT``."""
    code = 26


class RebalanceInProgress(KafkaError):
    """Kafka error 27, ``REBALANCE_IN_PROGRESS``."""
    code = 27


class TopicAuthorizationFailed(KafkaError):
    """Kafka error 29, ``TOPIC_AUTHORIZATION_FAILED``."""
    code = 29


class GroupAuthorizationFailed(KafkaError):
    """Kafka error 30, ``GROUP_AUTHORIZATION_FAILED``."""
    code = 30


class ClusterAuthorizationFailed(KafkaError):
    """Kafka error 31, ``CLUSTER_AUTHORIZATION_FAILED``."""
    code = 31


class InvalidTimestamp(KafkaError):
    """Kafka error 32, ``INVALID_TIMESTAMP``."""
    code = 32


class UnsupportedSaslMechanism(KafkaError):
    """Kafka error 33, ``UNSUPPORTED_SASL_MECHANISM``."""
    code = 33


class IllegalSaslState(KafkaError):
    """Kafka error 34, ``ILLEGAL_SASL_STATE``."""
    code = 34


class UnsupportedVersion(KafkaError):
    """Kafka error 35, ``UNSUPPORTED_VERSION``."""
    code = 35


class TopicAlreadyExists(KafkaError):
    """Kafka error 36, ``TOPIC_ALREADY_EXISTS``."""
    code = 36


class InvalidPartitions(KafkaError):
    """Kafka error 37, ``INVALID_PARTITIONS``."""
    code = 37


class InvalidReplicationFactor(KafkaError):
    """Kafka error 38, ``INVALID_REPLICATION_FACTOR``."""
    code = 38


class InvalidReplicaAssignment(KafkaError):
    """Kafka error 39, ``INVALID_REPLICA_ASSIGNMENT``."""
    code = 39


class InvalidConfig(KafkaError):
    """Kafka error 40, ``INVALID_CONFIG``."""
    code = 40


class NotController(KafkaError):
    """Kafka error 41, ``NOT_CONTROLLER``."""
    code = 41
    retriable = True


class InvalidRequest(KafkaError):
    """Kafka error 42, ``INVALID_REQUEST``."""
    code = 42


class UnsupportedForMessageFormat(KafkaError):
    """Kafka error 43, ``UNSUPPORTED_FOR_MESSAGE_FORMAT``."""
    code = 43


class PolicyViolation(KafkaError):
    """Kafka error 44, ``POLICY_VIOLATION``."""
    code = 44


class OutOfOrderSequenceNumber(KafkaError):
    """Kafka error 45, ``OUT_OF_ORDER_SEQUENCE_NUMBER``."""
    code = 45


class DuplicateSequenceNumber(KafkaError):
    """Kafka error 46, ``DUPLICATE_SEQUENCE_NUMBER``."""
    code = 46


class InvalidProducerEpoch(KafkaError):
    """Kafka error 47, ``INVALID_PRODUCER_EPOCH``."""
    code = 47


class InvalidTxnState(KafkaError):
    """Kafka error 48, ``INVALID_TXN_STATE``: the request does not fit the transaction's
    state (e.g. a commit of a transaction being aborted)."""
    code = 48


class InvalidProducerIdMapping(KafkaError):
    """Kafka error 49, ``INVALID_PRODUCER_ID_MAPPING``."""
    code = 49


class InvalidTransactionTimeout(KafkaError):
    """Kafka error 50, ``INVALID_TRANSACTION_TIMEOUT``."""
    code = 50


class OperationNotAttempted(KafkaError):
    """Kafka error 55, ``OPERATION_NOT_ATTEMPTED``: another part of the same request failed."""
    code = 55


class ConcurrentTransactions(KafkaError):
    """Kafka error 51, ``CONCURRENT_TRANSACTIONS``: the previous change of this
    transactional id is still being completed; retry."""
    code = 51
    retriable = True


class TransactionCoordinatorFenced(KafkaError):
    """Kafka error 52, ``TRANSACTION_COORDINATOR_FENCED``: a transaction marker from a
    coordinator older than the one that last wrote markers for the producer."""
    code = 52


class TransactionalIdAuthorizationFailed(KafkaError):
    """Kafka error 53, ``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``."""
    code = 53


class SecurityDisabled(KafkaError):
    """Kafka error 54, ``SECURITY_DISABLED``."""
    code = 54


class KafkaStorageError(KafkaError):
    """Kafka error 56, ``KAFKA_STORAGE_ERROR``."""
    code = 56
    retriable = True
    invalid_metadata = True


class SaslAuthenticationFailed(KafkaError):
    """Kafka error 58, ``SASL_AUTHENTICATION_FAILED``."""
    code = 58


class UnknownProducerId(KafkaError):
    """Kafka error 59, ``UNKNOWN_PRODUCER_ID``."""
    code = 59


class NonEmptyGroup(KafkaError):
    """Kafka error 68, ``NON_EMPTY_GROUP``."""
    code = 68


class GroupIdNotFound(KafkaError):
    """Kafka error 69, ``GROUP_ID_NOT_FOUND``."""
    code = 69


class FetchSessionIdNotFound(KafkaError):
    """Kafka error 70, ``FETCH_SESSION_ID_NOT_FOUND``."""
    code = 70
    retriable = True


class InvalidFetchSessionEpoch(KafkaError):
    """Kafka error 71, ``INVALID_FETCH_SESSION_EPOCH``."""
    code = 71
    retriable = True


class FencedLeaderEpoch(KafkaError):
    """Kafka error 74, ``FENCED_LEADER_EPOCH``."""
    code = 74
    retriable = True
    invalid_metadata = True


class UnknownLeaderEpoch(KafkaError):
    """Kafka error 75, ``UNKNOWN_LEADER_EPOCH``."""
    code = 75
    retriable = True
    invalid_metadata = True


class UnsupportedCompressionType(KafkaError):
    """Kafka error 76, ``UNSUPPORTED_COMPRESSION_TYPE``."""
    code = 76


class OffsetNotAvailable(KafkaError):
    """Kafka error 78, ``OFFSET_NOT_AVAILABLE``."""
    code = 78
    retriable = True


class MemberIdRequired(KafkaError):
    """Kafka error 79, ``MEMBER_ID_REQUIRED``."""
    code = 79


class PreferredLeaderNotAvailable(KafkaError):
    """Kafka error 80, ``PREFERRED_LEADER_NOT_AVAILABLE``: the first replica of the
    assignment is not alive or not in sync."""
    code = 80
    retriable = True


class GroupMaxSizeReached(KafkaError):
    """Kafka error 81, ``GROUP_MAX_SIZE_REACHED``."""
    code = 81


class FencedInstanceId(KafkaError):
    """Kafka error 82, ``FENCED_INSTANCE_ID``."""
    code = 82


class EligibleLeadersNotAvailable(KafkaError):
    """Kafka error 83, ``ELIGIBLE_LEADERS_NOT_AVAILABLE``: no replica that may lead is alive."""
    code = 83
    retriable = True


class ElectionNotNeeded(KafkaError):
    """Kafka error 84, ``ELECTION_NOT_NEEDED``: the partition already has the leader asked for."""
    code = 84


class GroupSubscribedToTopic(KafkaError):
    """Kafka error 86, ``GROUP_SUBSCRIBED_TO_TOPIC``."""
    code = 86


class UnstableOffsetCommit(KafkaError):
    """Kafka error 88, ``UNSTABLE_OFFSET_COMMIT``: an offset was committed inside a
    transaction not yet decided; retry."""
    code = 88
    retriable = True


class InvalidRecord(KafkaError):
    """Kafka error 87, ``INVALID_RECORD``."""
    code = 87


class ProducerFenced(KafkaError):
    """Kafka error 90, ``PRODUCER_FENCED``."""
    code = 90


NONE = 0


class ResourceNotFound(KafkaError):
    """Kafka error 91, ``RESOURCE_NOT_FOUND``."""
    code = 91


class DuplicateResource(KafkaError):
    """Kafka error 92, ``DUPLICATE_RESOURCE``."""
    code = 92


class UnacceptableCredential(KafkaError):
    """Kafka error 93, ``UNACCEPTABLE_CREDENTIAL``."""
    code = 93


class InvalidUpdateVersion(KafkaError):
    """Kafka error 95, ``INVALID_UPDATE_VERSION``: a feature level asked of UpdateFeatures
    that the cluster cannot finalize."""
    code = 95


class UnknownTopicId(KafkaError):
    """Kafka error 100, ``UNKNOWN_TOPIC_ID``: no topic has the id the request named."""
    code = 100
    retriable = True
    invalid_metadata = True


class TransactionalIdNotFound(KafkaError):
    """Kafka error 105, ``TRANSACTIONAL_ID_NOT_FOUND``."""
    code = 105


class FencedMemberEpoch(KafkaError):
    """Kafka error 110, ``FENCED_MEMBER_EPOCH``: a consumer-protocol member must give up its
    partitions and rejoin with epoch 0."""
    code = 110


class UnreleasedInstanceId(KafkaError):
    """Kafka error 111, ``UNRELEASED_INSTANCE_ID``: the static member's previous incarnation
    has not left the group yet."""
    code = 111


class UnsupportedAssignor(KafkaError):
    """Kafka error 112, ``UNSUPPORTED_ASSIGNOR``."""
    code = 112


class InvalidRegularExpression(KafkaError):
    """Kafka error 128, ``INVALID_REGULAR_EXPRESSION``: a consumer's topic regex does not
    compile."""
    code = 128


class StaleMemberEpoch(KafkaError):
    """Kafka error 113, ``STALE_MEMBER_EPOCH``: an offset commit or fetch carried an old
    member epoch."""
    code = 113


class MismatchedEndpointType(KafkaError):
    """Kafka error 114, ``MISMATCHED_ENDPOINT_TYPE``: a broker was asked to describe the
    controllers (KIP-919), which only a controller's listener answers."""
    code = 114


class DuplicateVoter(KafkaError):
    """Kafka error 126, ``DUPLICATE_VOTER``: AddRaftVoter named a node that is a voter already."""
    code = 126


class VoterNotFound(KafkaError):
    """Kafka error 127, ``VOTER_NOT_FOUND``: RemoveRaftVoter named a node that is no voter."""
    code = 127


def _by_code() -> dict[int, type[KafkaError]]:
    """Every KafkaError class of this module by its code; two classes for one code is a bug."""
    found: dict[int, type[KafkaError]] = {}
    for cls in list(globals().values()):
        if isinstance(cls, type) and issubclass(cls, KafkaError) and cls.__module__ == __name__:
            if cls.code in found:
                raise AssertionError(f"error code {cls.code}: {found[cls.code].__name__} and "
                                     f"{cls.__name__}")
            found[cls.code] = cls
    return dict(sorted(found.items()))


ERRORS_BY_CODE: dict[int, type[KafkaError]] = _by_code()
"""Every error class by its code."""


def error_for_code(code: int) -> type[KafkaError]:
    """The error class for a Kafka error code (UnknownServerError for unknown codes)."""
    return ERRORS_BY_CODE.get(code, UnknownServerError)


def code_of(error: KafkaError | None) -> int:
    """The error code to answer for ``error``: 0 for None (no error)."""
    return 0 if error is None else error.code
