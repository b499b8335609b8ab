"""The broker's heartbeat loop: stay registered with the controller, pick up new images.

Every ``heartbeat_interval_ms`` (or at once after :meth:`wake`) the broker heartbeats;
when the controller's image version moved, the response carries the new image and the
broker applies it (becoming leader or follower of partitions, dropping deleted ones)
before the next heartbeat. A controller that cannot be reached is retried at the same
pace; the broker keeps serving with the image it has.

Threading: one daemon thread runs :meth:`run`; :meth:`run_once` is also called by
request handlers that need the newest image at once (after forwarding a topic creation).
A lock keeps two heartbeats from interleaving.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable

from ..common.shutdownable_thread import ShutdownableThread
from ..controller.image import ClusterImage
from ..protocol.errors import KafkaError
from .controller_client import ControllerClient

log = logging.getLogger(__name__)


class BrokerLifecycle(ShutdownableThread):
    """The broker's heartbeat to the controller, which also brings the cluster image back.

    Each round sends one heartbeat (:meth:`heartbeat`), applies a newer image if the
    controller sent one, then waits ``heartbeat_interval_ms`` or until :meth:`wake` (an ISR
    change, a request for fresh metadata). ``heartbeat`` may also be called from other
    threads (registration, request handlers needing fresh metadata): ``_lock`` serializes
    heartbeats, so images are applied one at a time and in order.
    """

    def __init__(self, client: ControllerClient, broker_id: int, host: str, port: Callable[[], int],
                 on_image: Callable[[ClusterImage], None], heartbeat_interval_ms: int = 250,
                 endpoints: Callable[[], dict[str, list[object]]] = dict) -> None:
        super().__init__(f"broker-{broker_id}-lifecycle")
        self.client = client
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.on_image = on_image
        self.endpoints = endpoints
        self.interval_s = heartbeat_interval_ms / 1000
        self.incarnation = str(uuid.uuid4())
        self.broker_epoch = -1
        self.metadata_version = -1
        self._lock = threading.Lock()
        self._wake = threading.Event()

    def run_once(self) -> None:
        try:
            self.heartbeat()
        except (KafkaError, OSError) as e:
            log.warning("broker %d: heartbeat to the controller failed: %s", self.broker_id, e)
        except Exception:
            log.exception("broker %d: applying the cluster image failed", self.broker_id)
        self._wake.wait(self.interval_s)
        self._wake.clear()

    def heartbeat(self) -> None:
        with self._lock:
            resp = self.client.heartbeat({
                "broker_id": self.broker_id, "host": self.host, "port": self.port(),
                "incarnation_id": self.incarnation, "known_metadata_version": self.metadata_version,
                "endpoints": json.dumps(self.endpoints())})
            self.broker_epoch = resp.broker_epoch
            if resp.metadata is not None:
                image = ClusterImage.from_json(resp.metadata)
                self.on_image(image)
                self.metadata_version = resp.metadata_version

    def wake(self) -> None:
        self._wake.set()
