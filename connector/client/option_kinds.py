"""What each kind of client option accepts: the parsers of :class:`~.config.ClientConfig`'s
option kinds, the rule each states when it refuses a value, and Java's ``sasl.jaas.config``.

An option is declared once, in :mod:`.config`, with :func:`option` (its Kafka name, kind and
range); ``PARSERS[kind]`` turns a typed or string value into the field's value, raising
``ValueError`` when it does not fit, and ``allowed(meta)`` says what would have: the
configuration names the option and the value beside it.

>>> PARSERS["acks"]("all"), PARSERS["bool"](" TRUE "), allowed({"kind": "acks"})
(-1, True, 'one of 0, 1, all (or -1)')
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from broker_sim.protocol.records.compression import CODEC_IDS
from broker_sim.security.stores import STORE_TYPES

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

def option(name: str, default: Any, kind: str = "int", low: int = 0, high: int = INT32_MAX,
           doc: str = "", secret: bool = False) -> Any:
    """Declare one option: a dataclass field carrying its Kafka name and rule."""
    return dataclasses.field(default=default, repr=not secret, metadata={
        "name": name, "kind": kind, "low": low, "high": high, "doc": doc, "secret": secret})


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise ValueError


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError


def _parse_servers(value: Any) -> tuple[tuple[str, int], ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2:
            host, port = item
            out.append((str(host), _parse_int(port)))
            continue
        text = str(item).strip()
        if not text:
            continue
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = text, "9092"
        host = host.strip("[]")  # [::1]:9092
        if not host:
            raise ValueError
        p = int(port)
        if not 0 < p < 65536:
            raise ValueError
        out.append((host, p))
    if not out:
        raise ValueError
    return tuple(out)


def _parse_acks(value: Any) -> int:
    if isinstance(value, str) and value.strip().lower() == "all":
        return -1
    acks = _parse_int(value)
    if acks not in (-1, 0, 1):
        raise ValueError
    return acks


def _parse_compression(value: Any) -> str:
    name = "none" if value is None else str(value).strip().lower()
    if name not in CODEC_IDS:
        raise ValueError
    return name


def _parse_optional_bool(value: Any) -> bool | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return None
    return _parse_bool(value)


def _parse_optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _parse_path(value: Any) -> str | None:
    if value is None:
        return None
    if not os.path.isfile(str(value)):
        raise ValueError
    return str(value)


def _choice(allowed: tuple[str, ...]) -> Callable[[Any], str | None]:
    def parse(value: Any) -> str | None:
        if value is None:
            return None
        text = str(value).strip().upper()
        if text not in allowed:
            raise ValueError
        return text
    return parse


def _parse_store_type(value: Any) -> str:
    text = str(value).strip().upper()
    if text not in STORE_TYPES:
        raise ValueError
    return text


def _parse_endpoint_id(value: Any) -> str:
    text = "" if value is None else str(value).strip().lower()
    if text not in ("https", "none", ""):
        raise ValueError
    return text or "none"


OFFSET_RESETS = ("earliest", "latest", "none")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
GROUP_PROTOCOLS = ("classic", "consumer")
#: The coordinator's assignors of the consumer protocol (KIP-848), by Kafka's names.
REMOTE_ASSIGNORS = ("uniform", "range")
ASSIGNORS = {"range": "range", "roundrobin": "roundrobin",
             "org.apache.kafka.clients.consumer.RangeAssignor": "range",
             "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin"}


def _parse_offset_reset(value: Any) -> str:
    text = str(value).strip().lower()
    if text not in OFFSET_RESETS:
        raise ValueError
    return text


def _parse_lower(value: Any, allowed: tuple[str, ...]) -> str:
    text = str(value).strip().lower()
    if text not in allowed:
        raise ValueError
    return text


def _parse_assignor(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    if text not in ASSIGNORS:
        raise ValueError
    return ASSIGNORS[text]


def _parse_optional_int(value: Any) -> int | None:
    return None if value is None else _parse_int(value)


def _parse_remote_assignor(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip().lower()
    if text not in REMOTE_ASSIGNORS:
        raise ValueError
    return text


PARSERS: dict[str, Callable[[Any], Any]] = {
    "int": _parse_int, "long": _parse_int, "bool": _parse_bool, "str": str,
    "servers": _parse_servers, "acks": _parse_acks, "compression": _parse_compression,
    "optional_bool": _parse_optional_bool, "optional_str": _parse_optional_str,
    "path": _parse_path, "security_protocol": _choice(SECURITY_PROTOCOLS),
    "sasl_mechanism": _choice(SASL_MECHANISMS), "store_type": _parse_store_type,
    "endpoint_id": _parse_endpoint_id,
    "offset_reset": _parse_offset_reset, "assignor": _parse_assignor,
    "optional_int": _parse_optional_int, "remote_assignor": _parse_remote_assignor,
    "group_protocol": lambda value: _parse_lower(value, GROUP_PROTOCOLS),
    "isolation_level": lambda value: _parse_lower(value, ISOLATION_LEVELS),
}

_JAAS = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$", re.S)
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')


def parse_jaas_config(text: str) -> tuple[str, dict[str, str]]:
    """Java's ``sasl.jaas.config`` -> (login module class name, options).

    >>> parse_jaas_config('org.apache.kafka.common.security.plain.PlainLoginModule required '
    ...                   'username="alice" password="a-secret";')
    ('org.apache.kafka.common.security.plain.PlainLoginModule', {'username': 'alice', 'password': 'a-secret'})
    """
    m = _JAAS.match(text)
    if not m:
        raise ValueError
    options = {k: (bare.rstrip(";") if bare else quoted.replace('\\"', '"'))
               for k, quoted, bare in _JAAS_OPTION.findall(m.group(3))}
    return m.group(1), options


def allowed(meta: Mapping[str, Any]) -> str:
    kind = meta["kind"]
    if kind in ("int", "long", "optional_int"):
        return f"an integer in [{meta['low']}, {meta['high']}]"
    if kind == "bool":
        return "true or false"
    if kind == "optional_bool":
        return "true or false (unset: decided from acks, retries and max.in.flight)"
    if kind == "servers":
        return "a non-empty comma-separated list of host:port"
    if kind == "acks":
        return "one of 0, 1, all (or -1)"
    if kind == "compression":
        return "one of " + ", ".join(CODEC_IDS)
    if kind == "path":
        return "the path of an existing file"
    if kind == "security_protocol":
        return "one of " + ", ".join(SECURITY_PROTOCOLS)
    if kind == "sasl_mechanism":
        return "one of " + ", ".join(SASL_MECHANISMS) + " (pyq has no GSSAPI)"
    if kind == "store_type":
        return "one of " + ", ".join(STORE_TYPES)
    if kind == "endpoint_id":
        return 'https or none (or "")'
    if kind == "offset_reset":
        return "one of " + ", ".join(OFFSET_RESETS)
    if kind == "isolation_level":
        return "one of " + ", ".join(ISOLATION_LEVELS)
    if kind == "assignor":
        return "range or roundrobin (or Kafka's RangeAssignor / RoundRobinAssignor class name)"
    if kind == "group_protocol":
        return "one of " + ", ".join(GROUP_PROTOCOLS)
    if kind == "remote_assignor":
        return "one of " + ", ".join(REMOTE_ASSIGNORS) + " (the coordinator's assignors)"
    return "a string"
