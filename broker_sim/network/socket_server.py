"""The broker's network layer: one acceptor, N processors, one request channel."""

from __future__ import annotations

import logging

from ..protocol.api import APIS, ApiSpec
from .acceptor import Acceptor
from .connection_quotas import ConnectionQuotas
from .processor import Processor
from .request_channel import RequestChannel

log = logging.getLogger(__name__)


class SocketServer:
    def __init__(self, host: str, port: int, num_processors: int, queued_max_requests: int,
                 max_request_size: int, max_connections_per_ip: int,
                 max_connections_per_ip_overrides: dict[str, int] | None = None,
                 apis: dict[int, ApiSpec] = APIS) -> None:
        self.channel = RequestChannel(queued_max_requests)
        self.quotas = ConnectionQuotas(max_connections_per_ip, max_connections_per_ip_overrides)
        self.processors = [Processor(i, self.channel, self.quotas, max_request_size, apis)
                           for i in range(num_processors)]
        for p in self.processors:
            self.channel.add_processor(p)
        self.acceptor = Acceptor(host, port, self.processors, self.quotas)

    @property
    def host(self) -> str:
        return self.acceptor.host

    @property
    def port(self) -> int:
        return self.acceptor.port

    def start(self) -> None:
        for p in self.processors:
            p.start()
        self.acceptor.start()

    def shutdown(self) -> None:
        self.acceptor.stop()
        for p in self.processors:
            p.request_stop()
        for p in self.processors:
            p.stop()
