"""The broker's durable record of which topics exist, their partition counts and configs.

Stored as one JSON file in the data directory, replaced atomically (write a temporary
file, fsync, rename) on every change, so a crash leaves either the old or the new file.
A single broker owns its topics; a cluster's controller takes over this role later.
Thread-safe: one lock around the in-memory map and the file.
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..protocol.errors import InvalidPartitions, InvalidTopic, TopicAlreadyExists

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249


def validate_topic_name(name: str) -> None:
    if not name or name in (".", ".."):
        raise InvalidTopic(f"topic name {name!r} is not allowed")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopic(f"topic name is longer than {MAX_NAME_LENGTH} characters")
    if not _LEGAL.match(name):
        raise InvalidTopic(f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'")


@dataclass
class TopicInfo:
    name: str
    partitions: int
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=dict)
    topic_id: str = field(default_factory=lambda: str(uuid.uuid4()))


class TopicStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._topics: dict[str, TopicInfo] = {}
        if path.exists():
            for name, info in json.loads(path.read_text()).items():
                self._topics[name] = TopicInfo(name=name, **info)

    def get(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def names(self) -> list[str]:
        return sorted(self._topics)

    def all(self) -> list[TopicInfo]:
        with self._lock:
            return [self._topics[n] for n in sorted(self._topics)]

    def create(self, name: str, partitions: int, replication_factor: int = 1,
               configs: dict[str, str] | None = None, validate_only: bool = False) -> TopicInfo:
        validate_topic_name(name)
        if partitions < 1:
            raise InvalidPartitions(f"number of partitions must be at least 1, got {partitions}")
        with self._lock:
            if name in self._topics:
                raise TopicAlreadyExists(f"topic {name!r} already exists")
            info = TopicInfo(name, partitions, replication_factor, dict(configs or {}))
            if not validate_only:
                self._topics[name] = info
                self._save()
            return info

    def delete(self, name: str) -> TopicInfo | None:
        with self._lock:
            info = self._topics.pop(name, None)
            if info is not None:
                self._save()
            return info

    def _save(self) -> None:
        data = {n: {"partitions": t.partitions, "replication_factor": t.replication_factor,
                    "configs": t.configs, "topic_id": t.topic_id} for n, t in self._topics.items()}
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
