"""``schema.registry.listeners``: where a broker serves the schema registry's HTTP API.

Kept apart from the server so that the broker's configuration can parse the option
without loading the HTTP and Avro libraries.

>>> parse_registry_listener("http://127.0.0.1:0")
RegistryListener(scheme='http', host='127.0.0.1', port=0)
>>> parse_registry_listener("ftp://x:1")
Traceback (most recent call last):
...
ValueError: must be one URL http://HOST:PORT or https://HOST:PORT (port 0 picks a free one), not 'ftp://x:1'
"""

from __future__ import annotations

from dataclasses import dataclass

AUTHENTICATION = ("none", "basic")


@dataclass(frozen=True)
class RegistryListener:
    scheme: str
    host: str
    port: int

    @property
    def uses_tls(self) -> bool:
        return self.scheme == "https"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


def parse_registry_listener(text: str) -> RegistryListener:
    value = text.strip()
    scheme, sep, rest = value.partition("://")
    host, _, port = rest.rpartition(":")
    wanted = ("must be one URL http://HOST:PORT or https://HOST:PORT (port 0 picks a free "
              f"one), not {text!r}")
    if not sep or scheme.lower() not in ("http", "https") or not host or not port.isdigit() \
            or int(port) > 65535 or "/" in rest or "," in rest:
        raise ValueError(wanted)
    return RegistryListener(scheme.lower(), host.strip("[]"), int(port))


def parse_authentication(text: str) -> str:
    value = text.strip().lower()
    if value not in AUTHENTICATION:
        raise ValueError("must be one of " + ", ".join(AUTHENTICATION)
                         + " (basic: HTTP basic auth against the cluster's SCRAM users)")
    return value
