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

from ..common.options import BOOL, declared, integer, option, parse_value
from ..protocol.errors import InvalidConfig
from .image import ClusterImage


@dataclass(frozen=True)
class LeaderBalanceConfig:
    """The three options, declared once, with Kafka's defaults. Frozen: shared freely."""

    enable: bool = option(
        "auto.leader.rebalance.enable", True, BOOL,
        doc="Whether the controller moves leaderships back to preferred replicas by itself.")
    check_interval_s: int = option(
        "leader.imbalance.check.interval.seconds", 300, integer(1, None, allowed="at least 1"),
        doc="How often the controller checks the brokers' leader imbalance.")
    per_broker_percentage: int = option(
        "leader.imbalance.per.broker.percentage", 10, integer(0, 100, allowed="0..100"),
        doc="The share of its preferred partitions a broker may not lead before they are moved back.")

    @classmethod
    def from_options(cls, options: dict[str, str]) -> LeaderBalanceConfig:
        """From option strings (only the three names); InvalidConfig naming a bad one."""
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise InvalidConfig(f"unknown leader balance option(s) {unknown}; known: {list(OPTIONS)}")
        values = {}
        for name, raw in options.items():
            spec = OPTIONS[name]
            try:
                values[spec.attr] = parse_value(spec, raw)
            except ValueError as e:
                shown, rule = repr(raw), str(e)
                if spec.kind.name == "int":
                    try:
                        shown = str(int(raw))
                    except ValueError:
                        rule = f"it takes whole numbers ({rule})"
                raise InvalidConfig(f"{name}={shown} is not allowed: {rule}") from None
        return cls(**values)


#: Kafka's option names, the controller's only leader-balance settings.
OPTIONS = declared(LeaderBalanceConfig)
ENABLE, INTERVAL, PERCENTAGE = OPTIONS

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
