"""The controller as a network service (its own process in a local cluster).

``python -m broker_sim controller --data-dir DIR --port 0`` logs ``listening on HOST:PORT``
like a broker. Its timer reaper thread drives session expiry on the timing wheel.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ..network import Listener, SocketServer
from ..network.handler_pool import RequestHandlerPool
from ..protocol.api import CONTROLLER_APIS
from ..security.scram import ScramCredential
from ..timer import SystemTimer, TimerReaper
from .apis import ControllerApis
from .controller import Controller

log = logging.getLogger(__name__)


class ControllerServer:
    def __init__(self, data_dir: Path, host: str = "127.0.0.1", port: int = 0,
                 session_timeout_ms: int = 3000, default_replication_factor: int = 3,
                 scram_credentials: list[tuple[str, str, ScramCredential]] | None = None) -> None:
        self.timer = SystemTimer("controller-timer")
        self.controller = Controller(data_dir, self.timer, session_timeout_ms, default_replication_factor)
        for user, mechanism, credential in scram_credentials or []:
            self.controller.put_scram(user, mechanism, credential)
        self.socket_server = SocketServer([Listener("CONTROLLER", "PLAINTEXT", host, port)], 1, 100,
                                          10 * 1024 * 1024, 1000, apis=CONTROLLER_APIS)
        self.apis = ControllerApis(self.controller, self.socket_server.channel)
        self.handlers = RequestHandlerPool(2, self.socket_server.channel, self.apis)
        self.reaper = TimerReaper(self.timer, "controller-session-reaper")

    @property
    def host(self) -> str:
        return self.socket_server.host

    @property
    def port(self) -> int:
        return self.socket_server.port

    def start(self) -> ControllerServer:
        self.reaper.start()
        self.handlers.start()
        self.socket_server.start()
        log.info("controller listening on %s:%d", self.host, self.port)
        return self

    def shutdown(self) -> None:
        self.socket_server.shutdown()
        self.handlers.shutdown()
        self.reaper.stop()
        self.timer.shutdown(wait=False)
