"""DescribeQuorum and the voter changes of KIP-853 on three controllers in one process (each
its own member of the metadata quorum, on loopback): the leader describes three caught-up
voters; a follower removed goes on fetching as an observer and is added back; a standby
refuses a voter change with NOT_CONTROLLER naming the leader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_sim.controller.controller import Controller
from broker_sim.controller.quorum_status import QuorumStatus
from broker_sim.controller.voter_changes import VoterChanges
from broker_sim.protocol.errors import DuplicateVoter, NotController, NotLeaderOrFollower
from broker_sim.protocol.schema import Data
from broker_sim.quorum import MetadataQuorum
from broker_sim.timer import SystemTimer, TimerReaper
from tests.quorum.test_metadata_quorum import CONFIG
from tests.wire import wait_for

IDS = (1, 2, 3)
DESCRIBE = Data(topics=[Data(topic_name="__cluster_metadata", partitions=[Data(partition_index=0)])])


@pytest.fixture
def controllers(tmp_path: Path) -> Iterator[dict[int, Controller]]:
    timer = SystemTimer("test-quorum-status")
    reaper = TimerReaper(timer, "test-quorum-status-reaper")
    reaper.start()
    quorums = {i: MetadataQuorum(i, tmp_path / f"c{i}", {j: ("127.0.0.1", 0) for j in IDS},
                                 config=CONFIG, seed=i) for i in IDS}
    addresses = {i: ("127.0.0.1", q.port) for i, q in quorums.items()}
    for q in quorums.values():
        q.set_addresses(addresses)
    started = {i: Controller(tmp_path / f"c{i}", timer, session_timeout_ms=60_000, quorum=q)
               for i, q in quorums.items()}
    yield started
    for c in started.values():
        c.close()
    reaper.request_stop()
    timer.shutdown(wait=False)
    reaper.stop()


def described(c: Controller) -> Data:
    return QuorumStatus(c).describe_quorum_body(DESCRIBE).topics[0].partitions[0]


def test_three_voters_described_and_one_removed_and_added_back(
        controllers: dict[int, Controller]) -> None:
    leader = wait_for(lambda: next((c for c in controllers.values() if c.is_active), None),
                      timeout=10, interval=0.02, what="an active controller")
    leader_id = leader.metadata.quorum.node_id
    leader.heartbeat(0, "127.0.0.1", 9000, "inc-0")
    leader.create_topic("quorum-status", 1, 1, {})

    def caught_up() -> Data | None:
        p = described(leader)
        return p if all(v.log_end_offset == p.high_watermark for v in p.current_voters) else None

    p = wait_for(caught_up, timeout=5, what="every voter caught up")
    assert (p.leader_id, [v.replica_id for v in p.current_voters]) == (leader_id, list(IDS))
    assert p.leader_epoch >= 1 and all(v.last_fetch_timestamp > 0 for v in p.current_voters)
    assert [o.replica_id for o in p.observers] == [0]  # the broker, following the image

    follower = next(i for i in IDS if i != leader_id)
    changes = VoterChanges(leader.metadata.quorum)
    assert changes.remove_body(Data(voter_id=follower)).error_code == 0
    p = described(leader)
    assert [v.replica_id for v in p.current_voters] == [i for i in IDS if i != follower]
    wait_for(lambda: follower in [o.replica_id for o in described(leader).observers], timeout=5,
             what="the removed controller fetching on as an observer")

    host, port = "127.0.0.1", controllers[follower].metadata.quorum.port
    add = Data(voter_id=follower, timeout_ms=10_000, listeners=[Data(name="CONTROLLER", host=host,
                                                                      port=port)])
    answer = wait_for(lambda: (a := changes.add_body(add)).error_code == 0 and a, timeout=10,
                      what="the observer added back (once the removal's change is done)")
    assert answer.error_message is None
    assert [v.replica_id for v in described(leader).current_voters] == list(IDS)
    assert changes.add_body(add).error_code == DuplicateVoter.code

    standby = VoterChanges(controllers[follower].metadata.quorum)
    refused = standby.remove_body(Data(voter_id=leader_id))
    assert refused.error_code == NotController.code, refused
    elsewhere = described(controllers[follower])  # only the leader knows every voter's progress
    assert (elsewhere.error_code, elsewhere.leader_id) == (NotLeaderOrFollower.code, leader_id)
