"""The controller as a network service (its own process in a local cluster).

``python -m broker_sim controller --data-dir DIR --port 0`` logs ``listening on HOST:PORT``
like a broker. Alone it is a quorum of one voter; with ``node_id`` and ``quorum_voters``
(Kafka's ``node.id`` and ``controller.quorum.voters``) it is one voter of a controller
quorum, active while it leads it (see :mod:`.controller` and :mod:`..quorum`). Its timer reaper thread drives session expiry on the timing wheel. With
``metrics_port`` (``--override metrics.port=N``) it serves Prometheus metrics: its requests
per API, connections, its timer and the cluster image's health (offline and
under-replicated partitions, brokers alive and fenced).

Shutdown (SIGTERM) is quick by construction: the metrics endpoint and the sockets close
first, the controller releases request handlers waiting for a change to propagate, then
the handlers, the reaper (woken by the timer's shutdown) and the timer stop.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..metrics import MetricsServer, NetworkCollector, WaitingCollector
from ..network import Listener, SocketServer
from ..network.handler_pool import RequestHandlerPool
from ..protocol.api import CONTROLLER_APIS
from ..quorum import MetadataQuorum
from ..raft import RaftConfig
from ..security.scram import ScramCredential
from ..timer import SystemTimer, TimerReaper
from .apis import ControllerApis
from .controller import Controller
from .leader_balance import KAFKA_DEFAULTS, LeaderBalanceConfig
from .metrics import ControllerCollector

log = logging.getLogger(__name__)


class ControllerServer:
    def __init__(self, data_dir: Path, host: str = "127.0.0.1", port: int = 0,
                 session_timeout_ms: int = 3000, default_replication_factor: int = 3,
                 scram_credentials: list[tuple[str, str, ScramCredential]] | None = None,
                 metrics_port: int | None = None,
                 leader_balance: LeaderBalanceConfig = KAFKA_DEFAULTS,
                 node_id: int | None = None,
                 quorum_voters: dict[int, tuple[str, int]] | None = None,
                 raft_config: RaftConfig | None = None,
                 controller_listeners: dict[int, tuple[str, int]] | None = None,
                 cluster_id: str = "pyq-cluster") -> None:
        """``controller_listeners``: node id -> (host, port) of each controller's request
        listener (its own included or not), named by DescribeQuorum and DescribeCluster."""
        self.timer = SystemTimer("controller-timer")
        quorum = None
        if quorum_voters:
            if node_id is None or node_id not in quorum_voters:
                raise ValueError(f"controller option node.id={node_id} is invalid: it must be one "
                                 f"of controller.quorum.voters' ids {sorted(quorum_voters)}")
            quorum = MetadataQuorum(node_id, data_dir, quorum_voters,
                                    host=quorum_voters[node_id][0], config=raft_config)
        self.controller = Controller(data_dir, self.timer, session_timeout_ms, default_replication_factor,
                                     leader_balance=leader_balance, quorum=quorum)
        for user, mechanism, credential in scram_credentials or []:
            self.controller.put_scram(user, mechanism, credential)
        self.socket_server = SocketServer([Listener("CONTROLLER", "PLAINTEXT", host, port)], 1, 100,
                                          10 * 1024 * 1024, 1000, apis=CONTROLLER_APIS)
        self.apis = ControllerApis(self.controller, self.socket_server.channel)
        self.apis.quorum.endpoint = lambda: (self.host, self.port)
        self.apis.quorum.cluster_id = cluster_id
        peers = dict(controller_listeners or {})
        self.apis.quorum.peers = lambda: peers
        self.handlers = RequestHandlerPool(2, self.socket_server.channel, self.apis)
        self.reaper = TimerReaper(self.timer, "controller-session-reaper")
        self.metrics_port_requested = metrics_port
        self.metrics = MetricsServer()
        self.metrics.registry.register(NetworkCollector(self.socket_server))
        self.metrics.registry.register(WaitingCollector(lambda: (), lambda: [self.timer]))
        self.metrics.registry.register(ControllerCollector(self.controller))

    @property
    def host(self) -> str:
        return self.socket_server.host

    @property
    def port(self) -> int:
        return self.socket_server.port

    @property
    def metrics_port(self) -> int | None:
        """The bound port of the metrics endpoint; None if it is off."""
        return None if self.metrics_port_requested is None else self.metrics.port

    def start(self) -> ControllerServer:
        self.reaper.start()
        self.handlers.start()
        if self.metrics_port_requested is not None:
            self.metrics.start(self.host, self.metrics_port_requested)
        self.socket_server.start()
        log.info("controller listening on %s:%d", self.host, self.port)
        return self

    def shutdown(self) -> None:
        self.metrics.shutdown()
        self.socket_server.shutdown()
        self.controller.close()
        self.handlers.shutdown()
        self.apis.shutdown()  # the purgatory of parked metadata polls and answers
        self.reaper.request_stop()
        self.timer.shutdown(wait=False)  # wakes the reaper's wait in the delay queue
        self.reaper.stop()
