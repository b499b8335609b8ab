"""Bad credentials, mismatched security protocols and hostile TLS input.

Each failure reaches the client fast, once, with a message naming the broker and the
mechanism (never a retry loop), and costs only its own connection: a client that logged in
properly keeps producing throughout, and the broker's memory stays bounded.
"""

from __future__ import annotations

import os
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer as CkProducer

from connector.client import Admin, AuthenticationError, KafkaTimeoutError, Producer
from tests.security.secured_broker import SecuredBroker, start_secured_broker

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kp_errors
    from kafka import KafkaProducer

IDLE_MS = 2000


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    broker = start_secured_broker(tmp_path_factory.mktemp("failures"),
                                  overrides={"connections.max.idle.ms": str(IDLE_MS)})
    with Admin(broker.pyq("SASL_SSL", "SCRAM-SHA-256")) as admin:
        admin.create_topic("steady", num_partitions=1)
    yield broker
    broker.proc.stop()


class SteadyProducer:
    """A properly authenticated producer that keeps sending while the test misbehaves."""

    def __init__(self, broker: SecuredBroker) -> None:
        self.producer = Producer(broker.pyq("SASL_SSL", "SCRAM-SHA-512"), linger_ms=0)
        self.acked = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.producer.send("steady", b"tick").get(10)
                self.acked += 1
            except Exception as e:  # collected and asserted on by the test
                self.errors.append(e)
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.close()


@pytest.fixture
def steady(secured: SecuredBroker) -> Iterator[SteadyProducer]:
    producer = SteadyProducer(secured)
    yield producer
    producer.stop()


def _assert_still_served(steady: SteadyProducer) -> None:
    before = steady.acked
    deadline = time.monotonic() + 10
    while steady.acked < before + 5 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert steady.acked >= before + 5 and not steady.errors, steady.errors


@pytest.mark.parametrize(("listener", "mechanism", "user", "says"), [
    ("SASL_SSL", "SCRAM-SHA-256", ("alice", "wrong"), "invalid credentials with SASL mechanism SCRAM-SHA-256"),
    ("SASL_SSL", "SCRAM-SHA-512", ("mallory", "x"), "invalid credentials with SASL mechanism SCRAM-SHA-512"),
    ("SASL_PLAINTEXT", "PLAIN", ("alice", "wrong"), "Invalid username or password (SASL mechanism PLAIN)"),
    ("SASL_SSL", "PLAIN", ("mallory", "x"), "Invalid username or password (SASL mechanism PLAIN)"),
])
def test_a_bad_login_fails_fast_and_clearly(secured: SecuredBroker, steady: SteadyProducer,
                                            listener: str, mechanism: str, user: tuple[str, str],
                                            says: str) -> None:
    opts = secured.pyq(listener, mechanism, user=user)
    started = time.monotonic()
    with pytest.raises(AuthenticationError) as info, Admin(opts) as admin:
        admin.describe_cluster(30_000)
    assert time.monotonic() - started < 5  # one attempt, not a retry loop until the timeout
    message = str(info.value)
    assert says in message and mechanism in message and secured.address(listener) in message
    assert repr(user[0]) in message and user[1] not in message

    producer = Producer(opts)  # the producer surfaces it the same way
    try:
        with pytest.raises(AuthenticationError):
            producer.send("steady", b"never").get(10)
    finally:
        producer.close(5)
    _assert_still_served(steady)


def test_kafka_python_and_librdkafka_are_refused_a_bad_password(secured: SecuredBroker,
                                                                steady: SteadyProducer) -> None:
    # kafka-python 3.0 retries a refused login until bootstrap_timeout_ms (30 s by
    # default) runs out, then raises KafkaTimeoutError
    with pytest.raises(kp_errors.KafkaError):
        KafkaProducer(**secured.kafka_python("SASL_SSL", "SCRAM-SHA-256", user=("alice", "nope")),
                      max_block_ms=5000, bootstrap_timeout_ms=5000)
    errors: list = []
    producer = CkProducer({**secured.confluent("SASL_SSL", "PLAIN", user=("alice", "nope")),
                           "error_cb": errors.append})
    deadline = time.monotonic() + 10
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors and "Authentication failed" in errors[0].str(), errors
    _assert_still_served(steady)


def test_mismatched_security_protocols_fail_fast(secured: SecuredBroker, steady: SteadyProducer) -> None:
    cases = [  # (what the client speaks, the listener it reaches, what the error says)
        ({"security.protocol": "SSL", "ssl.ca.location": str(secured.ca.ca_path)}, "PLAINTEXT",
         "TLS handshake"),
        ({"security.protocol": "PLAINTEXT"}, "SSL", "answered with TLS"),
        ({"security.protocol": "PLAINTEXT"}, "SASL_SSL", "answered with TLS"),
        ({"security.protocol": "SSL"}, "SSL", "certificate verify failed"),  # CA not trusted
    ]
    for settings, listener, says in cases:
        started = time.monotonic()
        with pytest.raises(AuthenticationError, match=says), \
                Admin({"bootstrap.servers": secured.address(listener), **settings}) as admin:
            admin.describe_cluster(30_000)
        assert time.monotonic() - started < 5, settings
    # A plaintext client on a SASL listener is refused on its first ordinary request: the
    # broker closes the connection (as Kafka does), so the client never gets an answer. The
    # close shows as an end of stream or, when the request was still unread, a reset.
    with pytest.raises(KafkaTimeoutError, match="closed the connection|Connection reset"), \
            Admin({"bootstrap.servers": secured.address("SASL_PLAINTEXT"),
                   "request.timeout.ms": 3000, "default.api.timeout.ms": 5000}) as admin:
        admin.describe_cluster(5000)
    _assert_still_served(steady)


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _client_hello_prefix() -> bytes:
    """The first bytes a real TLS client sends, cut off mid-ClientHello."""
    a, b = socket.socketpair()
    ctx = ssl.create_default_context()
    tls = ctx.wrap_socket(a, server_hostname="x", do_handshake_on_connect=False)
    tls.setblocking(False)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = b.recv(65536)
    tls.close()
    b.close()
    return hello[:40]


def test_hostile_tls_input_costs_only_its_own_connections(secured: SecuredBroker,
                                                          steady: SteadyProducer) -> None:
    host, port = secured.address("SSL").rsplit(":", 1)
    pid = secured.proc.pid
    rss_before = _rss_kib(pid)

    garbage = socket.create_connection((host, int(port)), timeout=10)
    garbage.sendall(os.urandom(4096))
    reply = garbage.recv(100)  # closed, at most one fatal alert first (which one: the bytes decide)
    assert reply == b"" or (len(reply) == 7 and reply[:6] == b"\x15\x03\x03\x00\x02\x02"), reply
    # a handshake record longer than TLS allows: OpenSSL's own record_overflow alert, alone
    overlong = socket.create_connection((host, int(port)), timeout=10)
    overlong.sendall(b"\x16\x03\x03\xff\xff" + bytes(4096))
    assert overlong.recv(100) == b"\x15\x03\x03\x00\x02\x02\x16"
    overlong.close()

    silent = socket.create_connection((host, int(port)), timeout=10)  # never says anything
    prefix = _client_hello_prefix()
    stalled = []
    for _ in range(200):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(prefix)
        stalled.append(s)
    _assert_still_served(steady)
    with Admin(secured.pyq("SSL")) as admin:  # a new TLS client still gets in at once
        assert admin.describe_cluster(5000).brokers
    assert _rss_kib(pid) - rss_before < 64 * 1024

    started = time.monotonic()
    for s in [silent, *stalled]:  # each is closed once idle for connections.max.idle.ms
        s.settimeout(IDLE_MS / 1000 + 10)
        assert s.recv(100) == b""
        s.close()
    assert time.monotonic() - started < IDLE_MS / 1000 + 10
    garbage.close()
    _assert_still_served(steady)
