"""A broker's schema registry: the HTTP server, the registry and its ``_schemas`` log.

:class:`SchemaRegistryServer` is what :class:`~broker_sim.server.broker.Broker` starts
when ``schema.registry.listeners`` is set. It binds the listener (port 0: a free one;
:attr:`~SchemaRegistryServer.url` is the bound URL), serves :class:`~.http_api.RegistryApp`
on werkzeug's threaded WSGI server -- TLS from the broker's certificate on ``https://``,
HTTP basic auth when an ``authenticate`` callable is given -- and keeps the registry's
state in the ``_schemas`` topic through :class:`~.kafka_log.KafkaRecordLog`, which
bootstraps from the broker's own inter-broker listener.

Every broker with the option serves the same registry: each reads ``_schemas`` to its end
before answering, and writes go straight to the topic; ids stay unique because they are
decided by the order of the records in the log (see :mod:`.state`), not by a writer.

Threading: a :class:`_ServeThread` (a :class:`~broker_sim.common.ShutdownableThread`)
accepts connections, one round per ``handle_request`` (bounded by :data:`_POLL_S`);
werkzeug handles each request on a thread of its own (daemon threads). ``start`` and
``shutdown`` from the owner's thread; shutdown returns within about ``_POLL_S`` plus the
join of requests in flight (not waited for: they are daemon threads).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable

from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from ..common import ShutdownableThread
from .http_api import RegistryApp
from .kafka_log import KafkaRecordLog
from .listener import RegistryListener
from .registry import SchemaRegistry
from .store import RecordLog, SchemaStore

log = logging.getLogger(__name__)

#: How long one accept round waits for a connection (bounds how long shutdown takes).
_POLL_S = 0.1


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # one line per request would drown the broker's log


class _ServeThread(ShutdownableThread):
    def __init__(self, httpd: BaseWSGIServer, name: str) -> None:
        super().__init__(name)
        self.httpd = httpd

    def run_once(self) -> None:
        self.httpd.handle_request()  # returns after one request, or after httpd.timeout


class SchemaRegistryServer:
    """See the module docstring."""

    def __init__(self, listener: RegistryListener, log_: RecordLog,
                 authenticate: Callable[[str, str], bool] | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        if listener.uses_tls and ssl_context is None:
            raise ValueError(f"schema.registry.listeners={listener} needs the broker's TLS "
                             "certificate (ssl.keystore.location)")
        self.listener = listener
        self.store = SchemaStore(log_)
        self.registry = SchemaRegistry(self.store)
        self.app = RegistryApp(self.registry, authenticate)
        self.ssl_context = ssl_context if listener.uses_tls else None
        self._httpd: BaseWSGIServer | None = None
        self._thread: _ServeThread | None = None

    @classmethod
    def for_broker(cls, listener: RegistryListener, bootstrap: tuple[str, int], broker_id: int,
                   authenticate: Callable[[str, str], bool] | None = None,
                   ssl_context: ssl.SSLContext | None = None) -> SchemaRegistryServer:
        records = KafkaRecordLog(bootstrap, client_id=f"schema-registry-{broker_id}")
        return cls(listener, records, authenticate, ssl_context)

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the schema registry is not started"
        return int(self._httpd.server_port)

    @property
    def url(self) -> str:
        """The bound URL, e.g. ``http://127.0.0.1:40123``."""
        return f"{self.listener.scheme}://{self.listener.host}:{self.port}"

    def start(self) -> SchemaRegistryServer:
        httpd = make_server(self.listener.host, self.listener.port, self.app, threaded=True,
                            request_handler=_QuietHandler)
        if self.ssl_context is not None:
            # Wrapped here rather than by werkzeug, to defer each TLS handshake to the
            # connection's own request thread: werkzeug's wrapping shakes hands inside
            # accept(), on the one serving thread, where a silent client would stall it.
            httpd.socket = self.ssl_context.wrap_socket(httpd.socket, server_side=True,
                                                        do_handshake_on_connect=False)
            httpd.ssl_context = self.ssl_context  # requests then say https
        httpd.timeout = _POLL_S
        self._httpd = httpd
        self._thread = _ServeThread(httpd, f"schema-registry-http-{self.port}")
        self._thread.start()
        log.info("schema registry on %s", self.url)
        return self

    def shutdown(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.server_close()
        self.store.close()
