"""A throwaway local cluster for notebooks and tests: ``with EmbeddedCluster() as c: ...``.

:class:`EmbeddedCluster` is a thin lifecycle wrapper around
:class:`broker_sim.cluster.LocalCluster` (one controller process plus N broker processes,
each a real OS process speaking the Kafka protocol). What it adds is the data directory:
without ``data_dir`` the cluster lives in a fresh temporary directory that is deleted when
the ``with`` block ends, so a notebook cell or a test leaves nothing behind.

>>> from connector.client import Admin
>>> with EmbeddedCluster(brokers=3) as cluster:                 # doctest: +SKIP
...     with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
...         admin.create_topic("events", num_partitions=3, replication_factor=3)
...     cluster.broker(1).kill()                                # simulate a crash
...     cluster.bootstrap_servers
'127.0.0.1:40817,127.0.0.1:40821,127.0.0.1:40823'

Lifecycle::

    start()    start the controller and the brokers and wait until every broker has
               registered with the controller (a no-op while running)
    stop()     stop every process (SIGTERM, then SIGKILL); the data directory stays, so a
               later start() brings back the same topics and records
    close()    stop() and delete the temporary directory (what leaving ``with`` does);
               a directory passed as ``data_dir`` is never deleted

If the process holding the cluster dies without stopping it (a notebook kernel killed, a
test runner's ``kill -9``), the controller and the brokers stop themselves: each holds a
lifeline to this process (:mod:`broker_sim.lifeline`). The temporary directory is then
left behind (nothing of this process runs to delete it). ``overrides={"metrics.port": "0"}``
gives every process a Prometheus endpoint (``cluster.broker(i).metrics_port``,
``cluster.controller.metrics_port``).

Secured (``security="SSL" | "SASL_PLAINTEXT" | "SASL_SSL"``): every broker gets a listener
of that protocol with a certificate from a throwaway CA in the cluster's directory, SCRAM
users (``users={"alice": "secret"}``, default one ``admin`` with a generated password),
and a PLAINTEXT listener on 127.0.0.1 for replication. ``bootstrap_servers`` is then the
secured listener's, and :meth:`EmbeddedCluster.client_options` /
:meth:`EmbeddedCluster.spark_options` give what a client or a Spark query needs::

    with EmbeddedCluster(brokers=1, security="SASL_SSL") as cluster:
        Admin(cluster.client_options()).create_topic("events")
        spark.read.format("pyq").options(**cluster.spark_options()).option("subscribe", "events")

Schema registry (``schema_registry=True``): every broker serves the Confluent Schema
Registry REST API (schemas in the ``_schemas`` topic) on a free port;
:attr:`EmbeddedCluster.schema_registry_url` is every running broker's URL, comma-separated
(what confluent-kafka's ``SchemaRegistryClient`` takes as ``url``), and
:meth:`EmbeddedCluster.schema_registry_options` the whole client configuration. On a TLS
cluster the registry is ``https://`` with the broker's certificate; on a SASL cluster it
asks HTTP basic credentials of the SCRAM users::

    with EmbeddedCluster(schema_registry=True) as cluster:
        registry = SchemaRegistryClient(cluster.schema_registry_options())

Web console (``console_port=N``, 0 for a free port): ``pyq console`` (:mod:`connector.console`)
served from this process on 127.0.0.1 beside the cluster, a client of it with
:meth:`EmbeddedCluster.client_options` (on a secured cluster: as its first user) and of its
schema registry when there is one (:meth:`EmbeddedCluster.schema_registry_options`: the CA
and the same user); :attr:`EmbeddedCluster.console_url` says where. It starts
once the brokers are up and stops before them::

    with EmbeddedCluster(console_port=8080) as cluster:
        print(cluster.console_url)                              # http://127.0.0.1:8080/

Processes started again by ``start()`` pick new ephemeral ports, so read
``bootstrap_servers`` after each start. To restart a single broker on its old port, use
``cluster.broker(i).stop()`` / ``.start()`` (a :class:`~broker_sim.process.BrokerProcess`).

Threading: not thread-safe; one owner starts and stops it.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from broker_sim.cluster import LocalCluster, check_controllers
from broker_sim.process import BrokerProcess, ManagedProcess

from .local_security import LocalSecurity

if TYPE_CHECKING:
    from connector.console import ConsoleServer

log = logging.getLogger(__name__)


class EmbeddedCluster:
    """A :class:`~broker_sim.cluster.LocalCluster` in a temporary directory (see module doc)."""

    def __init__(self, brokers: int = 3, data_dir: str | Path | None = None,
                 overrides: Mapping[str, str] | None = None, *,
                 session_timeout_ms: int = 3000, security: str | None = None,
                 users: Mapping[str, str] | None = None, sasl_mechanism: str = "SCRAM-SHA-512",
                 schema_registry: bool = False, console_port: int | None = None,
                 controllers: int = 1) -> None:
        if brokers < 1:
            raise ValueError(f"brokers={brokers} is not allowed: must be at least 1")
        if console_port is not None and not 0 <= console_port <= 65535:
            raise ValueError(f"console_port={console_port} is not allowed: must be a port "
                             "0..65535 (0: any free one), or None for no console")
        if users and not (security or "").upper().startswith("SASL"):
            raise ValueError(f"users= needs security='SASL_PLAINTEXT' or 'SASL_SSL', not {security!r}")
        self.num_brokers = brokers
        #: controller processes: 1, or a Raft quorum of 3, 5 or 7 (brokers follow the active one)
        self.num_controllers = check_controllers(controllers)
        self.overrides = dict(overrides or {})
        self.session_timeout_ms = session_timeout_ms
        self._given_dir = None if data_dir is None else Path(data_dir)
        self._temp_dir: tempfile.TemporaryDirectory[str] | None = None
        self._cluster: LocalCluster | None = None
        self.console_port = console_port
        self._console: ConsoleServer | None = None
        #: The CA, users and options of a secured cluster (None: plaintext only).
        self.security = None if security is None else LocalSecurity(
            self.data_dir / "security", security, users, sasl_mechanism)
        if schema_registry:
            tls = self.security is not None and self.security.uses_tls
            self.overrides.setdefault("schema.registry.listeners",
                                      f"{'https' if tls else 'http'}://127.0.0.1:0")
            if self.security is not None and self.security.uses_sasl:
                self.overrides.setdefault("schema.registry.authentication", "basic")

    # ---- where and what -------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        """The cluster's directory (a temporary one is created on first start)."""
        if self._given_dir is not None:
            return self._given_dir
        if self._temp_dir is None:
            self._temp_dir = tempfile.TemporaryDirectory(prefix="pyq-cluster-")
        return Path(self._temp_dir.name)

    @property
    def running(self) -> bool:
        return self._cluster is not None

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of every broker, for any Kafka client (a secured cluster's:
        its secured listener)."""
        cluster = self._running()
        if self.security is not None:
            return cluster.listener_bootstrap(self.security.protocol)
        return cluster.bootstrap_servers

    def client_options(self, user: str | None = None) -> dict[str, object]:
        """Options for pyq's client or librdkafka: bootstrap servers plus, on a secured
        cluster, the protocol, the CA and the credentials of ``user`` (default the first)."""
        if self.security is None:
            return {"bootstrap.servers": self.bootstrap_servers}
        return self.security.client_options(self.bootstrap_servers, user)

    def spark_options(self, user: str | None = None) -> dict[str, str]:
        """The same as ``kafka.*`` options for ``spark.read/readStream/write.format("pyq")``."""
        return {f"kafka.{k}": str(v) for k, v in self.client_options(user).items()}

    @property
    def schema_registry_url(self) -> str:
        """Every running broker's schema registry URL, comma-separated."""
        url = self._running().schema_registry_url
        if url is None:
            raise RuntimeError("no schema registry: start the cluster with schema_registry=True")
        return url

    def schema_registry_options(self, user: str | None = None) -> dict[str, str]:
        """confluent-kafka ``SchemaRegistryClient`` configuration: the URLs, and on a secured
        cluster the CA and the basic credentials of ``user`` (default the first)."""
        out = {"url": self.schema_registry_url}
        if self.security is not None and self.security.uses_tls:
            out["ssl.ca.location"] = str(self.security.ca.ca_path)
        if self.security is not None and self.security.uses_sasl:
            name = user or next(iter(self.security.users))
            out["basic.auth.user.info"] = f"{name}:{self.security.users[name]}"
        return out

    @property
    def console_url(self) -> str:
        """Where the web console serves (``console_port=`` given, cluster running)."""
        if self._console is None:
            raise RuntimeError("no console: pass console_port= and start the cluster")
        return self._console.url

    @property
    def brokers(self) -> list[BrokerProcess]:
        return list(self._running().brokers)

    @property
    def controller(self) -> ManagedProcess:
        return self._running().controller

    def broker(self, broker_id: int) -> BrokerProcess:
        """The process of broker ``broker_id`` (0..brokers-1): kill, pause, restart it."""
        brokers = self._running().brokers
        if not 0 <= broker_id < len(brokers):
            raise IndexError(f"no broker {broker_id}: the cluster has brokers 0..{len(brokers) - 1}")
        return brokers[broker_id]

    def pids(self) -> list[int]:
        """Process ids of the controller and every broker."""
        cluster = self._running()
        return [cluster.controller.pid, *(b.pid for b in cluster.brokers)]

    def _running(self) -> LocalCluster:
        if self._cluster is None:
            raise RuntimeError("the cluster is not running: call start() or use 'with'")
        return self._cluster

    # ---- lifecycle ------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> EmbeddedCluster:
        """Start every process and wait until the cluster's metadata lists every broker."""
        if self._cluster is not None:
            return self
        # A LocalCluster is started once; a restart is a new one over the same directory.
        overrides = dict(self.overrides)
        add_scram: list[str] = []
        if self.security is not None:
            overrides = {**self.security.broker_overrides(), **overrides}
            add_scram = self.security.scram_specs()
        cluster = LocalCluster(self.data_dir, self.num_brokers, overrides,
                               session_timeout_ms=self.session_timeout_ms, add_scram=add_scram,
                               controllers=self.num_controllers)
        cluster.start()  # stops whatever it started if a process fails to come up
        self._cluster = cluster
        try:
            self._await_brokers(time.monotonic() + timeout_s)
            if self.console_port is not None:
                self._start_console()
        except BaseException:
            self.stop()
            raise
        log.info("embedded cluster in %s: %s", self.data_dir, cluster.bootstrap_servers)
        return self

    def _await_brokers(self, deadline: float) -> None:
        """Block until every broker's metadata lists all brokers. A broker that is listening
        has not necessarily registered with the controller yet, each broker learns of the
        others a little later, and a topic with replication factor N can only be created
        once N brokers have registered."""
        from connector.client import Admin

        assert self._cluster is not None
        for broker in self._cluster.brokers:
            seen: set[int] = set()
            while len(seen) < self.num_brokers:
                remaining_ms = (deadline - time.monotonic()) * 1000.0
                if remaining_ms <= 0:
                    raise TimeoutError(f"broker {broker.broker_id} knew only brokers "
                                       f"{sorted(seen)} of {self.num_brokers} in time")
                # A new client asks its bootstrap broker first: this broker's own view.
                with Admin(bootstrap_servers=broker.bootstrap_servers) as admin:
                    seen = {b.node_id for b in admin.describe_cluster(remaining_ms).brokers}
                if len(seen) < self.num_brokers:
                    time.sleep(0.05)

    def _start_console(self) -> None:
        from connector.console import ConsoleServer

        registry = self.schema_registry_options() if "schema.registry.listeners" in \
            self.overrides else {}
        self._console = ConsoleServer(self.client_options(), "127.0.0.1",
                                      self.console_port or 0, registry.get("url"),
                                      registry_ca=registry.get("ssl.ca.location"),
                                      registry_user=registry.get("basic.auth.user.info")).start()
        log.info("console of the embedded cluster: %s", self._console.url)

    def stop(self) -> None:
        """Stop the console, then every process; keep the data directory (see :meth:`close`)."""
        console, self._console = self._console, None
        if console is not None:
            console.close()
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            cluster.stop()

    def close(self) -> None:
        """Stop every process and delete the directory if it is a temporary one."""
        try:
            self.stop()
        finally:
            temp, self._temp_dir = self._temp_dir, None
            if temp is not None:
                temp.cleanup()

    def __enter__(self) -> EmbeddedCluster:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = self.bootstrap_servers if self._cluster else "stopped"
        where = self._given_dir or (self._temp_dir.name if self._temp_dir else "a temporary dir")
        return f"<EmbeddedCluster brokers={self.num_brokers} {state} in {where}>"
