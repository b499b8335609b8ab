"""Argument parsing shared by every command: one-line usage errors and validated values.

Every option is checked while parsing, so a command never starts with a value it cannot
use, and the error names the option, the value and what is allowed::

    $ pyq topics create events --partitions 0
    pyq topics create: error: argument --partitions: 0 is not allowed: must be at least 1 (see 'pyq topics create --help')

(exit code 2). Options that reach the client (``--bootstrap-server``, ``--api-timeout-ms``)
are declared once, in :func:`client_parent`, and added to each command that talks to a
cluster, where Kafka's tools have them too (``pyq topics list --bootstrap-server h:9092``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from .errors import EXIT_USAGE

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
DEFAULT_API_TIMEOUT_MS = 30_000


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (exit code 2).

    Subparsers made by ``add_subparsers().add_parser`` are of the same class.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def at_least(low: int) -> Callable[[str], int]:
    """An option type: an integer >= ``low``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is not allowed: must be at least {low}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def name_value(text: str) -> tuple[str, str]:
    """An option type: ``NAME=VALUE`` (e.g. ``--config retention.ms=60000``)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value.strip()


def bootstrap_servers(text: str) -> str:
    """An option type: ``host:port[,host:port...]``, checked as the client will parse it."""
    from connector.client.config import ClientConfig
    from connector.client.errors import ConfigError

    try:
        ClientConfig.from_options({"bootstrap.servers": text})
    except ConfigError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be a comma-separated list of host:port") from None
    return text


def client_parent() -> argparse.ArgumentParser:
    """The connection options of every command that talks to a cluster."""
    parent = Parser(add_help=False)
    group = parent.add_argument_group("connection")
    group.add_argument("--bootstrap-server", type=bootstrap_servers, default=DEFAULT_BOOTSTRAP,
                       metavar="HOST:PORT[,...]",
                       help=f"brokers to connect to first (default {DEFAULT_BOOTSTRAP})")
    group.add_argument("--api-timeout-ms", type=at_least(1), default=DEFAULT_API_TIMEOUT_MS,
                       metavar="MS", help="give up on the cluster after this long "
                       f"(default {DEFAULT_API_TIMEOUT_MS})")
    group.add_argument("-v", "--verbose", action="store_true",
                       help="log the client's activity to stderr")
    return parent


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """Client configuration (Kafka's option names) from the connection options."""
    return {"bootstrap.servers": args.bootstrap_server,
            "default.api.timeout.ms": args.api_timeout_ms,
            "client.id": "pyq-cli"}

