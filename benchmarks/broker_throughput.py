"""Broker throughput benchmark: kafka-python against our broker vs a plain Python socket.

What is measured (all in one run, on 127.0.0.1, client process <-> server process):

* **produce**: our broker runs as its own OS process (``BrokerProcess``: ``python -m
  broker_sim``) with a fresh data directory and one topic of ``--partitions`` partitions
  (created with kafka-python's ``KafkaAdminClient``). A kafka-python ``KafkaProducer``
  (``acks=1``, no idempotence, no compression, ``linger_ms=5``, ``batch_size=256 KiB``)
  sends ``--records`` records with a 1,000-byte value and no key (the producer spreads
  them over the partitions). The producer connects and loads the topic metadata before
  the clock starts; the clock runs from the first ``send()`` to the return of
  ``flush()``, i.e. until every record is acknowledged by the broker.
  produce MB/s = value bytes (records x 1,000) / that wall time.
* **fetch**: a kafka-python ``KafkaConsumer`` (no group, ``assign()`` +
  ``seek_to_beginning()``, 4 MiB per partition / 64 MiB per fetch, CRC checks on as by
  default) reads all records back; it connects (``end_offsets``) before the clock starts,
  and the clock stops when the last record has been returned by ``poll()``. The loop
  sums the value lengths and the total must equal what was produced.
  fetch MB/s = value bytes / wall time.
* **socket baseline** (the same total value bytes): a plain Python socket server in a
  separate process (this script re-run with ``--serve-socket``: blocking sockets,
  ``recv_into`` a preallocated buffer, ``sendall`` of a preallocated buffer, TCP_NODELAY
  as the broker sets it). Frames are a 4-byte big-endian size plus a body whose first 4
  bytes ask for a reply of that many bytes.

  - *produce analog*: the client sends frames whose size is the **average produce request
    size kafka-python actually sent** in the produce phase (its ``request-size-avg``
    metric; ``--batch-size`` if unavailable); the server reads each whole frame and
    answers with a small ack frame (``ACK_BYTES``, about a produce response for a
    few partitions); the client keeps at most 5 frames unacknowledged, like kafka-python's
    ``max_in_flight_requests_per_connection=5``.
  - *fetch analog*: the client sends an 8-byte request, the server answers with a frame
    of the **average fetch response size kafka-python saw** (its ``fetch-size-avg``
    metric; 1 MiB if unavailable), the client reads it whole into a preallocated buffer;
    one request at a time, repeated until the same total bytes have been transferred.

  The baseline moves only bytes: no encoding, no log, no disk. It is the ceiling of what
  a Python process can push through loopback TCP in this topology, so the ratios say how
  much of that the broker + kafka-python pair achieves. Its phases take well under a
  second, so each runs ``SOCKET_RUNS`` (5) times and the median run is reported (all runs
  are printed); the kafka-python phases run once each.

kafka-python's CRC-32C: kafka-python computes the batch CRC on produce and checks it on
fetch with the ``crc32c`` package if installed, else with pure-Python code that costs
~0.1 s per 256 KiB batch and caps the client at ~2.5 MB/s at best. That package is not a
dependency of this project, so by default (``--kafka-crc auto``) the benchmark routes
kafka-python's CRC through ``google-crc32c`` (our own dependency, C, same algorithm) unless
kafka-python already has a native one; ``--kafka-crc pure`` measures the fallback. The
choice is printed and recorded as ``kafka_crc`` in the JSON.

CPU accounting: the server's CPU seconds (``utime + stime`` of ``/proc/<pid>/stat``, all
threads) are read before and after each phase, the client's with ``time.process_time()``
(all threads of this process, including kafka-python's sender thread); a *share* is CPU
seconds / wall seconds (1.0 = one core busy for the whole phase; the machine may have
only 2). A broker share well below 1 with a client share near or above 1 means the
client (kafka-python's per-record Python work), not the broker, is the bottleneck.

MB are 10**6 bytes. The page cache is warm for the fetch phase (the data was just
written), as it would be for a consumer that keeps up.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "broker_throughput", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks._proc import Timed  # noqa: E402
from broker_sim.network.blocking_client import read_into  # noqa: E402

VALUE_BYTES = 1000
ACK_BYTES = 64
IN_FLIGHT = 5
SOCKET_RUNS = 5  # the baseline phases are short: take the median of this many runs
MB = 1e6
_HDR = struct.Struct(">i")
_REQ = struct.Struct(">ii")  # frame size, requested reply size


# ---- CPU accounting ------------------------------------------------------------------


class Phase(Timed):
    """Wall time, server CPU and client CPU of one phase."""

    def __init__(self, name: str, nbytes: int, server_pid: int) -> None:
        super().__init__([server_pid])
        self.name = name
        self.nbytes = nbytes

    @property
    def mb_s(self) -> float:
        return self.nbytes / MB / self.wall

    def line(self) -> str:
        return (f"{self.name:16s} {self.nbytes / MB:8.1f} MB in {self.wall:6.2f} s = "
                f"{self.mb_s:8.1f} MB/s   server CPU {self.server_cpu:6.2f} s "
                f"(share {self.server_cpu / self.wall:4.2f})   client CPU {self.client_cpu:6.2f} s "
                f"(share {self.client_cpu / self.wall:4.2f})")


# ---- plain socket server (runs in its own process) ---------------------------------------
def serve_socket() -> None:
    """Accept connections one after another; answer each frame with the requested reply."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    print(f"port {listener.getsockname()[1]}", flush=True)
    hdr = bytearray(4)
    hdr_view = memoryview(hdr)
    inbuf = bytearray(1 << 20)
    out = bytearray(4 + (1 << 20))
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            while read_into(conn, hdr_view):
                (size,) = _HDR.unpack_from(hdr)
                if size > len(inbuf):
                    inbuf = bytearray(size)
                read_into(conn, memoryview(inbuf)[:size])
                (reply,) = _HDR.unpack_from(inbuf)
                if 4 + reply > len(out):
                    out = bytearray(4 + reply)
                _HDR.pack_into(out, 0, reply)
                conn.sendall(memoryview(out)[: 4 + reply])


class SocketServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve-socket"],
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("port "):
            self.stop()
            raise RuntimeError(f"socket server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.pid = self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def socket_produce(port: int, total: int, frame: int) -> None:
    """Send ``total`` bytes as frames of ``frame`` bytes, <= IN_FLIGHT unacknowledged."""
    with _connect(port) as s:
        buf = bytearray(4 + frame)
        ack = memoryview(bytearray(4 + ACK_BYTES))
        outstanding = 0
        remaining = total
        while remaining > 0:
            size = min(frame, remaining)
            if outstanding == IN_FLIGHT:
                read_into(s, ack)
                outstanding -= 1
            _REQ.pack_into(buf, 0, size, ACK_BYTES)
            s.sendall(memoryview(buf)[: 4 + size])
            outstanding += 1
            remaining -= size
        while outstanding:
            read_into(s, ack)
            outstanding -= 1


def socket_fetch(port: int, total: int, frame: int) -> None:
    """Request and read whole reply frames of ``frame`` bytes until ``total`` bytes arrived."""
    with _connect(port) as s:
        hdr = memoryview(bytearray(4))
        buf = memoryview(bytearray(frame))
        remaining = total
        while remaining > 0:
            size = min(frame, remaining)
            s.sendall(_REQ.pack(4, size))
            read_into(s, hdr)
            read_into(s, buf[:size])
            remaining -= size


# ---- kafka-python against the broker -------------------------------------------------------
def _metric(metrics: dict[str, dict[str, float]], group: str, name: str) -> float | None:
    """The largest positive value of ``name`` in the metric groups starting with ``group``
    (the broker's node group, not the bootstrap connection's)."""
    found = [float(values[name]) for g, values in metrics.items()
             if g.startswith(group) and "bootstrap" not in g and isinstance(values.get(name), (int, float))]
    found = [v for v in found if v == v and v > 0]  # not NaN
    return max(found) if found else None


def use_kafka_crc(mode: str) -> str:
    """Choose kafka-python's CRC-32C implementation; returns a description.

    kafka-python computes the record-batch CRC-32C on produce and checks it on fetch
    (``check_crcs``) with the ``crc32c`` package when it is installed, else with its own
    pure-Python code, which costs ~0.1 s per 256 KiB batch and caps the client at a few
    MB/s. ``auto`` keeps a native implementation when kafka-python has one, else routes
    kafka-python's CRC through ``google-crc32c`` (a dependency of this project, C code,
    same algorithm); ``pure`` forces the pure-Python code (kafka-python's own fallback).
    """
    import kafka.record.default_records as default_records
    import kafka.record.util as record_util
    from kafka.record._crc32c import crc as crc_py

    if mode == "pure":
        def calc_py(memview: Any) -> int:
            return crc_py(memview)

        record_util.calc_crc32c = default_records.calc_crc32c = calc_py
        return "pure-python (kafka-python fallback)"
    if getattr(record_util, "crc32c_c", None) is not None:
        return "crc32c package (kafka-python native)"
    import google_crc32c

    value = google_crc32c.value

    def calc_native(memview: Any) -> int:
        return value(memview if isinstance(memview, bytes) else bytes(memview))

    record_util.calc_crc32c = default_records.calc_crc32c = calc_native
    return f"google-crc32c ({google_crc32c.implementation}), patched into kafka-python"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="bench-admin")
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def kafka_produce(bootstrap: str, topic: str, n: int, args: argparse.Namespace,
                  server_pid: int) -> tuple[Phase, float | None]:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks=1, enable_idempotence=False, compression_type=None,
        linger_ms=args.linger_ms, batch_size=args.batch_size,
        max_in_flight_requests_per_connection=IN_FLIGHT, metrics_sample_window_ms=3_600_000,
    )
    try:
        if not producer.partitions_for(topic):
            raise RuntimeError(f"no metadata for {topic}")
        value = os.urandom(VALUE_BYTES)
        send = producer.send
        with Phase("produce", n * VALUE_BYTES, server_pid) as phase:
            for _ in range(n):
                send(topic, value)
            producer.flush()
        request_size = _metric(producer.metrics(), "producer-node-metrics", "request-size-avg")
    finally:
        producer.close()
    return phase, request_size


def kafka_fetch(bootstrap: str, topic: str, n: int, partitions: int,
                server_pid: int) -> tuple[Phase, float | None]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
        fetch_max_bytes=64 << 20, max_partition_fetch_bytes=4 << 20,
        receive_message_max_bytes=128 << 20, fetch_max_wait_ms=100,
        metrics_sample_window_ms=3_600_000,
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        stored = sum(consumer.end_offsets(tps).values())
        if stored != n:
            raise RuntimeError(f"the broker holds {stored} records, {n} were produced")
        consumer.seek_to_beginning()
        count = nbytes = 0
        deadline = time.monotonic() + 600
        with Phase("fetch", n * VALUE_BYTES, server_pid) as phase:
            while count < n:
                for batch in consumer.poll(timeout_ms=1000, max_records=100_000).values():
                    count += len(batch)
                    for r in batch:
                        nbytes += len(r.value)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"fetched only {count} of {n} records")
        if count != n or nbytes != n * VALUE_BYTES:
            raise RuntimeError(f"fetched {count} records / {nbytes} bytes, expected {n}")
        fetch_size = _metric(consumer.metrics(), "consumer-fetch-manager-metrics", "fetch-size-avg")
    finally:
        consumer.close()
    return phase, fetch_size


def _phase(name: str, nbytes: int, pid: int, fn: Callable[[], Any]) -> Phase:
    with Phase(name, nbytes, pid) as phase:
        fn()
    return phase


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000, help="records to produce and fetch")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--linger-ms", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=256 * 1024)
    parser.add_argument("--kafka-crc", choices=("auto", "pure"), default="auto",
                        help="kafka-python's CRC-32C: native (auto) or its pure-Python fallback")
    parser.add_argument("--serve-socket", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_socket:
        serve_socket()
        return

    from broker_sim.process import BrokerProcess

    crc = use_kafka_crc(args.kafka_crc)
    n = args.records
    total = n * VALUE_BYTES
    topic = "bench"
    print(f"workload: {n:,} records x {VALUE_BYTES} B = {total / MB:.1f} MB, "
          f"{args.partitions} partitions, linger {args.linger_ms} ms, batch {args.batch_size} B, "
          f"acks=1, no compression; {os.cpu_count()} CPUs")
    print(f"kafka-python CRC-32C: {crc}")
    tmp = Path(tempfile.mkdtemp(prefix="pyq-bench-"))
    broker: BrokerProcess | None = None
    server: SocketServer | None = None
    try:
        broker = BrokerProcess(tmp / "broker", port=0).start()
        create_topic(broker.bootstrap_servers, topic, args.partitions)
        produce, request_size = kafka_produce(broker.bootstrap_servers, topic, n, args, broker.pid)
        print(produce.line())
        fetch, fetch_size = kafka_fetch(broker.bootstrap_servers, topic, n, args.partitions, broker.pid)
        print(fetch.line())
        broker.stop()

        produce_frame = round(request_size) if request_size else args.batch_size
        fetch_frame = round(fetch_size) if fetch_size else 1 << 20
        print(f"socket frames: produce {produce_frame:,} B (kafka-python avg request size"
              f"{'' if request_size else ' n/a, batch size used'}), fetch {fetch_frame:,} B "
              f"(kafka-python avg fetch size{'' if fetch_size else ' n/a, 1 MiB used'})")
        server = SocketServer()
        runs: dict[str, list[Phase]] = {"produce": [], "fetch": []}
        for _ in range(SOCKET_RUNS):
            runs["produce"].append(_phase("socket produce", total, server.pid,
                                          lambda: socket_produce(server.port, total, produce_frame)))
            runs["fetch"].append(_phase("socket fetch", total, server.pid,
                                        lambda: socket_fetch(server.port, total, fetch_frame)))
        for phases in runs.values():
            phases.sort(key=lambda ph: ph.wall)
            for ph in phases:
                print(ph.line())
        sock_produce = runs["produce"][SOCKET_RUNS // 2]
        sock_fetch = runs["fetch"][SOCKET_RUNS // 2]
        print(f"socket baseline: median of {SOCKET_RUNS} runs each")
    finally:
        if server is not None:
            server.stop()
        if broker is not None:
            broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    ratios = {
        "fetch_vs_socket": round(fetch.mb_s / sock_fetch.mb_s, 4),
        "produce_vs_socket": round(produce.mb_s / sock_produce.mb_s, 4),
    }
    print(f"produce: {ratios['produce_vs_socket']:.3f}x socket, fetch: {ratios['fetch_vs_socket']:.3f}x socket")

    def share(cpu: float, wall: float) -> float:
        return round(cpu / wall, 3)

    figures = {
        "produce_mb_s": round(produce.mb_s, 2),
        "fetch_mb_s": round(fetch.mb_s, 2),
        "socket_produce_mb_s": round(sock_produce.mb_s, 2),
        "socket_fetch_mb_s": round(sock_fetch.mb_s, 2),
        "records": n,
        "value_bytes": VALUE_BYTES,
        "partitions": args.partitions,
        "broker_cpu_share_produce": share(produce.server_cpu, produce.wall),
        "broker_cpu_share_fetch": share(fetch.server_cpu, fetch.wall),
        "client_cpu_share_produce": share(produce.client_cpu, produce.wall),
        "client_cpu_share_fetch": share(fetch.client_cpu, fetch.wall),
        "socket_server_cpu_share_produce": share(sock_produce.server_cpu, sock_produce.wall),
        "socket_server_cpu_share_fetch": share(sock_fetch.server_cpu, sock_fetch.wall),
        "socket_client_cpu_share_produce": share(sock_produce.client_cpu, sock_produce.wall),
        "socket_client_cpu_share_fetch": share(sock_fetch.client_cpu, sock_fetch.wall),
        "seconds": {"produce": round(produce.wall, 3), "fetch": round(fetch.wall, 3),
                    "socket_produce": round(sock_produce.wall, 3),
                    "socket_fetch": round(sock_fetch.wall, 3)},
        "produce_frame_bytes": produce_frame,
        "fetch_frame_bytes": fetch_frame,
        "linger_ms": args.linger_ms,
        "batch_size": args.batch_size,
        "kafka_crc": crc,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    print(json.dumps({"benchmark": "broker_throughput", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
