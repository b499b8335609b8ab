"""The ``pyq`` entry point: the parser tree, dispatch, and errors mapped to exit codes.

Each command module registers its subparser (and sets ``run``, the function that does the
work); :func:`main` parses, runs, and turns every expected failure into one line on
stderr::

    exit 0  success
    exit 1  the command failed: a CommandError, or an error from the cluster or client
            ("pyq topics create: error: TopicAlreadyExists: topic 'events' already exists")
    exit 2  bad usage: argparse errors and invalid client options, naming the option

Anything else is a bug, and keeps its traceback.
"""

from __future__ import annotations

import logging
import os
import sys

from broker_sim.protocol.errors import PyqError

from . import (
    acls,
    cluster,
    configs,
    consume,
    groups,
    lag,
    produce,
    schemas,
    topics,
    transactions,
    users,
)
from .args import Parser
from .errors import EXIT_FAILURE, EXIT_USAGE, CommandError

COMMANDS = (cluster, topics, configs, produce, consume, groups, lag, transactions, users, acls,
            schemas)


def build_parser() -> Parser:
    parser = Parser(prog="pyq", description="Work with a pyq (or any Kafka) cluster: run a "
                    "local cluster, manage topics and configs, produce and consume lines, manage consumer groups, show "
                    "lag, manage users and ACLs, manage schemas in a schema registry. "
                    "'pyq COMMAND --help' describes each command.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(commands)
    return parser


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if isinstance(error, CommandError):
        return text
    name = type(error).__name__
    return name if text in ("", name) else f"{name}: {text}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"pyq {args.command}" + (f" {args.action}" if getattr(args, "action", None) else "")
    logging.basicConfig(level=logging.INFO if getattr(args, "verbose", False) else logging.ERROR,
                        stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    from connector.client.errors import ClientError, ConfigError  # once a command runs

    try:
        return int(args.run(args))
    except ConfigError as e:  # a --producer-property the client refuses
        print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except CommandError as e:
        print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
        return e.exit_code
    except PyqError as e:
        where = ""
        if isinstance(e, ClientError) and e.retriable:  # timed out or disconnected: from where?
            where = f" (bootstrap server {args.bootstrap_server})"
        print(f"{prog}: error: {_one_line(e)}{where}", file=sys.stderr)
        return EXIT_FAILURE
    except BrokenPipeError:
        # The reader went away (``pyq consume ... | head``): stop quietly, and keep the
        # interpreter's final flush of stdout from failing again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
