"""Serving the console: werkzeug's threaded WSGI server around :func:`.app.create_app`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from werkzeug.serving import BaseWSGIServer, make_server

from broker_sim.common import ShutdownableThread

from .app import create_app
from .clients import ConsoleClients
from .lag_history import DEFAULT_INTERVAL_MS, LagHistory

#: How long a round of the serving thread waits for a request (bounds how long close takes).
_POLL_S = 0.1


class _ServeThread(ShutdownableThread):
    """``pyq-console``: a round answers one request (on a thread of its own) or times out."""

    def __init__(self, server: BaseWSGIServer) -> None:
        super().__init__("pyq-console")
        self.server = server

    def run_once(self) -> None:
        self.server.handle_request()


class ConsoleServer:
    """The console on ``host:port`` (port 0: an ephemeral one, see :attr:`url`), over
    clients made from ``options`` (Kafka's client option names; an invalid one fails here,
    naming it), and the schema registry at ``schema_registry`` (with ``registry_ca`` and
    ``registry_user``, as :func:`.app.create_app` takes them) when given.

    Threading: :meth:`serve_forever` runs on the caller's thread (``pyq console``) or
    :meth:`start` on a :class:`~broker_sim.common.ShutdownableThread` of its own; each request is answered on a thread of
    its own, and they reach the cluster one at a time (:class:`.clients.ConsoleClients`).
    The lag history (:class:`.lag_history.LagHistory`, every ``lag_interval_ms``, over an
    Admin of its own, so pages never wait for it) is sampled from construction on.
    :meth:`close` stops serving, then the sampling, then
    closes the clients.
    """

    def __init__(self, options: Mapping[str, Any], host: str = "127.0.0.1", port: int = 0,
                 schema_registry: str | None = None,
                 lag_interval_ms: int = DEFAULT_INTERVAL_MS,
                 basic_auth: tuple[str, str] | None = None,
                 registry_ca: str | None = None, registry_user: str | None = None) -> None:
        self.clients = ConsoleClients(options)
        history = None
        try:
            history = self.lag_history = LagHistory(self.clients, lag_interval_ms)
            self.app = create_app(self.clients, schema_registry, self.lag_history, basic_auth,
                                  registry_ca, registry_user)
            self._server = make_server(host, port, self.app, threaded=True)
        except BaseException:
            if history is not None:
                history.close()
            self.clients.close()
            raise
        self.lag_history.start()
        self._thread: _ServeThread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}/"

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def start(self) -> ConsoleServer:
        self._server.timeout = _POLL_S
        self._thread = _ServeThread(self._server)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:  # on the caller's thread, serve_forever has returned
            self._thread.stop(timeout=None)
        self._server.server_close()
        self.lag_history.close()
        self.clients.close()
