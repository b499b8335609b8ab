"""The broker's copy of the controller's cluster image, for answering Metadata.

Replaced wholesale (one reference assignment, atomic in CPython) by the lifecycle thread
whenever a newer image arrives; readers take the reference once and use that snapshot.
"""

from __future__ import annotations

from ..controller.image import BrokerInfo, ClusterImage, TopicInfo


class MetadataCache:
    def __init__(self) -> None:
        self.image = ClusterImage()

    def update(self, image: ClusterImage) -> None:
        self.image = image

    def topic(self, name: str) -> TopicInfo | None:
        return self.image.topics.get(name)

    def topic_names(self) -> list[str]:
        return sorted(self.image.topics)

    def alive_brokers(self) -> dict[int, BrokerInfo]:
        return {b: info for b, info in self.image.brokers.items() if info.alive}

    def address(self, broker_id: int) -> tuple[str, int] | None:
        info = self.image.brokers.get(broker_id)
        return (info.host, info.port) if info is not None else None
