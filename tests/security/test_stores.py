"""PKCS12 and JKS trust and key stores (written by Java's keytool) on pyq's broker and client.

The broker process serves its TLS listeners from a JKS or a PKCS12 key store, checking client
certificates against a store of the other type; librdkafka and kafka-python (PEM files) and
pyq's client (stores) produce and consume on it. pyq's client also reaches Apache Kafka's
SASL_SSL listener through a JKS trust store. A wrong password, type or file fails at
construction, naming the option and the value, never the password.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import Producer as CkProducer

from broker_sim.process import BrokerProcess
from broker_sim.security.local_ca import Identity, LocalCA
from broker_sim.server.config import BrokerConfig
from broker_sim.server.config import ConfigError as BrokerConfigError
from connector.client import Admin, Fetcher, Producer
from connector.client.config import ClientConfig
from connector.client.errors import ConfigError
from tests.keytool_stores import keystore, truststore
from tests.security.secured_broker import ALICE, LISTENERS, SCRAM_SPECS, SecuredBroker

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer

STORE_PASS, KEY_PASS, TRUST_PASS = "store-secret", "key-secret", "trust-secret"
OTHER = {"JKS": "PKCS12", "PKCS12": "JKS"}


@dataclass
class Stores:
    ca: LocalCA
    client: Identity                # the client certificate, as PEM files
    trust: dict[str, Path]          # store type -> trust store with the CA
    broker_keys: dict[str, Path]    # store type -> broker key store (JKS key password differs)
    client_keys: dict[str, Path]

    @staticmethod
    def key_password(store_type: str) -> str:
        return KEY_PASS if store_type == "JKS" else STORE_PASS


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    d = tmp_path_factory.mktemp("stores")
    ca = LocalCA(d / "ca")
    broker, client = ca.issue("broker"), ca.issue("client")
    kinds = ("JKS", "PKCS12")
    return Stores(
        ca, client,
        {k: truststore(ca.ca_path, d / f"trust.{k.lower()}", k, TRUST_PASS) for k in kinds},
        {k: keystore(broker, d / f"broker.{k.lower()}", k, STORE_PASS, Stores.key_password(k))
         for k in kinds},
        {k: keystore(client, d / f"client.{k.lower()}", k, STORE_PASS, Stores.key_password(k))
         for k in kinds})


def store_options(stores: Stores, trust: str, key: str | None = None) -> dict[str, str]:
    """Client options (Kafka's Java names) for a ``trust`` trust store and a ``key`` key store."""
    out = {"ssl.truststore.type": trust, "ssl.truststore.location": str(stores.trust[trust]),
           "ssl.truststore.password": TRUST_PASS}
    if key is not None:
        out.update({"ssl.keystore.type": key, "ssl.keystore.location": str(stores.client_keys[key]),
                    "ssl.keystore.password": STORE_PASS,
                    "ssl.key.password": Stores.key_password(key)})
    return out


@pytest.fixture(scope="module", params=["JKS", "PKCS12"])
def broker(request: pytest.FixtureRequest, stores: Stores,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    """A broker whose key store is of type ``param`` and trust store of the other type;
    client certificates are required on every TLS listener."""
    kind, other = request.param, OTHER[request.param]
    proc = BrokerProcess(tmp_path_factory.mktemp(f"broker-{kind}"), add_scram=SCRAM_SPECS, overrides={
        "listeners": LISTENERS, "ssl.client.auth": "required", "auto.create.topics.enable": "false",
        "ssl.keystore.type": kind, "ssl.keystore.location": str(stores.broker_keys[kind]),
        "ssl.keystore.password": STORE_PASS, "ssl.key.password": Stores.key_password(kind),
        "ssl.truststore.type": other, "ssl.truststore.location": str(stores.trust[other]),
        "ssl.truststore.password": TRUST_PASS})
    proc.start()
    yield SecuredBroker(proc, stores.ca, stores.client)
    proc.stop()


def _round_trip_pyq(options: dict[str, str], topic: str, n: int = 50) -> None:
    with Admin(options) as admin:
        admin.create_topic(topic, num_partitions=1)
    producer = Producer(options)
    try:
        futures = [producer.send(topic, f"v{i}".encode()) for i in range(n)]
        producer.flush(30)
        assert [f.get(10).offset for f in futures] == list(range(n))
    finally:
        producer.close()
    with Fetcher(options) as fetcher:
        assert [r.value for r in fetcher.iter_records(topic, 0, 0, n)] == \
            [f"v{i}".encode() for i in range(n)]


def test_pyq_client_with_stores_over_sasl_ssl_and_ssl(broker: SecuredBroker, stores: Stores) -> None:
    base = {k: v for k, v in broker.pyq("SASL_SSL", "SCRAM-SHA-512").items()
            if k != "ssl.ca.location"}
    _round_trip_pyq({**base, **store_options(stores, "JKS", "PKCS12")}, "pyq-sasl-ssl")
    base = {k: v for k, v in broker.pyq("SSL").items() if k != "ssl.ca.location"}
    _round_trip_pyq({**base, **store_options(stores, "PKCS12", "JKS")}, "pyq-ssl")


def test_pyq_command_with_stores_in_its_command_config(broker: SecuredBroker, stores: Stores,
                                                       tmp_path: Path) -> None:
    """The pyq command reads stores through the client's options: a Java client.properties."""
    with Admin(broker.pyq("SASL_SSL", "SCRAM-SHA-512", client_cert=True)) as admin:
        admin.create_topic("listed-by-pyq", num_partitions=1)
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                     f"sasl.username={ALICE[0]}\nsasl.password={ALICE[1]}\n" +
                     "".join(f"{k}={v}\n" for k, v in store_options(stores, "PKCS12", "JKS").items()))
    done = subprocess.run([str(Path(sys.executable).parent / "pyq"), "topics", "list",
                           "--bootstrap-server", broker.address("SASL_SSL"),
                           "--command-config", str(props)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "listed-by-pyq" in done.stdout.split()


def test_librdkafka_and_kafka_python_on_a_store_served_listener(broker: SecuredBroker) -> None:
    pyq = broker.pyq("SASL_SSL", "SCRAM-SHA-512", client_cert=True)
    with Admin(pyq) as admin:
        admin.create_topic("by-other-clients", num_partitions=1)
    ck = CkProducer(broker.confluent("SASL_SSL", "SCRAM-SHA-512", client_cert=True))
    for i in range(5):
        ck.produce("by-other-clients", f"ck{i}".encode())
    assert ck.flush(30) == 0
    kp = KafkaProducer(**broker.kafka_python("SASL_SSL", "SCRAM-SHA-512", client_cert=True))
    for i in range(5):
        kp.send("by-other-clients", f"kp{i}".encode())
    kp.flush(30)
    kp.close()
    consumer = Consumer({**broker.confluent("SSL", client_cert=True), "group.id": "g-stores",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["by-other-clients"])
    seen: list[bytes] = []
    try:
        for _ in range(60):
            msgs = consumer.consume(10, 1.0)
            seen += [m.value() or b"" for m in msgs if m.error() is None]
            if len(seen) >= 10:
                break
    finally:
        consumer.close()
    assert sorted(seen) == sorted([f"ck{i}".encode() for i in range(5)] +
                                  [f"kp{i}".encode() for i in range(5)])
    kc = KafkaConsumer("by-other-clients", auto_offset_reset="earliest", consumer_timeout_ms=10_000,
                       **broker.kafka_python("SSL", client_cert=True))
    try:
        assert len([m.value for m in kc][:10]) == 10
    finally:
        kc.close()


def test_pyq_client_with_a_jks_truststore_on_apache_kafka(kafka, tmp_path):
    options = kafka.client_options("admin")
    trust = truststore(Path(options.pop("ssl.ca.location")), tmp_path / "kafka-trust.jks", "JKS",
                       TRUST_PASS)
    options.update({"ssl.truststore.type": "JKS", "ssl.truststore.location": str(trust),
                    "ssl.truststore.password": TRUST_PASS})
    _round_trip_pyq(options, "jks-truststore-on-kafka")


# --- errors at construction -------------------------------------------------------------

def _client_error(stores: Stores, **overrides: str) -> str:
    options = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SSL",
               **store_options(stores, "JKS", "PKCS12"), **overrides}
    with pytest.raises(ConfigError) as e:
        ClientConfig.from_options(options)
    message = str(e.value)
    for secret in (STORE_PASS, KEY_PASS, TRUST_PASS, "not-the-password"):
        assert secret not in message
    return message


def test_client_store_errors_name_the_option_and_value(stores: Stores, tmp_path: Path) -> None:
    jks_trust, p12_key = str(stores.trust["JKS"]), str(stores.client_keys["PKCS12"])
    assert _client_error(stores, **{"ssl.truststore.password": "not-the-password"}) == (
        f"Invalid value {jks_trust} for configuration ssl.truststore.location: "
        "ssl.truststore.password is wrong (the store's integrity check fails)")
    assert f"Invalid value {p12_key} for configuration ssl.keystore.location: cannot open it as " \
        "PKCS12: ssl.keystore.password is wrong" in _client_error(
            stores, **{"ssl.keystore.password": "not-the-password",
                       "ssl.key.password": "not-the-password"})
    assert _client_error(stores, **{"ssl.key.password": "not-the-password"}) == (
        "Invalid value (hidden) for configuration ssl.key.password: must equal "
        "ssl.keystore.password for a PKCS12 store (PKCS12 has one password), or be left unset")
    assert _client_error(stores, **{"ssl.truststore.type": "BCFKS"}) == (
        "Invalid value 'BCFKS' for configuration ssl.truststore.type: "
        "must be one of PEM, PKCS12, JKS")
    assert f"Invalid value {jks_trust} for configuration ssl.truststore.location: cannot open it " \
        "as PKCS12" in _client_error(stores, **{"ssl.truststore.type": "PKCS12"})
    missing = str(tmp_path / "nowhere.jks")
    assert _client_error(stores, **{"ssl.truststore.location": missing}) == (
        f"Invalid value '{missing}' for configuration ssl.truststore.location: "
        "must be the path of an existing file")
    assert _client_error(stores, **{"ssl.keystore.location": str(stores.trust["PKCS12"]),
                                    "ssl.keystore.password": TRUST_PASS,
                                    "ssl.key.password": TRUST_PASS}) == (
        f"Invalid value {stores.trust['PKCS12']} for configuration ssl.keystore.location: the "
        "store holds no private key entry (a key store needs the key and its certificate; "
        "this looks like a trust store)")
    jks_key = str(stores.client_keys["JKS"])
    assert "ssl.key.password" in _client_error(stores, **{
        "ssl.keystore.type": "JKS", "ssl.keystore.location": jks_key,
        "ssl.key.password": "not-the-password"})
    assert "ssl.truststore.password is set but PEM files have no store password" in _client_error(
        stores, **{"ssl.truststore.type": "PEM", "ssl.truststore.location": str(stores.ca.ca_path)})


def test_jks_without_pyjks_is_refused_naming_pkcs12(stores: Stores) -> None:
    """pyjks is the optional [jks] extra: without it, a JKS store fails at construction."""
    code = ("import sys; sys.modules['jks'] = None\n"  # as if pyjks were not installed
            "from connector.client.config import ClientConfig\n"
            "ClientConfig.from_options({'bootstrap.servers': '127.0.0.1:1', "
            "'security.protocol': 'SSL', 'ssl.truststore.type': 'JKS', "
            f"'ssl.truststore.location': {str(stores.trust['JKS'])!r}, "
            f"'ssl.truststore.password': {TRUST_PASS!r}}})\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert ("ConfigError: Invalid value JKS for configuration ssl.truststore.type: JKS stores need "
            "pyjks (pip install 'pyq-stream[jks]'") in done.stderr
    assert "-deststoretype PKCS12" in done.stderr and TRUST_PASS not in done.stderr


def test_broker_store_errors_name_the_option_and_value(stores: Stores, tmp_path: Path) -> None:
    base = {"listeners": "SSL://127.0.0.1:0", "log.dirs": str(tmp_path),
            "ssl.keystore.type": "JKS", "ssl.keystore.location": str(stores.broker_keys["JKS"]),
            "ssl.keystore.password": STORE_PASS, "ssl.key.password": KEY_PASS}
    BrokerConfig.from_properties(base)  # valid
    jks = stores.broker_keys["JKS"]
    cases = [({"ssl.keystore.password": "not-the-password"},
              f"Invalid value {jks} for configuration ssl.keystore.location: "
              "ssl.keystore.password is wrong"),
             ({"ssl.key.password": "not-the-password"},
              f"Invalid value (hidden) for configuration ssl.key.password: does not decrypt the "
              f"key entry 'broker' of {jks}"),
             ({"ssl.keystore.type": "PKCS12"}, "cannot open it as PKCS12"),
             ({"ssl.keystore.type": "JCEKS"}, "must be one of PEM, PKCS12, JKS"),
             ({"ssl.keystore.location": str(stores.trust["JKS"]),
               "ssl.keystore.password": TRUST_PASS}, "holds no private key entry")]
    for change, expected in cases:
        with pytest.raises(BrokerConfigError) as e:
            BrokerConfig.from_properties({**base, **change})
        assert expected in str(e.value)
        assert STORE_PASS not in str(e.value) and KEY_PASS not in str(e.value)
        assert "not-the-password" not in str(e.value)
