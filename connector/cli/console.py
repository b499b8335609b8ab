"""``pyq console [--host H] [--port N] [--schema-registry URL] [--lag-interval-ms MS]``: the web console
(:mod:`connector.console`) over the cluster the connection options name, until Ctrl-C.

It prints where it listens first (``pyq console: http://127.0.0.1:8080/``, then
``listening on 127.0.0.1:8080``), so a script that asked for ``--port 0`` learns the port;
``pyq-broker cluster --console-port N`` starts it so, as a child that stops with it. Bound to 127.0.0.1 unless ``--host`` says
otherwise: the console can delete topics, and it has no login of its own yet.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .args import at_least, client_options, client_parent

DEFAULT_PORT = 8080


def register(commands: Any) -> None:
    console = commands.add_parser(
        "console", parents=[client_parent()], help="a web console for the cluster",
        description="Serve a web console (overview, topics, message browser, consumer "
                    "groups) that talks to the cluster as a Kafka client with these options.")
    console.add_argument("--host", default="127.0.0.1", metavar="H",
                         help="the address to listen on (default 127.0.0.1)")
    console.add_argument("--port", type=at_least(0), default=DEFAULT_PORT, metavar="N",
                         help=f"the port to listen on, 0 for any free one (default {DEFAULT_PORT})")
    console.add_argument("--schema-registry", metavar="URL",
                         help="a schema registry's URL (shown; decoding through it comes later)")
    console.add_argument("--lag-interval-ms", type=at_least(100), default=5000, metavar="MS",
                         help="sample every group's lag this often for the lag history "
                              "charts (default 5000)")
    console.set_defaults(run=run_console)


def run_console(args: argparse.Namespace) -> int:
    from broker_sim.lifeline import hold
    from connector.console import ConsoleServer

    hold()  # started by ``pyq-broker cluster --console-port``: stop when that parent dies
    server = ConsoleServer(client_options(args), args.host, args.port, args.schema_registry,
                           args.lag_interval_ms)
    host, port = server.address
    print(f"pyq console: {server.url}", flush=True)
    print(f"listening on {host}:{port}", flush=True)  # what a ManagedProcess waits for
    try:
        server.serve_forever()
    finally:
        server.close()
        sys.stdout.flush()
    return 0
