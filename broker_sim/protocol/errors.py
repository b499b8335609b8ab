"""One error hierarchy for broker and client, carrying Kafka's real error codes.

Two families, kept apart on purpose (as h11 separates local and remote protocol errors):

* :class:`KafkaError` subclasses are *protocol* errors with a Kafka ``code``: the broker
  answers with them, the client raises them when a response carries their code. Each has
  ``retriable`` (the client may retry the same request) and ``invalid_metadata`` (the
  client should refresh its metadata before retrying).
* :class:`MalformedFrame` is raised by the sans-I/O codec when bytes from the peer cannot
  be parsed; the network layer answers it by closing that one connection.

>>> error_for_code(6).__name__
'NotLeaderOrFollower'
>>> NotLeaderOrFollower.retriable, NotLeaderOrFollower.code
(True, 6)
"""

from __future__ import annotations


class PyqError(Exception):
    """Base of every error pyq raises on purpose."""


class MalformedFrame(PyqError):
    """Bytes received from a peer do not parse as a frame of the protocol."""


class KafkaError(PyqError):
    code: int = -1
    retriable: bool = False
    invalid_metadata: bool = False

    def __init__(self, message: str = "") -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message


_BY_CODE: dict[int, type[KafkaError]] = {}


def _define(name: str, code: int, retriable: bool = False, invalid_metadata: bool = False) -> type[KafkaError]:
    cls = type(name, (KafkaError,), {
        "code": code,
        "retriable": retriable or invalid_metadata,
        "invalid_metadata": invalid_metadata,
        "__doc__": f"Kafka error code {code}.",
        "__module__": __name__,
    })
    _BY_CODE[code] = cls
    globals()[name] = cls
    return cls


UnknownServerError = _define("UnknownServerError", -1)
OffsetOutOfRange = _define("OffsetOutOfRange", 1)
CorruptMessage = _define("CorruptMessage", 2, retriable=True)
UnknownTopicOrPartition = _define("UnknownTopicOrPartition", 3, invalid_metadata=True)
InvalidFetchSize = _define("InvalidFetchSize", 4)
LeaderNotAvailable = _define("LeaderNotAvailable", 5, invalid_metadata=True)
NotLeaderOrFollower = _define("NotLeaderOrFollower", 6, invalid_metadata=True)
RequestTimedOut = _define("RequestTimedOut", 7, retriable=True)
BrokerNotAvailable = _define("BrokerNotAvailable", 8)
ReplicaNotAvailable = _define("ReplicaNotAvailable", 9, invalid_metadata=True)
MessageTooLarge = _define("MessageTooLarge", 10)
OffsetMetadataTooLarge = _define("OffsetMetadataTooLarge", 12)
NetworkException = _define("NetworkException", 13, invalid_metadata=True)
CoordinatorLoadInProgress = _define("CoordinatorLoadInProgress", 14, retriable=True)
CoordinatorNotAvailable = _define("CoordinatorNotAvailable", 15, retriable=True)
NotCoordinator = _define("NotCoordinator", 16, retriable=True)
InvalidTopic = _define("InvalidTopic", 17)
RecordListTooLarge = _define("RecordListTooLarge", 18)
NotEnoughReplicas = _define("NotEnoughReplicas", 19, retriable=True)
NotEnoughReplicasAfterAppend = _define("NotEnoughReplicasAfterAppend", 20, retriable=True)
InvalidRequiredAcks = _define("InvalidRequiredAcks", 21)
IllegalGeneration = _define("IllegalGeneration", 22)
InvalidGroupId = _define("InvalidGroupId", 24)
UnknownMemberId = _define("UnknownMemberId", 25)
InvalidTimestamp = _define("InvalidTimestamp", 32)
UnsupportedVersion = _define("UnsupportedVersion", 35)
TopicAlreadyExists = _define("TopicAlreadyExists", 36)
InvalidPartitions = _define("InvalidPartitions", 37)
InvalidReplicationFactor = _define("InvalidReplicationFactor", 38)
InvalidReplicaAssignment = _define("InvalidReplicaAssignment", 39)
InvalidConfig = _define("InvalidConfig", 40)
NotController = _define("NotController", 41, retriable=True)
InvalidRequest = _define("InvalidRequest", 42)
UnsupportedForMessageFormat = _define("UnsupportedForMessageFormat", 43)
PolicyViolation = _define("PolicyViolation", 44)
OutOfOrderSequenceNumber = _define("OutOfOrderSequenceNumber", 45)
DuplicateSequenceNumber = _define("DuplicateSequenceNumber", 46)
InvalidProducerEpoch = _define("InvalidProducerEpoch", 47)
InvalidProducerIdMapping = _define("InvalidProducerIdMapping", 49)
KafkaStorageError = _define("KafkaStorageError", 56, invalid_metadata=True)
UnknownProducerId = _define("UnknownProducerId", 59)
GroupIdNotFound = _define("GroupIdNotFound", 69)
FencedLeaderEpoch = _define("FencedLeaderEpoch", 74, invalid_metadata=True)
UnknownLeaderEpoch = _define("UnknownLeaderEpoch", 75, invalid_metadata=True)
UnsupportedCompressionType = _define("UnsupportedCompressionType", 76)
OffsetNotAvailable = _define("OffsetNotAvailable", 78, retriable=True)
InvalidRecord = _define("InvalidRecord", 87)
ProducerFenced = _define("ProducerFenced", 90)

NONE = 0


def error_for_code(code: int) -> type[KafkaError]:
    """The error class for a Kafka error code (UnknownServerError for unknown codes)."""
    return _BY_CODE.get(code, UnknownServerError)


def raise_for_code(code: int, message: str = "") -> None:
    if code != NONE:
        raise error_for_code(code)(message)
