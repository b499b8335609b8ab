"""``pyq cluster start``: a controller and N broker processes, in the foreground.

The same as ``pyq-broker cluster`` (it calls :func:`broker_sim.cli.run_cluster`): it prints
each process's pid and address and then ``bootstrap servers: h:p,h:p,...``, and stops
every child on SIGTERM or Ctrl-C. Without ``--data-dir`` the cluster lives in a temporary
directory that is deleted when it stops.
"""

from __future__ import annotations

import argparse
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .args import at_least, name_value
from .errors import CommandError


def register(commands: Any) -> None:
    cluster = commands.add_parser(
        "cluster", help="run a local cluster",
        description="Run a local pyq cluster: a controller process and N broker processes.")
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
    start.set_defaults(run=start_cluster)


def start_cluster(args: argparse.Namespace) -> int:
    from broker_sim.cli import run_cluster

    with ExitStack() as stack:
        data_dir = args.data_dir
        if data_dir is None:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pyq-cluster-")))
            print(f"data directory: {data_dir} (temporary)", flush=True)
        argv = ["--brokers", str(args.brokers), "--data-dir", str(data_dir)]
        for name, value in args.override:
            argv += ["--override", f"{name}={value}"]
        try:
            return run_cluster(argv)
        except (RuntimeError, TimeoutError) as e:
            # The message ends with the failing child's output; its last line says why.
            lines = [line for line in str(e).splitlines() if line.strip()]
            why = lines[-1].strip() if lines else type(e).__name__
            raise CommandError(f"a cluster process did not start: {why}") from e
