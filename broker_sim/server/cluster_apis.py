"""What a broker says about the cluster as a whole: ApiVersions with its features,
DescribeCluster, DescribeQuorum, the controller quorum's voter changes, ElectLeaders and
UpdateFeatures.

* **ApiVersions** lists exactly the versions the codec implements (:mod:`..protocol.api`)
  and, from v3, the cluster's features (:data:`FEATURES`): ``group.version`` 1, the
  consumer group protocol of KIP-848, which pyq serves; ``transaction.version`` 0, the
  transactions of KIP-98 without KIP-890's second part (a producer that read level 2 would
  leave out AddPartitionsToTxn, which pyq needs). No ``metadata.version``: pyq's metadata is
  its own image, not KRaft's log, so there is no level a client could act on.
* **DescribeCluster** answers the live brokers on the request's listener, the cluster id,
  and as controller the same broker Metadata names (any broker forwards admin requests to
  pyq's one controller); with ``include_cluster_authorized_operations`` the bitfield of what
  the principal may do on the cluster. Asked for the controllers (``endpoint_type`` 2) it is
  MISMATCHED_ENDPOINT_TYPE, as on a Kafka broker.
* **DescribeQuorum** needs Describe on the cluster (else CLUSTER_AUTHORIZATION_FAILED) and
  is forwarded to the controller (:mod:`broker_sim.controller.quorum_status`), whose answer
  is returned as it is; the request's version is answered, the controller asked at v2.
* **AddRaftVoter** and **RemoveRaftVoter** need Alter on the cluster (else
  CLUSTER_AUTHORIZATION_FAILED) and are forwarded to the controller
  (:mod:`broker_sim.controller.voter_changes`), answered as it answers.
* **ElectLeaders** needs Alter on the cluster (else every partition named, or the whole
  request when it names none, is CLUSTER_AUTHORIZATION_FAILED) and is forwarded to the
  controller (:meth:`~broker_sim.controller.controller.Controller.elect_leaders`), answered
  once every live broker applied the new leaders.
* **UpdateFeatures** needs Alter on the cluster (else CLUSTER_AUTHORIZATION_FAILED for the
  whole request). pyq's finalized levels are fixed (:data:`FEATURES`): setting a feature
  to the level it has succeeds and changes nothing (``kafka-features upgrade --feature
  group.version=1``), with ``validate_only`` (``--dry-run``) or not; any other level, or a
  feature pyq does not have, is INVALID_UPDATE_VERSION for the whole request with a
  message saying which levels pyq supports. As on Kafka, an error is only top-level (no
  per-feature results), and v0-1 answer each feature's success. Nothing changes, so
  nothing is forwarded to the controller: every broker answers the same.

Threading: request-handler threads, several at once; no state of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..network.request_channel import Request
from ..protocol import api
from ..protocol.api import ApiKey
from ..protocol.errors import (
    ClusterAuthorizationFailed,
    InvalidUpdateVersion,
    MismatchedEndpointType,
)
from ..protocol.schema import Data
from ..security.acl import Operation as Op
from ..security.acl import ResourceType as RT

if TYPE_CHECKING:
    from .api_context import ApiContext

#: name -> (min supported, max supported, finalized level)
FEATURES: dict[str, tuple[int, int, int]] = {
    "group.version": (0, 1, 1),
    "transaction.version": (0, 0, 0),
}

UNKNOWN_OPERATIONS = -(2 ** 31)
BROKERS, CONTROLLERS = 1, 2
#: UpdateFeatures' upgrade types (v1+; v0's ``allow_downgrade`` maps to the first two)
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def fixed_levels() -> str:
    return ", ".join(f"{name} {level}" for name, (_, _, level) in FEATURES.items())


def feature_update_error(name: str, level: int, upgrade_type: int) -> str | None:
    """Why pyq cannot set feature ``name`` to ``level`` (None: it is already there)."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        reason = f"upgrade type {upgrade_type} is none of 1 (upgrade), 2 (safe downgrade), 3 (unsafe downgrade)"
    elif name not in FEATURES:
        reason = f"pyq does not support this feature (its features: {fixed_levels()})"
    elif level != FEATURES[name][2]:
        reason = f"pyq supports only version {FEATURES[name][2]} of {name} (its levels are fixed: {fixed_levels()})"
    else:
        return None
    return f"Invalid update version {level} for feature {name}. {reason}."


def supported_features(version: int) -> list[Data]:
    """The features a v``version`` reader can take: before v4 none with a min version 0 is
    understood (KAFKA-17011), so those say 1, and one whose max is 0 is left out."""
    out = []
    for name, (low, high, _) in FEATURES.items():
        if version < 4:
            if high == 0:
                continue
            low = max(low, 1)
        out.append(Data(name=name, min_version=low, max_version=high))
    return out


class ClusterApis:
    def __init__(self, apis: ApiContext) -> None:
        self.apis = apis
        self.handlers: dict[int, Callable[[Request], None]] = {
            ApiKey.API_VERSIONS: self.handle_api_versions,
            ApiKey.DESCRIBE_CLUSTER: self.handle_describe_cluster,
            ApiKey.ELECT_LEADERS: self.handle_elect_leaders,
            ApiKey.DESCRIBE_QUORUM: self.handle_describe_quorum,
            ApiKey.ADD_RAFT_VOTER: self.handle_voter_change,
            ApiKey.REMOVE_RAFT_VOTER: self.handle_voter_change,
            ApiKey.UPDATE_FEATURES: self.handle_update_features,
        }

    def handle_api_versions(self, request: Request) -> None:
        version = request.header.api_version
        body = Data(error_code=0, api_keys=api.supported_versions(), throttle_time_ms=0)
        if version >= 3:
            body.supported_features = supported_features(version)
            body.finalized_features_epoch = self.apis.metadata.image.version
            body.finalized_features = [
                Data(name=name, max_version_level=level, min_version_level=level)
                for name, (_, _, level) in FEATURES.items() if level > 0]
        self.apis.respond(request, body)

    def handle_describe_cluster(self, request: Request) -> None:
        body = request.body
        image = self.apis.metadata.image
        out = Data(throttle_time_ms=0, error_code=0, error_message=None,
                   endpoint_type=body.endpoint_type, cluster_id=self.apis.config.cluster_id,
                   controller_id=-1, brokers=[], cluster_authorized_operations=UNKNOWN_OPERATIONS)
        if body.endpoint_type != BROKERS:
            out.error_code = MismatchedEndpointType.code
            out.error_message = (f"endpoint type {body.endpoint_type} asked of a broker; a broker "
                                 f"describes the brokers (1), a controller the controllers (2)")
            self.apis.respond(request, out)
            return
        listener = self.apis.listener_name(request)
        alive = [b for b, info in sorted(image.brokers.items()) if info.alive]
        out.brokers = [Data(broker_id=b, host=host, port=port, rack=None)
                       for b in alive for host, port in [image.brokers[b].address(listener)]]
        out.controller_id = alive[0] if alive else -1
        if body.include_cluster_authorized_operations:
            out.cluster_authorized_operations = self.apis.authorized_operations(
                request, RT.CLUSTER)
        self.apis.respond(request, out)

    def handle_describe_quorum(self, request: Request) -> None:
        if not self.apis.authorized(request, Op.DESCRIBE, RT.CLUSTER):
            self.apis.respond(request, Data(
                error_code=ClusterAuthorizationFailed.code, topics=[], nodes=[],
                error_message="Describe on the cluster is needed to describe the quorum"))
            return
        self.apis.respond(request, self.apis.controller.describe_quorum(request.body))

    def handle_voter_change(self, request: Request) -> None:
        add = request.header.api_key == ApiKey.ADD_RAFT_VOTER
        if not self.apis.authorized(request, Op.ALTER, RT.CLUSTER):
            self.apis.respond(request, Data(
                throttle_time_ms=0, error_code=ClusterAuthorizationFailed.code,
                error_message="Alter on the cluster is needed to change the controller quorum"))
            return
        controller = self.apis.controller
        self.apis.respond(request, controller.add_raft_voter(request.body) if add
                          else controller.remove_raft_voter(request.body))

    def handle_elect_leaders(self, request: Request) -> None:
        body: Any = request.body
        if not self.apis.authorized(request, Op.ALTER, RT.CLUSTER):
            self.apis.respond(request, Data(
                throttle_time_ms=0, error_code=ClusterAuthorizationFailed.code,
                replica_election_results=[
                    Data(topic=t.topic, partition_result=[
                        Data(partition_id=i, error_code=ClusterAuthorizationFailed.code,
                             error_message="Alter on the cluster is needed") for i in t.partitions])
                    for t in body.topic_partitions or []]))
            return
        response = self.apis.controller.elect_leaders(body)
        self.apis.refresh_metadata()
        self.apis.respond(request, response)

    def handle_update_features(self, request: Request) -> None:
        body: Any = request.body
        version = request.header.api_version
        out = Data(throttle_time_ms=0, error_code=0, error_message=None, results=[])
        if not self.apis.authorized(request, Op.ALTER, RT.CLUSTER):
            out.error_code = ClusterAuthorizationFailed.code
            out.error_message = "Alter on the cluster is needed to update features"
            self.apis.respond(request, out)
            return
        for update in body.feature_updates:
            upgrade_type = update.upgrade_type if version >= 1 else (
                SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE)
            reason = feature_update_error(update.feature, update.max_version_level, upgrade_type)
            if reason is not None:
                out.error_code = InvalidUpdateVersion.code
                out.error_message = f"No feature was updated. {reason}"
                self.apis.respond(request, out)
                return
        if version <= 1:
            out.results = [Data(feature=u.feature, error_code=0, error_message=None)
                           for u in body.feature_updates]
        self.apis.respond(request, out)
