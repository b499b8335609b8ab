"""The metadata quorum on real sockets and disks: three MetadataQuorum members on 127.0.0.1
elect a leader, commit, survive the loss of the leader, restart from their directories and
bring a lagging member up to date with a snapshot."""

from __future__ import annotations

import doctest
import json
import threading
import time
from pathlib import Path

import pytest

import broker_sim.quorum.codec
import broker_sim.quorum.transport
from broker_sim.protocol.errors import NotController
from broker_sim.quorum import LOG_DIR, MetadataQuorum, parse_voters
from broker_sim.raft import RaftConfig
from tests.wire import wait_for

CONFIG = RaftConfig(election_timeout=300, fetch_timeout=600, fetch_max_wait=200,
                    request_timeout=600, begin_quorum_interval=150, check_quorum_timeout=900)


class Recorder:
    """A listener keeping the committed records as a list (its snapshot: the list as JSON)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: list[bytes] = []
        self.offsets: list[int] = []
        self.leaders: list[tuple[int | None, int]] = []

    def handle_commit(self, offset: int, record: bytes) -> None:
        with self.lock:
            assert not self.offsets or offset > self.offsets[-1], "commits out of order"
            self.offsets.append(offset)
            self.records.append(record)

    def handle_snapshot(self, offset: int, data: bytes) -> None:
        with self.lock:
            self.records = [r.encode() for r in json.loads(data)]
            self.offsets = [offset - 1]

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leaders.append((leader_id, epoch))

    def image(self) -> bytes:
        with self.lock:
            return json.dumps([r.decode() for r in self.records]).encode()


class Node:
    def __init__(self, node_id: int, root: Path, addresses: dict[int, tuple[str, int]],
                 port: int | None = None) -> None:
        self.node_id = node_id
        self.dir = root / f"c{node_id}"
        self.recorder = Recorder()
        self.quorum = MetadataQuorum(node_id, self.dir, addresses, port=port, config=CONFIG,
                                     seed=node_id)
        self.quorum.register(self.recorder)


def start_quorum(root: Path, ids: tuple[int, ...] = (1, 2, 3)) -> dict[int, Node]:
    placeholder = {i: ("127.0.0.1", 0) for i in ids}
    nodes = {i: Node(i, root, placeholder) for i in ids}
    addresses = {i: ("127.0.0.1", n.quorum.port) for i, n in nodes.items()}
    for node in nodes.values():
        node.quorum.set_addresses(addresses)
        node.quorum.start()
    return nodes


def active_leader(nodes: dict[int, Node]) -> tuple[Node, int]:
    """The node whose listeners heard it lead (its epoch's first entry committed)."""
    def find() -> tuple[Node, int] | None:
        for node in nodes.values():
            leader, epoch = node.quorum.leader_and_epoch()
            if leader == node.node_id and node.quorum.is_active(epoch):
                return node, epoch
        return None
    return wait_for(find, timeout=10, interval=0.02, what="an active quorum leader")


def commit(node: Node, epoch: int, record: bytes) -> int:
    offset = node.quorum.append(record, epoch)
    node.quorum.await_committed(offset, 5.0)
    return offset


@pytest.fixture
def nodes(tmp_path: Path):
    nodes = start_quorum(tmp_path)
    yield nodes
    for node in nodes.values():
        node.quorum.close()


def test_three_voters_elect_a_leader_and_commit_on_a_majority(nodes: dict[int, Node]) -> None:
    leader, epoch = active_leader(nodes)
    offsets = [commit(leader, epoch, f"r{i}".encode()) for i in range(20)]
    assert offsets == sorted(offsets)
    want = [f"r{i}".encode() for i in range(20)]
    assert leader.recorder.records == want
    wait_for(lambda: all(n.recorder.records == want for n in nodes.values()), timeout=5,
             what="every voter's listener saw the 20 records in order")
    followers = [n for n in nodes.values() if n is not leader]
    with pytest.raises(NotController, match=f"controller {leader.node_id} leads"):
        followers[0].quorum.append(b"x", epoch)
    for node in followers:
        assert node.recorder.leaders[-1] == (leader.node_id, epoch)
    described = leader.quorum.describe()
    assert (described.leader_id, described.epoch) == (leader.node_id, epoch)
    assert described.high_watermark == offsets[-1] + 1
    assert [v.node_id for v in described.voters] == [1, 2, 3]
    assert all(v.log_end_offset >= offsets[-1] for v in described.voters)
    assert all(v.last_fetch_timestamp > 0 for v in described.voters)
    files = sorted(p.name for p in (leader.dir / LOG_DIR).iterdir())
    assert files == ["metadata.log", "quorum-state"]


def test_leader_closed_a_new_leader_keeps_every_committed_record(
        nodes: dict[int, Node]) -> None:
    leader, epoch = active_leader(nodes)
    want = [f"a{i}".encode() for i in range(10)]
    for record in want:
        commit(leader, epoch, record)
    leader.quorum.close()
    closed_at = time.monotonic()
    survivors = {i: n for i, n in nodes.items() if n is not leader}
    new, new_epoch = active_leader(survivors)
    failover = time.monotonic() - closed_at
    assert new_epoch > epoch
    # within a few election timeouts: the fetch timeout, then pre-vote and vote
    assert failover < 10 * CONFIG.election_timeout / 1000, failover
    commit(new, new_epoch, b"after")
    wait_for(lambda: all(n.recorder.records == want + [b"after"] for n in survivors.values()),
             timeout=5, what="both survivors hold every committed record, then the new one")
    with pytest.raises(NotController):
        new.quorum.append(b"stale", epoch)


def test_a_restarted_voter_recovers_its_log_and_hard_state(
        nodes: dict[int, Node], tmp_path: Path) -> None:
    leader, epoch = active_leader(nodes)
    for i in range(5):
        commit(leader, epoch, f"b{i}".encode())
    follower = next(n for n in nodes.values() if n is not leader)
    wait_for(lambda: len(follower.recorder.records) == 5, timeout=5, what="follower caught up")
    port = follower.quorum.port
    follower.quorum.close()
    addresses = {i: ("127.0.0.1", n.quorum.port) for i, n in nodes.items()}
    commit(leader, epoch, b"while-down")
    restarted = Node(follower.node_id, tmp_path, addresses, port=port)
    nodes[follower.node_id] = restarted
    # before it talks to anyone, its store holds the epoch and the five records
    stored = restarted.quorum.store
    assert restarted.quorum.core.epoch == epoch
    assert restarted.quorum.core.log.end_offset >= 6  # LEADER_CHANGE + 5 records
    assert stored.dir == follower.dir / LOG_DIR
    restarted.quorum.start()
    want = [f"b{i}".encode() for i in range(5)] + [b"while-down"]
    wait_for(lambda: restarted.recorder.records == want, timeout=5,
             what="the restarted voter replays its log and fetches what it missed")
    assert restarted.recorder.leaders[-1] == (leader.node_id, epoch)


def test_snapshot_truncates_the_log_and_a_lagging_voter_installs_it(
        nodes: dict[int, Node], tmp_path: Path) -> None:
    leader, epoch = active_leader(nodes)
    lagging = next(n for n in nodes.values() if n is not leader)
    port = lagging.quorum.port
    lagging.quorum.close()
    last = 0
    for i in range(30):
        last = commit(leader, epoch, f"c{i}".encode())
    log_file = leader.dir / LOG_DIR / "metadata.log"
    before = log_file.stat().st_size
    leader.quorum.snapshot(last + 1, leader.recorder.image())
    for i in range(30, 33):
        last = commit(leader, epoch, f"c{i}".encode())
    wait_for(lambda: log_file.stat().st_size < before, timeout=5, what="log truncated")
    checkpoints = list((leader.dir / LOG_DIR).glob("*.checkpoint"))
    assert len(checkpoints) == 1
    assert checkpoints[0].name.startswith(f"{last - 2:020d}-")
    addresses = {i: ("127.0.0.1", n.quorum.port) for i, n in nodes.items()}
    restarted = Node(lagging.node_id, tmp_path, addresses, port=port)
    nodes[lagging.node_id] = restarted
    restarted.quorum.start()
    want = [f"c{i}".encode() for i in range(33)]
    wait_for(lambda: restarted.recorder.records == want, timeout=10,
             what="the lagging voter installed the snapshot and fetched the rest")
    # the installed snapshot is stored: a restart starts from it
    assert list((restarted.dir / LOG_DIR).glob("*.checkpoint"))


def test_voters_spelling_and_codec_doctests() -> None:
    for module in (broker_sim.quorum.transport, broker_sim.quorum.codec):
        assert doctest.testmod(module).failed == 0
    with pytest.raises(ValueError, match="controller.quorum.voters='1@127.0.0.1' is invalid"):
        parse_voters("1@127.0.0.1")
