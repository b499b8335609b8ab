"""Group coordinator benchmark: heartbeat cost as a group grows, and failover time.

What is measured (one run, broker processes on 127.0.0.1):

* **heartbeat cost** — one ``python -m broker_sim`` broker (``__consumer_offsets`` with one
  partition, so one coordinator holds every group). A load generator in this process opens
  one TCP connection per member, as real consumers do, joins ``--small`` (10) members to one
  group and ``--large`` (1,000) members to another (JoinGroup v3 on every connection at
  once, then SyncGroup; the leader hands out empty assignments), and then has every member
  send Heartbeat v4 every ``--interval-ms`` (100 ms) for ``--seconds`` (10 s), each member's
  next heartbeat due one interval after its previous one was sent, and never two in flight
  per member. The broker's CPU (utime + stime from /proc) is read around each heartbeat
  phase; its idle CPU rate, measured over a quiet period with both groups' sockets open and
  silent, is subtracted, so what is left is the work the heartbeats caused. The ratio is
  CPU per answered heartbeat with 1,000 members ÷ with 10 (target ≤ 1.5). Each member's
  liveness is one timer entry re-armed by its heartbeat, so the cost of one heartbeat
  should not grow with the group. The small phase runs before and after the large one and
  the two are averaged.
* **failover** — one broker; a topic of 6 partitions fed by a producer (``confluent_kafka``,
  one record per partition every 20 ms); three librdkafka consumers of one group, each its
  own process (``tests/groups/consumer_worker.py``), ``session.timeout.ms`` ``--session-ms``
  (6000), ``heartbeat.interval.ms`` 500, committing after each poll. One consumer is
  killed with SIGKILL; the time until the two survivors have consumed a record from every
  partition the dead one owned, divided by ``session.timeout.ms``, is the ratio
  (target ≤ 1.3); the median of ``--failovers`` (3) groups counts.

Where the time goes: a heartbeat costs the broker a read of the frame in a network
processor, the request queue, a request handler (decode, ACL check, the group's lock, one
DelayedHeartbeat completed — its timer entry unlinked — and one added to the timing wheel)
and the response's encoding and write. None of it scans members, so 1,000 members cost per
heartbeat what 10 do; what grows with the group is only the number of heartbeats per
second. Failover is the session timeout (the dead member's last DelayedHeartbeat expires),
plus up to one heartbeat interval for the survivors to hear REBALANCE_IN_PROGRESS, plus
the rejoin, the leader's assignment and SyncGroup, and the first fetch from the committed
offsets.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "groups", "ratios": {"heartbeat_cost_1000_vs_10": ...,
     "failover_vs_session_timeout": ...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import heapq
import json
import selectors
import socket
import statistics
import struct
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks._proc import proc_cpu_seconds
from broker_sim.process import BrokerProcess
from broker_sim.protocol.api import ApiKey, decode_response, encode_request

SIZE = struct.Struct(">i")
JOIN_VERSION, SYNC_VERSION, HEARTBEAT_VERSION, LEAVE_VERSION = 3, 3, 4, 3


class Member:
    __slots__ = ("sock", "buf", "member_id", "generation", "frame", "due", "in_flight")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.member_id = ""
        self.generation = -1
        self.frame = b""
        self.due = 0.0
        self.in_flight = False

    def frames(self) -> list[bytes]:
        """Whole response frames received so far (size prefix stripped)."""
        out = []
        while len(self.buf) >= 4:
            (n,) = SIZE.unpack_from(self.buf)
            if len(self.buf) < 4 + n:
                break
            out.append(bytes(self.buf[4:4 + n]))
            del self.buf[:4 + n]
        return out


def _exchange(members: list[Member], frames: list[bytearray], api_key: int, version: int,
              timeout: float = 120) -> list[Any]:
    """Send one request on each member's connection; wait for every answer."""
    sel = selectors.DefaultSelector()
    answers: list[Any] = [None] * len(members)
    for i, (m, f) in enumerate(zip(members, frames, strict=True)):
        m.sock.sendall(f)
        sel.register(m.sock, selectors.EVENT_READ, i)
    waiting = len(members)
    deadline = time.monotonic() + timeout
    while waiting:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{waiting} of {len(members)} answers missing")
        for key, _ in sel.select(1.0):
            m = members[key.data]
            m.buf += m.sock.recv(65536)
            for frame in m.frames():
                answers[key.data] = decode_response(api_key, version, frame)[1]
                sel.unregister(m.sock)
                waiting -= 1
    sel.close()
    return answers


def await_coordinator(port: int, group: str) -> None:
    """FindCoordinator until it names a broker (the first one creates __consumer_offsets)."""
    for _ in range(200):
        m = Member(socket.create_connection(("127.0.0.1", port)))
        [answer] = _exchange([m], [encode_request(ApiKey.FIND_COORDINATOR, 1, 0, "bench", {
            "key": group, "key_type": 0})], ApiKey.FIND_COORDINATOR, 1)
        m.sock.close()
        if answer.error_code == 0:
            return
        time.sleep(0.1)
    raise TimeoutError(f"no coordinator for {group}")


def form_group(port: int, group: str, n: int) -> list[Member]:
    await_coordinator(port, group)
    members = [Member(socket.create_connection(("127.0.0.1", port))) for _ in range(n)]
    joins = [encode_request(ApiKey.JOIN_GROUP, JOIN_VERSION, 1, "bench", {
        "group_id": group, "session_timeout_ms": 30_000, "rebalance_timeout_ms": 60_000,
        "member_id": "", "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]}) for _ in members]
    results = _exchange(members, joins, ApiKey.JOIN_GROUP, JOIN_VERSION)
    assert {r.error_code for r in results} == {0}, {r.error_code for r in results}
    leader = next(r for r in results if r.members)
    assignments = [{"member_id": x.member_id, "assignment": b""} for x in leader.members]
    for m, r in zip(members, results, strict=True):
        m.member_id, m.generation = r.member_id, r.generation_id
    syncs = [encode_request(ApiKey.SYNC_GROUP, SYNC_VERSION, 2, "bench", {
        "group_id": group, "generation_id": m.generation, "member_id": m.member_id,
        "group_instance_id": None, "assignments": assignments if r is leader else []})
        for m, r in zip(members, results, strict=True)]
    synced = _exchange(members, syncs, ApiKey.SYNC_GROUP, SYNC_VERSION)
    assert {r.error_code for r in synced} == {0}, {r.error_code for r in synced}
    for m in members:
        m.frame = bytes(encode_request(ApiKey.HEARTBEAT, HEARTBEAT_VERSION, 3, "bench", {
            "group_id": group, "generation_id": m.generation, "member_id": m.member_id,
            "group_instance_id": None}))
    return members


def heartbeat(members: list[Member], seconds: float, interval_ms: int) -> tuple[int, int]:
    """Every member heartbeats each interval for ``seconds``: (answered, errors)."""
    sel = selectors.DefaultSelector()
    interval = interval_ms / 1000
    start = time.monotonic()
    due: list[tuple[float, int]] = []
    for i, m in enumerate(members):
        m.due = start + interval * i / len(members)  # spread evenly over one interval
        m.in_flight = False
        heapq.heappush(due, (m.due, i))
        sel.register(m.sock, selectors.EVENT_READ, i)
    answered = errors = 0
    end = start + seconds
    while True:
        now = time.monotonic()
        if now >= end and not any(m.in_flight for m in members):
            break
        while due and due[0][0] <= now and now < end:
            _, i = heapq.heappop(due)
            m = members[i]
            m.sock.sendall(m.frame)
            m.in_flight = True
            m.due = now + interval
        wait = max(0.0, min(due[0][0] if due else end, end) - time.monotonic()) if now < end else 0.05
        for key, _ in sel.select(wait):
            m = members[key.data]
            m.buf += m.sock.recv(65536)
            for frame in m.frames():
                # header: correlation id (4) + tagged fields (1); body: throttle (4), error (2)
                errors += frame[9:11] != b"\x00\x00"
                answered += 1
                m.in_flight = False
                heapq.heappush(due, (m.due, key.data))
    sel.close()
    return answered, errors


def leave(port: int, group: str, members: list[Member]) -> None:
    sock = socket.create_connection(("127.0.0.1", port))
    m = Member(sock)
    _exchange([m], [encode_request(ApiKey.LEAVE_GROUP, LEAVE_VERSION, 4, "bench", {
        "group_id": group, "members": [{"member_id": x.member_id, "group_instance_id": None}
                                       for x in members]})], ApiKey.LEAVE_GROUP, LEAVE_VERSION)
    sock.close()
    for x in members:
        x.sock.close()


def heartbeat_cost(args: argparse.Namespace, work: Path) -> dict[str, float]:
    broker = BrokerProcess(work / "hb", overrides={
        "offsets.topic.num.partitions": "1", "max.connections.per.ip": str(args.large + 100),
        "group.initial.rebalance.delay.ms": "3000", "num.network.threads": "2"})
    broker.start()
    try:
        port = broker.port
        assert port is not None
        small_a = form_group(port, "hb-small-a", args.small)
        large = form_group(port, "hb-large", args.large)
        small_b = form_group(port, "hb-small-b", args.small)
        idle_start, cpu0 = time.monotonic(), proc_cpu_seconds(broker.pid)
        time.sleep(args.idle_seconds)
        idle_rate = (proc_cpu_seconds(broker.pid) - cpu0) / (time.monotonic() - idle_start)
        out: dict[str, float] = {"broker_idle_cpu_per_s": idle_rate}
        for name, members in (("small_a", small_a), ("large", large), ("small_b", small_b)):
            t0, c0 = time.monotonic(), proc_cpu_seconds(broker.pid)
            answered, errors = heartbeat(members, args.seconds, args.interval_ms)
            elapsed, cpu = time.monotonic() - t0, proc_cpu_seconds(broker.pid) - c0
            busy = max(cpu - idle_rate * elapsed, 0.0)
            out[f"{name}_heartbeats_per_s"] = answered / elapsed
            out[f"{name}_broker_cpu_share"] = cpu / elapsed
            out[f"{name}_us_per_heartbeat"] = busy / answered * 1e6
            out[f"{name}_errors"] = errors
            print(f"{len(members):5d} members: {answered / elapsed:8.0f} heartbeats/s answered "
                  f"(asked {len(members) * 1000 / args.interval_ms:.0f}/s), broker CPU "
                  f"{cpu / elapsed:.0%}, {busy / answered * 1e6:.1f} µs per heartbeat "
                  f"(idle {idle_rate:.1%} subtracted), {errors} errors")
        for group, members in (("hb-small-a", small_a), ("hb-large", large), ("hb-small-b", small_b)):
            leave(port, group, members)
        return out
    finally:
        broker.stop()


def failover(args: argparse.Namespace, work: Path) -> tuple[list[float], dict[str, float]]:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from tests.groups.group_clients import ConsumerProcess, covers

    broker = BrokerProcess(work / "failover", overrides={
        "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"})
    broker.start()
    stop = threading.Event()
    ratios, seconds = [], []
    try:
        boot = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": boot})  # kept alive until the result is in
        admin.create_topics([NewTopic("feed", 6, 1)])["feed"].result(30)

        def produce() -> None:
            producer = Producer({"bootstrap.servers": boot, "linger.ms": 5})
            while not stop.is_set():
                for p in range(6):
                    producer.produce("feed", b"x", partition=p)
                producer.poll(0)
                time.sleep(0.02)
            producer.flush(10)

        feeder = threading.Thread(target=produce, daemon=True)
        feeder.start()
        for trial in range(args.failovers):
            members = [ConsumerProcess("confluent", boot, f"failover-{trial}", "feed",
                                       session_ms=args.session_ms, heartbeat_ms=500)
                       for _ in range(3)]
            try:
                deadline = time.monotonic() + 60
                while not (covers(members, 6) and all(m.assignment for m in members)):
                    if time.monotonic() > deadline:
                        raise TimeoutError("three members did not form a group")
                    time.sleep(0.05)
                time.sleep(1.0)
                victim, survivors = members[0], members[1:]
                orphaned = list(victim.assignment)
                victim.kill()
                killed = time.monotonic()
                done: dict[int, float] = {}
                while len(done) < len(orphaned):
                    if time.monotonic() > killed + 60:
                        raise TimeoutError(f"partitions {orphaned} not taken over")
                    for p in orphaned:
                        seen = [t for s in survivors if (t := s.first_arrival(p, killed)) is not None]
                        if seen and p not in done:
                            done[p] = min(seen)
                    time.sleep(0.02)
                took = max(done.values()) - killed
                seconds.append(took)
                ratios.append(took * 1000 / args.session_ms)
                print(f"failover {trial}: partitions {orphaned} consumed by the survivors "
                      f"{took:.2f} s after the kill (session.timeout.ms {args.session_ms})")
            finally:
                for m in members:
                    m.stop()
    finally:
        stop.set()
        broker.stop()
    return ratios, {"failover_seconds_median": statistics.median(seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--small", type=int, default=10)
    parser.add_argument("--large", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval-ms", type=int, default=100)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--failovers", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pyq-bench-groups-") as tmp:
        work = Path(tmp)
        figures = heartbeat_cost(args, work)
        small = (figures["small_a_us_per_heartbeat"] + figures["small_b_us_per_heartbeat"]) / 2
        cost_ratio = figures["large_us_per_heartbeat"] / small
        print(f"heartbeat cost, {args.large} vs {args.small} members: {cost_ratio:.2f} (target <= 1.5)")
        ratios, more = failover(args, work)
        figures.update(more)
        failover_ratio = statistics.median(ratios)
        print(f"failover / session.timeout.ms: {failover_ratio:.2f} (target <= 1.3)")
    print(json.dumps({"benchmark": "groups",
                      "ratios": {"heartbeat_cost_1000_vs_10": round(cost_ratio, 3),
                                 "failover_vs_session_timeout": round(failover_ratio, 3)},
                      "figures": {k: round(v, 4) for k, v in figures.items()}}))


if __name__ == "__main__":
    main()
