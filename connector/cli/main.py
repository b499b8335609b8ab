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

import argparse
import logging
import os
import sys

from broker_sim.protocol.errors import PyqError

from . import (
    acls,
    cluster,
    completion,
    configs,
    console,
    consume,
    groups,
    lag,
    offsets,
    produce,
    schemas,
    topics,
    transactions,
    users,
)
from .args import Parser, bootstrap_of
from .errors import EXIT_FAILURE, EXIT_USAGE, CommandError

COMMANDS = (cluster, topics, configs, produce, consume, offsets, groups, lag, transactions, users,
            acls, schemas, console, completion)


def build_parser() -> Parser:
    parser = Parser(prog="pyq", description="Work with a pyq (or any Kafka) cluster: run a "
                    "local cluster, manage topics and configs, produce and consume lines, manage consumer groups, show "
                    "lag, manage users and ACLs, manage schemas in a schema registry, serve a web console. "
                    "'pyq COMMAND --help' describes each command.")
    parser.add_argument("--version", action=VersionAction,
                        help="print pyq's version (its installed package's) and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(commands)
    return parser


class VersionAction(argparse.Action):
    """``pyq --version``: ``pyq 0.1.0``, from the metadata of the distribution that
    installed this package (looked up only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"pyq {installed_version()}")
        parser.exit()


def installed_version() -> str:
    """The version of the distribution that provides the ``connector`` package."""
    from importlib import metadata

    for name in dict.fromkeys(metadata.packages_distributions().get("connector", [])):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "unknown (not installed from a package)"


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    from connector.registry.client import RegistryError

    if isinstance(error, CommandError | RegistryError):
        return text
    name = type(error).__name__
    return name if text in ("", name) else f"{name}: {text}"


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    import argcomplete  # a shell asking for completions (pyq completion): answer, exit

    argcomplete.autocomplete(parser)
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
            where = f" (bootstrap server {bootstrap_of(args)})"
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
