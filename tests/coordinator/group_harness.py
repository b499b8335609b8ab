"""A group coordinator on a real replica manager and real logs, driven by a manual clock.

The coordinator's purgatories share one timer whose clock the test moves by hand
(:meth:`GroupHarness.advance`), and due operations run on the advancing thread, so a test
decides exactly when sessions and rebalances time out: no sleeps. Writes go through the
replica manager to ``__consumer_offsets`` logs in a temporary directory.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from broker_sim.common import ManualClock
from broker_sim.controller.image import BrokerInfo, ClusterImage, PartitionInfo, TopicInfo
from broker_sim.coordinator.group import GroupConfig, GroupCoordinator
from broker_sim.coordinator.group.coordinator import JoinResult, SyncResult
from broker_sim.coordinator.group.group import CommittedOffset
from broker_sim.coordinator.group.store import GroupStore
from broker_sim.coordinator.placement import OFFSETS_TOPIC
from broker_sim.log import LogManager
from broker_sim.server.replica_manager import ReplicaManager
from broker_sim.timer import SystemTimer
from tests.timer.timer_helpers import SyncExecutor

PARTITIONS = 4
SESSION_MS = 10_000
REBALANCE_MS = 30_000


@dataclass
class Outcome:
    """Answers delivered to one parked request (a list, to catch double answers)."""

    results: list = field(default_factory=list)

    def __call__(self, result: object) -> None:
        self.results.append(result)

    @property
    def done(self) -> bool:
        return bool(self.results)

    @property
    def value(self):  # JoinResult or SyncResult
        assert len(self.results) == 1, self.results
        return self.results[0]


class GroupHarness:
    def __init__(self, data_dir: Path, config: GroupConfig | None = None,
                 prepare: Callable[[GroupCoordinator], None] = lambda c: None,
                 offsets_isr: tuple[int, ...] = (0,), offsets_min_isr: int = 1) -> None:
        """``offsets_isr``: the ISR of every ``__consumer_offsets`` partition (replicas
        0 and 1 when it names 1, and broker 1 never fetches: acks=all writes wait until
        they time out); ``offsets_min_isr``: its min.insync.replicas."""
        self.prepare = prepare
        self.offsets_isr = list(offsets_isr)
        self.offsets_min_isr = offsets_min_isr
        self.config = config or GroupConfig(group_initial_rebalance_delay_ms=3000,
                                            offsets_topic_num_partitions=PARTITIONS)
        self.clock = ManualClock(0, wall_start_ms=1_700_000_000_000)
        self.logs = LogManager(data_dir / "logs", clock=self.clock)
        self.replicas = ReplicaManager(0, self.logs, lambda b: None, lambda p, isr: None,
                                       clock=self.clock)
        self.epoch = 0
        self.apply_image()
        self.start()

    def apply_image(self) -> None:
        replicas = [0, 1] if 1 in self.offsets_isr or self.offsets_min_isr > 1 else [0]
        offsets = TopicInfo("offsets", {"min.insync.replicas": str(self.offsets_min_isr)},
                            [PartitionInfo(replicas, self.offsets_isr, 0, self.epoch)
                             for _ in range(PARTITIONS)])
        topic = TopicInfo("t", {}, [PartitionInfo([0], [0], 0, self.epoch) for _ in range(6)])
        self.replicas.apply_image(ClusterImage(
            version=self.epoch + 1, brokers={0: BrokerInfo("127.0.0.1", 1, 1)},
            topics={OFFSETS_TOPIC: offsets, "t": topic}))

    def start(self) -> None:
        self.timer = SystemTimer("group-test", clock=self.clock, executor=SyncExecutor())
        self.store = GroupStore(self.config, self.replicas, self.clock)
        self.coordinator = GroupCoordinator(self.config, self.store, self.clock, timer=self.timer,
                                            reaper_enabled=False)
        self.prepare(self.coordinator)  # what the broker wires in before groups load
        self.store.set_leadership(PARTITIONS, {i: self.epoch for i in range(PARTITIONS)})
        deadline = time.monotonic() + 10
        while self.store.any_loading():
            assert time.monotonic() < deadline, "partitions did not load"
            time.sleep(0.005)

    def restart_coordinator(self) -> None:
        """A new coordinator (new leader epoch) reads the groups back from the log."""
        self.coordinator.shutdown()
        self.epoch += 1
        self.apply_image()
        self.start()

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        while self.timer.advance_clock(0):
            pass

    def close(self) -> None:
        self.coordinator.shutdown()
        self.replicas.shutdown()
        self.logs.close()

    # ---- requests -----------------------------------------------------------------------
    def join(self, group: str, member_id: str = "", instance_id: str | None = None,
             protocols: list[tuple[str, bytes]] | None = None, session_ms: int = SESSION_MS,
             rebalance_ms: int = REBALANCE_MS, require_known_member_id: bool = False,
             client_id: str = "client") -> Outcome:
        out = Outcome()
        self.coordinator.join_group(group, member_id, instance_id, client_id, "/127.0.0.1",
                                    rebalance_ms, session_ms, "consumer",
                                    protocols or [("range", b"sub")], require_known_member_id, out)
        return out

    def sync(self, group: str, generation: int, member_id: str,
             assignments: dict[str, bytes] | None = None, instance_id: str | None = None) -> Outcome:
        out = Outcome()
        self.coordinator.sync_group(group, generation, member_id, instance_id, None, None,
                                    assignments or {}, out)
        return out

    def heartbeat(self, group: str, member_id: str, generation: int,
                  instance_id: str | None = None) -> int:
        return self.coordinator.heartbeat(group, member_id, instance_id, generation)

    def commit(self, group: str, offsets: dict[tuple[str, int], int], member_id: str = "",
               generation: int = -1) -> dict[tuple[str, int], int]:
        out = Outcome()
        self.coordinator.commit_offsets(group, member_id, None, generation,
                                        {tp: CommittedOffset(o) for tp, o in offsets.items()}, out)
        return out.value

    def form_group(self, group: str, n: int) -> tuple[list[JoinResult], list[SyncResult]]:
        """n members join an empty group and sync: the group is Stable in generation 1."""
        joins = [self.join(group, client_id=f"c{i}") for i in range(n)]
        # members that arrived during the initial delay extend it once more
        self.advance(self.config.group_initial_rebalance_delay_ms)
        if n > 1:
            self.advance(self.config.group_initial_rebalance_delay_ms)
        results: list[JoinResult] = [j.value for j in joins]
        leader = next(r for r in results if r.members)
        assignments = {m: f"part-{i}".encode() for i, (m, _, _) in enumerate(leader.members)}
        syncs = [self.sync(group, r.generation_id, r.member_id,
                           assignments if r is leader else None) for r in results]
        return results, [s.value for s in syncs]
