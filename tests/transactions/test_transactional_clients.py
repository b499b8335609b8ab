"""Kafka transactions on a 3-broker pyq cluster, judged by real clients: kafka-python's
and librdkafka's transactional producers commit and abort, read_committed consumers see
committed records only, a zombie instance is fenced, a transaction left open past its
timeout is aborted, and the death of the transaction coordinator's broker loses nothing."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaProducer

from broker_sim.cluster import LocalCluster
from connector.client.admin import Admin
from tests.wire import wait_for, wait_for_topic_everywhere

pytestmark = pytest.mark.cluster

PARTITIONS = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("txn"), 3, overrides={
        "transaction.state.log.num.partitions": "6"})
    c.start()
    yield c
    c.stop()


def make_topic(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)])[name].result(30)
    wait_for_topic_everywhere(bootstrap, name, PARTITIONS)


def read(bootstrap: str, topic: str, isolation: str, expected: int,
         timeout: float = 20) -> list[str]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{topic}-{isolation}",
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([CKTopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(out) < expected:
        out.extend((m.value() or b"").decode() for m in consumer.consume(num_messages=500, timeout=0.5)
                   if m.error() is None)
    out.extend((m.value() or b"").decode() for m in consumer.consume(num_messages=500, timeout=1.0)
               if m.error() is None)  # anything beyond what is expected shows up here
    consumer.close()
    return sorted(out)


def commit_retrying(producer: Producer, attempts: int = 4) -> None:
    """commit_transaction, called again while it fails retriably, as librdkafka asks
    ("retry call to resume"): after a broker dies the new leaders and the in-sync replica
    sets need a few seconds before acks=all writes go through again."""
    for attempt in range(attempts):
        try:
            producer.commit_transaction(60)
            return
        except KafkaException as e:
            if not e.args[0].retriable() or attempt == attempts - 1:
                raise


def test_librdkafka_commits_and_aborts_and_a_zombie_is_fenced(cluster):
    bootstrap = cluster.bootstrap_servers
    make_topic(bootstrap, "ck-txn")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ck-app"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(30):
        producer.produce("ck-txn", f"committed-{i}".encode(), partition=i % PARTITIONS)
    producer.commit_transaction(30)
    producer.begin_transaction()
    for i in range(30):
        producer.produce("ck-txn", f"aborted-{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0  # written (abort_transaction would drop unsent records)
    producer.abort_transaction(30)

    successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": "ck-app"})
    successor.init_transactions(30)  # a new instance: the old one is now a zombie
    producer.begin_transaction()
    producer.produce("ck-txn", b"zombie", partition=0)
    with pytest.raises(KafkaException) as fenced:
        producer.commit_transaction(10)
    assert fenced.value.args[0].fatal() or "fenced" in str(fenced.value).lower()
    successor.begin_transaction()
    successor.produce("ck-txn", b"successor", partition=1)
    successor.commit_transaction(30)

    committed = sorted([f"committed-{i}" for i in range(30)] + ["successor"])
    assert read(bootstrap, "ck-txn", "read_committed", 31) == committed
    uncommitted = read(bootstrap, "ck-txn", "read_uncommitted", 61)
    assert set(committed) < set(uncommitted)
    assert {v for v in uncommitted if v.startswith("aborted-")} == {f"aborted-{i}" for i in range(30)}


def test_kafka_python_commits_and_aborts(cluster):
    bootstrap = cluster.bootstrap_servers
    make_topic(bootstrap, "kp-txn")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-app")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(20):
        producer.send("kp-txn", f"committed-{i}".encode(), partition=i % PARTITIONS)
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(20):
        producer.send("kp-txn", f"aborted-{i}".encode(), partition=i % PARTITIONS)
    producer.flush()
    producer.abort_transaction()
    producer.close()
    committed = sorted(f"committed-{i}" for i in range(20))
    assert read(bootstrap, "kp-txn", "read_committed", 20) == committed
    assert read(bootstrap, "kp-txn", "read_uncommitted", 40) == sorted(
        committed + [f"aborted-{i}" for i in range(20)])


def test_a_transaction_left_open_past_its_timeout_is_aborted(cluster):
    bootstrap = cluster.bootstrap_servers
    make_topic(bootstrap, "timeout-txn")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "slow-app",
                         "transaction.timeout.ms": 3000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("timeout-txn", b"never-committed", partition=0)
    assert producer.flush(30) == 0
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce("timeout-txn", b"after", partition=0)
    assert plain.flush(30) == 0
    # the open transaction holds read_committed readers back until the coordinator aborts it
    assert read(bootstrap, "timeout-txn", "read_committed", 1, timeout=1) == []
    assert read(bootstrap, "timeout-txn", "read_committed", 1, timeout=20) == ["after"]
    with pytest.raises(KafkaException):  # the late producer finds itself fenced
        producer.commit_transaction(10)


def test_the_coordinator_broker_killed_mid_transaction(cluster):
    bootstrap = cluster.bootstrap_servers
    make_topic(bootstrap, "coord-txn")
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "survivor-app"})
    producer.init_transactions(30)
    with Admin(bootstrap_servers=bootstrap) as admin:
        coordinator = admin.find_transaction_coordinator("survivor-app")
    producer.begin_transaction()
    for i in range(60):
        producer.produce("coord-txn", f"v{i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    cluster.broker(coordinator).kill()
    try:
        commit_retrying(producer)  # finds the new coordinator, which finishes the job
        with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
            assert admin.find_transaction_coordinator("survivor-app") != coordinator
        assert read(cluster.bootstrap_servers, "coord-txn", "read_committed", 60) == sorted(
            f"v{i}" for i in range(60))
    finally:
        cluster.broker(coordinator).start()


def test_offsets_sent_to_a_transaction_move_with_its_output(cluster):
    """Consume-transform-produce: the group's offsets count only if the transaction that
    carries them commits (librdkafka's send_offsets_to_transaction)."""
    bootstrap = cluster.bootstrap_servers
    make_topic(bootstrap, "eos-in")
    make_topic(bootstrap, "eos-out")
    source = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        source.produce("eos-in", f"in-{i}".encode(), partition=i % PARTITIONS)
    assert source.flush(30) == 0

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-app",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe(["eos-in"])
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "eos-app"})
    producer.init_transactions(30)

    def round_trip(commit: bool) -> None:
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 30 and time.monotonic() < deadline:
            got.extend(m for m in consumer.consume(num_messages=100, timeout=0.5)
                       if m.error() is None)
        assert len(got) == 30
        producer.begin_transaction()
        for m in got:
            producer.produce("eos-out", m.value().replace(b"in", b"out"), partition=m.partition())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        if commit:
            producer.commit_transaction(30)
        else:
            assert producer.flush(30) == 0
            producer.abort_transaction(30)

    round_trip(commit=False)
    with Admin(bootstrap_servers=bootstrap) as admin:
        assert admin.fetch_offsets("eos-app") == {}  # aborted: nothing committed
    consumer.close()  # a restart: the group resumes from its committed offsets (none)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "eos-app",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.subscribe(["eos-in"])
    round_trip(commit=True)
    consumer.close()
    with Admin(bootstrap_servers=bootstrap) as admin:  # the markers follow the commit
        wait_for(lambda: sum(om.offset for om in admin.fetch_offsets("eos-app").values()) == 30,
                 20, what="the group's offsets to take effect")
    assert read(bootstrap, "eos-out", "read_committed", 30) == sorted(
        f"out-{i}" for i in range(30))
