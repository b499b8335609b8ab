"""The connection options every job takes, spelled as the ``pyq`` command spells them.

    --bootstrap-server H:P[,...]   the brokers (``--bootstrap-servers``: the deprecated
                                   spelling, still accepted, with one notice on stderr)
    --command-config FILE          a Kafka client properties file (security.protocol,
                                   sasl.*, ssl.* including PKCS12/JKS stores, timeouts),
                                   read as ``pyq --command-config`` reads it
    -X NAME=VALUE                  one client option (repeatable), wins over the file

The bootstrap servers: the flag, else ``-X bootstrap.servers``, else the file's, else
127.0.0.1:9092. The result, :func:`client_options`, is one dict of Kafka option names, the
connection settings of pyq's client (:class:`connector.client.config.ClientConfig`): the job
hands it to its own clients as is and to ``format("pyq")`` as ``kafka.<name>`` options
(:func:`spark_options`). It is checked while the arguments are parsed: an unknown name or
an invalid value (a wrong store password, a missing file) is a usage error naming it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from connector.client.config import ClientConfig
from connector.client.errors import ConfigError
from connector.client.properties import read_properties

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _properties(path: str) -> dict[str, str]:
    try:
        return read_properties(path)
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{path!r}: {e.strerror or e}") from None


def _name_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name.strip(), value.strip()


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("connection")
    group.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                       help="brokers to connect to first (else -X bootstrap.servers, "
                            f"--command-config's, {DEFAULT_BOOTSTRAP})")
    group.add_argument("--bootstrap-servers", dest="deprecated_bootstrap_servers",
                       metavar="HOST:PORT[,...]", help="deprecated spelling of --bootstrap-server")
    group.add_argument("--command-config", type=_properties, default={}, metavar="FILE",
                       help="a Kafka properties file of client options (security.protocol, "
                            "sasl.*, ssl.*, ...)")
    group.add_argument("-X", dest="client_option", type=_name_value, action="append", default=[],
                       metavar="NAME=VALUE",
                       help="a client option, e.g. -X security.protocol=SASL_SSL (repeatable; "
                            "wins over --command-config)")


def client_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Any]:
    """The checked client options of parsed ``args`` (a usage error through ``parser``)."""
    if args.deprecated_bootstrap_servers is not None:
        print(f"{parser.prog}: --bootstrap-servers is deprecated; use --bootstrap-server",
              file=sys.stderr)
        if args.bootstrap_server is not None:
            parser.error("give --bootstrap-server only (--bootstrap-servers is its deprecated "
                         "spelling)")
    options: dict[str, Any] = {**args.command_config, **dict(args.client_option)}
    flag = args.bootstrap_server or args.deprecated_bootstrap_servers
    options["bootstrap.servers"] = flag or options.get("bootstrap.servers") or DEFAULT_BOOTSTRAP
    try:
        ClientConfig.from_options(options)
    except ConfigError as e:
        parser.error(f"connection options (--bootstrap-server, --command-config, -X): {e}")
    return options


def spark_options(options: dict[str, Any]) -> dict[str, str]:
    """``options`` as ``format("pyq")`` takes them: ``kafka.<name>``."""
    return {f"kafka.{k}": str(v) for k, v in options.items()}
