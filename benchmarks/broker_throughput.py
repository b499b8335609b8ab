"""Broker throughput benchmark: librdkafka (confluent-kafka) against pyq vs raw loopback sockets.

What is measured, on 127.0.0.1, every broker its own OS process:

* **cells**: value size (1 KiB, 16 KiB) x partitions (1, 4) x acks (1: one broker, RF 1;
  all: a 3-broker ``LocalCluster``, RF 3, the ISR full before the clock starts). Each cell
  writes ``--mb`` MB of values (no keys, no compression) into a fresh topic, then reads
  them back.
* **produce**: a confluent-kafka ``Producer`` (``linger.ms`` 5, ``batch.size`` 1 MiB, no
  idempotence, TCP_NODELAY as the broker and the socket baseline set it) in this process;
  the clock runs from the first ``produce()`` to the return of ``flush()`` (every record
  acknowledged). produce MB/s = value bytes / wall time.
* **fetch**: a confluent-kafka ``Consumer`` assigned every partition from the beginning
  (no group management, 16 MiB per fetch and per partition, prefetch queue limits out of
  the way), drained with batch
  ``consume(num_messages=10000)`` calls (so the client is not the bottleneck); connected
  (metadata and watermarks) before the clock starts; the clock stops when the last
  record arrived. The count and value bytes must equal what was produced.
* **socket baseline**, in the same run, per cell, moving the same value bytes: a plain
  Python socket server in a separate process (``--serve-socket``: blocking sockets,
  ``recv_into`` a preallocated buffer, ``sendall`` of a preallocated buffer, TCP_NODELAY as
  the broker sets it). *produce analog*: frames of the average Produce request size
  librdkafka sent in that cell (its statistics: bytes sent / Produce requests), each
  answered by a 64-byte ack, at most 5 unacknowledged; *fetch analog*: 8-byte requests
  answered by frames of the average Fetch response size librdkafka received, one at a
  time. It moves only bytes (no encoding, no log, no disk): the ceiling of what a Python
  process pushes through loopback TCP in this topology. Its phases are short, so each
  cell takes the median of 3. *socket+file* (a figure, ``produce_vs_socket_file``): the
  same produce analog against a second server that also appends every frame to a file
  (one ``write`` per frame, the files kept until the cell's socket phases end): what a
  Python process that receives and stores the bytes can do, without a log's work.
* **raw fetch** (acks=1 cells): the broker's fetch path without a client's work: Fetch
  v11 for every partition, one request at a time, each response read whole into a
  preallocated buffer like the socket baseline's frames (``raw_fetch_vs_socket``). The gap
  between it and the librdkafka fetch is the consumer's own cost.

Ratios (the JSON's ``ratios``): ``fetch_vs_socket`` (target >= 0.5) and
``produce_vs_socket`` (target >= 0.3) at 16 KiB values, 1 partition, acks=1, each the
median over ``--runs`` (3) runs of that cell's broker MB/s / socket MB/s. Every cell of
every run is printed; the figures hold each cell's medians and all runs.

CPU accounting: ``utime + stime`` from ``/proc`` for the brokers (all of a cell's broker
processes and their threads; with acks=all the controller too) and ``process_time()`` for
this process (librdkafka's threads included); a *share* is CPU seconds / wall seconds
(1.0 = one core busy all along; the machine has 2). A client share well below 1 shows
that librdkafka is not what limits a cell. CPU seconds per GB moved (``s/GB``) say what
the work costs whatever else ran on the machine; shares and MB/s move with the load.

``--override NAME=VALUE`` passes a broker option to every broker: with
``fetch.zero.copy.enable=false`` the same run measures the copying fetch path.

Where the time goes (``perf record -g -p <broker pids>`` at 999 Hz, and the CPU shares
and CPU seconds per GB this benchmark prints; 2-core machine with other engineers' test
suites running, load average ~4):

* **fetch, zero-copy** (16 KiB, 1 partition, acks=1): the broker needs ~0.2-0.3 CPU
  seconds per GB, about what the Python socket server spends sending the same frames
  (0.12-0.16). Of its samples 72% are the kernel (``splice_to_socket`` /
  ``page_cache_pipe_buf_*`` under ``sendfile``, TCP transmit, and loopback softirqs that
  deliver to the consumer), 25% the interpreter (request decode, the index lookup, response
  encoding, the selector loop), 2% libc. librdkafka spends 0.7-0.9 CPU s/GB receiving and
  parsing (0.2-0.3 for the socket client; its process shares 0.9-1.4 cores with the
  Python loop): the consumer, not the broker, sets the fetch rate, which is why
  ``fetch_vs_socket`` sits at 0.44-0.49 while ``raw_fetch_vs_socket`` is 0.6-0.67
  (medians of the last runs). With 64 MiB fetches librdkafka's cost rose to 2.2 s/GB in some runs
  (allocation of each response buffer above glibc's mmap threshold), hence 16 MiB.
* **fetch, copying path** (``--override fetch.zero.copy.enable=false``, what TLS
  listeners do): 36% of the broker's samples are ``clear_page_erms`` (faulting in and
  zeroing a fresh buffer for every ``pread``), 17% ``memmove`` (the records copied into
  the response buffer), 19% copying to and from user space: ~0.7 CPU s/GB at the commit
  before zero-copy (184bf71), 0.2-0.3 with it.
* **produce** (16 KiB, 1 partition, acks=1), ``perf`` of the broker on 2026-11-26 in a
  cell whose page cache was warm: 24-27% ``pwrite`` (the page-cache copy and ext4's
  delayed allocation), 14-24% ``recv`` (the kernel's copy; before the broker kept its
  freed request buffers, 14% of all samples were page faults zeroing a fresh buffer for
  every 1 MiB request: 1-68 faults per MB, now ~1.4), 28-34% interpreter, 4.5-5% CRC-32C
  (read where the batch lies; the CRC library used to need a copy of each batch first),
  the rest thread wake-ups. The broker's share reaches ~0.9 of a core and no further: a
  connection's requests are handled one at a time (the processor mutes it), each passing
  processor -> handler -> processor threads under one GIL, and the socket server has no
  page cache to fill. With those two changes the broker spent 0.74-1.07 CPU s/GB in the
  grid's headline cells (1.3-1.7 the same day before them) and produced 848-1,184 MB/s
  (500-560 before). What is left is CPU on 2 cores: librdkafka's producer needs 0.6-0.9
  CPU s/GB and the broker 0.7-1.1, ~1.5-2 core-seconds per GB in all, so this
  topology tops out near 1,000-1,200 MB/s; ``produce_vs_socket`` 0.3 needs 1,200-1,500
  MB/s against a socket baseline of 4,000-5,000 MB/s.
* **acks=all** (3 brokers + controller on 2 cores, RF 3): ~4.7 broker CPU s/GB over the
  cluster, CPU-bound (share ~1.0-1.3). 58% kernel (page-cache writes on three replicas
  10%, receive copies 9%, loopback softirqs), 28% interpreter (three brokers' request
  paths, followers' fetch loops, the purgatory), 10% libc, 2.5% CRC-32C (every replica
  checks). Followers' fetches are zero-copy on the leader and their appends write the
  received frame's bytes without a copy.

Storing the bytes, on this machine (a VM whose freed memory goes back to its host within
seconds): writing 1 GB into the page cache costs ~2.0-2.5 CPU-s in the kernel when its
pages are new to the guest and ~0.27 s when they were freed a moment ago (a plain
``write`` loop: 400-500 MB/s, then 3,760 MB/s at once after deleting the file, 400-700
MB/s again 3-30 s later). The broker's appends take whichever pages the kernel gives, so
its produce CPU per GB moves with that: 1.6-1.8 s/GB in 512 MB cells, 3.7-4.2 s/GB (3-4
of it system time, 61 % of ``perf`` samples in ``copy_folio_from_iter_atomic``) in 1 GB
ones on 2026-11-26. The socket+file baseline spent 0.5-0.57 s/GB (1,750-1,900 MB/s) in the
same runs: it writes right after the cell's topic was deleted, so much of its page cache
is warm, and ``produce_vs_socket_file`` flatters it rather than the broker. Three runs of the headline cell that day: ``produce_vs_socket``
0.134, 0.145, 0.118 (551, 520, 583 MB/s against a socket baseline of 3,570-4,960 MB/s,
faster than the day before), ``produce_vs_socket_file`` 0.314, 0.286, 0.306,
``fetch_vs_socket`` 0.326, 0.447, 0.357 (raw fetch 0.526, 0.616, 0.483).

The full grid the same day (3 runs, 512 MB per cell; medians, MB/s, ratio to the socket
baseline and to socket+file): acks=1 produce 293 (0.111, 0.162) / 347 (0.094, 0.194) /
560 (0.158, 0.304) / 534 (0.160, 0.294) for 1k-1p / 1k-4p / 16k-1p / 16k-4p, fetch 585
(0.344) / 540 (0.251) / 982 (0.442) / 889 (0.438), raw fetch 0.641 / 0.555 / 0.569 /
0.522; acks=all produce 127 (0.045) / 167 (0.049) / 127 (0.048) / 192 (0.056), fetch
0.289 / 0.248 / 0.470 / 0.536. Headline runs: produce 0.158, 0.187, 0.148; fetch 0.516,
0.438, 0.442.

Later on 2026-11-26, after CRC-32C stopped copying each batch and broker processes
kept their freed request buffers (and with the C record scan on the client side), the
full grid (3 runs, 512 MB per cell; medians, MB/s, ratio to socket and to socket+file):
acks=1 produce 451 (0.095, 0.481) / 414 (0.121, 0.492) / 1,014 (0.257, 1.124) / 1,019
(0.243, 1.026), fetch 759 (0.258) / 586 (0.238) / 1,116 (0.419) / 1,288 (0.482), raw fetch
0.463 / 0.568 / 0.536 / 0.646; acks=all produce 158 (0.035) / 199 (0.043) / 184 (0.045) /
256 (0.054), fetch 0.288 / 0.214 / 0.376 / 0.355. Headline runs: produce 0.190, 0.257,
0.267 (848, 1,014, 1,184 MB/s against 3,950-4,470), fetch 0.419, 0.441, 0.419 (raw fetch
0.536, 0.494, 0.601). In the headline fetch cells librdkafka used 0.70-0.89 of a core
(0.51-0.80 CPU s/GB) and the broker 0.48-0.72 (0.43-0.64 CPU s/GB): the broker's fetch
path alone (raw fetch) moves 0.49-0.60 of the socket baseline's MB/s, and the consumer's
own work takes that to 0.42-0.44.

Earlier on 2026-11-26 the headline cell alone (3 runs, quiet machine, but loopback sockets moving
about half the MB/s of the day before: 2,100-2,500 MB/s in the produce analog) gave
``produce_vs_socket`` 0.174, 0.252, 0.261 and ``fetch_vs_socket`` 0.505, 0.727, 0.578
(raw fetch 1.107, 0.777, 0.643): the ratios move with the machine's socket speed.

On 2026-11-27 the headline cell alone, three invocations of 3 runs each (medians of each):
``produce_vs_socket`` 0.200, 0.174, 0.222 (776, 600, 982 MB/s against a socket baseline of
3,450-4,420 MB/s), ``fetch_vs_socket`` 0.401, 0.455, 0.400 (909, 903, 1,022 MB/s), raw
fetch 0.644, 0.568, 0.649. Over the nine produce runs the broker spent 0.84-1.93 CPU
s/GB (median 1.11) and librdkafka's producer 0.63-1.76 (median 0.88): at ~2 core-seconds
per GB the 2 cores cap the cell near 1,000 MB/s, and 0.3 of that day's socket baseline is
1,040-1,320 MB/s (the medians; single runs 2,580-4,550).

Three more invocations later that day: runs ``produce_vs_socket`` 0.124/0.230/0.242,
0.188/0.261/0.307, 0.181/0.191/0.337 (medians 0.230, 0.261, 0.191) and ``fetch_vs_socket``
0.319/0.481/0.431, 0.359/0.467/0.362, 0.595/0.641/0.695 (medians 0.431, 0.362, 0.641), raw
fetch 0.470-0.774. The socket baseline moved 3,220-3,980 MB/s (produce analog) and
2,030-2,590 (fetch analog) in the first two and fell to 2,080-2,390 and 1,020-1,090 in
the third, within fifteen minutes: the fetch target was met there because the baseline
halved, not because the broker sped up (645-707 MB/s against 734-1,116 before). In the
fastest produce runs (990-1,000 MB/s) the broker spent 0.88-0.92 CPU s/GB and librdkafka
0.85-0.90, both ~0.9 of a core: the two cores were full.

MB are 10**6 bytes. The page cache is warm for the fetch phase (the data was just
written), as it would be for a consumer that keeps up.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "broker_throughput", "ratios": {...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._cluster import wait_in_sync
from benchmarks._proc import Timed
from broker_sim.lifeline import Lifeline, hold
from broker_sim.network.blocking_client import read_into

ACK_BYTES = 64
#: The consumer's fetch.max.bytes and max.partition.fetch.bytes. Not larger: librdkafka
#: allocates a buffer per response, and above glibc's 32 MiB mmap threshold each one is
#: a fresh mapping to fault in and zero (measured: 64 MiB fetches cost librdkafka up to
#: 2.2 CPU s/GB against 0.7-0.9 at 16 MiB and 4 MiB).
FETCH_BYTES = 16 << 20
IN_FLIGHT = 5
MB = 1e6
_HDR = struct.Struct(">i")
_REQ = struct.Struct(">ii")  # frame size, requested reply size
_BASE = struct.Struct(">q")
SOCKET_REPEATS = 3  # the socket phases are short: each cell takes the median of this many
HEADLINE = (16384, 1, "1")  # value bytes, partitions, acks: the cell the ratios come from


class Phase(Timed):
    """Wall time, server CPU and client CPU of one phase."""

    def __init__(self, name: str, nbytes: int, server_pids: list[int]) -> None:
        super().__init__(server_pids)
        self.name = name
        self.nbytes = nbytes

    @property
    def mb_s(self) -> float:
        return self.nbytes / MB / self.wall

    def line(self) -> str:
        return (f"  {self.name:15s} {self.nbytes / MB:7.1f} MB in {self.wall:6.2f} s = "
                f"{self.mb_s:8.1f} MB/s   server CPU share {self.server_cpu / self.wall:4.2f}   "
                f"client CPU share {self.client_cpu / self.wall:4.2f}   "
                f"CPU s/GB server {self.server_cpu_s_per_gb:4.2f} client "
                f"{self.client_cpu / (self.nbytes / 1e9):4.2f}")

    @property
    def server_cpu_s_per_gb(self) -> float:
        """Server CPU seconds per GB moved: what the work costs, whatever else ran."""
        return self.server_cpu / (self.nbytes / 1e9)

    def figures(self) -> dict[str, float]:
        return {"mb_s": round(self.mb_s, 1), "seconds": round(self.wall, 3),
                "server_cpu_share": round(self.server_cpu / self.wall, 3),
                "client_cpu_share": round(self.client_cpu / self.wall, 3),
                "server_cpu_s_per_gb": round(self.server_cpu_s_per_gb, 3)}


# ---- plain socket server (runs in its own process) ---------------------------------------
def serve_socket(store: str | None = None) -> None:
    """Accept connections one after another; answer each frame with the requested reply.

    With ``store`` (a directory) each connection's frames are also appended to a file of
    their own there (the benchmark removes them after a cell's socket phases, so each phase
    fills as much new page cache as the broker did). It dies with the benchmark, however
    that ends (the broker's lifeline)."""
    hold()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    print(f"port {listener.getsockname()[1]}", flush=True)
    hdr = bytearray(4)
    hdr_view = memoryview(hdr)
    inbuf = bytearray(1 << 20)
    out = bytearray(4 + (1 << 20))
    for n in itertools.count():
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        path = os.path.join(store, f"frames-{n}") if store else None
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if path else -1
        with conn:
            while read_into(conn, hdr_view):
                (size,) = _HDR.unpack_from(hdr)
                if size > len(inbuf):
                    inbuf = bytearray(size)
                frame = memoryview(inbuf)[:size]
                read_into(conn, frame)
                while fd >= 0 and frame:  # one write, but a regular file may take less
                    frame = frame[os.write(fd, frame):]
                (reply,) = _HDR.unpack_from(inbuf)
                if 4 + reply > len(out):
                    out = bytearray(4 + reply)
                _HDR.pack_into(out, 0, reply)
                conn.sendall(memoryview(out)[: 4 + reply])
        if path:
            os.close(fd)


class SocketServer:
    def __init__(self, store: Path | None = None) -> None:
        self.directory = store
        self._lifeline = Lifeline()
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.broker_throughput", "--serve-socket"]
                                     + (["--store", str(store)] if store else []),
                                     stdout=subprocess.PIPE, text=True,
                                     env=self._lifeline.child_env(),
                                     pass_fds=self._lifeline.pass_fds)
        self._lifeline.started()
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
        self._lifeline.close()


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
            size = max(8, min(frame, remaining))
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


# ---- librdkafka against the broker ------------------------------------------------------
class Stats:
    """The last statistics librdkafka reported (``statistics.interval.ms``)."""

    def __init__(self) -> None:
        self.last: dict[str, Any] = {}

    def __call__(self, raw: str) -> None:
        self.last = json.loads(raw)

    def average(self, request: str, direction: str) -> float | None:
        """Bytes per ``request`` over the brokers' connections (not the bootstrap ones):
        ``tx`` bytes per request sent, or ``rx`` bytes per response received."""
        nbytes = count = 0
        for name, b in self.last.get("brokers", {}).items():
            if "bootstrap" in name or b.get("nodeid", -1) < 0:
                continue
            n = b.get("req", {}).get(request, 0)
            if n:
                nbytes += b.get(f"{direction}bytes", 0)
                count += b.get(direction, 0)
        return nbytes / count if count else None


def create_topic(bootstrap: str, topic: str, partitions: int, rf: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, rf)])[topic].result(30)


def delete_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result(30)


def produce(bootstrap: str, topic: str, n: int, value_bytes: int, acks: str,
            pids: list[int]) -> tuple[Phase, float | None]:
    from confluent_kafka import Producer

    stats = Stats()
    producer = Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "enable.idempotence": False,
        "compression.type": "none", "linger.ms": 5, "batch.size": 1 << 20,
        "message.max.bytes": 4 << 20, "queue.buffering.max.kbytes": 1 << 20,
        "queue.buffering.max.messages": 1_000_000, "max.in.flight": IN_FLIGHT,
        "statistics.interval.ms": 100, "stats_cb": stats, "socket.nagle.disable": True,
        # Delivery reports for failures only: a Python callback per record cost the client
        # more than the broker's whole share of the work; the fetch phase checks the count.
        "delivery.report.only.error": True,
    })
    producer.list_topics(topic, timeout=10)
    value = os.urandom(value_bytes)
    send = producer.produce
    failed: list[Any] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    with Phase("produce", n * value_bytes, pids) as phase:
        for _ in range(n):
            while True:
                try:
                    send(topic, value, on_delivery=delivered)
                    break
                except BufferError:  # librdkafka's queue is full: let deliveries drain it
                    producer.poll(0.01)
        if producer.flush(120) != 0:
            raise RuntimeError("produce did not finish")
    if failed:
        raise RuntimeError(f"{len(failed)} records failed: {failed[0]}")
    time.sleep(0.15)
    producer.poll(0)  # the statistics after the last request
    return phase, stats.average("Produce", "tx")


def fetch(bootstrap: str, topic: str, n: int, value_bytes: int, partitions: int,
          pids: list[int], partition_bytes: int = FETCH_BYTES,
          name: str = "fetch") -> tuple[Phase, float | None]:
    """Read the topic from the beginning, timed as the phase ``name``; ``partition_bytes`` is
    the consumer's ``max.partition.fetch.bytes`` (librdkafka's default is 1 MiB)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    stats = Stats()
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
        "fetch.max.bytes": FETCH_BYTES, "max.partition.fetch.bytes": partition_bytes,
        "receive.message.max.bytes": 128 << 20, "fetch.wait.max.ms": 100,
        "queued.max.messages.kbytes": 1 << 20, "statistics.interval.ms": 100,
        "stats_cb": stats, "socket.nagle.disable": True,
        # librdkafka stops fetching a partition holding queued.min.messages (100,000) and
        # waits fetch.queue.backoff.ms (1 s) before it looks again: with 1 KiB values the
        # consume loop falls that far behind, and the consumer sat idle for a second.
        "queued.min.messages": 10_000_000, "fetch.queue.backoff.ms": 5,
    })
    try:
        consumer.list_topics(topic, timeout=10)
        stored = sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                     for p in range(partitions))
        if stored != n:
            raise RuntimeError(f"the broker holds {stored} records, {n} were produced")
        count = nbytes = 0
        deadline = time.monotonic() + 600
        with Phase(name, n * value_bytes, pids) as phase:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            while count < n:
                # consume() waits for num_messages or the timeout: never ask for more than is left
                for m in consumer.consume(num_messages=min(10_000, n - count), timeout=1.0):
                    if m.error() is not None:
                        raise RuntimeError(f"consume failed: {m.error()}")
                    count += 1
                    nbytes += len(m)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"fetched only {count} of {n} records")
        if count != n or nbytes != n * value_bytes:
            raise RuntimeError(f"fetched {count} records / {nbytes} bytes, expected {n}")
        time.sleep(0.15)
        consumer.poll(0)
        return phase, stats.average("Fetch", "rx")
    finally:
        consumer.close()


def raw_fetch(port: int, topic: str, partitions: int, n: int) -> None:
    """The broker's fetch path without a client's work: Fetch v11 requests for every
    partition, one at a time, each response read whole into a preallocated buffer (as the
    socket baseline reads its frames); only the last batch header of each partition is
    looked at, for the next offset. Stops when ``n`` records were returned."""
    from broker_sim.protocol import api

    offsets = [0] * partitions
    buf = bytearray(2 * FETCH_BYTES)
    view = memoryview(buf)
    hdr = memoryview(bytearray(4))
    cid = 0
    with _connect(port) as s:
        while sum(offsets) < n:
            cid += 1
            s.sendall(api.encode_request(1, 11, cid, "raw", {
                "replica_id": -1, "max_wait_ms": 100, "min_bytes": 1, "max_bytes": FETCH_BYTES,
                "isolation_level": 0, "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": topic, "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": offsets[p],
                     "log_start_offset": -1, "partition_max_bytes": FETCH_BYTES}
                    for p in range(partitions)]}],
                "forgotten_topics_data": [], "rack_id": ""}))
            read_into(s, hdr)
            size = _HDR.unpack(hdr)[0]
            if size > len(buf):
                buf = bytearray(size)
                view = memoryview(buf)
            read_into(s, view[:size])
            _, body = api.decode_response(1, 11, view[:size])
            for p in body.responses[0].partitions:
                records = p.records
                if p.error_code or not records:
                    continue
                pos = last = 0
                while pos + 12 <= len(records):  # batch headers: base offset, length
                    last = pos
                    pos += 12 + _HDR.unpack_from(records, pos + 8)[0]
                base, delta = _BASE.unpack_from(records, last)[0], _HDR.unpack_from(records, last + 23)[0]
                offsets[p.partition_index] = base + delta + 1


@dataclass
class Cell:
    value_bytes: int
    partitions: int
    acks: str
    runs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.value_bytes // 1024}k_{self.partitions}p_acks{self.acks}"

    def median(self, *path: str) -> float:
        values = []
        for run in self.runs:
            v: Any = run
            for k in path:
                v = v[k]
            values.append(v)
        return round(statistics.median(values), 4)


def run_cell(cell: Cell, run: int, bootstrap: str, pids: list[int], rf: int,
             ports: list[int], sock: SocketServer, store: SocketServer, total: int) -> None:
    n = max(1, total // cell.value_bytes)
    nbytes = n * cell.value_bytes
    topic = f"bench-{cell.name}-r{run}"
    create_topic(bootstrap, topic, cell.partitions, rf)
    wait_in_sync(ports, topic, cell.partitions, replicas=rf)
    print(f"{cell.name} run {run + 1}: {n:,} records x {cell.value_bytes} B")
    prod, request_size = produce(bootstrap, topic, n, cell.value_bytes, cell.acks, pids)
    print(prod.line())
    fet, response_size = fetch(bootstrap, topic, n, cell.value_bytes, cell.partitions, pids)
    print(fet.line())
    raw: Phase | None = None
    if rf == 1:  # one broker: every partition's leader is on ports[0]
        with Phase("raw fetch", nbytes, pids) as raw:
            raw_fetch(ports[0], topic, cell.partitions, n)
        print(raw.line())
    delete_topic(bootstrap, topic)
    produce_frame = round(request_size) if request_size else 1 << 20
    fetch_frame = round(response_size) if response_size else 1 << 20
    sps, sss, sfs = [], [], []
    for _ in range(SOCKET_REPEATS):  # short phases: the median of a few
        with Phase("socket produce", nbytes, [sock.pid]) as sp:
            socket_produce(sock.port, nbytes, produce_frame)
        with Phase("socket+file produce", nbytes, [store.pid]) as ss:
            socket_produce(store.port, nbytes, produce_frame)
        with Phase("socket fetch", nbytes, [sock.pid]) as sf:
            socket_fetch(sock.port, nbytes, fetch_frame)
        sps.append(sp)
        sss.append(ss)
        sfs.append(sf)
    assert store.directory is not None
    for stored in store.directory.iterdir():
        stored.unlink()
    sp, ss, sf = (sorted(phases, key=lambda ph: ph.wall)[SOCKET_REPEATS // 2]
                  for phases in (sps, sss, sfs))
    print(sp.line() + f"   frames {produce_frame:,} B, median of {SOCKET_REPEATS}")
    print(ss.line() + f"   frames {produce_frame:,} B, median of {SOCKET_REPEATS}")
    print(sf.line() + f"   frames {fetch_frame:,} B, median of {SOCKET_REPEATS}")
    ratios = {"produce_vs_socket": round(prod.mb_s / sp.mb_s, 4),
              "produce_vs_socket_file": round(prod.mb_s / ss.mb_s, 4),
              "fetch_vs_socket": round(fet.mb_s / sf.mb_s, 4)}
    if raw is not None:
        ratios["raw_fetch_vs_socket"] = round(raw.mb_s / sf.mb_s, 4)
    print(f"  produce {ratios['produce_vs_socket']:.3f}x socket "
          f"({ratios['produce_vs_socket_file']:.3f}x socket+file), "
          f"fetch {ratios['fetch_vs_socket']:.3f}x socket"
          + (f", raw fetch {ratios['raw_fetch_vs_socket']:.3f}x socket" if raw else ""))
    cell.runs.append({"produce": prod.figures(), "fetch": fet.figures(),
                      **({"raw_fetch": raw.figures()} if raw else {}),
                      "socket_produce": sp.figures(), "socket_file_produce": ss.figures(),
                      "socket_fetch": sf.figures(),
                      "produce_frame_bytes": produce_frame, "fetch_frame_bytes": fetch_frame,
                      **ratios})


def _ports(bootstrap: str) -> list[int]:
    return [int(a.rsplit(":", 1)[1]) for a in bootstrap.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=512, help="MB of values per cell and run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--values", default="1024,16384", help="value sizes in bytes")
    parser.add_argument("--partitions", default="1,4")
    parser.add_argument("--acks", default="1,all")
    parser.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                        help="a broker option for every broker (e.g. fetch.zero.copy.enable=false)")
    parser.add_argument("--serve-socket", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_socket:
        serve_socket(args.store)
        return

    from broker_sim.cluster import LocalCluster
    from broker_sim.process import BrokerProcess

    overrides = dict(o.split("=", 1) for o in args.override)
    total = int(args.mb * MB)
    values = [int(v) for v in args.values.split(",")]
    parts = [int(p) for p in args.partitions.split(",")]
    acks_list = args.acks.split(",")
    print(f"{args.mb:.0f} MB of values per cell, {args.runs} runs, {os.cpu_count()} CPUs, "
          f"confluent-kafka {__import__('confluent_kafka').version()[0]} "
          f"(librdkafka {__import__('confluent_kafka').libversion()[0]}), "
          f"broker overrides {overrides or 'none'}")
    cells = {a: [Cell(v, p, a) for v in values for p in parts] for a in acks_list}
    tmp = Path(tempfile.mkdtemp(prefix="pyq-bench-"))
    (tmp / "socket-file").mkdir()
    sock = SocketServer()
    store = SocketServer(tmp / "socket-file")
    try:
        for acks in acks_list:
            if acks == "1":
                broker = BrokerProcess(tmp / "broker", port=0, overrides=overrides).start()
                stop: Callable[[], object]
                stop, pids, bootstrap, rf = broker.stop, [broker.pid], broker.bootstrap_servers, 1
            else:
                cluster = LocalCluster(tmp / "cluster", brokers=3, overrides=overrides).start()
                stop, rf = cluster.stop, 3
                pids = [b.pid for b in cluster.brokers] + [cluster.controller.pid]
                bootstrap = cluster.bootstrap_servers
            try:
                for run in range(args.runs):
                    for cell in cells[acks]:
                        run_cell(cell, run, bootstrap, pids, rf, _ports(bootstrap), sock, store,
                                 total)
            finally:
                stop()
    finally:
        sock.stop()
        store.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    all_cells = [c for a in acks_list for c in cells[a]]
    print(f"medians over {args.runs} runs (MB/s; broker CPU share / client CPU share):")
    figures: dict[str, Any] = {}
    for c in all_cells:
        fig = {
            "produce_mb_s": c.median("produce", "mb_s"), "fetch_mb_s": c.median("fetch", "mb_s"),
            "socket_produce_mb_s": c.median("socket_produce", "mb_s"),
            "socket_file_produce_mb_s": c.median("socket_file_produce", "mb_s"),
            "produce_vs_socket_file": c.median("produce_vs_socket_file"),
            "socket_fetch_mb_s": c.median("socket_fetch", "mb_s"),
            "produce_vs_socket": c.median("produce_vs_socket"),
            "fetch_vs_socket": c.median("fetch_vs_socket"),
            "broker_cpu_share_produce": c.median("produce", "server_cpu_share"),
            "broker_cpu_share_fetch": c.median("fetch", "server_cpu_share"),
            "client_cpu_share_produce": c.median("produce", "client_cpu_share"),
            "client_cpu_share_fetch": c.median("fetch", "client_cpu_share"),
            "broker_cpu_s_per_gb_produce": c.median("produce", "server_cpu_s_per_gb"),
            "broker_cpu_s_per_gb_fetch": c.median("fetch", "server_cpu_s_per_gb"),
            "runs": c.runs,
        }
        if "raw_fetch" in c.runs[0]:
            fig["raw_fetch_mb_s"] = c.median("raw_fetch", "mb_s")
            fig["raw_fetch_vs_socket"] = c.median("raw_fetch_vs_socket")
        figures[c.name] = fig
        print(f"  {c.name:16s} produce {fig['produce_mb_s']:7.1f} ({fig['produce_vs_socket']:.3f}x"
              f" socket, {fig['produce_vs_socket_file']:.3f}x socket+file; "
              f"{fig['broker_cpu_share_produce']:.2f}/{fig['client_cpu_share_produce']:.2f})"
              f"   fetch {fig['fetch_mb_s']:7.1f} ({fig['fetch_vs_socket']:.3f}x socket; "
              f"{fig['broker_cpu_share_fetch']:.2f}/{fig['client_cpu_share_fetch']:.2f})"
              + (f"   raw fetch {fig['raw_fetch_mb_s']:7.1f} ({fig['raw_fetch_vs_socket']:.3f}x)"
                 if "raw_fetch_mb_s" in fig else ""))
    head = next((c for c in all_cells
                 if (c.value_bytes, c.partitions, c.acks) == HEADLINE), None)
    ratios = {} if head is None else {
        "fetch_vs_socket": head.median("fetch_vs_socket"),
        "produce_vs_socket": head.median("produce_vs_socket"),
    }
    if ratios:
        print(f"headline (16 KiB, 1 partition, acks=1): fetch {ratios['fetch_vs_socket']:.3f}x "
              f"socket (target 0.5), produce {ratios['produce_vs_socket']:.3f}x socket (target 0.3)")
    figures.update({"mb_per_cell": args.mb, "runs": args.runs, "overrides": overrides,
                    "cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "librdkafka": __import__("confluent_kafka").libversion()[0]})
    print(json.dumps({"benchmark": "broker_throughput", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
