"""``pyq-broker``: run a broker, a controller, or a whole local cluster in the foreground.

    pyq-broker --data-dir /tmp/pyq --port 9092             a single broker (embedded controller)
    pyq-broker controller --data-dir /tmp/ctl --port 9093  a cluster's controller
    pyq-broker --data-dir /tmp/b1 --broker-id 1 --override controller=127.0.0.1:9093
    pyq-broker cluster --brokers 3 --data-dir /tmp/cluster  controller + 3 brokers, one command

Each server logs ``listening on HOST:PORT`` once its sockets are open (port 0 picks a free
one; with several ``listeners`` that line names the first, after a ``listener
NAME://HOST:PORT`` line for each) and shuts down cleanly on SIGTERM or SIGINT.
``cluster`` prints the bootstrap servers and stops every child process when it is stopped;
a child whose parent dies without stopping it stops itself (see :mod:`broker_sim.lifeline`).

``--override metrics.port=N`` (0: a free port) serves Prometheus metrics on a broker or the
controller, reported as ``metrics on HOST:PORT`` before the listening line. On ``cluster``
it applies to the controller and every broker: 0 gives each a free port, N gives the
controller N and broker i N+1+i.

``--override schema.registry.listeners=http://127.0.0.1:N`` (0: a free port) serves the
schema registry's REST API (the Confluent Schema Registry API, schemas kept in the
``_schemas`` topic), reported as ``schema registry on URL`` before the listening line; on
``cluster`` every broker serves it (N: broker i on N+i) and the URLs are printed.

``--log-level LEVEL`` (DEBUG, INFO, WARNING, ERROR, CRITICAL) and ``--log-format json``
(one JSON object per log record: time, level, logger, message, and ``broker_id`` or
``role``) on every form; ``cluster`` passes both to the controller and every broker, whose
output goes to ``DATA_DIR/.../*.out``.

``--add-scram 'SCRAM-SHA-256=[name=admin,password=admin-secret]'`` (repeatable) stores a
SCRAM credential with the controller at start, as ``kafka-storage format --add-scram``
does: on a single broker, on ``controller`` and on ``cluster``.

``cluster --console-port N`` (0: a free port) also starts ``pyq console`` (the web console,
``connector.console``) on 127.0.0.1:N as a child process by its module name (nothing of the
connector is imported here), over the cluster's bootstrap servers, and prints
``console pid P on URL``; it stops before the brokers (output: ``DATA_DIR/console.log``).
On a secured cluster (:func:`console_client`) the console connects to the SASL listener
(SASL_SSL before SASL_PLAINTEXT) as the admin user: the first ``super.users`` user given an
``--add-scram`` credential, else the first ``--add-scram`` user, with that credential's
mechanism (SCRAM-SHA-512 when both), trusting the brokers' ``ssl.truststore.*`` for TLS;
the options reach it in ``DATA_DIR/console.properties`` (mode 0600, ``--command-config``),
never on its command line.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .common.allocator import keep_freed_buffers
from .controller.leader_balance import OPTIONS as LEADER_BALANCE_OPTIONS
from .controller.leader_balance import LeaderBalanceConfig
from .controller.process_options import OPTIONS as CONTROLLER_OPTIONS
from .controller.process_options import ControllerOptions
from .controller.scram_credentials import credential_from_spec
from .lifeline import hold
from .protocol.errors import KafkaError
from .raft import RaftConfig
from .security.scram import ScramCredential
from .server import Broker, BrokerConfig, ConfigError

if TYPE_CHECKING:
    from .process import ManagedProcess

_ADD_SCRAM_HELP = ("store a SCRAM credential with the controller at start, e.g. "
                   "'SCRAM-SHA-256=[name=admin,password=admin-secret]' (repeatable)")


def _scram(specs: list[str], prog: str) -> list[tuple[str, str, ScramCredential]] | None:
    try:
        return [credential_from_spec(spec) for spec in specs]
    except ValueError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None


def _catch_stop_signals() -> Callable[[], None]:
    """Catch SIGTERM and SIGINT from now on; the function returned waits until one arrived
    (at once if one came meanwhile). A server calls this before it prints the status lines
    its launcher waits for, so a stop sent right after them is never the default action.

    The news comes through a wake-up pipe (``signal.set_wakeup_fd``): Python's C-level
    handler writes the signal's number there from whichever thread the kernel interrupted,
    so the main thread's ``read`` returns even when another thread got the signal (the
    lifeline sends it from its own). The Python-level handlers do nothing: they only replace
    the default action, which would end the process without a clean stop. A handler that
    took a lock could deadlock: a server whose parent dies gets two SIGTERMs (the kernel's
    parent-death signal and the lifeline's), and Python runs the second handler inside the
    first, in the same thread. With ``threading.Event.set`` as the handler, the inner call
    waited forever for the event's lock held by the outer one (about 1 in 50 ``kill -9`` rounds
    of a loaded ``pyq-broker cluster`` left a process serving until the lifeline's hard exit).
    """
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous = signal.set_wakeup_fd(write_fd)  # before the handlers: no signal goes unwritten
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda _signum, _frame: None)

    def wait() -> None:
        try:
            while not {signal.SIGTERM, signal.SIGINT} & set(os.read(read_fd, 64)):
                pass
        finally:
            signal.set_wakeup_fd(previous)
            os.close(read_fd)
            os.close(write_fd)
    return wait


def _wait_for_signal() -> None:
    """Return once SIGTERM or SIGINT arrived (see :func:`_catch_stop_signals`)."""
    _catch_stop_signals()()


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOG_FORMATS = ("text", "json")


def _add_log_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS,
                   help="logging level (default INFO)")
    p.add_argument("--log-format", default="text", choices=LOG_FORMATS,
                   help="text (default), or json: one JSON object per log record with time "
                        "(ISO 8601, UTC), level, logger, message and broker_id (or role)")


def _logging(level: str, fmt: str = "text", **identity: object) -> None:
    """Log records to stdout at ``level``: as text lines, or with ``fmt`` "json" as one JSON
    object per line (python-json-logger) with ``identity`` (``broker_id=N`` or
    ``role=...``) in every object. The launcher's status lines (``listening on ...``)
    are printed, not logged, and stay plain text in both formats."""
    handler = logging.StreamHandler(sys.stdout)
    if fmt == "json":
        from pythonjsonlogger.json import JsonFormatter
        handler.setFormatter(JsonFormatter(
            "%(levelname)s %(name)s %(message)s", timestamp="time", static_fields=identity,
            rename_fields={"levelname": "level", "name": "logger"}))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


def broker_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pyq-broker", description="Run a Kafka-wire-compatible pyq broker. Subcommands: "
        "'pyq-broker controller --help', 'pyq-broker cluster --help'.")
    p.add_argument("--data-dir", type=Path, required=True, help="directory for logs and broker state")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9092, help="port to listen on; 0 picks a free port")
    p.add_argument("--broker-id", type=int, default=0, help="this broker's id (default 0)")
    p.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="a Kafka broker option, e.g. log.segment.bytes=1048576 (repeatable); "
                        "controller=HOST:PORT makes this broker part of that controller's cluster; "
                        "listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093 replaces "
                        "--host/--port")
    p.add_argument("--add-scram", action="append", default=[], metavar="SPEC", help=_ADD_SCRAM_HELP)
    _add_log_options(p)
    return p


def run_broker(argv: list[str]) -> int:
    args = broker_parser().parse_args(argv)
    _logging(args.log_level, args.log_format, broker_id=args.broker_id)
    props = {}
    for item in args.override:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"pyq-broker: --override {item!r} is not NAME=VALUE", file=sys.stderr)
            return 2
        props[name.strip()] = value.strip()
    try:
        config = BrokerConfig.from_properties(props, broker_id=args.broker_id, host=args.host,
                                              port=args.port, data_dir=args.data_dir)
    except ConfigError as e:
        print(f"pyq-broker: {e}", file=sys.stderr)
        return 2
    scram = _scram(args.add_scram, "pyq-broker")
    if scram is None:
        return 2
    if scram and config.controller:
        print("pyq-broker: --add-scram goes to the controller ('pyq-broker controller' or "
              "'pyq-broker cluster'): it stores the cluster's credentials", file=sys.stderr)
        return 2
    broker = Broker(config, scram_credentials=scram).start()
    wait_for_stop = _catch_stop_signals()
    for listener in broker.socket_server.listeners:  # before "listening on": see process.py
        print(f"listener {listener}", flush=True)
    if broker.metrics_port is not None:
        print(f"metrics on {config.host}:{broker.metrics_port}", flush=True)
    if broker.schema_registry_url is not None:
        print(f"schema registry on {broker.schema_registry_url}", flush=True)
    print(f"listening on {broker.host}:{broker.port}", flush=True)
    try:
        wait_for_stop()
    finally:
        broker.shutdown()
    return 0


def quorum_config(options: ControllerOptions
                  ) -> tuple[int | None, dict[int, tuple[str, int]] | None, RaftConfig | None]:
    """The controller's quorum: ``(node id, voters, Raft timing)``; Nones for a lone
    controller. ValueError naming the option, its value and what is allowed.

    >>> quorum_config(ControllerOptions.from_overrides(
    ...     {"node.id": "3001", "controller.quorum.voters": "3001@127.0.0.1:9300"}))[:2]
    (3001, {3001: ('127.0.0.1', 9300)})
    """
    if options.voters is None:
        return None, None, None
    election = options.election_timeout_ms or 1000
    fetch = options.fetch_timeout_ms or 2 * election
    try:
        config = RaftConfig(election_timeout=election, fetch_timeout=fetch,
                            fetch_max_wait=max(1, min(500, election // 2)),
                            request_timeout=max(fetch, min(500, election // 2) + 1),
                            begin_quorum_interval=max(1, election // 2),
                            check_quorum_timeout=fetch + fetch // 2 + 1)
    except ValueError as e:
        raise ValueError(str(e).replace("Raft option ", "controller.quorum: ")) from e
    return options.node_id, options.voters, config


def run_controller(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="pyq-broker controller",
                                description="Run the controller of a pyq cluster.")
    p.add_argument("--data-dir", type=Path, required=True, help="directory for the controller's state")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9093, help="port to listen on; 0 picks a free port")
    p.add_argument("--session-timeout-ms", type=int, default=3000,
                   help="a broker that sends no heartbeat for this long is fenced (default 3000)")
    p.add_argument("--add-scram", action="append", default=[], metavar="SPEC", help=_ADD_SCRAM_HELP)
    p.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="a controller option: metrics.port=N (0 picks a free port), "
                        "auto.leader.rebalance.enable, leader.imbalance.check.interval.seconds, "
                        "leader.imbalance.per.broker.percentage; for a quorum of controllers "
                        "node.id=N and controller.quorum.voters=ID@HOST:PORT,... (each voter's "
                        "quorum address), controller.quorum.election.timeout.ms and "
                        "controller.quorum.fetch.timeout.ms; controller.listeners=ID@HOST:PORT,... "
                        "(every controller's request listener, for DescribeQuorum and "
                        "DescribeCluster to name); cluster.id=ID (the brokers' cluster.id, "
                        "default pyq-cluster)")
    _add_log_options(p)
    args = p.parse_args(argv)
    _logging(args.log_level, args.log_format, role="controller")
    scram = _scram(args.add_scram, "pyq-broker controller")
    if scram is None:
        return 2
    balance: dict[str, str] = {}
    own: dict[str, str] = {}
    for item in args.override:
        name, sep, value = (part.strip() for part in item.partition("="))
        if name in LEADER_BALANCE_OPTIONS and sep:
            balance[name] = value
        elif name in CONTROLLER_OPTIONS and sep:
            own[name] = value
        else:
            print(f"pyq-broker controller: --override {item!r} is not allowed: the controller "
                  "takes metrics.port=N and "
                  f"{', '.join(n for n in [*CONTROLLER_OPTIONS, *LEADER_BALANCE_OPTIONS] if n != 'metrics.port')}",
                  file=sys.stderr)
            return 2
    try:
        leader_balance = LeaderBalanceConfig.from_options(balance)
    except KafkaError as e:
        print(f"pyq-broker controller: {e.message}", file=sys.stderr)
        return 2
    try:
        options = ControllerOptions.from_overrides(own)
        node_id, voters, raft_config = quorum_config(options)
    except ValueError as e:
        print(f"pyq-broker controller: {e}", file=sys.stderr)
        return 2
    metrics_port, peers, cluster_id = options.metrics_port, options.listeners or {}, options.cluster_id
    from .controller.server import ControllerServer
    server = ControllerServer(args.data_dir, args.host, args.port, args.session_timeout_ms,
                              scram_credentials=scram, metrics_port=metrics_port,
                              leader_balance=leader_balance, node_id=node_id,
                              quorum_voters=voters, raft_config=raft_config,
                              controller_listeners=peers, cluster_id=cluster_id).start()
    wait_for_stop = _catch_stop_signals()
    if server.metrics_port is not None:
        print(f"metrics on {server.host}:{server.metrics_port}", flush=True)
    print(f"listening on {server.host}:{server.port}", flush=True)
    try:
        wait_for_stop()
    finally:
        server.shutdown()
    return 0


def run_cluster(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="pyq-broker cluster",
                                description="Start a local cluster: a controller and N broker processes.")
    p.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    p.add_argument("--controllers", type=int, default=None,
                   help="number of controller processes, a Raft quorum: 1, 3, 5 or 7 (default 3 "
                        "with 3 brokers or more, else 1)")
    p.add_argument("--data-dir", type=Path, required=True, help="directory for every process's data")
    p.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                   help="a broker option applied to every broker (repeatable), e.g. "
                        "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0")
    p.add_argument("--add-scram", action="append", default=[], metavar="SPEC", help=_ADD_SCRAM_HELP)
    p.add_argument("--console-port", type=int, metavar="N",
                   help="also serve pyq console (the web console) on 127.0.0.1:N, 0 for any "
                        "free port, as a child process over the bootstrap servers; on a "
                        "SASL listener as the admin user (the first super.users user with an "
                        "--add-scram credential), trusting ssl.truststore.location")
    _add_log_options(p)
    args = p.parse_args(argv)
    _logging(args.log_level, args.log_format, role="cluster")
    if args.console_port is not None and not 0 <= args.console_port <= 65535:
        print(f"pyq-broker cluster: --console-port {args.console_port} is not allowed: must be "
              "a port 0..65535 (0: any free one)", file=sys.stderr)
        return 2
    if args.brokers < 1:
        print(f"pyq-broker cluster: --brokers {args.brokers} is not allowed: must be at least 1",
              file=sys.stderr)
        return 2
    if _scram(args.add_scram, "pyq-broker cluster") is None:
        return 2
    from .cluster import LocalCluster, check_controllers
    controllers = args.controllers if args.controllers is not None else \
        (3 if args.brokers >= 3 else 1)
    try:
        check_controllers(controllers)
    except ValueError as e:
        print(f"pyq-broker cluster: --{e}", file=sys.stderr)
        return 2
    overrides = dict(item.split("=", 1) for item in args.override)
    if args.console_port is not None:
        try:
            console_listener, console_options = console_client(overrides, args.add_scram)
        except ValueError as e:
            print(f"pyq-broker cluster: --console-port: {e}", file=sys.stderr)
            return 2
    cluster = LocalCluster(args.data_dir, args.brokers, overrides, add_scram=args.add_scram,
                           log_level=args.log_level, log_format=args.log_format,
                           controllers=controllers).start()
    wait_for_stop = _catch_stop_signals()
    for c in cluster.controllers:
        print(f"controller pid {c.pid} on 127.0.0.1:{c.port}", flush=True)
    if cluster.controller.metrics_port is not None:
        print(f"controller metrics on 127.0.0.1:{cluster.controller.metrics_port}", flush=True)
    for b in cluster.brokers:
        print(f"broker {b.broker_id} pid {b.pid} on {b.bootstrap_servers}", flush=True)
        for name, address in b.listeners.items():
            if address != b.bootstrap_servers:
                print(f"broker {b.broker_id} listener {name}://{address}", flush=True)
        if b.metrics_port is not None:
            print(f"broker {b.broker_id} metrics on {b.host}:{b.metrics_port}", flush=True)
        if b.schema_registry_url is not None:
            print(f"broker {b.broker_id} schema registry on {b.schema_registry_url}", flush=True)
    print(f"bootstrap servers: {cluster.bootstrap_servers}", flush=True)
    if cluster.schema_registry_url is not None:
        print(f"schema registry: {cluster.schema_registry_url}", flush=True)
    console = None
    try:
        if args.console_port is not None:
            bootstrap = cluster.listener_bootstrap(console_listener) if console_listener \
                else cluster.bootstrap_servers
            console = _start_console(args.data_dir, bootstrap, args.console_port, console_options)
            print(f"console pid {console.pid} on http://{console.host}:{console.port}/", flush=True)
        wait_for_stop()
    finally:
        if console is not None:
            console.stop()
        cluster.stop()
        print("cluster stopped", flush=True)
    return 0


SASL_FIRST = ("SASL_SSL", "SASL_PLAINTEXT")


def console_client(overrides: dict[str, str], scram_specs: list[str]
                   ) -> tuple[str | None, dict[str, str]]:
    """(listener name or None for the bootstrap servers, client options) of the console
    ``cluster --console-port`` starts (see the module doc); ValueError says what is
    missing.

    >>> console_client({"listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
    ...                 "ssl.truststore.location": "/ca.pem", "super.users": "User:root"},
    ...                ["SCRAM-SHA-256=[name=alice,password=a]",
    ...                 "SCRAM-SHA-512=[name=root,password=r]"])[1]["sasl.username"]
    'root'
    >>> console_client({}, [])
    (None, {})
    """
    names = [item.split("://", 1)[0].strip() for item in
             overrides.get("listeners", "").split(",") if "://" in item]
    mapping = dict(pair.split(":", 1) for pair in
                   overrides.get("listener.security.protocol.map", "").split(",") if ":" in pair)
    protocol = {n: mapping.get(n, n).upper() for n in names}
    sasl = [n for p in SASL_FIRST for n in names if protocol[n] == p]
    if not sasl:
        if names and "PLAINTEXT" not in protocol.values():
            raise ValueError("the console connects over a PLAINTEXT or SASL listener, "
                             f"and listeners={overrides['listeners']!r} has neither")
        return None, {}
    listener = sasl[0]
    users: dict[str, dict[str, str]] = {}
    for spec in scram_specs:
        mechanism, _, rest = spec.partition("=")
        attrs = dict(item.strip().partition("=")[::2] for item in
                     rest.strip().strip("[]").split(",") if "=" in item)
        users.setdefault(attrs["name"], {})[mechanism.strip().upper()] = \
            attrs["password"].strip('"')
    if not users:
        raise ValueError(f"listener {listener} ({protocol[listener]}) needs a user to connect "
                         "as: give one with --add-scram 'SCRAM-SHA-512=[name=admin,"
                         "password=...]' (and super.users=User:admin)")
    supers = [u.strip().removeprefix("User:") for u in overrides.get("super.users", "").split(";")]
    user = next((u for u in supers if u in users), next(iter(users)))
    mechanism = "SCRAM-SHA-512" if "SCRAM-SHA-512" in users[user] else next(iter(users[user]))
    options = {"security.protocol": protocol[listener], "sasl.mechanism": mechanism,
               "sasl.username": user, "sasl.password": users[user][mechanism]}
    if protocol[listener] == "SASL_SSL":
        if "ssl.truststore.location" not in overrides:
            raise ValueError(f"listener {listener} (SASL_SSL) needs the CA the console trusts: "
                             "give the brokers ssl.truststore.location")
        for name in ("ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password"):
            if name in overrides:
                options[name] = overrides[name]
    return listener, options


def _start_console(data_dir: Path, bootstrap_servers: str, port: int,
                   options: dict[str, str]) -> ManagedProcess:
    """``pyq console`` as a child process (the broker imports nothing of the connector: the
    console is started by its module name), holding a lifeline to this process; its output
    goes to ``console.log`` in the data directory. ``options`` (the client's, secrets among
    them) go in ``console.properties``, readable by this user only."""
    from .process import ManagedProcess

    argv = [sys.executable, "-m", "connector.cli", "console",
            "--bootstrap-server", bootstrap_servers, "--port", str(port)]
    if options:
        path = data_dir / "console.properties"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            for name, value in options.items():
                out.write(f"{name}={value.replace(chr(92), chr(92) * 2)}\n")
        argv += ["--command-config", str(path)]
    return ManagedProcess(data_dir, argv, "console.log").start()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    hold()  # started by a ManagedProcess: stop when that parent dies
    keep_freed_buffers()  # this process is the broker's own: reuse its request buffers warm
    if argv and argv[0] == "controller":
        return run_controller(argv[1:])
    if argv and argv[0] == "cluster":
        return run_cluster(argv[1:])
    if argv and argv[0] == "broker":
        argv = argv[1:]
    return run_broker(argv)


if __name__ == "__main__":
    sys.exit(main())
