"""Metrics of a socket server: requests per API (rate, latency, bytes), connections."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from ..network.request_stats import merged
from ..network.socket_server import SocketServer


class NetworkCollector(Collector):
    """Reads a :class:`SocketServer`'s processors when scraped (nothing on the request path
    but what each processor records, see ``network/request_stats.py``).

    - ``pyq_requests_total{api}`` and ``pyq_request_latency_seconds{api}`` (a histogram of
      the time from reading a request to its response leaving the handlers, purgatory
      waits included): rate and latency per API;
    - ``pyq_request_bytes_total{api}`` / ``pyq_response_bytes_total{api}``: bytes in and out
      (whole frames; Produce's requests are the bytes produced, Fetch's responses the bytes
      fetched);
    - ``pyq_connections{listener}``: open connections per listener;
    - ``pyq_request_queue_size``: requests read but not yet taken by a handler.
    """

    def __init__(self, socket_server: SocketServer) -> None:
        self.socket_server = socket_server

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily | HistogramMetricFamily]:
        server = self.socket_server
        names = {key: spec.name for key, spec in server.apis.items()}
        totals = merged(p.stats for p in server.processors)
        requests = CounterMetricFamily("pyq_requests", "Requests answered, per API", labels=["api"])
        latency = HistogramMetricFamily(
            "pyq_request_latency_seconds", "Time from reading a request to its response, per API",
            labels=["api"])
        bytes_in = CounterMetricFamily("pyq_request_bytes", "Bytes of requests, per API",
                                       labels=["api"])
        bytes_out = CounterMetricFamily("pyq_response_bytes", "Bytes of responses, per API",
                                        labels=["api"])
        for key, t in sorted(totals.items()):
            api = [names.get(key, str(key))]
            requests.add_metric(api, t.count)
            latency.add_metric(api, t.cumulative(), t.latency_sum_s)
            bytes_in.add_metric(api, t.request_bytes)
            bytes_out.add_metric(api, t.response_bytes)
        yield from (requests, latency, bytes_in, bytes_out)
        connections = GaugeMetricFamily("pyq_connections", "Open connections, per listener",
                                        labels=["listener"])
        counts = {a.listener.name: 0 for a in server.acceptors}
        for p in server.processors:
            for name, n in p.connection_counts().items():
                counts[name] = counts.get(name, 0) + n
        for name, n in sorted(counts.items()):
            connections.add_metric([name], n)
        yield connections
        yield GaugeMetricFamily("pyq_request_queue_size",
                                "Requests read and waiting for a handler thread",
                                value=server.channel.queued)
