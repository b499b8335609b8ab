"""A broker process with all four kinds of listener, and client settings for each.

Certificates come from a throwaway CA made in the test's directory; SCRAM credentials are
stored at start with ``--add-scram`` (``alice`` has both SCRAM mechanisms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from broker_sim.process import BrokerProcess
from broker_sim.security.local_ca import Identity, LocalCA

ALICE = ("alice", "alice-secret")
LISTENERS = "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"
SCRAM_SPECS = [f"SCRAM-SHA-256=[name={ALICE[0]},password={ALICE[1]}]",
               f"SCRAM-SHA-512=[name={ALICE[0]},password={ALICE[1]}]"]


@dataclass
class SecuredBroker:
    proc: BrokerProcess
    ca: LocalCA
    client_cert: Identity
    extra: dict = field(default_factory=dict)

    def address(self, listener: str) -> str:
        return self.proc.listeners[listener]

    def pyq(self, listener: str, mechanism: str | None = None, user: tuple[str, str] = ALICE,
            client_cert: bool = False) -> dict[str, str]:
        """Options for pyq's client (librdkafka's names) on ``listener``."""
        opts = {"bootstrap.servers": self.address(listener), "security.protocol": listener}
        if listener in ("SSL", "SASL_SSL"):
            opts["ssl.ca.location"] = str(self.ca.ca_path)
        if client_cert:
            opts["ssl.certificate.location"] = str(self.client_cert.cert)
            opts["ssl.key.location"] = str(self.client_cert.key)
        if mechanism is not None:
            opts.update({"sasl.mechanism": mechanism, "sasl.username": user[0],
                         "sasl.password": user[1]})
        return opts

    def confluent(self, listener: str, mechanism: str | None = None, user: tuple[str, str] = ALICE,
                  client_cert: bool = False) -> dict[str, Any]:
        """The same for confluent-kafka: librdkafka takes these names as they are."""
        return self.pyq(listener, mechanism, user, client_cert)

    def kafka_python(self, listener: str, mechanism: str | None = None,
                     user: tuple[str, str] = ALICE, client_cert: bool = False) -> dict:
        opts: dict = {"bootstrap_servers": self.address(listener), "security_protocol": listener}
        if listener in ("SSL", "SASL_SSL"):
            opts["ssl_cafile"] = str(self.ca.ca_path)
        if client_cert:
            opts["ssl_certfile"] = str(self.client_cert.cert)
            opts["ssl_keyfile"] = str(self.client_cert.key)
        if mechanism is not None:
            opts.update({"sasl_mechanism": mechanism, "sasl_plain_username": user[0],
                         "sasl_plain_password": user[1]})
        return opts


def start_secured_broker(directory: Path, client_auth: str = "requested",
                         overrides: dict[str, str] | None = None) -> SecuredBroker:
    ca = LocalCA(directory / "ca")
    broker_cert = ca.issue("broker")
    client_cert = ca.issue("client")
    proc = BrokerProcess(directory / "broker", overrides={
        "listeners": LISTENERS, "ssl.keystore.location": str(broker_cert.pem),
        "ssl.truststore.location": str(ca.ca_path), "ssl.client.auth": client_auth,
        "auto.create.topics.enable": "false", **(overrides or {})}, add_scram=SCRAM_SPECS)
    proc.start()
    return SecuredBroker(proc, ca, client_cert)
