"""Real clients over real TLS and SASL against a broker process: pyq's, kafka-python, librdkafka.

Each client produces, consumes, commits offsets and uses its admin client over
``SASL_SSL`` with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and over ``SSL`` with a client
certificate; the addresses the broker advertises are those of the listener asked.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CkNewTopic

from connector.client import Admin, Fetcher, OffsetAndMetadata, Producer
from tests.security.secured_broker import SecuredBroker, start_secured_broker

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.structs import OffsetAndMetadata as KpOffsetAndMetadata

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
# (listener, mechanism, client certificate) for pyq's own client
PYQ_CASES = [("PLAINTEXT", None, False), ("SSL", None, False), ("SSL", None, True),
             ("SASL_PLAINTEXT", "PLAIN", False), ("SASL_PLAINTEXT", "SCRAM-SHA-512", False),
             *[("SASL_SSL", m, False) for m in MECHANISMS]]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    broker = start_secured_broker(tmp_path_factory.mktemp("secured"))
    yield broker
    broker.proc.stop()


def _topic(prefix: str, *parts: object) -> str:
    return "-".join([prefix, *(str(p).lower().replace("_", "-") for p in parts if p)])


@pytest.mark.parametrize(("listener", "mechanism", "cert"), PYQ_CASES)
def test_pyq_client_round_trips_on_every_listener(secured: SecuredBroker, listener: str,
                                                  mechanism: str | None, cert: bool) -> None:
    opts = secured.pyq(listener, mechanism, client_cert=cert)
    topic = _topic("pyq", listener, mechanism, "cert" if cert else "")
    with Admin(opts) as admin:
        admin.create_topic(topic, num_partitions=1)
        brokers = admin.describe_cluster().brokers
        # Metadata advertises the address of the listener this client came in on.
        assert [f"{b.host}:{b.port}" for b in brokers] == [secured.address(listener)]
    producer = Producer(opts)
    try:
        futures = [producer.send(topic, f"v{i}".encode(), key=b"k") for i in range(500)]
        producer.flush(30)
        assert [f.get(10).offset for f in futures] == list(range(500))
    finally:
        producer.close()
    with Fetcher(opts) as fetcher:
        values = [r.value for r in fetcher.iter_records(topic, 0, 0, 500)]
    assert values == [f"v{i}".encode() for i in range(500)]
    with Admin(opts) as admin:
        admin.commit_offsets("g-" + topic, {(topic, 0): OffsetAndMetadata(500, "done")})
        committed = admin.fetch_offsets("g-" + topic)
    assert [(tp.topic, tp.partition, om.offset) for tp, om in committed.items()] == [(topic, 0, 500)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_over_sasl_ssl(secured: SecuredBroker, mechanism: str) -> None:
    opts = secured.kafka_python("SASL_SSL", mechanism)
    topic = _topic("kp", mechanism)
    admin = KafkaAdminClient(**opts)
    try:
        admin.create_topics([KpNewTopic(topic, 2, 1)])
        described = admin.describe_user_scram_credentials(["alice"])
        assert {int(c["mechanism"]) for c in described["alice"]["credential_infos"]} == {1, 2}
    finally:
        admin.close()
    producer = KafkaProducer(acks="all", **opts)
    for i in range(200):
        producer.send(topic, f"r{i}".encode(), partition=i % 2)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(group_id="g-" + topic, enable_auto_commit=False,
                             consumer_timeout_ms=10_000, **opts)
    tps = [KpTopicPartition(topic, p) for p in range(2)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)
    seen: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(seen) < 200 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=1000).values():
            seen.extend(r.value for r in records)
    consumer.commit({tp: KpOffsetAndMetadata(100, "", -1) for tp in tps})
    assert [consumer.committed(tp) for tp in tps] == [100, 100]
    consumer.close()
    assert sorted(seen) == sorted(f"r{i}".encode() for i in range(200))


def _confluent_round_trip(conf: dict, topic: str, n: int = 200) -> None:
    admin = AdminClient(conf)
    admin.create_topics([CkNewTopic(topic, 1, 1)])[topic].result(30)
    producer = CkProducer({**conf, "enable.idempotence": True, "acks": "all"})
    errors: list = []
    for i in range(n):
        producer.produce(topic, f"c{i}".encode(), on_delivery=lambda e, m: errors.append(e) if e else None)
    assert producer.flush(30) == 0 and not errors
    consumer = Consumer({**conf, "group.id": "g-" + topic, "enable.auto.commit": False})
    consumer.assign([CkTopicPartition(topic, 0, 0)])
    seen: list[bytes | None] = []
    deadline = time.monotonic() + 60
    while len(seen) < n and time.monotonic() < deadline:
        for msg in consumer.consume(num_messages=1000, timeout=1.0):
            assert msg.error() is None, msg.error()
            seen.append(msg.value())
    consumer.commit(offsets=[CkTopicPartition(topic, 0, n)], asynchronous=False)
    assert consumer.committed([CkTopicPartition(topic, 0)], timeout=10)[0].offset == n
    consumer.close()
    assert seen == [f"c{i}".encode() for i in range(n)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_librdkafka_over_sasl_ssl(secured: SecuredBroker, mechanism: str) -> None:
    conf = secured.confluent("SASL_SSL", mechanism)
    _confluent_round_trip(conf, _topic("ck", mechanism))
    admin = AdminClient(conf)  # keep the handle alive until the future is done
    futures = admin.describe_user_scram_credentials(["alice"])
    assert isinstance(futures, dict)  # users named: a future per user
    described = futures["alice"].result(30)
    assert sorted(i.mechanism.name for i in described.scram_credential_infos) == ["SCRAM_SHA_256", "SCRAM_SHA_512"]


def test_client_certificates_over_ssl(secured: SecuredBroker) -> None:
    _confluent_round_trip(secured.confluent("SSL", client_cert=True), "ck-mtls")
    opts = secured.kafka_python("SSL", client_cert=True)
    producer = KafkaProducer(**opts)
    producer.send("ck-mtls", b"from kafka-python").get(30)
    producer.close()
    with Fetcher(secured.pyq("SSL", client_cert=True)) as fetcher:
        assert [r.value for r in fetcher.iter_records("ck-mtls", 0, 200, 201)] == [b"from kafka-python"]
