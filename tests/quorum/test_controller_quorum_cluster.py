"""A 3-broker cluster on a quorum of 3 controller processes: kill -9 the active controller in
the middle of an acks=all produce, a standby takes over within a few election timeouts, a
broker killed afterwards still gets its partitions' leaderships moved, and not one
acknowledged record is lost."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from broker_sim.cluster import LocalCluster
from broker_sim.process import ManagedProcess
from broker_sim.protocol.api import ApiKey
from connector.cluster import EmbeddedCluster
from tests.acked_writer import AckedWriter
from tests.wire import WireClient, partition_states, wait_for

pytestmark = pytest.mark.cluster

ACTIVE = re.compile(r"controller (\d+) active in epoch (\d+)")
ELECTION_TIMEOUT_S = 1.0  # controller.quorum.election.timeout.ms's default


def active_controller(cluster: LocalCluster, after_epoch: int = 0
                      ) -> tuple[ManagedProcess, int] | None:
    """The live controller that last logged becoming active, in an epoch past ``after_epoch``."""
    best: tuple[ManagedProcess, int] | None = None
    for c in cluster.controllers:
        if c.proc is None or c.proc.poll() is not None:
            continue
        for _, epoch in ACTIVE.findall(c.output()):
            if int(epoch) > after_epoch and (best is None or int(epoch) > best[1]):
                best = (c, int(epoch))
    return best


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("quorum-cluster"), brokers=3,
                      controllers=3) as c:
        yield c


def test_kill_the_active_controller_during_acks_all_produce(cluster: LocalCluster) -> None:
    bootstrap = cluster.bootstrap_servers
    first, epoch = wait_for(lambda: active_controller(cluster), timeout=30,
                            what="an active controller")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("quorum", 3, 3, topic_configs={"min.insync.replicas": "2"})])
    admin.close()
    port = cluster.brokers[0].port
    assert port is not None
    wait_for(lambda: len(partition_states(port, "quorum")) == 3, what="the topic everywhere")

    writer = AckedWriter(bootstrap, "quorum").start()
    acked = writer.acked
    wait_for(lambda: len(acked) >= 50, timeout=30, what="records acknowledged before the kill")
    first.kill()  # SIGKILL
    killed_at = time.monotonic()
    # A change sent to a broker at once is forwarded to the dead controller first: the broker
    # tries the next ones until the new active controller answers, and the client's
    # connection stays open (it used to be closed on the refused forward).
    forwarded: list[tuple[int, int]] = []

    def create_right_after_the_kill() -> None:
        with WireClient(port, timeout=30) as c:
            r = c.request(ApiKey.CREATE_TOPICS, 4, {
                "topics": [{"name": "after-kill", "num_partitions": 1, "replication_factor": 3,
                            "assignments": [], "configs": []}],
                "timeout_ms": 20_000, "validate_only": False})
            versions = c.request(ApiKey.API_VERSIONS, 0, {})  # the same connection
            forwarded.append((r.topics[0].error_code, versions.error_code))

    creator = threading.Thread(target=create_right_after_the_kill, daemon=True)
    creator.start()
    new, new_epoch = wait_for(lambda: active_controller(cluster, epoch), timeout=30,
                              interval=0.05, what="a new active controller")
    failover = time.monotonic() - killed_at
    assert new is not first and new_epoch > epoch
    # the followers see the dead leader's sockets close and pre-vote within a random
    # election timeout (a split vote or a missed disconnect costs a few more)
    assert failover < 8 * ELECTION_TIMEOUT_S, f"failover took {failover:.1f} s"
    creator.join(timeout=40)
    assert forwarded == [(0, 0)]
    before_broker_kill = len(acked)
    wait_for(lambda: len(acked) >= before_broker_kill + 50, timeout=30,
             what="records acknowledged with the new controller")

    # a broker killed now: the new controller moves its leaderships
    victim = cluster.brokers[2]
    victim.kill()
    wait_for(lambda: all(leader not in (2, -1) and 2 not in isr
                         for leader, isr, _ in partition_states(port, "quorum").values()),
             timeout=30, what="every partition led by a live broker, the dead one out of ISRs")
    mark = len(acked)
    wait_for(lambda: len(acked) >= mark + 50, timeout=30,
             what="records acknowledged after the broker's loss")
    writer.stop()
    lost, read = writer.lost()
    print(f"acked {len(acked)}, unacknowledged {len(writer.failed)}, read {read}, lost "
          f"{len(lost)}; controller failover {failover:.2f} s")
    assert lost == []


def test_controllers_count_is_checked(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "broker_sim", "cluster", "--brokers", "3",
                          "--controllers", "2", "--data-dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--controllers=2 is invalid: an odd number from 1 to 7 is allowed" in out.stderr
    with pytest.raises(ValueError, match="controllers=8 is invalid"):
        LocalCluster(tmp_path, controllers=8)
    with pytest.raises(ValueError, match="controllers=0 is invalid"):
        EmbeddedCluster(controllers=0)


def test_a_paused_active_controller_is_replaced_and_no_broker_is_fenced(
        cluster: LocalCluster) -> None:
    """SIGSTOP of the active controller past the fetch timeout: a standby takes over, the
    brokers leave the silent controller within half a session (they do not wait for a
    10 s request timeout) and keep their sessions at the new one; the resumed controller
    steps down without fencing anyone."""
    for process in [*cluster.controllers, *cluster.brokers]:  # back from the test above
        if process.proc is None or process.proc.poll() is not None:
            process.start()
    port = cluster.brokers[0].port
    assert port is not None
    wait_for(lambda: all(len(isr) == 3 for _, isr, _ in partition_states(port, "quorum").values()),
             timeout=60, what="every replica in sync again")
    old, epoch = wait_for(lambda: active_controller(cluster), timeout=30,
                          what="an active controller")
    marks = [len(c.output()) for c in cluster.controllers]
    before = {p: leader for p, (leader, _, _) in partition_states(port, "quorum").items()}
    old.pause()
    try:
        new, _ = wait_for(lambda: active_controller(cluster, epoch), timeout=30, interval=0.05,
                          what="a standby active while the leader is paused")
        activated = time.monotonic()
        assert new is not old
        # past one broker session at the new controller: a broker that had not found it
        # would be fenced by now
        wait_for(lambda: time.monotonic() > activated + 3.5, timeout=10,
                 what="one session timeout at the new controller")
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        admin.create_topics([NewTopic("after-pause", 1, 3)])  # needs all 3 brokers alive
        admin.close()
    finally:
        old.resume()
    outputs = [c.output()[mark:] for c, mark in zip(cluster.controllers, marks, strict=True)]
    assert not any("session expired" in out for out in outputs), outputs
    after = {p: leader for p, (leader, _, _) in partition_states(port, "quorum").items()}
    assert after == before  # no broker fenced: no leadership moved
