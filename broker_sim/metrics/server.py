"""One process's Prometheus endpoint: its own registry, served over HTTP."""

from __future__ import annotations

import logging
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from ..common.shutdownable_thread import ShutdownableThread

log = logging.getLogger(__name__)

#: How often the serving thread checks for shutdown (bounds how long stop() takes).
_POLL_S = 0.05


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # wsgiref's name
        pass  # one line per scrape would drown the server's log


class _ServeThread(ShutdownableThread):
    """Accepts scrapes: each round waits up to ``httpd.timeout`` for one and hands it to a
    thread of its own (``ThreadingWSGIServer``), so a stop is seen within one poll."""

    def __init__(self, httpd: ThreadingWSGIServer) -> None:
        super().__init__("metrics-http")
        self.httpd = httpd

    def run_once(self) -> None:
        self.httpd.handle_request()


class MetricsServer:
    """A :class:`CollectorRegistry` of this process's metrics and the HTTP server for it.

    ``registry`` exists from construction, so metrics can be registered (and counted)
    whether or not an endpoint is started; :meth:`start` binds ``host:port`` (port 0: a free
    one, then :attr:`port` is the bound port) and serves ``GET /metrics`` (any path, as
    ``prometheus_client`` does) in the text format on a daemon thread, one more thread per
    scrape in flight. Collectors run on those scrape threads: they must only read live
    state (taking the owner's locks briefly at most) and never block.

    Threading: :meth:`start` and :meth:`shutdown` from the owner's thread; shutdown returns
    within about 50 ms (the serving thread's poll interval: it is a
    :class:`~broker_sim.common.ShutdownableThread` whose round waits that long for a scrape).
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._httpd: ThreadingWSGIServer | None = None
        self._thread: _ServeThread | None = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the metrics endpoint is not started"
        return int(self._httpd.server_port)

    @property
    def host(self) -> str:
        assert self._httpd is not None, "the metrics endpoint is not started"
        return str(self._httpd.server_address[0])

    def start(self, host: str, port: int) -> MetricsServer:
        httpd = make_server(host, port, make_wsgi_app(self.registry), ThreadingWSGIServer,
                            handler_class=_QuietHandler)
        httpd.timeout = _POLL_S
        self._httpd = httpd
        self._thread = _ServeThread(httpd)
        self._thread.start()
        log.info("metrics on http://%s:%d/metrics", self.host, self.port)
        return self

    def shutdown(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.stop(1.0)
        httpd.server_close()
