"""``pyq schemas list | get | register | check | delete | config``: subjects and schemas of a
schema registry speaking the Confluent Schema Registry REST API (pyq's broker with
``schema.registry.listeners``, Confluent's, Karapace, Redpanda), like Confluent's REST calls
made by hand::

    pyq schemas register clicks-value --schema click.avsc        prints the schema id: 1
    pyq schemas get clicks-value                                  the latest schema, as JSON
    pyq schemas get clicks-value --version 1 -J                   the whole record, one JSON line
    pyq schemas get --id 1                                        the schema with id 1
    pyq schemas check clicks-value --schema click-v2.avsc         exit 0 compatible, 1 not
    pyq schemas config clicks-value --compatibility FULL          set (without: print) a level
    pyq schemas delete clicks-value [--version 2] [--permanent]
    pyq schemas list [SUBJECT] [--deleted]                        subjects, or a subject's versions

``--schema-registry URL[,URL...]`` (``-r``, kcat's flag) names the registry (default
http://127.0.0.1:8081, the registry's usual port); ``--registry-ca FILE`` and
``--registry-user USER:PASSWORD`` reach a TLS one asking basic credentials. A refusal of
the registry is one line with its error code, exit 1::

    pyq schemas get: error: Subject 'nope' not found. (registry error 40401)

``check`` asks the registry (``/compatibility``, verbose): without ``--version`` against the
versions the subject's compatibility level names (all of them for a ``_TRANSITIVE`` level),
with ``--version N|latest`` against that one. It prints ``compatible`` or ``incompatible``
and the registry's reasons, one per line, and exits 0 or 1.

``delete --permanent`` soft-deletes first when needed (the registry only hard-deletes what
was soft-deleted), then deletes for good; the ids of permanently deleted schemas may then
be unknown to readers of old records.

The HTTP requests are :mod:`connector.registry.client` (the standard library's urllib).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from connector.registry.client import RegistryClient, RegistryRefusal

from .args import Parser, at_least
from .errors import EXIT_FAILURE
from .output import FORMATS, add_output_options, print_list, wants_json

DEFAULT_REGISTRY = "http://127.0.0.1:8081"
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")
LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
          "FULL_TRANSITIVE", "NONE")
SUBJECT_SOFT_DELETED = 40404
VERSION_SOFT_DELETED = 40406


def version_arg(text: str) -> str:
    """An option type: a version number >= 1, or ``latest``."""
    if text.strip().lower() == "latest":
        return "latest"
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be a version number (1 or more) or latest")
    return str(value)


version_arg.__name__ = "version"


def schema_type(text: str) -> str:
    """An option type: AVRO, PROTOBUF or JSON (any case)."""
    if text.strip().upper() not in SCHEMA_TYPES:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be one of {', '.join(SCHEMA_TYPES)}")
    return text.strip().upper()


schema_type.__name__ = "schema type"


def compatibility_level(text: str) -> str:
    """An option type: a compatibility level (any case)."""
    if text.strip().upper() not in LEVELS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: must be one of {', '.join(LEVELS)}")
    return text.strip().upper()


compatibility_level.__name__ = "compatibility level"


def schema_file(path: str) -> str:
    """An option type: the text of a schema file (``-``: standard input)."""
    import sys

    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise argparse.ArgumentTypeError(f"{path!r}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise argparse.ArgumentTypeError(f"{path!r} is not UTF-8 text") from None


schema_file.__name__ = "schema file"


def reference(text: str) -> dict[str, Any]:
    """An option type: ``NAME=SUBJECT:VERSION``, a schema reference."""
    name, sep, rest = text.partition("=")
    subject, colon, version = rest.rpartition(":")
    if not (sep and colon and name.strip() and subject.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=SUBJECT:VERSION")
    try:
        number = int(version)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not allowed: VERSION must be a version number (1 or more)")
    return {"name": name.strip(), "subject": subject.strip(), "version": number}


reference.__name__ = "reference"


def add_registry_options(parser: argparse.ArgumentParser) -> None:
    """``-r/--schema-registry``, ``--registry-ca``, ``--registry-user``: where the registry
    is and how to reach it (on ``schemas`` and on ``consume``/``produce``)."""
    group = parser.add_argument_group("schema registry")
    group.add_argument("-r", "--schema-registry", default=DEFAULT_REGISTRY, metavar="URL[,...]",
                       help=f"the registry's URL(s) (default {DEFAULT_REGISTRY})")
    group.add_argument("--registry-ca", metavar="FILE",
                       help="CA certificate(s) (PEM) to verify an https registry with")
    group.add_argument("--registry-user", metavar="USER:PASSWORD",
                       help="HTTP basic credentials for the registry")


def registry_parent() -> argparse.ArgumentParser:
    """The options of every ``schemas`` action."""
    parent = Parser(add_help=False)
    add_registry_options(parent)
    parent.add_argument("--api-timeout-ms", type=at_least(1), default=30_000, metavar="MS",
                        help="give up on a request after this long (default 30000)")
    return parent


def client_of(args: argparse.Namespace) -> RegistryClient:
    return RegistryClient(args.schema_registry, args.registry_ca, args.registry_user,
                          args.api_timeout_ms / 1000)


def register(commands: Any) -> None:
    schemas = commands.add_parser(
        "schemas", help="list, get, register, check and delete schemas in a schema registry",
        description="Subjects and schemas of a schema registry speaking the Confluent Schema "
                    "Registry REST API (pyq's broker with schema.registry.listeners, "
                    "Confluent's, Karapace, Redpanda).")
    actions = schemas.add_subparsers(dest="action", metavar="ACTION", required=True)
    registry = registry_parent()

    listing = actions.add_parser(
        "list", parents=[registry], help="subjects, or a subject's versions",
        description="Print every subject, one per line; with SUBJECT, its version numbers.")
    listing.add_argument("subject", metavar="SUBJECT", nargs="?")
    listing.add_argument("--deleted", action="store_true",
                         help="include soft-deleted subjects (versions)")
    add_output_options(listing)
    listing.set_defaults(run=list_schemas)

    get = actions.add_parser(
        "get", parents=[registry], help="print a schema",
        description="Print the schema of a subject's version (default the latest), or of a "
                    "schema id.")
    which = get.add_mutually_exclusive_group(required=True)
    which.add_argument("subject", metavar="SUBJECT", nargs="?")
    which.add_argument("--id", type=at_least(1), metavar="ID", help="the schema with this id")
    get.add_argument("--version", type=version_arg, default="latest", metavar="N|latest",
                     help="the subject's version (default latest)")
    get.add_argument("--deleted", action="store_true", help="also a soft-deleted version")
    get.add_argument("-J", "--json", action="store_true",
                     help="the whole record (subject, version, id, schemaType, references, "
                          "schema) as one JSON line")
    get.add_argument("--format", dest="output_format", choices=FORMATS, default="text",
                     help="text: the schema (the default); json: the same as -J")
    get.set_defaults(run=get_schema)

    for name, run, text in (
            ("register", register_schema, "Register a schema under SUBJECT (a new version, "
                                          "unless it is there already) and print its id."),
            ("check", check_schema, "Ask the registry whether a schema is compatible with "
                                    "SUBJECT: exit 0 if it is, 1 if not, with its reasons.")):
        action = actions.add_parser(name, parents=[registry], help=text.split(" (")[0].lower(),
                                    description=text)
        action.add_argument("subject", metavar="SUBJECT")
        action.add_argument("--schema", type=schema_file, required=True, metavar="FILE",
                            help="the schema file ('-': standard input)")
        action.add_argument("--schema-type", type=schema_type, default="AVRO",
                            metavar="TYPE", help="AVRO (default), PROTOBUF or JSON")
        action.add_argument("--reference", type=reference, action="append", default=[],
                            metavar="NAME=SUBJECT:VERSION",
                            help="a schema this one references (repeatable)")
        if name == "check":
            action.add_argument("--version", type=version_arg, metavar="N|latest",
                                help="check against this version only (default: the versions "
                                     "the subject's compatibility level names)")
        action.set_defaults(run=run)

    delete = actions.add_parser(
        "delete", parents=[registry], help="delete a subject or one version",
        description="Soft-delete a subject (every version) or one version; with --permanent, "
                    "delete it for good (soft-deleting first if needed).")
    delete.add_argument("subject", metavar="SUBJECT")
    delete.add_argument("--version", type=version_arg, metavar="N|latest",
                        help="only this version")
    delete.add_argument("--permanent", action="store_true", help="a hard delete")
    delete.set_defaults(run=delete_schema)

    config = actions.add_parser(
        "config", parents=[registry], help="print or set a compatibility level",
        description="Print the compatibility level of SUBJECT (its own, else the global one) "
                    "or the global level; with --compatibility, set it.")
    config.add_argument("subject", metavar="SUBJECT", nargs="?",
                        help="the subject (default: the global level)")
    config.add_argument("--compatibility", type=compatibility_level, metavar="LEVEL",
                        help=f"set the level: {', '.join(LEVELS)}")
    config.set_defaults(run=config_schema)


def list_schemas(args: argparse.Namespace) -> int:
    client = client_of(args)
    names: list[Any] = (client.subjects(args.deleted) if args.subject is None
                        else client.versions(args.subject, args.deleted))
    print_list(args, names)
    return 0


def get_schema(args: argparse.Namespace) -> int:
    client = client_of(args)
    if args.id is not None:
        record = {"id": args.id, **client.schema_by_id(args.id)}
    else:
        record = client.version(args.subject, args.version, args.deleted)
    record.setdefault("schemaType", "AVRO")
    if args.json or wants_json(args):
        print(json.dumps(record, ensure_ascii=False))
    else:
        print(record["schema"])
    return 0


def _body(args: argparse.Namespace) -> dict[str, Any]:
    body: dict[str, Any] = {"schema": args.schema}
    if args.schema_type != "AVRO":
        body["schemaType"] = args.schema_type
    if args.reference:
        body["references"] = args.reference
    return body


def register_schema(args: argparse.Namespace) -> int:
    print(client_of(args).register(args.subject, _body(args)))
    return 0


def check_schema(args: argparse.Namespace) -> int:
    verdict = client_of(args).check(args.subject, _body(args), args.version)
    if verdict.get("is_compatible"):
        print("compatible")
        return 0
    print("incompatible")
    for message in verdict.get("messages") or []:
        print(f"  {' '.join(str(message).split())}")
    return EXIT_FAILURE


def delete_schema(args: argparse.Namespace) -> int:
    client = client_of(args)
    if args.permanent and args.version == "latest":  # the same version both times
        args.version = str(client.version(args.subject, "latest")["version"])
    if args.permanent:
        try:
            _soft_delete(client, args)
        except RegistryRefusal as e:
            if e.error_code not in (SUBJECT_SOFT_DELETED, VERSION_SOFT_DELETED):
                raise
    versions = _soft_delete(client, args, args.permanent)
    how = "permanently deleted" if args.permanent else "deleted"
    if args.version is not None:
        print(f"{how} {args.subject} version {versions[0]}")
    else:
        plural = "s" if len(versions) != 1 else ""
        print(f"{how} {args.subject} (version{plural} {', '.join(map(str, versions))})")
    return 0


def _soft_delete(client: RegistryClient, args: argparse.Namespace,
                 permanent: bool = False) -> list[int]:
    if args.version is None:
        return client.delete_subject(args.subject, permanent)
    return [client.delete_version(args.subject, args.version, permanent)]


def config_schema(args: argparse.Namespace) -> int:
    client = client_of(args)
    where = "global" if args.subject is None else args.subject
    if args.compatibility is not None:
        level = client.set_config(args.subject, args.compatibility)["compatibility"]
        print(f"{where} compatibility set to {level}")
    else:
        print(client.get_config(args.subject)["compatibilityLevel"])
    return 0
