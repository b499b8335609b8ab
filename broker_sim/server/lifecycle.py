"""The broker's link to the controller: heartbeats for liveness, a long poll for metadata.

Two threads. The heartbeat thread (:class:`BrokerLifecycle`) heartbeats every
``heartbeat_interval_ms`` (or at once after :meth:`~BrokerLifecycle.wake`), which keeps the
broker's session alive; the first heartbeat registers it. The metadata poller
(:class:`MetadataPoller`) long-polls the controller for the next image (BrokerMetadataFetch:
parked at the controller until its image version moves past the one this broker has, at
most ``max_wait_ms``), applies it, and polls again at once — which is also how the
controller learns that this broker applied it. So a new topic, new partitions, a leader or
ISR change or a config change reaches this broker within milliseconds of its commit,
instead of at the next heartbeat. Heartbeat responses still carry a newer image when the
broker reports an older version (registration, and a fallback should the poll fail).

Applying an image (becoming leader or follower of partitions, dropping deleted ones,
configs) goes through :meth:`BrokerLifecycle.apply`: one at a time, and only forward —
an image no newer than the applied one (a heartbeat's answer overtaken by a poll's) is
dropped. A controller that cannot be reached is retried; the broker keeps serving with the
image it has.

Threading: :meth:`BrokerLifecycle.heartbeat` may be called from any thread (registration,
request handlers wanting the newest image after forwarding a change): ``_lock`` keeps two
heartbeats from interleaving on the shared controller connection; ``_apply_lock``
serialises applying images, between the heartbeat callers and the poller. The poller
thread alone uses the metadata connection (see
:mod:`.controller_client`); stopping it aborts a poll in flight.
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

#: How long the controller may park a metadata poll (the same as KRaft brokers' fetch wait).
METADATA_MAX_WAIT_MS = 500
#: Pause after a failed poll before the next.
METADATA_RETRY_BACKOFF_S = 0.2


class BrokerLifecycle(ShutdownableThread):
    """The broker's heartbeat to the controller; owns the :class:`MetadataPoller` too.

    Each round sends one heartbeat (:meth:`heartbeat`), applies a newer image if the
    controller sent one, then waits ``heartbeat_interval_ms`` or until :meth:`wake` (an ISR
    change, a request for fresh metadata). :meth:`start` and :meth:`stop` start and stop the
    poller with it.
    """

    def __init__(self, client: ControllerClient, broker_id: int, host: str, port: Callable[[], int],
                 on_image: Callable[[ClusterImage], None], heartbeat_interval_ms: int = 250,
                 endpoints: Callable[[], dict[str, list[object]]] = dict,
                 metadata_max_wait_ms: int = METADATA_MAX_WAIT_MS) -> None:
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
        #: The version of the last image applied (-1: none yet).
        self.metadata_version = -1
        self._lock = threading.Lock()
        self._apply_lock = threading.Lock()
        self._wake = threading.Event()
        self.poller = MetadataPoller(self, metadata_max_wait_ms)

    # ---- both threads --------------------------------------------------------------------
    def start(self) -> None:
        super().start()
        self.poller.start()

    def request_stop(self) -> None:
        super().request_stop()
        self.poller.request_stop()

    def stop(self, timeout: float | None = 5.0) -> None:
        self.poller.request_stop()
        super().stop(timeout)
        self.poller.stop(timeout)

    # ---- heartbeats ----------------------------------------------------------------------
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
            self.apply(resp.metadata_version, resp.metadata)

    def wake(self) -> None:
        self._wake.set()

    # ---- images --------------------------------------------------------------------------
    def apply(self, version: int, image_json: str) -> bool:
        """Apply image ``version`` unless one as new is applied already; True if applied."""
        with self._apply_lock:
            if version <= self.metadata_version:
                return False
            self.on_image(ClusterImage.from_json(image_json))
            self.metadata_version = version
            return True


class MetadataPoller(ShutdownableThread):
    """Long-polls the controller for the next image and applies it (see the module docstring).

    Each round sends one BrokerMetadataFetch naming the applied version (which acknowledges
    it) and the broker epoch, and applies the image that comes back, if any. A failed poll
    is retried after a short pause, logged once until a poll succeeds again.
    """

    def __init__(self, lifecycle: BrokerLifecycle, max_wait_ms: int = METADATA_MAX_WAIT_MS) -> None:
        super().__init__(f"broker-{lifecycle.broker_id}-metadata")
        self.lifecycle = lifecycle
        self.max_wait_ms = max_wait_ms
        self._failing = False

    def run_once(self) -> None:
        lc = self.lifecycle
        try:
            resp = lc.client.fetch_metadata({
                "broker_id": lc.broker_id, "broker_epoch": lc.broker_epoch,
                "known_metadata_version": lc.metadata_version, "max_wait_ms": self.max_wait_ms})
            if resp.metadata is not None:
                lc.apply(resp.metadata_version, resp.metadata)
            if self._failing:
                log.info("broker %d: metadata polls work again", lc.broker_id)
                self._failing = False
        except (KafkaError, OSError) as e:
            if self.stopping.is_set():
                return
            if not self._failing:
                log.warning("broker %d: metadata poll failed (%s); retrying, heartbeats still "
                            "bring new images", lc.broker_id, e)
                self._failing = True
            self.stopping.wait(METADATA_RETRY_BACKOFF_S)
        except Exception:
            log.exception("broker %d: applying the cluster image failed", lc.broker_id)
            self.stopping.wait(METADATA_RETRY_BACKOFF_S)

    def wake(self) -> None:
        self.lifecycle.client.wake_metadata_fetch()
