"""The cluster image: brokers, topics, partition assignments, leaders and ISRs.

It is the controller's whole state and what every broker acts on. It is plain data with a
JSON form; the controller persists it (atomically) after every change and ships it to the
brokers, each change bumping ``version`` so a broker can tell whether it is up to date.
Besides brokers and topics it holds the SCRAM credentials (user -> mechanism -> salt,
iterations, stored and server keys; never a password) and the ACL bindings, so every
broker authenticates and authorizes against the same store and both survive restarts.
Topic configs hold only a topic's overrides; ``broker_configs`` holds the dynamic broker
configs, by broker id as a string (``""``: the cluster-wide default), see
:mod:`.configs`.

Example (two brokers, one topic with two partitions at replication factor 2)::

    {"version": 7,
     "brokers": {"0": {"host": "127.0.0.1", "port": 9092, "epoch": 3, "alive": true}, ...},
     "topics": {"events": {"topic_id": "...", "configs": {"min.insync.replicas": "2"},
                "partitions": [{"replicas": [0, 1], "isr": [0, 1], "leader": 0,
                                "leader_epoch": 0, "partition_epoch": 0}, ...]}}}
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class BrokerInfo:
    """``host``/``port`` is the inter-broker listener; ``endpoints`` every listener by name."""

    host: str
    port: int
    epoch: int
    incarnation: str = ""
    alive: bool = True
    endpoints: dict[str, list[Any]] = field(default_factory=dict)

    def address(self, listener: str | None) -> tuple[str, int]:
        """This broker's address on ``listener`` (its inter-broker address if it has none)."""
        endpoint = self.endpoints.get(listener) if listener else None
        return (endpoint[0], int(endpoint[1])) if endpoint else (self.host, self.port)


@dataclass
class PartitionInfo:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0


@dataclass
class TopicInfo:
    topic_id: str
    configs: dict[str, str]
    partitions: list[PartitionInfo]


@dataclass
class ClusterImage:
    version: int = 0
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicInfo] = field(default_factory=dict)
    next_broker_epoch: int = 1
    #: user -> mechanism -> ScramCredential.to_json()
    scram: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: AclBinding.to_json() of every ACL, in creation order
    acls: list[dict[str, Any]] = field(default_factory=list)
    #: broker id (a string; "" the cluster-wide default) -> dynamic broker config -> value
    broker_configs: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ClusterImage:
        raw: dict[str, Any] = json.loads(text)
        return cls(
            version=raw["version"],
            brokers={int(k): BrokerInfo(**v) for k, v in raw["brokers"].items()},
            topics={name: TopicInfo(t["topic_id"], t["configs"],
                                    [PartitionInfo(**p) for p in t["partitions"]])
                    for name, t in raw["topics"].items()},
            next_broker_epoch=raw.get("next_broker_epoch", 1),
            scram=raw.get("scram", {}),
            acls=raw.get("acls", []),
            broker_configs=raw.get("broker_configs", {}),
        )

    def alive_brokers(self) -> list[int]:
        return sorted(b for b, info in self.brokers.items() if info.alive)
