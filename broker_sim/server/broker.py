"""A broker: wires the log, the controller link, the API layer and the network layer.

A broker always works from the controller's cluster image. A single broker (no
``controller`` option) embeds its controller, with the controller's state in
``<data-dir>/controller``; a broker of a cluster heartbeats to the controller process
named by ``controller=HOST:PORT``. Either way the code paths are the same.

Every listener in ``listeners`` is bound (TLS listeners with a context built from the
``ssl.*`` options) and logged; the broker registers all of them with the controller, so
Metadata answers each client with the brokers' addresses on the listener it came in on.
Replicas fetch over the inter-broker listener.

Start-up order matters: logs are loaded (and recovered) and the first image applied
before the socket accepts connections, so no client ever sees a partially recovered log
or a broker that does not know its partitions; shutdown closes the socket first, then
stops handlers and replication, then flushes and closes the logs.

Metrics (``metrics.port``): :class:`~.broker_metrics.BrokerMetrics` serves this broker's
Prometheus endpoint on ``host``; it is started before the socket accepts connections, so
its port is known (:attr:`Broker.metrics_port`) when ``listening on`` is logged.

Schema registry (``schema.registry.listeners``): a
:class:`~broker_sim.registry.server.SchemaRegistryServer` on its own HTTP port, started
after the socket server (it is a client of this broker's inter-broker listener) and
before ``listening on`` is logged (:attr:`Broker.schema_registry_url`); stopped first.
"""

from __future__ import annotations

import dataclasses
import logging
import ssl
import threading
import time
from typing import TYPE_CHECKING

from ..common import SYSTEM_CLOCK, Clock, PeriodicThread
from ..controller.apis import ControllerApis
from ..controller.controller import Controller
from ..controller.image import ClusterImage
from ..coordinator.group import GroupCoordinator
from ..coordinator.group.store import GroupStore
from ..coordinator.transaction.coordinator import TransactionCoordinator
from ..coordinator.transaction.store import TransactionStore
from ..log import LogManager
from ..log.cleaner import LogCleaner
from ..network import Listener, SocketServer
from ..network.handler_pool import RequestHandlerPool
from ..protocol.errors import KafkaError, error_for_code
from ..security.acl import AclBinding
from ..security.authorizer import Authorizer
from ..security.scram import ScramCredential
from ..security.tls import server_context
from ..timer import SystemTimer, TimerReaper
from .broker_metrics import BrokerMetrics
from .config import BrokerConfig
from .controller_client import ControllerClient, LocalControllerClient, RemoteControllerClient
from .controller_failover import QuorumControllerClient, parse_controllers
from .kafka_apis import KafkaApis
from .lifecycle import BrokerLifecycle
from .metadata_cache import MetadataCache
from .partition import Partition
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager
from .txn_marker_sender import MarkerSender

if TYPE_CHECKING:
    from ..registry.server import SchemaRegistryServer

log = logging.getLogger(__name__)


class Broker:
    """``scram_credentials`` (user, mechanism, credential) are stored in the embedded
    controller at start (``pyq-broker --add-scram``); a broker of a cluster leaves that to
    its controller."""

    def __init__(self, config: BrokerConfig, clock: Clock = SYSTEM_CLOCK,
                 scram_credentials: list[tuple[str, str, ScramCredential]] | None = None) -> None:
        if scram_credentials and config.controller:
            raise ValueError("SCRAM credentials are stored by the controller: pass --add-scram "
                             "to 'pyq-broker controller' (or 'pyq-broker cluster')")
        self.config = config
        self.clock = clock
        self.scram_credentials = list(scram_credentials or [])
        self._stopped = threading.Event()
        self._retention_thread: PeriodicThread | None = None
        self.log_cleaner: LogCleaner | None = None
        self._embedded: tuple[SystemTimer, TimerReaper] | None = None
        self._first_image = True
        #: This broker's metrics (served only with ``metrics.port``).
        self.metrics = BrokerMetrics()
        #: A single broker's embedded controller (None in a cluster).
        self.embedded_controller: Controller | None = None
        #: The schema registry served by this broker (``schema.registry.listeners``).
        self.schema_registry: SchemaRegistryServer | None = None

    def _controller_client(self) -> ControllerClient:
        cfg = self.config
        if cfg.controller and "," in cfg.controller:  # a quorum: follow the active one
            return QuorumControllerClient(parse_controllers(cfg.controller), cfg.broker_id,
                                          request_timeout_s=cfg.session_timeout_ms / 2000)
        if cfg.controller:
            host, _, port = cfg.controller.rpartition(":")
            return RemoteControllerClient(host, int(port), cfg.broker_id)
        timer = SystemTimer(f"broker-{cfg.broker_id}-controller-timer")
        reaper = TimerReaper(timer, "embedded-controller-reaper")
        reaper.start()
        self._embedded = (timer, reaper)
        controller = Controller(cfg.data_dir / "controller", timer, cfg.session_timeout_ms,
                                default_replication_factor=1, leader_balance=cfg.leader_balance)
        for user, mechanism, credential in self.scram_credentials:
            controller.put_scram(user, mechanism, credential)
        self.embedded_controller = controller
        return LocalControllerClient(ControllerApis(controller))

    def _server_context(self, client_auth: str) -> ssl.SSLContext:
        cfg = self.config
        assert cfg.ssl_keystore_location is not None  # checked by BrokerConfig
        return server_context(cfg.ssl_keystore_location, cfg.ssl_key_password,
                              cfg.ssl_truststore_location, client_auth,
                              keystore_type=cfg.ssl_keystore_type,
                              keystore_password=cfg.ssl_keystore_password,
                              truststore_type=cfg.ssl_truststore_type,
                              truststore_password=cfg.ssl_truststore_password)

    def _listeners(self) -> list[Listener]:
        cfg = self.config
        out = []
        for listener in cfg.effective_listeners:
            if listener.uses_tls:
                assert cfg.ssl_keystore_location is not None  # checked by BrokerConfig
                listener = dataclasses.replace(listener, ssl_context=self._server_context(
                    cfg.ssl_client_auth))
            out.append(listener)
        return out

    def _authorizer(self) -> Authorizer | None:
        """pyq's ACL authorizer over the cluster image, if ``authorizer.class.name`` is set."""
        cfg = self.config
        if not cfg.authorizer_class_name:
            return None

        def version() -> int:
            return self.metadata.image.version

        def bindings() -> list[AclBinding]:
            return [AclBinding.from_json(a) for a in self.metadata.image.acls]

        log.info("broker %d: ACL authorizer on (super users %s, allow.everyone.if.no.acl.found=%s)",
                 cfg.broker_id, list(cfg.super_users), cfg.allow_everyone_if_no_acl_found)
        return Authorizer(version, bindings, cfg.super_users, cfg.allow_everyone_if_no_acl_found)

    def endpoints(self) -> dict[str, list[object]]:
        """Listener name -> [advertised host, bound port], as registered with the controller."""
        return {lst.name: [self.config.advertised_host or lst.host, lst.port]
                for lst in self.socket_server.listeners}

    def _inter_broker_port(self) -> int:
        return self.socket_server.listener(self.config.inter_broker_listener.name).port

    def start(self) -> Broker:
        cfg = self.config
        data_dir = cfg.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log_manager = LogManager(data_dir / "logs", cfg.log, clock=self.clock)
        self.metadata = MetadataCache()
        self.controller = self._controller_client()
        self.socket_server = SocketServer(
            self._listeners(), cfg.num_network_threads, cfg.queued_max_requests,
            cfg.socket_request_max_bytes, cfg.max_connections_per_ip,
            cfg.max_connections_per_ip_overrides, connections_max_idle_ms=cfg.connections_max_idle_ms,
            clock=self.clock)
        self.replica_manager = ReplicaManager(cfg.broker_id, self.log_manager, self.metadata.address,
                                              self._alter_partition, cfg.replica_lag_time_max_ms,
                                              clock=self.clock)
        self.group_store = GroupStore(cfg.group, self.replica_manager, self.clock, legacy=self.controller)
        self.group_coordinator = GroupCoordinator(cfg.group, self.group_store, self.clock)
        self.txn_store = TransactionStore(cfg.transaction, self.replica_manager, self.clock)
        self.txn_coordinator = TransactionCoordinator(
            cfg.transaction, self.txn_store, lambda: self.producer_ids.next_id(),
            MarkerSender(cfg.broker_id, self._leader_of, self.metadata.address, self.clock), self.clock)
        inter = cfg.inter_broker_listener
        self.lifecycle = BrokerLifecycle(self.controller, cfg.broker_id, cfg.advertised_host or inter.host,
                                         self._inter_broker_port, self._on_image,
                                         cfg.heartbeat_interval_ms, self.endpoints)
        self._register()
        self.producer_ids = ProducerIdManager(data_dir / "producer-id-block", cfg.broker_id)
        self.apis = KafkaApis(cfg, self.socket_server.channel, self.replica_manager, self.metadata,
                              self.controller, self.lifecycle.heartbeat, self.producer_ids,
                              self.group_coordinator, self._authorizer(), self.txn_coordinator)
        self.handlers = RequestHandlerPool(cfg.num_io_threads, self.socket_server.channel, self.apis)
        self.handlers.start()
        self.metrics.watch(self)
        if cfg.metrics_port is not None:
            self.metrics.server.start(cfg.host, cfg.metrics_port)
        self.socket_server.start()
        self.lifecycle.start()
        if cfg.schema_registry_listener is not None:
            self.schema_registry = self._start_schema_registry()
        self._retention_thread = PeriodicThread(
            "log-retention", cfg.log_retention_check_interval_ms,
            lambda: self.log_manager.cleanup(self.clock.wall_ms()))
        self._retention_thread.start()
        if cfg.log_cleaner_enable:
            self.log_cleaner = LogCleaner(
                lambda: list(self.log_manager.all_logs().values()), cfg.log_cleaner_threads,
                cfg.log_cleaner_backoff_ms, cfg.log_cleaner_dedupe_buffer_size,
                self.clock).start()
        for listener in self.socket_server.listeners:
            log.info("broker %d: listener %s (%s)", cfg.broker_id, listener, listener.security_protocol)
        log.info("broker %d listening on %s:%d (data in %s)", cfg.broker_id, self.host, self.port, data_dir)
        return self

    def _start_schema_registry(self) -> SchemaRegistryServer:
        from ..registry.server import SchemaRegistryServer  # loads werkzeug and avro: only if on

        cfg = self.config
        assert cfg.schema_registry_listener is not None
        authenticate = None
        if cfg.schema_registry_authentication == "basic":
            def authenticate(user: str, password: str) -> bool:
                stored = self.apis.security.credentials(user)
                return any(c.matches_password(m, password) for m, c in stored.items())
        context = None
        if cfg.schema_registry_listener.uses_tls:
            assert cfg.ssl_keystore_location is not None  # checked by BrokerConfig
            context = self._server_context("none")
        inter = cfg.inter_broker_listener
        return SchemaRegistryServer.for_broker(
            cfg.schema_registry_listener, (inter.host, self._inter_broker_port()), cfg.broker_id,
            authenticate, context).start()

    @property
    def schema_registry_url(self) -> str | None:
        """The bound URL of this broker's schema registry; None without one."""
        return None if self.schema_registry is None else self.schema_registry.url

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
        for store in (self.group_store, self.txn_store):
            internal = image.topics.get(store.topic)
            store.set_leadership(
                len(internal.partitions) if internal else 0,
                {i: p.leader_epoch for i, p in enumerate(internal.partitions)
                 if p.leader == self.config.broker_id} if internal else {})
        if self._first_image:
            self._first_image = False
            for tp in list(self.log_manager.all_logs()):
                if tp.topic not in image.topics:
                    log.info("deleting the logs of %s: the topic no longer exists", tp.topic)
                    self.log_manager.delete_topic(tp.topic)

    def _leader_of(self, topic: str, partition: int) -> int | None:
        """The partition's leader now (-1: none yet); None if the topic is gone."""
        info = self.metadata.image.topics.get(topic)
        if info is None or partition >= len(info.partitions):
            return None
        return info.partitions[partition].leader

    def _alter_partition(self, partition: Partition, isr: list[int]) -> None:
        old_isr = list(partition.isr)  # the image may bring the new ISR before the answer does
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
        self.metrics.record_isr_change(old_isr, resp.isr)
        partition.apply_isr(list(resp.isr), resp.partition_epoch)
        self.lifecycle.wake()

    @property
    def host(self) -> str:
        return self.socket_server.host

    @property
    def port(self) -> int:
        return self.socket_server.port

    @property
    def metrics_port(self) -> int | None:
        """The bound port of the metrics endpoint; None without ``metrics.port``."""
        return None if self.config.metrics_port is None else self.metrics.server.port

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def retention_checks(self) -> int:
        """How many log-retention checks (``log.retention.check.interval.ms``) have finished."""
        return 0 if self._retention_thread is None else self._retention_thread.runs

    def listener_address(self, name: str) -> str:
        """``host:port`` of listener ``name`` (e.g. "SASL_SSL"), as bound."""
        listener = self.socket_server.listener(name)
        return f"{listener.host}:{listener.port}"

    def shutdown(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        log.info("broker %d shutting down", self.config.broker_id)
        if self.schema_registry is not None:
            self.schema_registry.shutdown()
        self.metrics.server.shutdown()
        self.socket_server.shutdown()
        self.lifecycle.stop()
        if self.embedded_controller is not None:
            self.embedded_controller.close()  # handlers waiting on it return now
        self.handlers.shutdown()
        self.group_coordinator.shutdown()
        self.txn_coordinator.shutdown()
        self.replica_manager.shutdown()
        if self._retention_thread is not None:
            self._retention_thread.stop()
        if self.log_cleaner is not None:
            self.log_cleaner.stop()
        self.log_manager.close()
        self.controller.close()
        if self._embedded is not None:
            timer, reaper = self._embedded
            reaper.request_stop()
            timer.shutdown(wait=False)  # wakes the reaper's wait in the delay queue
            reaper.stop()
        log.info("broker %d stopped", self.config.broker_id)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
