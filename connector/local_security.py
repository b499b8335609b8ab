"""Security for a throwaway local cluster: a CA, broker settings and matching client options.

:class:`LocalSecurity` is what ``EmbeddedCluster(security="SASL_SSL")`` uses: it makes a
throwaway CA and a broker certificate in the cluster's directory, SCRAM users with
generated passwords (or the ones given), the broker overrides for a listener of that
protocol (plus the PLAINTEXT listener replication uses, bound to 127.0.0.1 only), and the
client options a pyq client, a Spark query (``kafka.``-prefixed) or librdkafka needs::

    sec = LocalSecurity(directory, "SASL_SSL", users={"alice": "alice-secret"})
    sec.broker_overrides()   # listeners, ssl.keystore.location, sasl.enabled.mechanisms, ...
    sec.client_options("127.0.0.1:40321", user="alice")
    # {'bootstrap.servers': ..., 'security.protocol': 'SASL_SSL', 'ssl.ca.location': ...,
    #  'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'alice', 'sasl.password': ...}

With ``"SSL"`` the cluster asks for client certificates (``ssl.client.auth=required``) and
the client options carry one issued by the same CA.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from broker_sim.security.local_ca import LocalCA

PROTOCOLS = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")
DEFAULT_USER = "admin"


class LocalSecurity:
    def __init__(self, directory: str | Path, protocol: str, users: Mapping[str, str] | None = None,
                 mechanism: str = "SCRAM-SHA-512") -> None:
        protocol = protocol.upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"security={protocol!r} is not allowed: must be one of "
                             + ", ".join(PROTOCOLS))
        if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            raise ValueError(f"mechanism={mechanism!r} is not allowed: must be PLAIN, "
                             "SCRAM-SHA-256 or SCRAM-SHA-512")
        self.protocol = protocol
        self.mechanism = mechanism
        self.directory = Path(directory)
        self.users = dict(users) if users else {DEFAULT_USER: secrets.token_urlsafe(18)}
        self.ca = LocalCA(self.directory / "ca")
        self.broker_identity = self.ca.issue("broker")
        self.client_identity = self.ca.issue("client") if protocol == "SSL" else None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL")

    def broker_overrides(self) -> dict[str, str]:
        out = {"listeners": f"PLAINTEXT://127.0.0.1:0,{self.protocol}://127.0.0.1:0",
               "inter.broker.listener.name": "PLAINTEXT"}
        if self.uses_tls:
            out["ssl.keystore.location"] = str(self.broker_identity.pem)
            out["ssl.truststore.location"] = str(self.ca.ca_path)
        if self.protocol == "SSL":
            out["ssl.client.auth"] = "required"
        return out

    def scram_specs(self) -> list[str]:
        """``--add-scram`` specs: both SCRAM mechanisms for every user (PLAIN checks either)."""
        return [f"{mech}=[name={user},password={password}]"
                for user, password in self.users.items()
                for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")] if self.uses_sasl else []

    def client_options(self, bootstrap_servers: str, user: str | None = None) -> dict[str, Any]:
        """Options for pyq's client (librdkafka takes the same names)."""
        out: dict[str, Any] = {"bootstrap.servers": bootstrap_servers,
                               "security.protocol": self.protocol}
        if self.uses_tls:
            out["ssl.ca.location"] = str(self.ca.ca_path)
        if self.client_identity is not None:
            out["ssl.certificate.location"] = str(self.client_identity.cert)
            out["ssl.key.location"] = str(self.client_identity.key)
        if self.uses_sasl:
            name = user or next(iter(self.users))
            if name not in self.users:
                raise KeyError(f"no user {name!r}: the cluster has {sorted(self.users)}")
            out.update({"sasl.mechanism": self.mechanism, "sasl.username": name,
                        "sasl.password": self.users[name]})
        return out
