"""Automatic preferred-leader rebalance: leaderships go back to each partition's first replica.

When a broker is fenced its leaderships move to other in-sync replicas, and nothing moves
them back when it returns: after a pause or a restart one broker can lead every partition
of the cluster and carry all its produce and fetch traffic. Kafka's controller checks every
``leader.imbalance.check.interval.seconds`` (300) and, with
``auto.leader.rebalance.enable`` (true), elects the preferred replica of the partitions of
every broker whose *imbalance* exceeds ``leader.imbalance.per.broker.percentage`` (10).

A broker's imbalance is the share of the partitions it is the preferred replica of (it is
first in their replica list) that it does not lead. Only partitions whose preferred replica
is alive and in the ISR are moved (electing an out-of-sync replica would lose records), and
a broker at or under the threshold keeps its few misplaced leaderships, as in Kafka.

Worked example (threshold 10%): broker 1 is preferred for 4 partitions and leads 2 of them,
so its imbalance is 50% > 10%; of the other two, one has broker 1 in its ISR and is moved
back, the other waits until broker 1 has caught up (a later check moves it).

:func:`imbalanced_partitions` is a pure function of the image; the controller runs it
under its lock from a timer task (:class:`LeaderBalanceConfig` holds the three options).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..protocol.errors import InvalidConfig
from .image import ClusterImage

#: Kafka's option names, the controller's only leader-balance settings.
ENABLE = "auto.leader.rebalance.enable"
INTERVAL = "leader.imbalance.check.interval.seconds"
PERCENTAGE = "leader.imbalance.per.broker.percentage"
OPTIONS = (ENABLE, INTERVAL, PERCENTAGE)


@dataclass(frozen=True)
class LeaderBalanceConfig:
    """The three options, with Kafka's defaults."""

    enable: bool = True
    check_interval_s: int = 300
    per_broker_percentage: int = 10

    @classmethod
    def from_options(cls, options: dict[str, str]) -> LeaderBalanceConfig:
        """From option strings (only the three names); InvalidConfig naming a bad one."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InvalidConfig(f"unknown leader balance option(s) {unknown}; known: {list(OPTIONS)}")
        enable = options.get(ENABLE, "true").strip().lower()
        if enable not in ("true", "false"):
            raise InvalidConfig(f"{ENABLE}={options[ENABLE]!r} is not allowed: true or false")
        try:
            interval = int(options.get(INTERVAL, "300"))
            percentage = int(options.get(PERCENTAGE, "10"))
        except ValueError as e:
            raise InvalidConfig(f"{INTERVAL} and {PERCENTAGE} take whole numbers: {e}") from None
        if interval < 1:
            raise InvalidConfig(f"{INTERVAL}={interval} is not allowed: at least 1")
        if not 0 <= percentage <= 100:
            raise InvalidConfig(f"{PERCENTAGE}={percentage} is not allowed: 0..100")
        return cls(enable == "true", interval, percentage)


#: Kafka's defaults: on, every 300 s, above 10%.
KAFKA_DEFAULTS = LeaderBalanceConfig()


def imbalance(image: ClusterImage) -> dict[int, tuple[int, int]]:
    """Alive broker -> (partitions it is preferred for, of which it does not lead)."""
    alive = set(image.alive_brokers())
    out = {b: (0, 0) for b in alive}
    for topic in image.topics.values():
        for p in topic.partitions:
            preferred = p.replicas[0]
            if preferred in out:
                preferred_count, not_led = out[preferred]
                out[preferred] = (preferred_count + 1, not_led + (p.leader != preferred))
    return out


def imbalanced_partitions(image: ClusterImage, per_broker_percentage: int) -> list[tuple[str, int]]:
    """The partitions to give back to their preferred replica now, in topic and index order:
    those of every broker whose imbalance exceeds ``per_broker_percentage``, where that
    broker is alive and in the ISR."""
    over = {b for b, (preferred, not_led) in imbalance(image).items()
            if preferred and not_led * 100 > per_broker_percentage * preferred}
    return [(name, index)
            for name, topic in sorted(image.topics.items())
            for index, p in enumerate(topic.partitions)
            if p.replicas[0] in over and p.leader != p.replicas[0] and p.replicas[0] in p.isr]
