"""Listeners: named endpoints, each with a security protocol (Kafka's ``listeners`` option).

``listeners=PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093`` gives two listeners,
named after their protocols. A listener may have any name if
``listener.security.protocol.map`` maps it to a protocol (``INTERNAL:PLAINTEXT``). Port 0
picks a free port when the listener binds.

>>> parse_listeners("PLAINTEXT://127.0.0.1:0,SASL_SSL://localhost:9093")[1]
Listener(name='SASL_SSL', security_protocol='SASL_SSL', host='localhost', port=9093, ssl_context=None)
>>> parse_listeners("FOO://h:1")
Traceback (most recent call last):
...
ValueError: listener FOO has no security protocol: name it PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, or map it in listener.security.protocol.map
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

_LISTENER = re.compile(r"^([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:/]*):(\d+)$")


@dataclass(frozen=True)
class Listener:
    """One endpoint. ``ssl_context`` is set by the broker when it binds a TLS listener."""

    name: str
    security_protocol: str
    host: str
    port: int
    ssl_context: ssl.SSLContext | None = None

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def __str__(self) -> str:
        return f"{self.name}://{self.host}:{self.port}"


def parse_protocol_map(text: str) -> dict[str, str]:
    """``"INTERNAL:PLAINTEXT,EXTERNAL:SASL_SSL"`` -> {name: protocol}."""
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or protocol.upper() not in SECURITY_PROTOCOLS:
            raise ValueError(f"{item!r} is not NAME:PROTOCOL with PROTOCOL one of "
                             + ", ".join(SECURITY_PROTOCOLS))
        out[name.strip().upper()] = protocol.upper()
    return out


def parse_listeners(text: str, protocol_map: Mapping[str, str] | None = None) -> tuple[Listener, ...]:
    listeners = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        m = _LISTENER.match(item)
        if not m:
            raise ValueError(f"{item!r} is not NAME://HOST:PORT")
        name, host, port = m.group(1).upper(), m.group(2).strip("[]"), int(m.group(3))
        protocol = (protocol_map or {}).get(name) or (name if name in SECURITY_PROTOCOLS else None)
        if protocol is None:
            raise ValueError(f"listener {name} has no security protocol: name it "
                             f"{', '.join(SECURITY_PROTOCOLS[:-1])} or {SECURITY_PROTOCOLS[-1]}, "
                             "or map it in listener.security.protocol.map")
        if port > 65535:
            raise ValueError(f"listener {name}: port {port} is above 65535")
        listeners.append(Listener(name, protocol, host or "0.0.0.0", port))
    if not listeners:
        raise ValueError("at least one listener is needed")
    names = [lst.name for lst in listeners]
    if len(set(names)) != len(names):
        raise ValueError(f"listener names must be unique, got {names}")
    ports = [lst.port for lst in listeners if lst.port]
    if len(set(ports)) != len(ports):
        raise ValueError(f"two listeners cannot share a port, got {ports}")
    return tuple(listeners)
