"""Voter changes of the controller quorum (KIP-853): AddRaftVoter and RemoveRaftVoter, what
``pyq cluster add-controller`` / ``remove-controller`` and Kafka's ``kafka-metadata-quorum
add-controller`` / ``remove-controller`` send (a broker forwards them to the controller).

Only the active controller changes the voter set, one change at a time (the Raft core
refuses a second while the first is uncommitted). A new voter must be fetching from the
leader as an observer already. The answer comes once the new voter set is committed
(AddRaftVoter v1 with ``ack_when_committed`` false: once it is appended), or after the
request's ``timeout_ms`` (RemoveRaftVoter: :data:`REMOVE_TIMEOUT_MS`) as REQUEST_TIMED_OUT.

Errors, as Kafka names them: a node that is a voter already is DUPLICATE_VOTER; one that is
not, VOTER_NOT_FOUND; a standby controller answers NOT_CONTROLLER naming the leader; any
other refusal of the core (not fetching yet, a change in flight, the last voter) is
INVALID_REQUEST with the core's reason.

Threading: request-handler threads; the quorum guards its own state, and this waits by
polling :meth:`~broker_sim.quorum.MetadataQuorum.describe` (no lock held).
"""

from __future__ import annotations

import time
from typing import Any

from ..protocol.errors import (
    DuplicateVoter,
    InvalidRequest,
    KafkaError,
    NotController,
    RequestTimedOut,
    VoterNotFound,
)
from ..protocol.schema import Data
from ..quorum import MetadataQuorum
from ..raft import NotLeaderError, RaftError

REMOVE_TIMEOUT_MS = 30_000
_POLL_S = 0.02


class VoterChanges:
    def __init__(self, quorum: MetadataQuorum) -> None:
        self.quorum = quorum

    def add_body(self, body: Any) -> Data:
        listener = next((lst for lst in body.listeners), None)
        try:
            if listener is None:
                raise InvalidRequest(f"AddRaftVoter of node {body.voter_id} names no listener to "
                                     "reach it at")
            if body.voter_id in self._voters():
                raise DuplicateVoter(f"node {body.voter_id} is a voter already")
            offset = self._change(lambda: self.quorum.add_voter(body.voter_id, listener.host,
                                                                listener.port))
            if body.get("ack_when_committed", True):
                self._await_committed(offset, body.timeout_ms, f"adding voter {body.voter_id}")
        except KafkaError as e:
            return Data(throttle_time_ms=0, error_code=e.code, error_message=str(e))
        return Data(throttle_time_ms=0, error_code=0, error_message=None)

    def remove_body(self, body: Any) -> Data:
        try:
            if body.voter_id not in self._voters():
                raise VoterNotFound(f"node {body.voter_id} is not a voter (voters: "
                                    f"{sorted(self._voters())})")
            offset = self._change(lambda: self.quorum.remove_voter(body.voter_id))
            self._await_committed(offset, REMOVE_TIMEOUT_MS, f"removing voter {body.voter_id}")
        except KafkaError as e:
            return Data(throttle_time_ms=0, error_code=e.code, error_message=str(e))
        return Data(throttle_time_ms=0, error_code=0, error_message=None)

    def _voters(self) -> set[int]:
        return {v.node_id for v in self.quorum.describe().voters}

    def _change(self, change: Any) -> int:
        try:
            return int(change())
        except NotLeaderError as e:
            raise NotController(f"controller {self.quorum.node_id} is not the active controller: "
                                f"{e}") from e
        except RaftError as e:
            raise InvalidRequest(str(e)) from e

    def _await_committed(self, offset: int, timeout_ms: int, what: str) -> None:
        deadline = time.monotonic() + max(timeout_ms, 0) / 1000
        while True:
            described = self.quorum.describe()
            if described.high_watermark > offset:
                return
            if described.leader_id != self.quorum.node_id:
                raise NotController(f"controller {self.quorum.node_id} lost the leadership while "
                                    f"{what} (leader now: {described.leader_id})")
            if time.monotonic() >= deadline:
                raise RequestTimedOut(f"{what}: the new voter set (offset {offset}) was not "
                                      f"committed within {timeout_ms} ms")
            time.sleep(_POLL_S)
