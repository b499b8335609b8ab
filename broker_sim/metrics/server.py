"""One process's Prometheus endpoint: its own registry, served over HTTP."""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

log = logging.getLogger(__name__)

#: How often the serving thread checks for shutdown (bounds how long stop() takes).
_POLL_S = 0.05


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # wsgiref's name
        pass  # one line per scrape would drown the server's log


class MetricsServer:
    """A :class:`CollectorRegistry` of this process's metrics and the HTTP server for it.

    ``registry`` exists from construction, so metrics can be registered (and counted)
    whether or not an endpoint is started; :meth:`start` binds ``host:port`` (port 0: a free
    one, then :attr:`port` is the bound port) and serves ``GET /metrics`` (any path, as
    ``prometheus_client`` does) in the text format on a daemon thread, one more thread per
    scrape in flight. Collectors run on those scrape threads: they must only read live
    state (taking the owner's locks briefly at most) and never block.

    Threading: :meth:`start` and :meth:`shutdown` from the owner's thread; shutdown returns
    within about 50 ms (the serving loop's poll interval).
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._httpd: ThreadingWSGIServer | None = None
        self._thread: threading.Thread | None = None

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
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(_POLL_S,),
                                        name="metrics-http", daemon=True)
        self._thread.start()
        log.info("metrics on http://%s:%d/metrics", self.host, self.port)
        return self

    def shutdown(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(1.0)
