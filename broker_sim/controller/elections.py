"""Leader elections of the controller: after a broker's loss, asked for (ElectLeaders), and
the automatic preferred-leader rebalance.

:class:`LeaderElections` is a part of :class:`~.controller.Controller` (a mixin): its methods
run under the controller's lock, change the working image, and leave the commit to the
caller or make it themselves (one record for all the partitions they moved). The rules are
in the controller's docstring (no unclean election unless asked by name, every election
bumps the leader and partition epochs).
"""

from __future__ import annotations

import logging
import threading

from ..protocol.errors import (
    ElectionNotNeeded,
    EligibleLeadersNotAvailable,
    InvalidRequest,
    KafkaError,
    PreferredLeaderNotAvailable,
    UnknownTopicOrPartition,
)
from ..timer import SystemTimer, TimerTask
from .image import ClusterImage, PartitionInfo
from .leader_balance import LeaderBalanceConfig, imbalanced_partitions

log = logging.getLogger("broker_sim.controller.controller")


class _LeaderBalanceCheck(TimerTask):
    """Runs :meth:`LeaderElections.rebalance_leaders`, then schedules the next check."""

    def __init__(self, controller: LeaderElections, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.controller = controller

    def run(self) -> None:
        try:
            self.controller.rebalance_leaders()
        finally:
            self.controller.schedule_leader_balance()


class LeaderElections:
    """The controller's elections (see the module docstring); the attributes below are the
    controller's."""

    _lock: threading.RLock
    _closed: bool
    image: ClusterImage
    timer: SystemTimer
    leader_balance: LeaderBalanceConfig

    @property
    def is_active(self) -> bool:
        raise NotImplementedError

    def _commit(self) -> None:
        raise NotImplementedError

    def _elect(self, topic: str, index: int, p: PartitionInfo, exclude: int | None = None) -> None:
        alive = set(self.image.alive_brokers()) - {exclude}
        candidates = [b for b in p.isr if b in alive]
        p.leader_epoch += 1
        p.partition_epoch += 1
        if candidates:
            p.leader = candidates[0]
            p.isr = candidates
            log.info("%s-%d: leader is now broker %d (epoch %d), isr %s", topic, index, p.leader,
                     p.leader_epoch, p.isr)
        else:
            p.leader = -1  # offline; keep the last ISR so only one of them can take over
            log.warning("%s-%d: no live in-sync replica; offline until one returns", topic, index)

    def _elect_offline_partitions(self) -> None:
        for name, topic in self.image.topics.items():
            for index, p in enumerate(topic.partitions):
                if p.leader == -1:
                    alive = set(self.image.alive_brokers())
                    if any(b in alive for b in p.isr):
                        self._elect(name, index, p)

    # ---- elections asked for (ElectLeaders) --------------------------------------------
    def elect_leaders(self, election_type: int, partitions: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], KafkaError | None]:
        """Move leaderships as ``kafka-leader-election`` asks; each partition's outcome.

        Preferred (type 0): the first replica of the assignment leads, if it is alive and in
        the ISR (PREFERRED_LEADER_NOT_AVAILABLE otherwise; ELECTION_NOT_NEEDED if it already
        leads). Unclean (type 1), for a partition without a leader only (ELECTION_NOT_NEEDED
        if it has one): a live ISR member if there is one, else the first live replica,
        which becomes the whole ISR and may lack records the old ISR acknowledged
        (ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is alive). ``partitions`` None: every
        partition, reporting only those whose election was needed (as Kafka does). Each
        election bumps the leader and partition epochs; one commit for all.
        """
        if election_type not in (0, 1):
            raise InvalidRequest(f"election type {election_type} is not 0 (preferred) or 1 (unclean)")
        with self._lock:
            every = partitions is None
            if partitions is None:
                partitions = [(name, i) for name, t in self.image.topics.items()
                              for i in range(len(t.partitions))]
            alive = set(self.image.alive_brokers())
            outcome: dict[tuple[str, int], KafkaError | None] = {}
            changed = False
            for name, index in partitions:
                t = self.image.topics.get(name)
                if t is None or not 0 <= index < len(t.partitions):
                    outcome[name, index] = UnknownTopicOrPartition(f"{name}-{index} does not exist")
                    continue
                p = t.partitions[index]
                error = (self._elect_preferred(name, index, p, alive) if election_type == 0
                         else self._elect_unclean(name, index, p, alive))
                if every and isinstance(error, ElectionNotNeeded):
                    continue
                outcome[name, index] = error
                changed = changed or error is None
            if changed:
                self._commit()
            return outcome

    def _elect_preferred(self, topic: str, index: int, p: PartitionInfo,
                         alive: set[int]) -> KafkaError | None:
        preferred = p.replicas[0]
        if p.leader == preferred:
            return ElectionNotNeeded(f"broker {preferred} already leads {topic}-{index}")
        if preferred not in alive or preferred not in p.isr:
            return PreferredLeaderNotAvailable(
                f"{topic}-{index}: preferred leader {preferred} is "
                f"{'not alive' if preferred not in alive else 'not in the ISR'} (isr {p.isr})")
        p.leader = preferred
        p.leader_epoch += 1
        p.partition_epoch += 1
        log.info("%s-%d: preferred leader %d elected (epoch %d)", topic, index, preferred, p.leader_epoch)
        return None

    # ---- automatic preferred-leader rebalance ---------------------------------------
    def schedule_leader_balance(self) -> None:
        """The next leader-balance check, one interval from now (none once closed or off)."""
        if self.leader_balance.enable and not self._closed:
            try:
                self.timer.add(_LeaderBalanceCheck(self, self.leader_balance.check_interval_s * 1000))
            except RuntimeError:  # the timer is shut down: the controller is stopping
                pass

    def rebalance_leaders(self) -> list[tuple[str, int]]:
        """Elect the preferred replica of every partition :mod:`.leader_balance` finds
        misplaced (one commit for all); the partitions moved."""
        with self._lock:
            if self._closed or not self.is_active:
                return []
            alive = set(self.image.alive_brokers())
            moved = [(name, index) for name, index in
                     imbalanced_partitions(self.image, self.leader_balance.per_broker_percentage)
                     if self._elect_preferred(name, index, self.image.topics[name].partitions[index],
                                              alive) is None]
            if moved:
                log.info("leader rebalance: %d partition(s) back on their preferred replica: %s",
                         len(moved), moved)
                self._commit()
            return moved

    def _elect_unclean(self, topic: str, index: int, p: PartitionInfo,
                       alive: set[int]) -> KafkaError | None:
        if p.leader >= 0:
            return ElectionNotNeeded(f"{topic}-{index} has a leader (broker {p.leader})")
        if any(b in alive for b in p.isr):
            self._elect(topic, index, p)
            return None
        candidates = [b for b in p.replicas if b in alive]
        if not candidates:
            return EligibleLeadersNotAvailable(f"{topic}-{index}: no replica of {p.replicas} is alive")
        p.leader, p.isr = candidates[0], [candidates[0]]
        p.leader_epoch += 1
        p.partition_epoch += 1
        log.warning("%s-%d: unclean election of broker %d, outside the last ISR (epoch %d); records "
                    "only the old ISR had are lost", topic, index, p.leader, p.leader_epoch)
        return None
