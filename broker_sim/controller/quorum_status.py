"""What the controller says about the metadata quorum: DescribeQuorum, and DescribeCluster
asked of a controller (``kafka-metadata-quorum --bootstrap-controller``).

A :class:`QuorumView` is the quorum as one moment's numbers, in KRaft's terms: the leader,
its epoch, the high watermark, each voter's log end offset and when it last fetched and was
last caught up, and the observers. :class:`QuorumStatus` answers both requests from the
view its ``view_source`` gives, by default :meth:`QuorumStatus.metadata_quorum_view`: the
controller's member of the metadata quorum (:meth:`broker_sim.quorum.MetadataQuorum.describe`,
offsets of the ``__cluster_metadata`` log; a lone controller is its only voter and leader)
for the voters and any controller observing the log, and pyq's brokers as the other
observers. A pyq broker does not fetch the log: it follows the controller's image, so it is
shown fetched when it last polled or heartbeat, and a broker ``k`` image versions behind the
controller's as ``k`` records behind the high watermark (each change is one record).

A request that does not name exactly ``__cluster_metadata`` partition 0 is answered
UNKNOWN_TOPIC_OR_PARTITION, and one reaching a controller that does not lead the quorum
(only the leader knows every voter's progress) NOT_LEADER_OR_FOLLOWER for the partition,
with the leader and epoch it knows, as Kafka does. Asked for the brokers (endpoint type 1),
DescribeCluster on a controller is MISMATCHED_ENDPOINT_TYPE, as on Kafka's controllers.

Threading: request-handler threads (and, in a single broker, the broker's own) call every
method at once; the observers' fetch times are one dict replaced under a lock, read without
it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.errors import MismatchedEndpointType, NotLeaderOrFollower, UnknownTopicOrPartition
from ..protocol.schema import Data
from ..quorum import ReplicaState
from .controller import Controller

METADATA_TOPIC = "__cluster_metadata"
CONTROLLER_LISTENER = "CONTROLLER"
BROKERS, CONTROLLERS = 1, 2
UNKNOWN_OPERATIONS = -(2 ** 31)
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True)
class ReplicaView:
    """One replica of the metadata log: times are wall-clock milliseconds, -1 unknown."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int = -1
    last_caught_up_timestamp: int = -1
    directory_id: uuid.UUID = ZERO_UUID


@dataclass(frozen=True)
class QuorumView:
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaView, ...]
    observers: tuple[ReplicaView, ...] = ()
    #: node id -> (host, port) of its controller listener, for the voters that have one
    endpoints: dict[int, tuple[str, int]] = field(default_factory=dict)


class QuorumStatus:
    def __init__(self, controller: Controller, cluster_id: str = "pyq-cluster",
                 endpoint: Callable[[], tuple[str, int] | None] = lambda: None,
                 peers: Callable[[], dict[int, tuple[str, int]]] = dict,
                 wall_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.controller = controller
        self.node_id = controller.metadata.quorum.node_id
        self.cluster_id = cluster_id
        #: (host, port) of this controller's request listener (the controller server's)
        self.endpoint = endpoint
        #: node id -> (host, port) of the other controllers' request listeners, where known
        self.peers = peers
        self.wall_ms = wall_ms
        #: Where the view comes from: a Raft quorum's driver replaces it.
        self.view_source: Callable[[], QuorumView] = self.metadata_quorum_view
        self._lock = threading.Lock()
        #: broker id -> (last fetch, last caught up) in wall ms; replaced under the lock
        self._fetches: dict[int, tuple[int, int]] = {}

    # ---- observers ---------------------------------------------------------------------
    def observer_fetched(self, broker_id: int, known_version: int) -> None:
        """A broker polled or heartbeat, having applied image ``known_version``."""
        now = self.wall_ms()
        with self._lock:
            previous = self._fetches.get(broker_id, (-1, -1))[1]
            caught_up = now if known_version >= self.controller.version else previous
            fetches = dict(self._fetches)
            fetches[broker_id] = (now, caught_up)
            self._fetches = fetches

    def metadata_quorum_view(self) -> QuorumView:
        described = self.controller.metadata.quorum.describe()
        hw = described.high_watermark

        def replica(r: ReplicaState) -> ReplicaView:
            return ReplicaView(r.node_id, r.log_end_offset, r.last_fetch_timestamp,
                               r.last_caught_up_timestamp)

        version = self.controller.version
        applied = self.controller.applied_versions()
        alive = self.controller.read_image(lambda image: image.alive_brokers())
        fetches = self._fetches
        brokers = tuple(
            ReplicaView(b, max(0, hw - max(0, version - applied.get(b, 0))), *fetches.get(b, (-1, -1)))
            for b in sorted(alive))
        return QuorumView(-1 if described.leader_id is None else described.leader_id,
                          described.epoch, hw, tuple(replica(r) for r in described.voters),
                          tuple(replica(r) for r in described.observers) + brokers,
                          self._endpoints())

    def _endpoints(self) -> dict[int, tuple[str, int]]:
        endpoints = dict(self.peers())
        own = self.endpoint()
        if own is not None:
            endpoints[self.node_id] = own
        return endpoints

    # ---- requests ----------------------------------------------------------------------
    def describe_quorum_body(self, body: Any) -> Data:
        topics = list(body.topics)
        if not (len(topics) == 1 and topics[0].topic_name == METADATA_TOPIC
                and [p.partition_index for p in topics[0].partitions] == [0]):
            return Data(error_code=UnknownTopicOrPartition.code,
                        error_message=f"DescribeQuorum describes {METADATA_TOPIC} partition 0 only",
                        topics=[], nodes=[])
        view = self.view_source()

        def replica(r: ReplicaView) -> Data:
            return Data(replica_id=r.replica_id, replica_directory_id=r.directory_id,
                        log_end_offset=r.log_end_offset, last_fetch_timestamp=r.last_fetch_timestamp,
                        last_caught_up_timestamp=r.last_caught_up_timestamp)

        partition = Data(partition_index=0, error_code=0, error_message=None, leader_id=view.leader_id,
                         leader_epoch=view.leader_epoch, high_watermark=view.high_watermark,
                         current_voters=[replica(r) for r in view.voters],
                         observers=[replica(r) for r in view.observers])
        if view.leader_id != self.node_id:
            partition = Data(partition_index=0, error_code=NotLeaderOrFollower.code,
                             error_message=f"controller {self.node_id} does not lead the quorum "
                                           f"(leader: {view.leader_id}, epoch {view.leader_epoch})",
                             leader_id=view.leader_id, leader_epoch=view.leader_epoch,
                             high_watermark=-1, current_voters=[], observers=[])
        return Data(error_code=0, error_message=None,
                    topics=[Data(topic_name=METADATA_TOPIC, partitions=[partition])],
                    nodes=[Data(node_id=node, listeners=[Data(name=CONTROLLER_LISTENER, host=host, port=port)])
                           for node, (host, port) in sorted(view.endpoints.items())])

    def describe_cluster_body(self, body: Any) -> Data:
        """The controllers whose request listener is known, and the active one (this one
        while the leader's listener is unknown, so that an admin client asks here)."""
        out = Data(throttle_time_ms=0, error_code=0, error_message=None, endpoint_type=body.endpoint_type,
                   cluster_id=self.cluster_id, controller_id=-1, brokers=[],
                   cluster_authorized_operations=UNKNOWN_OPERATIONS)
        if body.endpoint_type != CONTROLLERS:
            out.error_code = MismatchedEndpointType.code
            out.error_message = (f"endpoint type {body.endpoint_type} asked of a controller; a "
                                 f"controller describes the controllers (2), a broker the brokers (1)")
            return out
        view = self.view_source()
        out.controller_id = view.leader_id if view.leader_id in view.endpoints else self.node_id
        out.brokers = [Data(broker_id=node, host=host, port=port, rack=None)
                       for node, (host, port) in sorted(view.endpoints.items())]
        return out
