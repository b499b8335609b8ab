"""The broker's copy of the controller's cluster image, for answering Metadata.

Replaced wholesale (one reference assignment, atomic in CPython) by the lifecycle thread
whenever a newer image arrives; readers take the reference once and use that snapshot.

Topic ids: the controller gives every topic a random uuid when it creates it (kept as a
string in the image, the same on every broker and across restarts). :meth:`topic_id` and
:meth:`topic_name` translate between names and ids (Metadata v10+, and the KIP-848
consumer, which names its assigned topics by id); the by-id index is built once per image,
on first use.
"""

from __future__ import annotations

import uuid

from ..controller.image import BrokerInfo, ClusterImage, TopicInfo

#: The id of no topic: Kafka's answer for a topic that does not exist.
ZERO_UUID = uuid.UUID(int=0)

_NAMESPACE = uuid.UUID("5f0c6f7e-1d1a-4c36-9a4e-0b8e0a2b9c11")


def parse_topic_id(raw: str) -> uuid.UUID:
    """The uuid of an image's ``topic_id`` string. Images the controller writes always hold
    uuids; any other string (hand-built images in tests) maps to a stable uuid derived from
    it, so every topic still has exactly one id."""
    try:
        return uuid.UUID(raw)
    except ValueError:
        return uuid.uuid5(_NAMESPACE, raw)


class _TopicIds:
    """Both directions of the name <-> id mapping of one image."""

    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self.by_name = {name: parse_topic_id(t.topic_id) for name, t in image.topics.items()}
        self.by_id = {tid: name for name, tid in self.by_name.items()}


class MetadataCache:
    def __init__(self) -> None:
        self.image = ClusterImage()
        self._ids = _TopicIds(self.image)

    def update(self, image: ClusterImage) -> None:
        self.image = image

    def topic(self, name: str) -> TopicInfo | None:
        return self.image.topics.get(name)

    def topic_names(self) -> list[str]:
        return sorted(self.image.topics)

    def _topic_ids(self, image: ClusterImage | None = None) -> _TopicIds:
        image = self.image if image is None else image
        ids = self._ids  # one read: another thread may replace it meanwhile
        if ids.image is not image:
            ids = _TopicIds(image)
            if image is self.image:
                self._ids = ids
        return ids

    def topic_ids(self) -> tuple[dict[uuid.UUID, str], dict[str, uuid.UUID]]:
        """(id -> name, name -> id) of the current image, built once per image."""
        ids = self._topic_ids()
        return ids.by_id, ids.by_name

    def topic_id(self, name: str, image: ClusterImage | None = None) -> uuid.UUID:
        """The id of topic ``name`` (the zero uuid if there is no such topic), in ``image``
        (default: the current one)."""
        return self._topic_ids(image).by_name.get(name, ZERO_UUID)

    def topic_name(self, topic_id: uuid.UUID, image: ClusterImage | None = None) -> str | None:
        """The name of the topic whose id is ``topic_id`` (None if there is none)."""
        return self._topic_ids(image).by_id.get(topic_id)

    def alive_brokers(self) -> dict[int, BrokerInfo]:
        return {b: info for b, info in self.image.brokers.items() if info.alive}

    def address(self, broker_id: int) -> tuple[str, int] | None:
        info = self.image.brokers.get(broker_id)
        return (info.host, info.port) if info is not None else None
