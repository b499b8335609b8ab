"""A local cluster of separate OS processes: one controller and N brokers.

``pyq-broker cluster --brokers 3 --data-dir DIR`` starts it with one command, prints the
bootstrap servers and stops every child on SIGTERM/SIGINT. Tests and notebooks use
:class:`LocalCluster` directly (a context manager); each broker is a
:class:`~broker_sim.process.BrokerProcess`, so a test can kill -9, SIGSTOP or restart one.
The controller is its own process (like a KRaft controller), so killing any broker never
takes the cluster's brain with it. ``controllers=3`` (or 5, 7) starts a quorum of controller
processes (ids 3000, 3001, ...; ``controller.quorum.voters`` on fixed free ports): one is
active, the others standbys ready to take over, and every broker is given every controller's
address and follows the active one; :attr:`LocalCluster.controllers` lists them
(:attr:`LocalCluster.controller` is the first).

Every child holds a lifeline to the process that started it (see
:mod:`broker_sim.lifeline`): if that process dies without calling :meth:`LocalCluster.stop`
— ``kill -9`` included — the controller and the brokers shut themselves down.

``metrics.port`` in ``overrides`` turns on every process's metrics endpoint: 0 gives each
a free port; N gives the controller N and broker i N+1+i. Each process's bound port is its
``metrics_port``.

The controller's options (``auto.leader.rebalance.enable``,
``leader.imbalance.check.interval.seconds``, ``leader.imbalance.per.broker.percentage``)
in ``overrides`` go to the controller only.

``log_level`` and ``log_format`` ("text" or "json") are every process's ``--log-level``
and ``--log-format``.

``schema.registry.listeners`` in ``overrides`` makes every broker serve the schema
registry: port 0 gives each a free port; N gives broker i N+i.
:attr:`LocalCluster.schema_registry_url` lists every running broker's URL, comma-separated
(the form registry clients take: they try the next URL when one does not answer).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from .controller.leader_balance import OPTIONS as LEADER_BALANCE_OPTIONS
from .process import BrokerProcess, ManagedProcess


def _nth_port(url: str, i: int) -> str:
    """``scheme://host:N`` -> ``scheme://host:N+i`` (port 0 stays 0: each a free port)."""
    head, _, port = url.rpartition(":")
    return url if not port.isdigit() or int(port) == 0 else f"{head}:{int(port) + i}"


#: The node id of the first controller (Kafka's examples number controllers from 3000).
FIRST_CONTROLLER_ID = 3000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def check_controllers(controllers: object) -> int:
    """A number of controllers: odd, 1 to 7 (a quorum of N tolerates (N-1)/2 failures)."""
    if not isinstance(controllers, int) or isinstance(controllers, bool) \
            or controllers not in (1, 3, 5, 7):
        raise ValueError(f"controllers={controllers!r} is invalid: an odd number from 1 to 7 is "
                         "allowed (a quorum of N controllers survives the loss of (N-1)/2)")
    return controllers


class LocalCluster:
    def __init__(self, data_dir: Path, brokers: int = 3, overrides: dict[str, str] | None = None,
                 session_timeout_ms: int = 3000, python: str = sys.executable,
                 add_scram: list[str] | None = None, log_level: str = "INFO",
                 log_format: str = "text", controllers: int = 1) -> None:
        check_controllers(controllers)
        self.data_dir = Path(data_dir)
        self.log_args = ["--log-level", log_level, "--log-format", log_format]
        self.overrides = dict(overrides or {})
        self.session_timeout_ms = session_timeout_ms
        self.python = python
        scram = [arg for spec in add_scram or [] for arg in ("--add-scram", spec)]
        metrics = self.overrides.get("metrics.port")
        self._metrics_base = None if metrics is None else int(metrics)
        # the controller's own options go to it only (the brokers would refuse them)
        controller_options = {k: self.overrides.pop(k) for k in LEADER_BALANCE_OPTIONS
                              if k in self.overrides}
        if metrics is not None:
            controller_options["metrics.port"] = metrics
        if "cluster.id" in self.overrides:  # the brokers' id: what a controller describes too
            controller_options["cluster.id"] = self.overrides["cluster.id"]
        self.controllers: list[ManagedProcess] = []
        ids = [FIRST_CONTROLLER_ID + i for i in range(controllers)]
        voters = ",".join(f"{i}@127.0.0.1:{_free_port()}" for i in ids)
        # each controller's request listener, for DescribeQuorum / DescribeCluster to name
        ports = {i: _free_port() for i in ids} if controllers > 1 else {}
        listeners = ",".join(f"{i}@127.0.0.1:{p}" for i, p in ports.items())
        for n, node_id in enumerate(ids):
            options = dict(controller_options)
            directory = self.data_dir / "controller"
            port = "0"
            if controllers > 1:  # fixed ports: a restarted controller keeps its addresses
                options.update({"node.id": str(node_id), "controller.quorum.voters": voters,
                                "controller.listeners": listeners})
                directory = self.data_dir / f"controller-{node_id}"
                port = str(ports[node_id])
                if n > 0 and "metrics.port" in options:
                    options["metrics.port"] = "0"
            self.controllers.append(ManagedProcess(
                directory,
                [python, "-m", "broker_sim", "controller", "--data-dir", str(directory),
                 "--port", port, "--session-timeout-ms", str(session_timeout_ms), *scram,
                 *(arg for k, v in options.items() for arg in ("--override", f"{k}={v}")),
                 *self.log_args],
                log_name="controller.out"))
        self.controller = self.controllers[0]
        self.brokers: list[BrokerProcess] = []
        self._count = brokers

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap_servers for b in self.brokers if b.port is not None)

    @property
    def ports(self) -> list[int]:
        """Every broker's port, in broker order (each has started once: it keeps its port)."""
        ports = [b.port for b in self.brokers]
        assert all(p is not None for p in ports), "a broker that never started has no port"
        return [p for p in ports if p is not None]

    @property
    def schema_registry_url(self) -> str | None:
        """Every running broker's schema registry URL, comma-separated; None without one."""
        urls = [b.schema_registry_url for b in self.brokers
                if b.schema_registry_url and b.proc is not None and b.proc.poll() is None]
        return ",".join(urls) if urls else None

    def listener_bootstrap(self, name: str) -> str:
        """``host:port,...`` of every broker's listener ``name`` (e.g. "SASL_SSL")."""
        return ",".join(b.listeners[name] for b in self.brokers if name in b.listeners)

    def start(self) -> LocalCluster:
        try:
            for c in self.controllers:
                c.start()
            controller = ",".join(f"127.0.0.1:{c.port}" for c in self.controllers)
            for i in range(self._count):
                overrides = {"controller": controller, **self.overrides}
                if self._metrics_base:  # N: broker i on N+1+i (0: every process a free port)
                    overrides["metrics.port"] = str(self._metrics_base + 1 + i)
                registry = overrides.get("schema.registry.listeners")
                if registry:
                    overrides["schema.registry.listeners"] = _nth_port(registry, i)
                b = BrokerProcess(self.data_dir / f"broker-{i}", broker_id=i, overrides=overrides,
                                  python=self.python, log_args=self.log_args)
                self.brokers.append(b)
                b.start()
        except BaseException:
            self.stop()
            raise
        return self

    def broker(self, broker_id: int) -> BrokerProcess:
        return self.brokers[broker_id]

    def stop(self) -> None:
        for b in self.brokers:
            b.stop()
        for c in self.controllers:
            c.stop()

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
