"""``pyq console [--host H] [--port N] [--schema-registry URL [--registry-ca FILE]
[--registry-user USER:PASSWORD]] [--lag-interval-ms MS]``: the web console
(:mod:`connector.console`) over the cluster the connection options name, until Ctrl-C.
The registry options are ``pyq schemas``' spellings.

It prints where it listens first (``pyq console: http://127.0.0.1:8080/``, then
``listening on 127.0.0.1:8080``), so a script that asked for ``--port 0`` learns the port;
``pyq-broker cluster --console-port N`` starts it so, as a child that stops with it. Bound to 127.0.0.1 unless ``--host`` says
otherwise: the console can delete topics. ``--basic-auth USER`` (the password in
``$PYQ_CONSOLE_PASSWORD``, never on the command line) makes every page ask for HTTP basic
credentials; over a network, put it behind TLS.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

from .args import at_least, client_options, client_parent
from .errors import EXIT_USAGE, CommandError

DEFAULT_PORT = 8080
PASSWORD_ENV = "PYQ_CONSOLE_PASSWORD"


def register(commands: Any) -> None:
    console = commands.add_parser(
        "console", parents=[client_parent()], help="a web console for the cluster",
        description="Serve a web console (overview, topics, message browser, consumer "
                    "groups with lag history, pipelines with dead letters by reason, schemas, "
                    "transactions, ACLs, SCRAM users) that talks to "
                    "the cluster as a Kafka client with these options.")
    console.add_argument("--host", default="127.0.0.1", metavar="H",
                         help="the address to listen on (default 127.0.0.1)")
    console.add_argument("--port", type=at_least(0), default=DEFAULT_PORT, metavar="N",
                         help=f"the port to listen on, 0 for any free one (default {DEFAULT_PORT})")
    console.add_argument("--schema-registry", metavar="URL[,...]",
                         help="a schema registry's URL(s): a schemas page, and Avro, JSON "
                              "Schema and Protobuf keys and values decoded in the message "
                              "browser")
    console.add_argument("--registry-ca", metavar="FILE",
                         help="CA certificate(s) (PEM) to verify an https registry with")
    console.add_argument("--registry-user", metavar="USER:PASSWORD",
                         help="HTTP basic credentials for the registry")
    console.add_argument("--lag-interval-ms", type=at_least(100), default=5000, metavar="MS",
                         help="sample every group's lag this often for the lag history "
                              "charts (default 5000)")
    console.add_argument("--basic-auth", metavar="USER",
                         help=f"require HTTP basic authentication as USER, with the password "
                              f"in ${PASSWORD_ENV}")
    console.set_defaults(run=run_console)


def run_console(args: argparse.Namespace) -> int:
    from broker_sim.lifeline import hold
    from connector.console import ConsoleServer

    # One line per request on stderr only with -v (werkzeug logs them at INFO).
    logging.getLogger("werkzeug").setLevel(logging.INFO if args.verbose else logging.WARNING)
    hold()  # started by ``pyq-broker cluster --console-port``: stop when that parent dies
    basic_auth = None
    if args.basic_auth is not None:
        password = os.environ.get(PASSWORD_ENV, "")
        if not args.basic_auth or not password:
            raise CommandError(f"--basic-auth {args.basic_auth!r} needs a user name and a "
                               f"password in ${PASSWORD_ENV}", EXIT_USAGE)
        basic_auth = (args.basic_auth, password)
    if (args.registry_ca or args.registry_user) and not args.schema_registry:
        raise CommandError("--registry-ca and --registry-user need --schema-registry URL",
                           EXIT_USAGE)
    server = ConsoleServer(client_options(args), args.host, args.port, args.schema_registry,
                           args.lag_interval_ms, basic_auth, args.registry_ca,
                           args.registry_user)
    host, port = server.address
    print(f"pyq console: {server.url}", flush=True)
    print(f"listening on {host}:{port}", flush=True)  # what a ManagedProcess waits for
    try:
        server.serve_forever()
    finally:
        server.close()
        sys.stdout.flush()
    return 0
