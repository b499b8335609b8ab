"""The controller's metrics: the cluster image's health, read when scraped."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .controller import Controller
from .image import ClusterImage


@dataclass(frozen=True)
class ImageHealth:
    version: int
    brokers_alive: int
    brokers_fenced: int
    topics: int
    partitions: int
    #: No leader (every replica in its ISR is fenced): nobody can read or write it.
    offline_partitions: int
    #: An ISR smaller than the replica set.
    under_replicated_partitions: int

    @classmethod
    def of(cls, image: ClusterImage) -> ImageHealth:
        alive = sum(1 for b in image.brokers.values() if b.alive)
        partitions = offline = under = 0
        for topic in image.topics.values():
            for p in topic.partitions:
                partitions += 1
                offline += p.leader < 0
                under += len(p.isr) < len(p.replicas)
        return cls(image.version, alive, len(image.brokers) - alive, len(image.topics),
                   partitions, offline, under)


class ControllerCollector(Collector):
    """``pyq_controller_*`` gauges from one look at the image under the controller's lock
    (an O(partitions) walk per scrape, nothing on any request path)."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def collect(self) -> Iterator[GaugeMetricFamily]:
        h = self.controller.read_image(ImageHealth.of)
        yield GaugeMetricFamily("pyq_controller_offline_partitions",
                                "Partitions without a leader", value=h.offline_partitions)
        yield GaugeMetricFamily("pyq_controller_under_replicated_partitions",
                                "Partitions whose ISR is smaller than their replica set",
                                value=h.under_replicated_partitions)
        brokers = GaugeMetricFamily("pyq_controller_brokers", "Registered brokers, by state",
                                    labels=["state"])
        brokers.add_metric(["alive"], h.brokers_alive)
        brokers.add_metric(["fenced"], h.brokers_fenced)
        yield brokers
        yield GaugeMetricFamily("pyq_controller_topics", "Topics", value=h.topics)
        yield GaugeMetricFamily("pyq_controller_partitions", "Partitions", value=h.partitions)
        yield GaugeMetricFamily("pyq_controller_image_version",
                                "Version of the cluster image (bumped by every change)",
                                value=h.version)
