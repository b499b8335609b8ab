"""The controller on the metadata quorum: every change a committed record, the same image on
every controller, a restart resuming from the log and its snapshot, a standby refusing with
NOT_CONTROLLER, a new active controller after the leader's loss with everything committed and
brokers' sessions given a full timeout, and a change that cannot commit undone."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker_sim.controller.configs import RESOURCE_BROKER, replace_all
from broker_sim.controller.controller import STATE_FILE, Controller
from broker_sim.controller.image import ClusterImage
from broker_sim.protocol.errors import NotController, RequestTimedOut
from broker_sim.quorum import LOG_DIR, MetadataQuorum
from broker_sim.timer import SystemTimer, TimerReaper
from tests.quorum.test_metadata_quorum import CONFIG
from tests.wire import wait_for


@pytest.fixture(scope="module")
def timer() -> Iterator[SystemTimer]:
    t = SystemTimer("test-controller-quorum")
    reaper = TimerReaper(t, "test-controller-quorum-reaper")
    reaper.start()
    yield t
    reaper.request_stop()
    t.shutdown(wait=False)
    reaper.stop()


def same(a: ClusterImage, b: ClusterImage) -> bool:
    return a.to_json() == b.to_json()


def test_a_restarted_controller_resumes_from_its_log_and_snapshot(
        tmp_path: Path, timer: SystemTimer) -> None:
    c = Controller(tmp_path, timer, session_timeout_ms=600_000, snapshot_every=4)
    assert c.is_active
    c.heartbeat(0, "127.0.0.1", 9000, "inc-0")
    for i in range(5):
        c.create_topic(f"t{i}", 2, 1, {"retention.ms": str(1000 + i)})
    c.delete_topic("t3")
    image = c.image.to_json()
    version = c.version
    c.close()
    log_dir = tmp_path / LOG_DIR
    assert len(list(log_dir.glob("*.checkpoint"))) == 1  # a snapshot every 4 records
    assert not (tmp_path / STATE_FILE).exists()  # the log replaces the state file
    again = Controller(tmp_path, timer, session_timeout_ms=600_000, snapshot_every=4)
    try:
        assert again.image.to_json() == image and again.version == version
        assert again.snapshot()[1] == image  # what brokers fetch
        again.create_topic("after", 1, 1, {})
        assert again.version == version + 1
    finally:
        again.close()


def test_a_state_file_of_a_controller_before_the_quorum_is_read_once(
        tmp_path: Path, timer: SystemTimer) -> None:
    old = ClusterImage(version=7)
    (tmp_path / STATE_FILE).write_text(old.to_json())
    c = Controller(tmp_path, timer)
    try:
        assert c.version == 8  # the old image, committed as the log's first record
    finally:
        c.close()


@pytest.fixture
def three(tmp_path: Path, timer: SystemTimer) -> Iterator[dict[int, Controller]]:
    ids = (1, 2, 3)
    quorums = {i: MetadataQuorum(i, tmp_path / f"c{i}", {j: ("127.0.0.1", 0) for j in ids},
                                 config=CONFIG, seed=i) for i in ids}
    addresses = {i: ("127.0.0.1", q.port) for i, q in quorums.items()}
    for q in quorums.values():
        q.set_addresses(addresses)
    controllers = {i: Controller(tmp_path / f"c{i}", timer, session_timeout_ms=3000, quorum=q)
                   for i, q in quorums.items()}
    yield controllers
    for c in controllers.values():
        c.close()


def active(controllers: dict[int, Controller]) -> Controller:
    return wait_for(lambda: next((c for c in controllers.values() if c.is_active), None),
                    timeout=10, interval=0.02, what="an active controller")


def test_three_controllers_hold_one_image_and_fail_over(three: dict[int, Controller]) -> None:
    leader = active(three)
    leader_id = leader.metadata.quorum.node_id
    for b in range(3):
        leader.heartbeat(b, "127.0.0.1", 9000 + b, f"inc-{b}")
    leader.create_topic("events", 3, 3, {"min.insync.replicas": "2"})
    standbys = [c for c in three.values() if c is not leader]
    wait_for(lambda: all(same(c.metadata.committed_image(), leader.image) for c in standbys),
             timeout=5, what="every standby applied the same records")
    # what a standby's metrics read is the committed image, not its own stale one
    assert standbys[0].read_image(lambda image: sorted(image.topics)) == ["events"]
    with pytest.raises(NotController, match=f"leader: {leader_id}") as refused:
        standbys[0].heartbeat(0, "127.0.0.1", 9000, "inc-0")
    assert refused.value.leader_id == leader_id  # type: ignore[attr-defined]
    with pytest.raises(NotController):  # a change reaching a standby does not commit
        standbys[0].alter_configs(RESOURCE_BROKER, "", replace_all([("log.retention.ms", "5")]),
                                  propagation_timeout_s=0)
    assert standbys[0].image.broker_configs == {}

    before = leader.image.to_json()
    leader.close()
    closed_at = time.monotonic()
    survivors = {i: c for i, c in three.items() if c is not leader}
    new = active(survivors)
    failover = time.monotonic() - closed_at
    assert failover < 10 * CONFIG.election_timeout / 1000, failover
    assert new.image.to_json() == before
    # pauses are not deaths: the new controller gives each broker a full session timeout
    assert new.image.alive_brokers() == [0, 1, 2]
    for b in range(3):
        new.heartbeat(b, "127.0.0.1", 9000 + b, f"inc-{b}")
    new.expire_session(2, new.image.brokers[2].epoch + 1)  # a stale expiry changes nothing
    assert new.image.alive_brokers() == [0, 1, 2]
    new.create_topic("after", 1, 3, {})
    other = next(c for c in survivors.values() if c is not new)
    wait_for(lambda: "after" in other.metadata.committed_image().topics, timeout=5,
             what="the remaining standby applied the new leader's record")


def test_a_change_that_cannot_commit_is_undone(three: dict[int, Controller]) -> None:
    leader = active(three)
    leader.heartbeat(0, "127.0.0.1", 9000, "inc-0")
    version = leader.version
    for c in three.values():
        if c is not leader:
            c.close()  # no majority left
    with pytest.raises(NotController):
        leader.create_topic("lost", 1, 1, {})  # the leader resigns: no quorum answers it
    assert "lost" not in leader.image.topics and leader.version == version


def test_a_timed_out_change_that_commits_later_is_taken_from_the_log(
        three: dict[int, Controller]) -> None:
    leader = active(three)
    leader.heartbeat(0, "127.0.0.1", 9000, "inc-0")
    leader.metadata.commit_timeout_s = 0.0  # answer before the followers could fetch it
    with pytest.raises(RequestTimedOut):
        leader.create_topic("late", 1, 1, {})
    assert "late" not in leader.image.topics  # undone for now, and no longer active
    leader.metadata.commit_timeout_s = 5.0
    # the record did commit: the controller starts over from the committed image
    wait_for(lambda: leader.is_active and "late" in leader.image.topics, timeout=5,
             what="the controller active again with the record that committed late")
    leader.create_topic("next", 1, 1, {})
    standby = next(c for c in three.values() if c is not leader)
    wait_for(lambda: same(standby.metadata.committed_image(), leader.image), timeout=5,
             what="the standby holds the same image")
