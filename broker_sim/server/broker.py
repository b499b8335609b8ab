"""A broker: wires the log, the controller link, the API layer and the network layer.

A broker always works from the controller's cluster image. A single broker (no
``controller`` option) embeds its controller, with the controller's state in
``<data-dir>/controller``; a broker of a cluster heartbeats to the controller process
named by ``controller=HOST:PORT``. Either way the code paths are the same.

Start-up order matters: logs are loaded (and recovered) and the first image applied
before the socket accepts connections, so no client ever sees a partially recovered log
or a broker that does not know its partitions; shutdown closes the socket first, then
stops handlers and replication, then flushes and closes the logs.
"""

from __future__ import annotations

import logging
import threading
import time

from ..common import SYSTEM_CLOCK, Clock, PeriodicThread
from ..controller.apis import ControllerApis
from ..controller.controller import Controller
from ..controller.image import ClusterImage
from ..log import LogManager
from ..network import SocketServer
from ..network.handler_pool import RequestHandlerPool
from ..protocol.errors import KafkaError, error_for_code
from ..timer import SystemTimer, TimerReaper
from .config import BrokerConfig
from .controller_client import ControllerClient, LocalControllerClient, RemoteControllerClient
from .kafka_apis import KafkaApis
from .lifecycle import BrokerLifecycle
from .metadata_cache import MetadataCache
from .partition import Partition
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = config
        self.clock = clock
        self._stopped = threading.Event()
        self._retention_thread: PeriodicThread | None = None
        self._embedded: tuple[SystemTimer, TimerReaper] | None = None
        self._first_image = True

    def _controller_client(self) -> ControllerClient:
        cfg = self.config
        if cfg.controller:
            host, _, port = cfg.controller.rpartition(":")
            return RemoteControllerClient(host, int(port), cfg.broker_id)
        timer = SystemTimer(f"broker-{cfg.broker_id}-controller-timer")
        reaper = TimerReaper(timer, "embedded-controller-reaper")
        reaper.start()
        self._embedded = (timer, reaper)
        controller = Controller(cfg.data_dir / "controller", timer, cfg.session_timeout_ms,
                                default_replication_factor=1)
        return LocalControllerClient(ControllerApis(controller))

    def start(self) -> Broker:
        cfg = self.config
        data_dir = cfg.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log_manager = LogManager(data_dir / "logs", cfg.log, clock=self.clock)
        self.metadata = MetadataCache()
        self.controller = self._controller_client()
        self.socket_server = SocketServer(
            cfg.host, cfg.port, cfg.num_network_threads, cfg.queued_max_requests,
            cfg.socket_request_max_bytes, cfg.max_connections_per_ip,
            cfg.max_connections_per_ip_overrides)
        self.replica_manager = ReplicaManager(cfg.broker_id, self.log_manager, self.metadata.address,
                                              self._alter_partition, cfg.replica_lag_time_max_ms,
                                              clock=self.clock)
        self.lifecycle = BrokerLifecycle(self.controller, cfg.broker_id, cfg.advertised,
                                         lambda: self.socket_server.port, self._on_image,
                                         cfg.heartbeat_interval_ms)
        self._register()
        self.producer_ids = ProducerIdManager(data_dir / "producer-id-block", cfg.broker_id)
        self.apis = KafkaApis(cfg, self.socket_server.channel, self.replica_manager, self.metadata,
                              self.controller, self.lifecycle.heartbeat, self.producer_ids)
        self.handlers = RequestHandlerPool(cfg.num_io_threads, self.socket_server.channel, self.apis)
        self.handlers.start()
        self.socket_server.start()
        self.lifecycle.start()
        self._retention_thread = PeriodicThread(
            "log-retention", cfg.log_retention_check_interval_ms,
            lambda: self.log_manager.cleanup(self.clock.wall_ms()))
        self._retention_thread.start()
        log.info("broker %d listening on %s:%d (data in %s)", cfg.broker_id, self.host, self.port, data_dir)
        return self

    def _register(self, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self.lifecycle.heartbeat()
                return
            except (KafkaError, OSError) as e:
                if time.monotonic() > deadline:
                    raise
                log.info("broker %d: controller not reachable yet (%s); retrying", self.config.broker_id, e)
                time.sleep(0.2)

    def _on_image(self, image: ClusterImage) -> None:
        self.replica_manager.apply_image(image)
        self.metadata.update(image)
        if self._first_image:
            self._first_image = False
            for tp in list(self.log_manager.all_logs()):
                if tp.topic not in image.topics:
                    log.info("deleting the logs of %s: the topic no longer exists", tp.topic)
                    self.log_manager.delete_topic(tp.topic)

    def _alter_partition(self, partition: Partition, isr: list[int]) -> None:
        try:
            resp = self.controller.alter_partition({
                "broker_id": self.config.broker_id, "broker_epoch": self.lifecycle.broker_epoch,
                "topic": partition.topic, "partition": partition.index,
                "leader_epoch": partition.leader_epoch, "partition_epoch": partition.partition_epoch,
                "new_isr": isr})
        except (KafkaError, OSError) as e:
            log.warning("%s-%d: ISR change to %s not sent: %s", partition.topic, partition.index, isr, e)
            return
        if resp.error_code:
            log.info("%s-%d: ISR change to %s refused: %s", partition.topic, partition.index, isr,
                     error_for_code(resp.error_code).__name__)
            self.lifecycle.wake()
            return
        partition.apply_isr(list(resp.isr), resp.partition_epoch)
        self.lifecycle.wake()

    @property
    def host(self) -> str:
        return self.socket_server.host

    @property
    def port(self) -> int:
        return self.socket_server.port

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def shutdown(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        log.info("broker %d shutting down", self.config.broker_id)
        self.socket_server.shutdown()
        self.lifecycle.stop()
        self.handlers.shutdown()
        self.replica_manager.shutdown()
        if self._retention_thread is not None:
            self._retention_thread.stop()
        self.log_manager.close()
        self.controller.close()
        if self._embedded is not None:
            timer, reaper = self._embedded
            reaper.stop()
            timer.shutdown(wait=False)
        log.info("broker %d stopped", self.config.broker_id)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
