"""Zero-copy fetch (``os.sendfile`` from the segment files), pinned from the outside.

Every test runs real brokers on ephemeral ports: processes, or one in this process where
the test must call its log itself (a truncation). The copying path is the same
broker with ``fetch.zero.copy.enable=false`` on the same data directory, so the golden
comparison replays the very Fetch requests kafka-python and librdkafka sent (recorded by
a proxy between them and the zero-copy broker) against the copying broker and compares
the responses byte for byte.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from broker_sim.network.blocking_client import read_exact, read_frame
from broker_sim.protocol import api
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.records.batch_header import iter_batches
from broker_sim.protocol.records.builder import RecordBatchBuilder
from tests.wire import WireClient, create_topic, fetch_body, produce_body, wait_for_topic_everywhere

FETCH_VERSION = 11
_CID = struct.Struct(">i")
_HEADER = struct.Struct(">hhi")  # api key, version, correlation id


def _batch(records: int, value_size: int, seed: int) -> bytes:
    b = RecordBatchBuilder()
    now = int(time.time() * 1000)  # recent: retention by time must not take them
    for i in range(records):
        b.append(now + i, f"k{seed}-{i}".encode(), bytes([(seed + i) % 251]) * value_size)
    return b.build()


def _produce(port: int, topic: str, partition: int, batches: list[bytes]) -> None:
    with WireClient(port) as c:
        for batch in batches:
            r = c.request(ApiKey.PRODUCE, 8, produce_body(topic, partition, batch, acks=1))
            assert r.responses[0].partition_responses[0].error_code == 0, r


def _fetch_raw(sock: socket.socket, cid: int, body: dict) -> bytes:
    """Send one Fetch and return the whole response frame (size prefix included)."""
    sock.sendall(api.encode_request(ApiKey.FETCH, FETCH_VERSION, cid, "zc-test", body))
    size = read_exact(sock, 4)
    return bytes(size) + bytes(read_exact(sock, _CID.unpack(size)[0]))


def _records(frame: bytes, cid: int) -> bytes:
    got, r = api.decode_response(ApiKey.FETCH, FETCH_VERSION, frame[4:])
    assert got == cid
    p = r.responses[0].partitions[0]
    assert p.error_code == 0, p
    return bytes(p.records or b"")


def _sweep(port: int, topic: str, requests: list[tuple[int, int]]) -> list[bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        return [_fetch_raw(s, i + 1, fetch_body(topic, 0, offset, max_bytes=max_bytes))
                for i, (offset, max_bytes) in enumerate(requests)]


def _offsets(records: bytes) -> list[int]:
    return [o for _pos, h in iter_batches(records) for o in range(h.base_offset, h.last_offset + 1)]


# ---- segment boundaries, KIP-74 ----------------------------------------------------------------

def test_fetches_straddling_segment_boundaries_and_kip74(broker_factory: Any, tmp_path: Path) -> None:
    data = tmp_path / "b"
    broker = broker_factory(data, overrides={"log.segment.bytes": "20000"})
    create_topic(broker.port, "seg", partitions=2)
    batches = [_batch(1 + i % 7, 40 + (i * 37) % 900, i) for i in range(120)]
    _produce(broker.port, "seg", 0, batches)
    _produce(broker.port, "seg", 1, [_batch(3, 100, 999)])
    segments = sorted((data / "logs" / "seg-0").glob("*.log"))
    assert len(segments) > 4  # the fetches below cross segment boundaries
    bases = [int(p.stem) for p in segments]

    # A consumer walking from 0 with assorted max_bytes sees every offset once, in order,
    # one segment per response at most, each answer whole batches.
    for max_bytes in (1, 700, 5000, 1 << 20):
        seen: list[int] = []
        offset = 0
        with socket.create_connection(("127.0.0.1", broker.port), timeout=15) as s:
            cid = 0
            while offset < sum(1 + i % 7 for i in range(120)):
                cid += 1
                recs = _records(_fetch_raw(s, cid, fetch_body("seg", 0, offset, max_bytes=max_bytes)), cid)
                got = [o for o in _offsets(recs) if o >= offset]
                assert got, (offset, max_bytes)
                first = next(o for o in _offsets(recs))
                segment = max(b for b in bases if b <= first)
                nxt = [b for b in bases if b > segment]
                assert not nxt or max(_offsets(recs)) < nxt[0]  # never past its segment
                assert len(recs) <= max_bytes or len(list(iter_batches(recs))) == 1  # KIP-74
                seen.extend(got)
                offset = got[-1] + 1
        assert seen == list(range(offset))

    # KIP-74: max_bytes smaller than the first batch still returns that one whole batch,
    # and the partitions after it in the same request get nothing.
    big = _batch(1, 15_000, 7)
    _produce(broker.port, "seg", 1, [big, _batch(1, 10, 8)])
    body = fetch_body("seg", 1, 3, max_bytes=1000)
    body["topics"][0]["partitions"].append(dict(body["topics"][0]["partitions"][0], partition=0,
                                                fetch_offset=0))
    with WireClient(broker.port) as c:
        r = c.request(ApiKey.FETCH, FETCH_VERSION, body)
    p1, p0 = r.responses[0].partitions
    assert p1.error_code == 0 and len(p1.records) == len(big)
    assert [h.base_offset for _, h in iter_batches(bytes(p1.records))] == [3]
    assert p0.error_code == 0 and not p0.records  # max_bytes used up by the first partition

    # The same requests answered by the copying path: the same bytes.
    requests = [(o, m) for o in (0, 1, 17, 40, 77, 150, 200, 300) for m in (1, 999, 20_000, 1 << 20)]
    requests = [(o, m) for o, m in requests if o <= sum(1 + i % 7 for i in range(120))]
    zero_copy = _sweep(broker.port, "seg", requests)
    broker.stop()
    copying = broker_factory(data, overrides={"log.segment.bytes": "20000",
                                              "fetch.zero.copy.enable": "false"})
    wait_for_topic_everywhere(f"127.0.0.1:{copying.port}", "seg", 2)
    assert _sweep(copying.port, "seg", requests) == zero_copy


# ---- in-flight transfers: deletion, roll, slow readers -------------------------------------------

def _slow_socket(port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    return s


def _read_response(sock: socket.socket) -> bytes:
    size = read_exact(sock, 4)
    return bytes(size) + bytes(read_exact(sock, _CID.unpack(size)[0]))


@pytest.fixture
def big_log_broker(broker_factory: Any, tmp_path: Path) -> Any:
    """One network processor (every connection shares it), 12 MiB segments (a response
    from the first one is larger than any socket send buffer here, tcp_wmem's 4 MiB, so
    its sendfile is surely still in flight while the reader stalls), retention checked
    every 100 ms; topic "big" holds 12 batches of ~1 MiB over 2 segments."""
    broker = broker_factory(tmp_path / "big", overrides={
        "num.network.threads": "1", "log.segment.bytes": str(12 << 20),
        "log.retention.check.interval.ms": "100"})
    create_topic(broker.port, "big", partitions=1)
    _produce(broker.port, "big", 0, [_batch(16, 64 * 1024 - 200, i) for i in range(12)])
    broker.data = tmp_path / "big"
    return broker


def test_segment_rolled_and_deleted_while_its_sendfile_is_in_flight(big_log_broker: Any) -> None:
    broker = big_log_broker
    first_segment = broker.data / "logs" / "big-0" / f"{0:020d}.log"
    with WireClient(broker.port) as c:  # the golden answer, read before anything moves
        expected = c.request(ApiKey.FETCH, FETCH_VERSION, fetch_body("big", 0, 0, max_bytes=64 << 20))
    expected_records = bytes(expected.responses[0].partitions[0].records)
    assert len(expected_records) > 10 << 20  # the whole first segment

    slow = _slow_socket(broker.port)
    try:
        slow.sendall(api.encode_request(ApiKey.FETCH, FETCH_VERSION, 42, "slow",
                                        fetch_body("big", 0, 0, max_bytes=64 << 20)))
        head = read_exact(slow, 64 * 1024)  # the response has started, and is stuck
        # Roll the active segment, then delete the one being sent (DeleteRecords + retention).
        _produce(broker.port, "big", 0, [_batch(16, 64 * 1024 - 200, 100 + i) for i in range(5)])
        with WireClient(broker.port) as c:
            r = c.request(ApiKey.DELETE_RECORDS, 1, {
                "topics": [{"name": "big", "partitions": [{"partition_index": 0, "offset": 16 * 12}]}],
                "timeout_ms": 10_000})
        assert r.topics[0].partitions[0].error_code == 0, r
        deadline = time.monotonic() + 20
        while first_segment.exists():
            assert time.monotonic() < deadline, "retention never deleted the first segment"
            time.sleep(0.05)
        frame = bytes(head) + _read_rest(slow, head)
    finally:
        slow.close()
    cid, got = api.decode_response(ApiKey.FETCH, FETCH_VERSION, frame[4:])
    assert cid == 42
    assert bytes(got.responses[0].partitions[0].records) == expected_records
    # the frame's fixed part is from the read: the log start it reported then was 0
    assert got.responses[0].partitions[0].log_start_offset == 0


def _read_rest(sock: socket.socket, head: bytes | bytearray) -> bytes:
    size = _CID.unpack_from(head)[0] + 4
    return bytes(read_exact(sock, size - len(head)))


def test_a_slow_consumer_does_not_hold_up_other_connections(big_log_broker: Any) -> None:
    broker = big_log_broker
    slows = [_slow_socket(broker.port) for _ in range(3)]
    try:
        for i, s in enumerate(slows):  # ~4 MB each, none of it read yet
            s.sendall(api.encode_request(ApiKey.FETCH, FETCH_VERSION, i + 1, "slow",
                                         fetch_body("big", 0, 16 * 4 * i, max_bytes=64 << 20)))
        time.sleep(0.3)  # their sendfiles fill the windows and wait for writable
        started = time.monotonic()
        with WireClient(broker.port, timeout=5) as c:  # the same (only) network processor
            for i in range(20):
                r = c.request(ApiKey.PRODUCE, 8, produce_body("big", 0, _batch(1, 100, 500 + i), acks=1))
                assert r.responses[0].partition_responses[0].error_code == 0
                offset = r.responses[0].partition_responses[0].base_offset
                f = c.request(ApiKey.FETCH, FETCH_VERSION, fetch_body("big", 0, offset, max_bytes=1000))
                assert _offsets(bytes(f.responses[0].partitions[0].records))[0] == offset
        assert time.monotonic() - started < 5
        for i, s in enumerate(slows):  # now drained: every response whole and in order
            frame = _read_response(s)
            cid, got = api.decode_response(ApiKey.FETCH, FETCH_VERSION, frame[4:])
            assert cid == i + 1
            offsets = _offsets(bytes(got.responses[0].partitions[0].records))
            assert offsets[0] == 16 * 4 * i and offsets == list(range(offsets[0], offsets[-1] + 1))
    finally:
        for s in slows:
            s.close()


# ---- truncation under an in-flight transfer ------------------------------------------------------

def _values(records: bytes) -> list[tuple[int, bytes | None]]:
    from broker_sim.protocol.records.reader import iter_records

    return [(r.offset, r.value) for r in iter_records(records)]


def _produced(seeds: range, records: int, value_size: int, first: int) -> list[tuple[int, bytes | None]]:
    """(offset, value) of the records of ``_batch(records, value_size, seed)`` for each seed,
    appended from offset ``first``."""
    values = [bytes([(seed + i) % 251]) * value_size for seed in seeds for i in range(records)]
    return [(first + n, v) for n, v in enumerate(values)]


def _read_until_closed(sock: socket.socket, at_most: int) -> bytes:
    """What the broker sends until it closes the connection, or ``at_most`` bytes."""
    got = bytearray()
    while len(got) < at_most:
        try:
            chunk = sock.recv(1 << 20)
        except ConnectionResetError:
            return bytes(got)
        if not chunk:
            return bytes(got)
        got += chunk
    return bytes(got)


@pytest.mark.parametrize("where", ["inside", "below"])
def test_truncation_under_a_stalled_sendfile_closes_only_that_connection(
        where: str, tmp_path: Path) -> None:
    """A follower-style ``Log.truncate_to`` under a consumer's half-sent response, then new
    records at the truncated offsets: that consumer is disconnected having received only
    bytes of the original response (never a new record); the processor it shares with
    everyone keeps serving; a fetch after reconnecting returns what is left.

    ``inside``: the range is cut in place (its segment truncated, the new records written
    over the same file positions). ``below``: the truncation point is in an earlier
    segment, so the range's whole segment goes. The broker runs in this process: the
    truncation is the broker's own log call, as its replica fetcher makes it."""
    from broker_sim.log import LogConfig
    from broker_sim.server import Broker, BrokerConfig

    config = BrokerConfig(broker_id=0, port=0, data_dir=tmp_path / "b", num_network_threads=1,
                          log=LogConfig(segment_bytes=12 << 20), log_cleaner_enable=False)
    with Broker(config) as broker:
        create_topic(broker.port, "cut", partitions=1)
        _produce(broker.port, "cut", 0, [_batch(16, 64 * 1024 - 200, i) for i in range(20)])  # ~1 MiB each
        log = broker.replica_manager.partition("cut", 0).log
        assert len(log.segments) == 2
        second = log.segments[1].base_offset
        fetch_from, cut = (0, 32) if where == "inside" else (second, second - 48)
        body = fetch_body("cut", 0, fetch_from, max_bytes=64 << 20)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=15) as s:
            expected = _fetch_raw(s, 42, body)  # the whole response, before anything moves
        assert len(expected) > 6 << 20  # more than the socket buffers hold

        slow = _slow_socket(broker.port)
        try:
            slow.sendall(api.encode_request(ApiKey.FETCH, FETCH_VERSION, 42, "slow", body))
            head = read_exact(slow, 64 * 1024)  # the response has started, and is stuck
            time.sleep(0.3)  # the processor's sendfile fills the socket and waits for writable
            assert log.truncate_to(cut)
            _produce(broker.port, "cut", 0, [_batch(16, 64 * 1024 - 200, 1000 + i) for i in range(12)])
            new_records = _produced(range(1000, 1012), 16, 64 * 1024 - 200, first=cut)

            # (b) the same (only) processor serves another connection meanwhile
            with socket.create_connection(("127.0.0.1", broker.port), timeout=15) as other:
                got = _values(_records(_fetch_raw(other, 7, fetch_body("cut", 0, cut, max_bytes=64 << 20)), 7))
            assert got == new_records[:len(got)] and len(got) >= 16

            # (a) the stalled connection is closed, having received a prefix of the original
            received = bytes(head) + _read_until_closed(slow, len(expected) - len(head))
        finally:
            slow.close()
        assert len(received) < len(expected)
        assert received == expected[:len(received)]

        # (c) after reconnecting, a fetch returns exactly the records that remain
        remaining = _produced(range(20), 16, 64 * 1024 - 200, first=0)[:cut] + new_records
        seen: list[tuple[int, bytes | None]] = []
        with socket.create_connection(("127.0.0.1", broker.port), timeout=15) as again:
            cid = 0
            while len(seen) < len(remaining):
                cid += 1
                records = _records(_fetch_raw(again, cid, fetch_body("cut", 0, len(seen), max_bytes=64 << 20)), cid)
                batch = [r for r in _values(records) if r[0] >= len(seen)]
                assert batch, len(seen)
                seen += batch
        assert seen == remaining
        assert log.log_end_offset == len(remaining)


# ---- golden comparison with real consumers ------------------------------------------------------

class RecordingProxy:
    """Forwards Kafka connections to a broker, recording every Fetch (request frame,
    response frame) and pointing the broker addresses of Metadata and FindCoordinator
    answers at itself, so the clients' fetch connections come through here too."""

    def __init__(self, broker_port: int) -> None:
        self.broker_port = broker_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.fetches: list[tuple[bytes, bytes]] = []
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._stop = False
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.broker_port))
            self._socks += [client, upstream]
            pending: dict[int, tuple[int, int, bytes]] = {}
            for target in (self._requests, self._responses):
                t = threading.Thread(target=target, args=(client, upstream, pending), daemon=True)
                t.start()
                self._threads.append(t)

    def _requests(self, client: socket.socket, upstream: socket.socket, pending: dict) -> None:
        try:
            while True:
                frame = read_frame(client)
                key, version, cid = _HEADER.unpack_from(frame)
                pending[cid] = (key, version, struct.pack(">i", len(frame)) + bytes(frame))
                upstream.sendall(struct.pack(">i", len(frame)) + frame)
        except (OSError, ConnectionError, struct.error):
            _shut(upstream)

    def _responses(self, client: socket.socket, upstream: socket.socket, pending: dict) -> None:
        try:
            while True:
                frame = read_frame(upstream)
                key, version, request = pending.pop(_CID.unpack_from(frame)[0])
                out = struct.pack(">i", len(frame)) + bytes(frame)
                if key == ApiKey.FETCH:
                    with self._lock:
                        self.fetches.append((request, out))
                elif key in (ApiKey.METADATA, ApiKey.FIND_COORDINATOR):
                    cid, body = api.decode_response(key, version, frame)
                    if key == ApiKey.METADATA:
                        for b in body.brokers:
                            b.port = self.port
                    elif version >= 4:
                        for coordinator in body.coordinators:
                            coordinator.port = self.port
                    else:
                        body.port = self.port
                    out = bytes(api.encode_response(key, version, cid, body))
                client.sendall(out)
        except (OSError, ConnectionError, KeyError):
            _shut(client)

    def close(self) -> None:
        self._stop = True
        self.listener.close()
        for s in self._socks:
            _shut(s)
            s.close()
        for t in self._threads:
            t.join(5)


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _consume_kafka_python(port: int, topic: str, partitions: int, expected: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}", enable_auto_commit=False,
                             fetch_max_wait_ms=50, max_partition_fetch_bytes=300_000,
                             fetch_max_bytes=700_000)
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        count, deadline = 0, time.monotonic() + 60
        while count < expected and time.monotonic() < deadline:
            count += sum(len(v) for v in consumer.poll(timeout_ms=500, max_records=100_000).values())
        return count
    finally:
        consumer.close()


def _consume_confluent(port: int, topic: str, partitions: int, expected: int) -> int:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "group.id": "zc-golden",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                         "max.partition.fetch.bytes": 300_000, "fetch.max.bytes": 1_000_000,
                         "check.crcs": True})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        count, deadline = 0, time.monotonic() + 60
        while count < expected and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=min(10_000, expected - count), timeout=0.5):
                assert m.error() is None, m.error()
                count += 1
        return count
    finally:
        consumer.close()


@pytest.mark.parametrize("client", ["kafka-python", "confluent-kafka"])
def test_consumer_fetches_are_byte_identical_to_the_copying_path(
        client: str, broker_factory: Any, tmp_path: Path) -> None:
    data = tmp_path / "golden"
    overrides = {"log.segment.bytes": "200000"}
    broker = broker_factory(data, overrides=overrides)
    create_topic(broker.port, "golden", partitions=3)
    expected = 0
    for p in range(3):
        batches = [_batch(1 + (i + p) % 9, 20 + (i * 53) % 3000, i + 100 * p) for i in range(60)]
        _produce(broker.port, "golden", p, batches)
        expected += sum(1 + (i + p) % 9 for i in range(60))
    proxy = RecordingProxy(broker.port)
    try:
        consume = _consume_kafka_python if client == "kafka-python" else _consume_confluent
        assert consume(proxy.port, "golden", 3, expected) == expected
    finally:
        proxy.close()
    recorded = [(req, resp) for req, resp in proxy.fetches
                if _has_records(req, resp)]  # the answers with records (not the idle long polls)
    assert len(recorded) >= 3
    assert len(sorted((data / "logs" / "golden-0").glob("*.log"))) > 1
    broker.stop()
    copying = broker_factory(data, overrides={**overrides, "fetch.zero.copy.enable": "false"})
    wait_for_topic_everywhere(f"127.0.0.1:{copying.port}", "golden", 3)
    with socket.create_connection(("127.0.0.1", copying.port), timeout=15) as s:
        for request, response in recorded:
            s.sendall(_without_leader_epoch(request))
            replayed = _read_response(s)
            if replayed != response:  # say how they differ, field by field
                version = _HEADER.unpack_from(request, 4)[1]
                assert (api.decode_response(ApiKey.FETCH, version, replayed[4:])
                        == api.decode_response(ApiKey.FETCH, version, response[4:]))
            assert replayed == response


def _without_leader_epoch(request: bytes) -> bytes:
    """The same Fetch request, but not fenced by the leader epoch the restart bumped
    (the response carries no epoch, so its bytes do not depend on it)."""
    header, body = api.decode_request(request[4:])
    for t in body.topics:
        for p in t.partitions:
            p.current_leader_epoch = -1
    return bytes(api.encode_request(ApiKey.FETCH, header.api_version, header.correlation_id,
                                    header.client_id, body))


def _has_records(request: bytes, response: bytes) -> bool:
    _key, version, _cid = _HEADER.unpack_from(request, 4)
    _, body = api.decode_response(ApiKey.FETCH, version, response[4:])
    return any(p.records for t in body.responses for p in t.partitions)
