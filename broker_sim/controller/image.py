"""The cluster image: brokers, topics, partition assignments, leaders and ISRs.

It is the controller's whole state and what every broker acts on. It is plain data with a
JSON form; every change is a metadata record (:meth:`ClusterImage.record`, the entities it
touched) committed to the controller quorum's log and applied by every controller
(:meth:`ClusterImage.apply`), and the image is shipped to the brokers, each change bumping
``version`` so a broker can tell whether it is up to date.
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


def _topic(raw: dict[str, Any]) -> TopicInfo:
    return TopicInfo(raw["topic_id"], raw["configs"], [PartitionInfo(**p) for p in raw["partitions"]])


#: the image's maps whose entries a metadata record sets or deletes one by one
_ENTITY_MAPS = ("brokers", "topics", "scram", "broker_configs")


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
        return cls.from_raw(json.loads(text))

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> ClusterImage:
        return cls(
            version=raw["version"],
            brokers={int(k): BrokerInfo(**v) for k, v in raw["brokers"].items()},
            topics={name: _topic(t) for name, t in raw["topics"].items()},
            next_broker_epoch=raw.get("next_broker_epoch", 1),
            scram=raw.get("scram", {}),
            acls=raw.get("acls", []),
            broker_configs=raw.get("broker_configs", {}),
        )

    def record(self, before: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """The metadata record taking an image whose raw form (``asdict``) is ``before`` to
        this one, and this image's raw form. Only the entities that changed are in it: a
        broker, a topic, a user's credentials or a resource's configs as a whole, set or
        deleted (``null``); the version, the next broker epoch and the ACLs when changed.

        >>> old = ClusterImage()
        >>> new = ClusterImage(version=1, topics={"t": TopicInfo("id", {}, [])})
        >>> record, raw = new.record(asdict(old))
        >>> record
        b'{"set": {"topics": {"t": {"configs": {}, "partitions": [], "topic_id": "id"}}}, "version": 1}'
        >>> old.apply(record) == new
        True
        """
        after = json.loads(json.dumps(asdict(self)))  # keys as strings, as stored
        out: dict[str, Any] = {}
        changes: dict[str, dict[str, Any]] = {}
        for name, value in after.items():
            old = before.get(name)
            if name in _ENTITY_MAPS:
                old = old or {}
                section = {k: v for k, v in value.items() if old.get(k) != v}
                section.update({k: None for k in old if k not in value})
                if section:
                    changes[name] = section
            elif old != value:
                out[name] = value
        if changes:
            out["set"] = changes
        return json.dumps(out, sort_keys=True).encode(), after

    def apply(self, record: bytes) -> ClusterImage:
        """Apply a metadata record made by :meth:`record` (in place); returns self."""
        raw: dict[str, Any] = json.loads(record)
        for name, section in raw.pop("set", {}).items():
            target: dict[Any, Any] = getattr(self, name)
            for key, value in section.items():
                k: Any = int(key) if name == "brokers" else key
                if value is None:
                    target.pop(k, None)
                elif name == "brokers":
                    target[k] = BrokerInfo(**value)
                elif name == "topics":
                    target[k] = _topic(value)
                else:
                    target[k] = value
        for name, value in raw.items():
            setattr(self, name, value)
        return self

    def alive_brokers(self) -> list[int]:
        return sorted(b for b, info in self.brokers.items() if info.alive)
