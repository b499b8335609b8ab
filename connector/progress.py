"""Lag of pyq sources in a running Spark query: offsets behind latest, logged and served to
Prometheus from the driver.

    from connector.progress import LagListener
    lag = LagListener(port=9108)          # optional: Prometheus on 127.0.0.1:9108/metrics
    spark.streams.addListener(lag)
    ...
    lag.report("events")                  # the last LagReport of query "events"

Spark's Kafka source reports ``avgOffsetsBehindLatest``, ``maxOffsetsBehindLatest`` and
``minOffsetsBehindLatest`` in each progress's source metrics. A Python data source has no
such hook (PySpark's ``DataSourceStreamReader`` offers no ``metrics()``), but pyq's source
reports its ``latestOffset`` (the high watermarks seen when the batch was planned, through
``reportLatestOffset``) beside the batch's ``endOffset``; :class:`LagListener` computes the
same three numbers from them, per topic-partition first.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, start_http_server
from pyspark.sql.streaming import StreamingQueryListener

from broker_sim.common import TopicPartition
from connector.source.source_offsets import SourceOffsets

log = logging.getLogger(__name__)

#: Reports kept per query (:meth:`LagListener.history`).
HISTORY = 1000


@dataclass(frozen=True)
class LagReport:
    """One progress of one query: how many offsets each partition's batch ended behind the
    latest offset its source saw (Spark's Kafka source: ``latest - end`` per partition)."""

    query: str
    batch_id: int
    timestamp: str
    behind: dict[TopicPartition, int]

    @property
    def max(self) -> int:
        return max(self.behind.values(), default=0)

    @property
    def min(self) -> int:
        return min(self.behind.values(), default=0)

    @property
    def avg(self) -> float:
        return sum(self.behind.values()) / len(self.behind) if self.behind else 0.0


def _pyq_offsets(text: str | None) -> dict[TopicPartition, int] | None:
    """The per-partition offsets of a pyq source's offset JSON; None for any other source's
    (Spark's Kafka source writes ``{"topic": {"0": n}}``, pyq ``{"offsets": {...}, ...}``)."""
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("offsets"), dict):
        return None
    return dict(SourceOffsets.from_json(data).offsets)


def lag_of(progress: Any) -> LagReport | None:
    """The offsets behind latest of a ``StreamingQueryProgress``'s pyq sources (all of them
    together); None when it has no pyq source with both offsets reported."""
    behind: dict[TopicPartition, int] = {}
    for source in progress.sources:
        end, latest = _pyq_offsets(source.endOffset), _pyq_offsets(source.latestOffset)
        if end is None or latest is None:
            continue
        for tp, offset in end.items():
            if tp in latest:
                behind[tp] = max(latest[tp] - offset, 0)
    if not behind:
        return None
    name = progress.name or str(progress.id)
    return LagReport(name, int(progress.batchId), str(progress.timestamp), behind)


class LagListener(StreamingQueryListener):
    """A ``StreamingQueryListener`` that turns each progress of a query reading pyq into a
    :class:`LagReport`: logged at INFO (``connector.progress``), kept as the query's last
    report (:meth:`report`) with the ones before it (:meth:`history`), and, with ``port``, served in the Prometheus text format on
    ``host:port`` (0: a free port, then :attr:`port` is the bound one):

    - ``pyq_source_offsets_behind_latest{query,topic,partition}``;
    - ``pyq_source_offsets_behind_latest_avg|max|min{query}`` (Spark's Kafka source's
      ``avgOffsetsBehindLatest`` and the others).

    ``query`` is the query's name, or its id when it has none. A partition absent from the
    newest report loses its series; a terminated query loses all of its own. Progress of
    other sources (Spark's Kafka source, files) is ignored.

    Invariants: the registry is the listener's own, never ``prometheus_client``'s global one
    (two listeners in one driver do not mix). Threading: Spark calls the ``onQuery*``
    methods from its listener bus (one thread); :meth:`report` may be called from any
    thread: reports are appended under a lock, after the gauges are set and the line
    logged (gauges lock internally); :meth:`stop` from
    the owner, once the queries are done.
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1") -> None:
        super().__init__()
        if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                                 or not 0 <= port <= 65535):
            raise ValueError(f"LagListener port={port!r} is not allowed: None (no endpoint) or "
                             "an int 0..65535 (0 picks a free port)")
        self._lock = threading.Lock()
        self._reports: dict[str, deque[LagReport]] = {}
        self._names: dict[str, str] = {}  # query id -> the name its series carry
        self.registry = CollectorRegistry(auto_describe=False)
        labels = ["query", "topic", "partition"]
        self._behind = Gauge("pyq_source_offsets_behind_latest",
                             "Offsets between a batch's end and the latest offset, per partition",
                             labels, registry=self.registry)
        self._summary = {stat: Gauge(f"pyq_source_offsets_behind_latest_{stat}",
                                     f"{stat} of offsets behind latest over a query's partitions",
                                     ["query"], registry=self.registry)
                         for stat in ("avg", "max", "min")}
        self._server: Any = None
        self._thread: threading.Thread | None = None
        if port is not None:
            self._server, self._thread = start_http_server(port, host, registry=self.registry)

    @property
    def port(self) -> int:
        assert self._server is not None, "LagListener was made without a port"
        return int(self._server.server_port)

    def report(self, query: str) -> LagReport | None:
        """The last report of ``query`` (name, or id if unnamed); None before its first."""
        with self._lock:
            reports = self._reports.get(query)
            return reports[-1] if reports else None

    def history(self, query: str) -> list[LagReport]:
        """The last :data:`HISTORY` reports of ``query``, oldest first (a lag chart's data),
        across restarts of a query under the same name."""
        with self._lock:
            return list(self._reports.get(query, ()))

    # ---- StreamingQueryListener ---------------------------------------------------------
    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        report = lag_of(event.progress)
        if report is None:
            return
        previous = self.report(report.query)
        for tp in (previous.behind.keys() - report.behind.keys()) if previous else ():
            self._behind.remove(report.query, tp.topic, str(tp.partition))
        for tp, n in report.behind.items():
            self._behind.labels(report.query, tp.topic, str(tp.partition)).set(n)
        self._summary["avg"].labels(report.query).set(report.avg)
        self._summary["max"].labels(report.query).set(report.max)
        self._summary["min"].labels(report.query).set(report.min)
        log.info("query %s batch %d: offsets behind latest avg %.1f, max %d, min %d over %d "
                 "partitions", report.query, report.batch_id, report.avg, report.max, report.min,
                 len(report.behind))
        # published last: whoever sees the report finds the gauges and the log line too
        with self._lock:
            self._reports.setdefault(report.query, deque(maxlen=HISTORY)).append(report)
            self._names[str(event.progress.id)] = report.query

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        with self._lock:
            name = self._names.pop(str(event.id), None)
            reports = self._reports.get(name, ()) if name is not None else ()
            last = reports[-1] if reports else None
        if last is None:
            return
        for tp in last.behind:
            self._behind.remove(last.query, tp.topic, str(tp.partition))
        for gauge in self._summary.values():
            gauge.remove(last.query)

    def stop(self) -> None:
        """Close the Prometheus endpoint (if any)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
