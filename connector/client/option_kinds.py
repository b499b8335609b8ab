"""What each kind of client option accepts: the :class:`~broker_sim.common.options.Kind` of
every option :mod:`.config` declares that is not one of the model's own (``integer``,
``BOOL``, ``STRING``), the rule each states when it refuses a value, and Java's
``sasl.jaas.config``.

An option is declared once, in :mod:`.config`, with :func:`broker_sim.common.options.option`
(its Kafka name, one of these kinds, its default and its doc); the kind turns a typed or
string value into the field's value, and its ``allowed`` text is what the configuration
error says would have fitted, beside the option's name and the value given.

>>> ACKS("all"), ACKS(1), SERVERS("h1:9092, h2"), ACKS.allowed
(-1, 1, (('h1', 9092), ('h2', 9092)), 'one of 0, 1, all (or -1)')
>>> ASSIGNOR("org.apache.kafka.clients.consumer.RoundRobinAssignor"), ENDPOINT_ID("")
('roundrobin', 'none')
"""

from __future__ import annotations

import os
import re
from typing import Any

from broker_sim.common.options import BOOL, Kind, choice, custom, integer
from broker_sim.protocol.records.compression import CODEC_IDS
from broker_sim.security.stores import STORE_TYPES

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
OFFSET_RESETS = ("earliest", "latest", "none")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
GROUP_PROTOCOLS = ("classic", "consumer")
#: The coordinator's assignors of the consumer protocol (KIP-848), by Kafka's names.
REMOTE_ASSIGNORS = ("uniform", "range")
#: Kafka's class names of the classic protocol's client-side assignors.
ASSIGNOR_CLASSES = {"org.apache.kafka.clients.consumer.RangeAssignor": "range",
                    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin"}


_ANY_INT = integer(None, None)
_ACKS_INT = integer(-1, 1)


def _parse_servers(value: Any) -> tuple[tuple[str, int], ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        if isinstance(item, tuple) and len(item) == 2:
            host, port = item
            out.append((str(host), _ANY_INT(port)))
            continue
        text = str(item).strip()
        if not text:
            continue
        host, sep, port = text.rpartition(":")
        if not sep:
            host, port = text, "9092"
        host = host.strip("[]")  # [::1]:9092
        if not host:
            raise ValueError(text)
        p = int(port)
        if not 0 < p < 65536:
            raise ValueError(text)
        out.append((host, p))
    if not out:
        raise ValueError(value)
    return tuple(out)


def _parse_acks(value: Any) -> int:
    if isinstance(value, str) and value.strip().lower() == "all":
        return -1
    return int(_ACKS_INT(value))


def _parse_compression(value: Any) -> str:
    name = "none" if value is None else str(value).strip().lower()
    if name not in CODEC_IDS:
        raise ValueError(value)
    return name


def _parse_optional_bool(value: Any) -> bool | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "auto")):
        return None
    return bool(BOOL(value))


def _parse_path(value: Any) -> str | None:
    if value is None:
        return None
    if not os.path.isfile(str(value)):
        raise ValueError(value)
    return str(value)


#: ``bootstrap.servers``: ``host[:port]`` items (port 9092 when left out), or (host, port) pairs.
SERVERS = custom("servers", _parse_servers, "a non-empty comma-separated list of host:port")
#: ``acks``: stored as -1 (all), 0 or 1.
ACKS = custom("acks", _parse_acks, "one of 0, 1, all (or -1)")
COMPRESSION = custom("compression", _parse_compression, "one of " + ", ".join(CODEC_IDS))
#: ``enable.idempotence``: unset (None, ``""`` or ``auto``) lets the producer decide.
OPTIONAL_BOOL = custom("bool", _parse_optional_bool,
                       "true or false (unset: decided from acks, retries and max.in.flight)")
#: A file that exists (None: unset).
PATH = custom("path", _parse_path, "the path of an existing file")
SECURITY_PROTOCOL = choice(SECURITY_PROTOCOLS, case="upper", optional=True)
SASL_MECHANISM = choice(SASL_MECHANISMS, case="upper", optional=True,
                        allowed="one of " + ", ".join(SASL_MECHANISMS) + " (pyq has no GSSAPI)")
STORE_TYPE = choice(STORE_TYPES, case="upper")
#: ``ssl.endpoint.identification.algorithm``: ``none`` or ``""`` (or None) skips the host check.
ENDPOINT_ID = choice(("https", "none"), aliases={"": "none"}, allowed='https or none (or "")')
OFFSET_RESET = choice(OFFSET_RESETS)
ISOLATION_LEVEL = choice(ISOLATION_LEVELS)
GROUP_PROTOCOL = choice(GROUP_PROTOCOLS)
#: ``partition.assignment.strategy``: pyq's short name or Kafka's class name -> the short name.
ASSIGNOR = choice(("range", "roundrobin"), case="exact", optional=True, aliases=ASSIGNOR_CLASSES,
                  allowed="range or roundrobin (or Kafka's RangeAssignor / RoundRobinAssignor "
                          "class name)")
REMOTE_ASSIGNOR = choice(REMOTE_ASSIGNORS, optional=True,
                         allowed="one of " + ", ".join(REMOTE_ASSIGNORS)
                         + " (the coordinator's assignors)")

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


__all__ = ["ACKS", "ASSIGNOR", "COMPRESSION", "ENDPOINT_ID", "GROUP_PROTOCOL", "ISOLATION_LEVEL",
           "Kind", "OFFSET_RESET", "OPTIONAL_BOOL", "PATH", "REMOTE_ASSIGNOR", "SASL_MECHANISM",
           "SECURITY_PROTOCOL", "SERVERS", "STORE_TYPE", "parse_jaas_config"]
