"""``pyq cluster start`` runs a local cluster; ``pyq cluster status`` says how one is doing.

``start``: a controller and N broker processes, in the foreground. The same as
``pyq-broker cluster`` (it calls :func:`broker_sim.cli.run_cluster`): it prints each
process's pid and address and then ``bootstrap servers: h:p,h:p,...``, and stops every
child on SIGTERM or Ctrl-C (or when this process dies: each child holds a lifeline to it).
Without ``--data-dir`` the cluster lives in a temporary directory that is deleted when it
stops.

``status``: a health summary of any Kafka cluster from one Metadata request (the Kafka
protocol, not the metrics endpoint): the cluster id, the controller the brokers name, every
broker with its address and whether it is alive (a broker that holds replicas but is
missing from Metadata is fenced or gone), then the under-replicated partitions (ISR
smaller than the replicas) and the offline ones (no live leader), each as a table::

    cluster id: pyq-cluster
    controller: 0 (127.0.0.1:40001)
    BROKER  ADDRESS          ALIVE
    0       127.0.0.1:40001  yes
    1       127.0.0.1:40003  yes
    2       -                no
    under-replicated partitions: 1
    TOPIC   PARTITION  LEADER  REPLICAS  ISR
    clicks  0          0       0,1,2     0,1
    offline partitions: 0
    quorum: leader 3000, epoch 1, high watermark 14
    NODE  ROLE      ENDPOINT                       LOG-END-OFFSET  LAG  LAST-FETCH-MS
    3000  leader    CONTROLLER://127.0.0.1:40000   14              0    0
    0     observer  -                              14              0    120

then the controller quorum from DescribeQuorum (any broker forwards it to the active
controller): its leader, epoch and high watermark, and each voter and observer with its
log end offset, its lag behind the high watermark and how long ago it last fetched. A
cluster that cannot describe its quorum (no Describe on the cluster, an older broker)
says ``quorum: unavailable (why)``; ``--format json`` puts it under ``quorum`` (null, with
``quorum_error``).

It exits 0 whatever the health (1 only if the cluster cannot be reached).

``add-controller`` / ``remove-controller``: change the controller quorum's voters one at a
time (KIP-853's AddRaftVoter / RemoveRaftVoter, through any broker, which forwards them to
the active controller), as ``kafka-metadata-quorum add-controller`` / ``remove-controller``
do. A controller joins as a voter only once it fetches the metadata log as an observer; the
command returns when the new voter set is committed, and fails (exit 1) naming why: already
a voter, not a voter, not fetching yet, a change in flight, the last voter, or a cluster that
does not support voter changes.
"""

from __future__ import annotations

import argparse
import base64
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .args import at_least, client_options, client_parent, name_value
from .errors import CommandError
from .output import add_output_options, print_json, records, wants_json
from .table import format_table


def register(commands: Any) -> None:
    cluster = commands.add_parser(
        "cluster", help="run a local cluster, or show a cluster's health",
        description="Run a local pyq cluster (a controller process and N broker processes), "
                    "or show how a cluster is doing.")
    actions = cluster.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = actions.add_parser(
        "start", help="start a controller and N brokers; stop them with Ctrl-C",
        description="Start a controller and N broker processes on free ports, print their "
                    "addresses and the bootstrap servers, and stop them all on SIGTERM or "
                    "Ctrl-C (the same as 'pyq-broker cluster').")
    start.add_argument("--brokers", type=at_least(1), default=3, metavar="N",
                       help="number of brokers (default 3)")
    start.add_argument("--data-dir", type=Path, metavar="DIR",
                       help="directory for every process's data and logs (default: a temporary "
                            "directory, deleted when the cluster stops)")
    start.add_argument("--override", type=name_value, action="append", default=[],
                       metavar="NAME=VALUE",
                       help="a broker option for every broker, e.g. log.segment.bytes=1048576 "
                            "(repeatable)")
    start.add_argument("--log-level", default="INFO", type=str.upper,
                       choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
                       help="every process's logging level (default INFO)")
    start.add_argument("--log-format", default="text", choices=("text", "json"),
                       help="every process's log records as text (default) or one JSON object "
                            "per line (time, level, logger, message, broker_id or role)")
    start.add_argument("--console-port", type=at_least(0), metavar="N",
                       help="also serve pyq console on 127.0.0.1:N (0: any free port)")
    start.set_defaults(run=start_cluster)
    status = actions.add_parser(
        "status", parents=[client_parent()], help="brokers, controller, under-replicated and "
        "offline partitions, the controller quorum",
        description="Show the cluster's brokers (address, alive), its controller, and its "
                    "under-replicated and offline partitions, from the brokers' Metadata; "
                    "then the controller quorum (leader, epoch, high watermark, each voter's "
                    "and observer's log end offset, lag and last fetch) from DescribeQuorum.")
    add_output_options(status)
    status.set_defaults(run=cluster_status)
    add = actions.add_parser(
        "add-controller", parents=[client_parent()],
        help="make a controller that follows the metadata log a voter of the quorum",
        description="Add a controller to the controller quorum's voters (AddRaftVoter). The "
                    "controller must be running and fetching the metadata log as an observer.")
    add.add_argument("--controller-id", type=int, required=True, metavar="ID",
                     help="the node id of the controller to add")
    add.add_argument("--controller-endpoint", type=host_port, required=True, metavar="HOST:PORT",
                     help="where the quorum reaches it (its quorum listener)")
    add.add_argument("--controller-directory-id", type=directory_id, metavar="ID",
                     help="its metadata log directory id, as Kafka prints it (base64) or as a "
                          "UUID (default: none; pyq's controllers have none, Kafka's do)")
    add.add_argument("--timeout-ms", type=at_least(1), default=60_000, metavar="MS",
                     help="how long to wait for the new voter set to commit (default 60000)")
    add.set_defaults(run=add_controller)
    remove = actions.add_parser(
        "remove-controller", parents=[client_parent()],
        help="take a controller out of the quorum's voters",
        description="Remove a controller from the controller quorum's voters (RemoveRaftVoter).")
    remove.add_argument("--controller-id", type=int, required=True, metavar="ID",
                        help="the node id of the controller to remove")
    remove.add_argument("--controller-directory-id", type=directory_id, metavar="ID",
                        help="its metadata log directory id (default: the one the quorum "
                             "reports for it)")
    remove.add_argument("--timeout-ms", type=at_least(1), default=60_000, metavar="MS",
                        help="how long to wait for the new voter set to commit (default 60000)")
    remove.set_defaults(run=remove_controller)


def host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


def directory_id(text: str) -> uuid.UUID:
    """A directory id as Kafka prints it (22 characters of URL-safe base64) or a UUID."""
    try:
        if len(text) == 22:
            return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=="))
        return uuid.UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a Kafka directory id (22 base64 characters) nor a UUID") from None


def _voter_change(args: argparse.Namespace, api: str, change: Any) -> int:
    from broker_sim.protocol.errors import UnsupportedVersion
    from connector.client import Admin
    from connector.client.errors import IncompatibleBrokerError

    with Admin(client_options(args)) as admin:
        try:
            change(admin)
        except (IncompatibleBrokerError, UnsupportedVersion) as e:
            raise CommandError(f"the cluster does not support controller voter changes ({api}): "
                               f"{e}") from e
    return 0


def add_controller(args: argparse.Namespace) -> int:
    host, port = args.controller_endpoint
    _voter_change(args, "AddRaftVoter", lambda admin: admin.add_raft_voter(
        args.controller_id, host, port, timeout_ms=args.timeout_ms,
        directory_id=args.controller_directory_id))
    print(f"controller {args.controller_id} ({host}:{port}) is a voter")
    return 0


def remove_controller(args: argparse.Namespace) -> int:
    _voter_change(args, "RemoveRaftVoter", lambda admin: admin.remove_raft_voter(
        args.controller_id, timeout_ms=args.timeout_ms, directory_id=args.controller_directory_id))
    print(f"controller {args.controller_id} is no longer a voter")
    return 0


def cluster_status(args: argparse.Namespace) -> int:
    from connector.client import Admin

    with Admin(client_options(args)) as admin:
        cluster = admin.cluster_metadata()  # one request: brokers and partitions agree
        quorum, quorum_error = describe_quorum(admin)
    alive = cluster.brokers
    partitions = [p for t in sorted(cluster.topics) for p in cluster.partitions_for_topic(t)]
    known = sorted(set(alive) | {r for p in partitions for r in p.replicas})
    under = [p for p in partitions if len(p.isr) < len(p.replicas)]
    offline = [p for p in partitions if p.leader < 0 or p.leader not in alive]

    def address(node_id: int) -> str | None:
        node = alive.get(node_id)
        return None if node is None else f"{node.host}:{node.port}"

    controller = cluster.controller_id
    broker_columns = ["BROKER", "ADDRESS", "ALIVE"]
    brokers = [[b, address(b), b in alive] for b in known]
    partition_columns = ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"]

    def partition_rows(chosen: list[Any]) -> list[list[object]]:
        return [[p.topic, p.partition, p.leader if p.leader >= 0 else None, p.replicas, p.isr]
                for p in sorted(chosen)]

    if wants_json(args):
        print_json({"cluster_id": cluster.cluster_id or None,
                    "controller": controller if controller >= 0 else None,
                    "controller_address": address(controller) if controller >= 0 else None,
                    "brokers": records(broker_columns, brokers),
                    "under_replicated": records(partition_columns, partition_rows(under)),
                    "offline": records(partition_columns, partition_rows(offline)),
                    "quorum": quorum_document(quorum), "quorum_error": quorum_error})
        return 0
    print(f"cluster id: {cluster.cluster_id or '-'}")
    print(f"controller: {controller} ({address(controller) or 'not alive'})"
          if controller >= 0 else "controller: none")
    print(format_table(broker_columns, [[b, a, "yes" if up else "no"] for b, a, up in brokers]))
    for title, rows in (("under-replicated", under), ("offline", offline)):
        print(f"{title} partitions: {len(rows)}")
        if rows:
            print(format_table(partition_columns, partition_rows(rows)))
    print_quorum(quorum, quorum_error)
    return 0


QUORUM_COLUMNS = ["NODE", "ROLE", "ENDPOINT", "LOG-END-OFFSET", "LAG", "LAST-FETCH-MS"]


def describe_quorum(admin: Any) -> tuple[Any, str | None]:
    """(QuorumInfo, None), or (None, why) when the cluster cannot describe its quorum (an
    error answered, or a broker without DescribeQuorum)."""
    from broker_sim.protocol.errors import PyqError

    try:
        return admin.describe_quorum(), None
    except PyqError as e:
        return None, f"{type(e).__name__}: {e}"


def quorum_rows(quorum: Any) -> list[list[object]]:
    rows: list[list[object]] = []
    for role, replicas in (("voter", quorum.voters), ("observer", quorum.observers)):
        for r in replicas:
            rows.append([r.node_id, "leader" if r.node_id == quorum.leader_id else role,
                         quorum.endpoints.get(r.node_id) or None, r.log_end_offset, r.lag,
                         r.last_fetch_age_ms])
    return rows


def quorum_document(quorum: Any) -> dict[str, Any] | None:
    if quorum is None:
        return None
    return {"leader": quorum.leader_id, "epoch": quorum.leader_epoch,
            "high_watermark": quorum.high_watermark,
            "replicas": records(QUORUM_COLUMNS, quorum_rows(quorum))}


def print_quorum(quorum: Any, error: str | None) -> None:
    if quorum is None:
        print(f"quorum: unavailable ({error})")
        return
    print(f"quorum: leader {quorum.leader_id}, epoch {quorum.leader_epoch}, "
          f"high watermark {quorum.high_watermark}")
    print(format_table(QUORUM_COLUMNS, quorum_rows(quorum)))


def start_cluster(args: argparse.Namespace) -> int:
    from broker_sim.cli import run_cluster

    with ExitStack() as stack:
        data_dir = args.data_dir
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pyq-cluster-")))
            print(f"data directory: {data_dir} (temporary)", flush=True)
        argv = ["--brokers", str(args.brokers), "--data-dir", str(data_dir),
                "--log-level", args.log_level, "--log-format", args.log_format]
        for name, value in args.override:
            argv += ["--override", f"{name}={value}"]
        if args.console_port is not None:
            argv += ["--console-port", str(args.console_port)]
        try:
            return run_cluster(argv)
        except (RuntimeError, TimeoutError) as e:
            # The message ends with the failing child's output; its last line says why.
            lines = [line for line in str(e).splitlines() if line.strip()]
            why = lines[-1].strip() if lines else type(e).__name__
            raise CommandError(f"a cluster process did not start: {why}") from e
