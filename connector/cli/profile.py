"""The user's profile: client options every ``pyq`` command starts from (rpk's profiles).

``$PYQ_PROFILE`` names the file; else ``$XDG_CONFIG_HOME/pyq/profile.toml``, else
``~/.config/pyq/profile.toml``. A missing file is no profile. It is TOML whose keys are
Kafka's client option names; TOML reads a bare dotted key as nested tables, and those are
joined back, so both spellings work::

    bootstrap.servers = "kafka-1.internal:9092,kafka-2.internal:9092"
    security.protocol = "SASL_SSL"
    "sasl.mechanism" = "SCRAM-SHA-512"

Every value must be a string, a number or a boolean. The profile is the lowest layer above
the defaults: ``$PYQ_BROKERS``, ``--command-config``, ``-X`` and ``--bootstrap-server``
win over it (:func:`connector.cli.args.client_options`). A file that cannot be read or is
not valid TOML is a usage error naming the file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .errors import EXIT_USAGE, CommandError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PROFILE_ENV = "PYQ_PROFILE"


def profile_path() -> Path:
    """Where the profile is read from (it may not exist)."""
    named = os.environ.get(PROFILE_ENV)
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pyq" / "profile.toml"


def load_profile() -> dict[str, Any]:
    """The profile's client options, ``{}`` when there is no profile file."""
    path = profile_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if os.environ.get(PROFILE_ENV):
            raise CommandError(f"${PROFILE_ENV}={str(path)!r}: no such file", EXIT_USAGE) from None
        return {}
    except OSError as e:
        raise CommandError(f"the profile {path}: {e.strerror or e}", EXIT_USAGE) from None
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise CommandError(f"the profile {path} is not valid TOML: {e}", EXIT_USAGE) from None
    return _flatten(table, "", path)


def _flatten(table: dict[str, Any], prefix: str, path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = prefix + key
        if isinstance(value, dict):
            out.update(_flatten(value, name + ".", path))
        elif isinstance(value, bool):  # as a properties file says it
            out[name] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[name] = value
        else:
            raise CommandError(f"the profile {path}: {name} = {value!r} is not allowed: a "
                               "client option is a string, a number or a boolean", EXIT_USAGE)
    return out
