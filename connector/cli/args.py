"""Argument parsing shared by every command: one-line usage errors and validated values.

Every option is checked while parsing, so a command never starts with a value it cannot
use, and the error names the option, the value and what is allowed::

    $ pyq topics create events --partitions 0
    pyq topics create: error: argument --partitions: 0 is not allowed: must be at least 1 (see 'pyq topics create --help')

(exit code 2). Options that reach the client (``--bootstrap-server``, ``--api-timeout-ms``,
``--command-config``, ``-X``) are declared once, in :func:`client_parent`, and added to each
command that talks to a cluster, where Kafka's tools have them too (``pyq topics list
--bootstrap-server h:9092``).

Secured clusters: ``--command-config FILE`` reads a Kafka properties file (what
``kafka-topics.sh --command-config`` takes: ``security.protocol=SASL_SSL``,
``sasl.mechanism=...``, ``sasl.jaas.config=...``, ``ssl.ca.location=...``), and
``-X NAME=VALUE`` (kcat's flag, repeatable) sets one client option; ``-X`` wins over the
file, the file over the defaults. The CLI keeps no list of client options: every name
and value is checked by the client's declarations (:mod:`connector.client.config`,
``docs/options.md``), and an unknown or invalid one is a usage error naming it.

Where the bootstrap servers come from, first found wins (:func:`client_options`)::

    --bootstrap-server H:P               the flag
    -X bootstrap.servers=H:P             kcat's option
    --command-config FILE                its bootstrap.servers line
    PYQ_BROKERS=H:P[,...]                the environment (rpk's RPK_BROKERS)
    profile.toml                         the user's profile (:mod:`connector.cli.profile`)
    127.0.0.1:9092                       the default

The profile's other client options (security.protocol, sasl.*, ssl.*) sit below
``--command-config`` and ``-X`` the same way.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any, NoReturn

from connector.client.properties import read_properties

from .errors import EXIT_USAGE

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
BROKERS_ENV = "PYQ_BROKERS"
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
    """An option type: ``host:port[,host:port...]``, checked by the client's declaration of
    ``bootstrap.servers``."""
    from broker_sim.common.options import declared, parse_value
    from connector.client.config import ClientConfig

    try:
        parse_value(declared(ClientConfig)["bootstrap.servers"], text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be a comma-separated list of host:port") from None
    return text


def client_parent() -> argparse.ArgumentParser:
    """The connection options of every command that talks to a cluster."""
    parent = Parser(add_help=False)
    group = parent.add_argument_group("connection")
    group.add_argument("--bootstrap-server", type=bootstrap_servers, metavar="HOST:PORT[,...]",
                       help="brokers to connect to first (else -X bootstrap.servers, "
                            f"--command-config's, ${BROKERS_ENV}, the profile's, "
                            f"{DEFAULT_BOOTSTRAP})")
    group.add_argument("--api-timeout-ms", type=at_least(1), default=DEFAULT_API_TIMEOUT_MS,
                       metavar="MS", help="give up on the cluster after this long "
                       f"(default {DEFAULT_API_TIMEOUT_MS})")
    group.add_argument("--command-config", type=properties_file, default={}, metavar="FILE",
                       help="a Kafka properties file of client options (security.protocol, "
                            "sasl.*, ssl.*, ...)")
    group.add_argument("-X", dest="client_option", type=name_value, action="append", default=[],
                       metavar="NAME=VALUE",
                       help="a client option, e.g. -X security.protocol=SASL_SSL (repeatable; "
                            "wins over --command-config)")
    group.add_argument("-v", "--verbose", action="store_true",
                       help="log the client's activity to stderr")
    return parent


def properties_file(path: str) -> dict[str, str]:
    """An option type: a Java properties file (``name=value`` or ``name: value`` lines,
    ``#``/``!`` comments, a trailing backslash continues the line)."""
    try:
        return read_properties(path)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{path!r}: {e.strerror or e}") from None


def client_options(args: argparse.Namespace) -> dict[str, Any]:
    """Client configuration (Kafka's option names) from the connection options: the
    defaults, then the profile, then ``--command-config``, then ``-X``; the bootstrap
    servers as :func:`bootstrap_of` finds them."""
    from .profile import load_profile

    return {"default.api.timeout.ms": args.api_timeout_ms, "client.id": "pyq-cli",
            **load_profile(), **args.command_config, **dict(args.client_option),
            "bootstrap.servers": bootstrap_of(args)}


def bootstrap_of(args: argparse.Namespace) -> str:
    """The bootstrap servers: ``--bootstrap-server``, else ``-X bootstrap.servers``, else
    ``--command-config``'s, else ``$PYQ_BROKERS``, else the profile's, else the default.
    A value from the environment or the profile is checked as the flag is (a usage error
    naming where it came from)."""
    from .profile import load_profile, profile_path

    if getattr(args, "bootstrap_server", None):
        return str(args.bootstrap_server)
    given = dict(getattr(args, "client_option", []))
    if "bootstrap.servers" in given:
        return _checked(given["bootstrap.servers"], "-X bootstrap.servers")
    command_config = getattr(args, "command_config", {})
    if "bootstrap.servers" in command_config:
        return _checked(command_config["bootstrap.servers"], "bootstrap.servers of --command-config")
    env = os.environ.get(BROKERS_ENV, "").strip()
    if env:
        return _checked(env, f"${BROKERS_ENV}")
    profile = load_profile()
    if "bootstrap.servers" in profile:
        return _checked(str(profile["bootstrap.servers"]),
                        f"bootstrap.servers of the profile {profile_path()}")
    return DEFAULT_BOOTSTRAP


def _checked(value: str, where: str) -> str:
    from .errors import CommandError

    try:
        return bootstrap_servers(value)
    except argparse.ArgumentTypeError as e:
        raise CommandError(f"{where}: {e}", EXIT_USAGE) from None

