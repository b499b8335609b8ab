"""A broker: wires the log, the stores, the API layer and the network layer together.

Start-up order matters: logs are loaded (and recovered) before the socket opens, so no
client ever sees a partially recovered log; shutdown closes the socket first, then stops
handlers, then flushes and closes logs, so nothing acknowledged is left unflushed.
"""

from __future__ import annotations

import logging
import threading
import time

from ..log import LogManager
from ..network import SocketServer
from .config import BrokerConfig
from .group_offsets import GroupOffsetStore
from .handler_pool import RequestHandlerPool
from .kafka_apis import KafkaApis
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager
from .topics import TopicStore

log = logging.getLogger(__name__)


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self._stopped = threading.Event()
        self._retention_thread: threading.Thread | None = None

    def start(self) -> Broker:
        cfg = self.config
        data_dir = cfg.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        self.topics = TopicStore(data_dir / "topics.json")
        self.log_manager = LogManager(data_dir / "logs", cfg.log)
        self.replica_manager = ReplicaManager(cfg.broker_id, self.log_manager)
        for info in self.topics.all():
            self.replica_manager.create_partitions(info)
        known = set(self.topics.names())
        for topic in {tp.topic for tp in self.log_manager.all_logs()} - known:
            log.info("deleting the logs of %s: the topic no longer exists", topic)
            self.log_manager.delete_topic(topic)
        self.group_offsets = GroupOffsetStore(data_dir / "group-offsets.jsonl")
        self.producer_ids = ProducerIdManager(data_dir / "producer-id-block")
        self.socket_server = SocketServer(
            cfg.host, cfg.port, cfg.num_network_threads, cfg.queued_max_requests,
            cfg.socket_request_max_bytes, cfg.max_connections_per_ip,
            cfg.max_connections_per_ip_overrides)
        self.apis = KafkaApis(cfg, self.socket_server.channel, self.replica_manager, self.topics,
                              self.group_offsets, self.producer_ids, lambda: self.socket_server.port)
        self.handlers = RequestHandlerPool(cfg.num_io_threads, self.socket_server.channel, self.apis)
        self.handlers.start()
        self.socket_server.start()
        self._retention_thread = threading.Thread(target=self._retention_loop, name="log-retention",
                                                  daemon=True)
        self._retention_thread.start()
        log.info("broker %d listening on %s:%d (data in %s)", cfg.broker_id, self.host, self.port, data_dir)
        return self

    @property
    def host(self) -> str:
        return self.socket_server.host

    @property
    def port(self) -> int:
        return self.socket_server.port

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def _retention_loop(self) -> None:
        interval = self.config.log_retention_check_interval_ms / 1000
        while not self._stopped.wait(interval):
            try:
                self.log_manager.cleanup(int(time.time() * 1000))
            except Exception:
                log.exception("log retention check failed")

    def shutdown(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        log.info("broker %d shutting down", self.config.broker_id)
        self.socket_server.shutdown()
        self.handlers.shutdown()
        if self._retention_thread is not None:
            self._retention_thread.join(5)
        self.log_manager.close()
        self.group_offsets.close()
        log.info("broker %d stopped", self.config.broker_id)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
