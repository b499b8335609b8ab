"""Prometheus metrics of a broker or a controller process (``--override metrics.port=N``).

:class:`~.server.MetricsServer` is one process's endpoint: a registry of its own (never
``prometheus_client``'s global one, so several brokers in one test process do not mix)
served over HTTP in the Prometheus text format. :class:`~.network.NetworkCollector` reads
the network layer's per-API request stats and connections when scraped; the broker
(``server/broker_metrics.py``) and the controller (``controller/metrics.py``) register
collectors over their own live state, :class:`~.waiting.WaitingCollector` among them
(purgatories, timing wheels). This package imports only the network, purgatory and timer
layers, so both the broker and the controller can use it.
"""

from .network import NetworkCollector
from .server import MetricsServer
from .waiting import WaitingCollector

__all__ = ["MetricsServer", "NetworkCollector", "WaitingCollector"]
