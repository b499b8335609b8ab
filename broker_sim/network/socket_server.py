"""The broker's network layer: one acceptor per listener, N shared processors, one request channel."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from ..common.clock import SYSTEM_CLOCK, Clock
from ..protocol.api import APIS, ApiSpec
from .acceptor import Acceptor
from .connection_quotas import ConnectionQuotas
from .listener import Listener
from .processor import Processor
from .request_channel import RequestChannel

log = logging.getLogger(__name__)


class SocketServer:
    """Binds every listener at construction (so bound ports are known before start)."""

    def __init__(self, listeners: Sequence[Listener], num_processors: int, queued_max_requests: int,
                 max_request_size: int, max_connections_per_ip: int,
                 max_connections_per_ip_overrides: dict[str, int] | None = None,
                 apis: dict[int, ApiSpec] = APIS, connections_max_idle_ms: int = 600_000,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.channel = RequestChannel(queued_max_requests)
        self.apis = apis  # the APIs served (their names label the request metrics)
        self.quotas = ConnectionQuotas(max_connections_per_ip, max_connections_per_ip_overrides)
        self.processors = [Processor(i, self.channel, self.quotas, max_request_size, apis,
                                     connections_max_idle_ms, clock)
                           for i in range(num_processors)]
        for p in self.processors:
            self.channel.add_processor(p)
        self.acceptors: list[Acceptor] = []
        try:
            for listener in listeners:
                self.acceptors.append(Acceptor(listener, self.processors, self.quotas))
        except BaseException:
            for a in self.acceptors:
                a.on_stopped()
            raise

    @property
    def listeners(self) -> list[Listener]:
        """Every listener as bound, in the configured order."""
        return [a.listener for a in self.acceptors]

    def listener(self, name: str) -> Listener:
        for a in self.acceptors:
            if a.listener.name == name:
                return a.listener
        raise KeyError(f"no listener named {name}")

    @property
    def host(self) -> str:
        return self.acceptors[0].host

    @property
    def port(self) -> int:
        return self.acceptors[0].port

    def start(self) -> None:
        for p in self.processors:
            p.start()
        for a in self.acceptors:
            a.start()

    def shutdown(self) -> None:
        for a in self.acceptors:
            a.stop()
        for p in self.processors:
            p.request_stop()
        for p in self.processors:
            p.stop()
