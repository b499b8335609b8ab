"""Kafka's Java clients on a 3-broker pyq cluster, through the tools Kafka's own system
tests drive them with (issue 29).

* ``VerifiableProducer`` (acks=all; it sets retries=0, so a send caught by the kill fails
  and is reported) and ``VerifiableConsumer`` (a classic group) run side by side while the
  leader of a partition is killed with SIGKILL and started again: every record the producer
  was told is written is read back, at the offset it was acknowledged at.
* The same producer while a follower is killed: its sends stall only until the controller
  fences the follower and shrinks the ISR.
* ``TransactionalMessageCopier`` copies an input topic to an output topic exactly once
  (consume, produce and commit the consumed offsets in one transaction, KIP-447's group
  metadata) while the broker coordinating its transactions is killed and started again:
  a read_committed read of the output holds each input record once.
  With ``--enable-random-aborts`` too, whose aborted copies read_committed skips.
* A Java consumer with ``group.protocol=consumer`` (KIP-848) reads a topic and commits;
  pyq's Admin and Kafka's ``kafka-consumer-groups`` see its offsets.

The tools print one JSON event per line on stdout; :class:`JavaTool` runs one in the
background and collects them. One cluster serves the module; tests use their own topics.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker_sim.process import BrokerProcess
from connector.client import Admin, Fetcher, Producer
from connector.cluster import EmbeddedCluster
from reference.kafka_tools import run_tool, tool_command
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

#: Generous: the machine has 2 cores and other tests run beside these.
WAIT = 120.0


@pytest.fixture(scope="module")
def pyq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(brokers=3, data_dir=tmp_path_factory.mktemp("pyq-for-java-clients"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def servers(pyq: EmbeddedCluster) -> str:
    return pyq.bootstrap_servers


def kind_of(event: dict[str, Any]) -> str:
    """The verifiable tools name their events, the copier its stages."""
    return str(event.get("name") or event.get("stage") or "")


class JavaTool:
    """A Kafka tool running in the background; its stdout's JSON events, as they come."""

    def __init__(self, tool: str, *args: str, stderr: Path) -> None:
        self.name = tool.rsplit(".", 1)[-1]
        self.events: list[dict[str, Any]] = []
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._stderr_path = stderr
        self._stdout_path = stderr.with_suffix(".out")
        with open(stderr, "wb") as err:
            self.proc = subprocess.Popen(tool_command(tool, *args), stdout=subprocess.PIPE,
                                         stderr=err, stdin=subprocess.DEVNULL, text=True)
        self._reader = threading.Thread(target=self._read, name=f"{self.name}-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with open(self._stdout_path, "w") as copy:
            for line in self.proc.stdout:
                copy.write(line)
                self._parse(line)

    def _parse(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        if isinstance(event, dict):
            with self._lock:
                self.events.append(event)
                self.counts[kind_of(event)] += 1

    @property
    def pid(self) -> int:
        return self.proc.pid

    def count(self, kind: str) -> int:
        with self._lock:
            return self.counts[kind]

    def running(self) -> JavaTool:
        """Itself, unless it failed: then a RuntimeError (which ``wait_for`` does not retry)
        with its stderr, instead of waiting out the timeout for what will not come."""
        if self.proc.poll() not in (None, 0):
            raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; last event "
                               f"{self.last()}\nstderr:\n{self.stderr()}")
        return self

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if kind_of(e) == kind]

    def last(self) -> dict[str, Any] | None:
        with self._lock:
            return self.events[-1] if self.events else None

    def stderr(self) -> str:
        return self._stderr_path.read_text(errors="replace")[-4000:]

    def wait(self, timeout: float) -> int:
        """The exit code once it exits by itself (and its stdout is read to the end)."""
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        return code

    def stop(self) -> None:
        """SIGTERM (its shutdown hook closes the clients), SIGKILL if that does not end it."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()
        self._reader.join(10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def leader_of(admin: Admin, topic: str, partition: int) -> tuple[int, list[int]]:
    [p] = [p for p in admin.describe_topics([topic])[topic].partitions if p.partition == partition]
    return p.leader, list(p.isr)


def exited(broker: BrokerProcess) -> bool:
    """Whether ``broker``'s process was started and has exited (killed by the test)."""
    return broker.proc is not None and broker.proc.poll() is not None


def all_in_sync(admin: Admin, topic: str, broker: int) -> bool:
    return all(broker in p.isr and p.leader >= 0
               for p in admin.describe_topics([topic])[topic].partitions)


def test_verifiable_producer_and_consumer_lose_no_acked_record_when_a_leader_is_killed(
        pyq: EmbeddedCluster, servers: str, tmp_path: Path) -> None:
    topic, total = "jc-verifiable", 20000
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic(topic, 3, 3, {"min.insync.replicas": "2"})
        wait_for(lambda: all(p.leader >= 0 and len(p.isr) == 3
                             for p in admin.describe_topics([topic])[topic].partitions), WAIT,
                 what="every replica of the new topic in sync")
    started = time.monotonic()
    tools: list[JavaTool] = []
    victim = -1
    try:
        consumer = JavaTool("kafka-verifiable-consumer", "--bootstrap-server", servers,
                            "--topic", topic, "--group-id", "jc-verifiable-g",
                            "--group-protocol", "classic", "--verbose",
                            stderr=tmp_path / "consumer.err")
        tools.append(consumer)
        producer = JavaTool("kafka-verifiable-producer", "--bootstrap-server", servers,
                            "--topic", topic, "--max-messages", str(total), "--throughput", "2000",
                            "--acks", "-1", "--repeating-keys", "64",
                            stderr=tmp_path / "producer.err")
        tools.append(producer)

        wait_for(lambda: producer.running().count("producer_send_success") >= total // 5, WAIT,
                 what="a fifth of the records acknowledged")
        with Admin({"bootstrap.servers": servers}) as admin:
            victim, _ = leader_of(admin, topic, 0)
            acked_at_kill = producer.count("producer_send_success")
            pyq.broker(victim).kill()
            killed_at = time.monotonic()
            wait_for(lambda: leader_of(admin, topic, 0)[0] not in (victim, -1), WAIT,
                     what=f"a new leader of {topic}-0 after broker {victim} was killed")
            failover_s = time.monotonic() - killed_at
            # two replicas of three still make min.insync.replicas=2: acks=all goes on
            wait_for(lambda: producer.running().count("producer_send_success")
                     >= acked_at_kill + total // 10,
                     WAIT, what=f"records acknowledged with broker {victim} down")
            acked_while_down = producer.count("producer_send_success") - acked_at_kill
            pyq.broker(victim).start()
            wait_for(lambda: all_in_sync(admin, topic, victim), WAIT,
                     what=f"broker {victim} back in every ISR of {topic}")

        assert producer.wait(WAIT) == 0, producer.stderr()
        [tool_data] = producer.of("tool_data")
        assert producer.count("shutdown_complete") == 1
        acked = {e["value"]: (e["partition"], e["offset"]) for e in producer.of("producer_send_success")}
        failed = producer.of("producer_send_error")
        assert tool_data["sent"] == total and tool_data["acked"] == len(acked)
        assert len(acked) + len(failed) == total
        assert {p for p, _ in acked.values()} == {0, 1, 2}

        def consumed() -> dict[tuple[int, int], str]:
            return {(e["partition"], e["offset"]): e["value"] for e in consumer.of("record_data")}

        def missing() -> list[str]:
            seen = set(consumed().values())
            return [v for v in acked if v not in seen]

        wait_for(lambda: consumer.running() and not missing(), WAIT,
                 what="every acknowledged record consumed")
        got = consumed()
        # each acknowledged record is read at the partition and offset it was acknowledged at
        assert all(got.get(at) == value for value, at in acked.items())
        reads = sum(e["count"] for e in consumer.of("records_consumed"))
        # the group's committed offsets reach the end of every partition
        with Admin({"bootstrap.servers": servers}) as admin:
            ends = {tp.partition: o.offset for tp, o in admin.list_offsets(
                {(topic, p): "latest" for p in range(3)}).items()}
            wait_for(lambda: {tp.partition: o.offset for tp, o in
                              admin.fetch_offsets("jc-verifiable-g").items()} == ends, WAIT,
                     what=f"the group's offsets committed up to {ends}")
        commits = consumer.of("offsets_committed")
        consumer.stop()
        assert consumer.count("shutdown_complete") == 1
        print(f"\nVerifiableProducer: {total} sent, {len(acked)} acked ({len(failed)} send errors), "
              f"{acked_while_down} acked with leader {victim} of {topic}-0 killed "
              f"(new leader in {failover_s:.1f} s); VerifiableConsumer: {reads} records read, "
              f"{len(got)} distinct offsets, 0 acked records missing, "
              f"{len(commits)} commits; {time.monotonic() - started:.0f} s")
    finally:
        for t in tools:
            t.kill()
        if victim >= 0 and exited(pyq.broker(victim)):
            pyq.broker(victim).start()


def test_acks_all_sends_resume_once_a_killed_follower_is_fenced(
        pyq: EmbeddedCluster, servers: str, tmp_path: Path) -> None:
    """Kafka (KRaft) fences a dead broker after its session timeout and takes it out of
    every ISR; the leader's waiting acks=all appends then complete with the two replicas
    left (min.insync.replicas=2). Here the session timeout is 3 s: a send stalls a few
    seconds at most, and none fails."""
    topic, total = "jc-follower-kill", 6000
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic(topic, 1, 3, {"min.insync.replicas": "2"})
        wait_for(lambda: len(leader_of(admin, topic, 0)[1]) == 3, WAIT,
                 what="every replica of the new topic in sync")
    producer = JavaTool("kafka-verifiable-producer", "--bootstrap-server", servers,
                        "--topic", topic, "--max-messages", str(total), "--throughput", "1000",
                        "--acks", "-1", stderr=tmp_path / "producer.err")
    victim = -1
    try:
        wait_for(lambda: producer.running().count("producer_send_success") >= total // 6, WAIT,
                 what="the first records acknowledged")
        with Admin({"bootstrap.servers": servers}) as admin:
            leader, isr = leader_of(admin, topic, 0)
            victim = next(b for b in isr if b != leader)
            pyq.broker(victim).kill()
            wait_for(lambda: victim not in leader_of(admin, topic, 0)[1], WAIT,
                     what=f"broker {victim} fenced and out of the ISR")
            assert producer.wait(WAIT) == 0, producer.stderr()
            pyq.broker(victim).start()
            wait_for(lambda: all_in_sync(admin, topic, victim), WAIT,
                     what=f"broker {victim} back in the ISR")
    finally:
        producer.kill()
        if victim >= 0 and exited(pyq.broker(victim)):
            pyq.broker(victim).start()
    acks = sorted(e["timestamp"] for e in producer.of("producer_send_success"))
    errors = Counter(e["message"] for e in producer.of("producer_send_error"))
    longest_stall_ms = max(b - a for a, b in zip(acks, acks[1:], strict=False))
    print(f"\nfollower {victim} killed: {len(acks)} of {total} acked, send errors {dict(errors)}, "
          f"longest stall between acks {longest_stall_ms} ms")
    assert not errors
    assert longest_stall_ms < 15_000


@pytest.mark.parametrize("random_aborts", [False, True], ids=["commits", "random-aborts"])
def test_transactional_message_copier_copies_exactly_once_across_a_coordinator_kill(
        pyq: EmbeddedCluster, servers: str, tmp_path: Path, random_aborts: bool) -> None:
    """With ``--enable-random-aborts`` a third of the transactions are aborted and copied
    again: their records stay in the output's log, and read_committed must skip them.

    The transaction timeout is 30 s: a Produce in flight to a partition the killed broker
    followed completes once the controller fences it (a few seconds), well within it."""
    tag = "-aborts" if random_aborts else ""
    source, sink = f"jc-copy-in{tag}", f"jc-copy-out{tag}"
    group, txn_id = f"jc-copy-g{tag}", f"jc-copier{tag}"
    per_partition, partitions = 2000, 3
    total = per_partition * partitions
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic(source, partitions, 3)
        admin.create_topic(sink, partitions, 3, {"min.insync.replicas": "2"})
    inputs = {p: [f"v-{p}-{i}" for i in range(per_partition)] for p in range(partitions)}
    with Producer({"bootstrap.servers": servers, "acks": "all"}) as producer:
        futures = [producer.send(source, v.encode(), key=v.encode(), partition=p)
                   for p, values in inputs.items() for v in values]
        producer.flush()
        for f in futures:
            f.result(WAIT)

    started = time.monotonic()
    copier = JavaTool("org.apache.kafka.tools.TransactionalMessageCopier",
                      "--broker-list", servers, "--input-topic", source, "--input-partition", "0",
                      "--output-topic", sink, "--consumer-group", group,
                      "--transactional-id", txn_id, "--transaction-size", "100", "--transaction-timeout", "30000",
                      "--group-mode", "--use-group-metadata",
                      *(["--enable-random-aborts"] if random_aborts else []),
                      stderr=tmp_path / "copier.err")
    victim = -1
    try:
        def processed() -> int:
            last = copier.running().of("ProcessLoop")
            return last[-1]["totalProcessed"] if last else 0

        wait_for(lambda: processed() >= total // 5, WAIT, what="a fifth of the input copied")
        with Admin({"bootstrap.servers": servers}) as admin:
            victim = admin.find_transaction_coordinator(txn_id)
            copied_at_kill = processed()
            pyq.broker(victim).kill()
            wait_for(lambda: admin.find_transaction_coordinator(txn_id, timeout_ms=5000) != victim,
                     WAIT, what=f"a new transaction coordinator for {txn_id}")
            wait_for(lambda: processed() >= copied_at_kill + total // 10, WAIT,
                     what=f"transactions committed with broker {victim} down")
            copied_while_down = processed() - copied_at_kill
            pyq.broker(victim).start()
            wait_for(lambda: all_in_sync(admin, sink, victim), WAIT,
                     what=f"broker {victim} back in every ISR of {sink}")
        assert copier.wait(WAIT) == 0, copier.stderr()
    finally:
        copier.kill()
        if victim >= 0 and exited(pyq.broker(victim)):
            pyq.broker(victim).start()
    [done] = copier.of("ShutdownComplete")
    assert done["remaining"] == 0 and done["totalProcessed"] == total

    outputs: dict[int, list[str]] = {}
    written = 0  # every data record in the output's log, aborted ones included
    with Fetcher({"bootstrap.servers": servers, "isolation.level": "read_committed"}) as committed, \
            Fetcher({"bootstrap.servers": servers}) as uncommitted:
        for p in range(partitions):
            # no transaction left open: the last stable offset reaches the high watermark
            def stable(p: int = p) -> int | None:
                end = committed.offset_bounds(sink, p)[1]
                return end if end and end == uncommitted.offset_bounds(sink, p)[1] else None

            end = wait_for(stable, WAIT, what=f"{sink}-{p} stable")
            outputs[p] = [(r.value or b"").decode() for r in committed.iter_records(sink, p, 0, end)]
            written += sum(1 for _ in uncommitted.iter_records(sink, p, 0, end))
    copied = [v for values in outputs.values() for v in values]
    duplicates = [v for v, n in Counter(copied).items() if n > 1]
    assert not duplicates, f"{len(duplicates)} records copied twice, e.g. {duplicates[:5]}"
    assert Counter(copied) == Counter(v for values in inputs.values() for v in values)
    assert outputs == inputs  # each input partition to the same output partition, in order
    if random_aborts:
        assert written > total  # aborted copies are in the log, and were skipped
    with Admin({"bootstrap.servers": servers}) as admin:
        offsets = admin.fetch_offsets(group)
    assert {tp.partition: o.offset for tp, o in offsets.items() if tp.topic == source} == {
        p: per_partition for p in range(partitions)}
    print(f"\nTransactionalMessageCopier{' (random aborts)' if random_aborts else ''}: "
          f"{total} input records, {len(copied)} read_committed in the output, 0 duplicates, "
          f"{written - len(copied)} aborted records in the log skipped; {copied_while_down} "
          f"copied with transaction coordinator {victim} killed; "
          f"{time.monotonic() - started:.0f} s")


def test_a_java_consumer_with_group_protocol_consumer_reads_everything_and_commits(
        servers: str) -> None:
    topic, group, total = "jc-kip848", "jc-kip848-g", 300
    with Admin({"bootstrap.servers": servers}) as admin:
        admin.create_topic(topic, 3, 3)
    with Producer({"bootstrap.servers": servers, "acks": "all"}) as producer:
        futures = [producer.send(topic, b"value-%d" % i, key=b"key-%d" % i, partition=i % 3)
                   for i in range(total)]
        producer.flush()
        for f in futures:
            f.result(WAIT)

    done = run_tool("kafka-verifiable-consumer", "--bootstrap-server", servers, "--topic", topic,
                    "--group-id", group, "--group-protocol", "consumer", "--verbose",
                    "--max-messages", str(total), timeout=WAIT)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    names = [e["name"] for e in events]
    assert "partitions_assigned" in names and names[-2:] == ["shutdown_complete", "shutdown_requested"]
    [assigned] = [e for e in events if e["name"] == "partitions_assigned"][:1]
    assert sorted(p["partition"] for p in assigned["partitions"]) == [0, 1, 2]
    values = sorted(e["value"] for e in events if e["name"] == "record_data")
    assert values == sorted(f"value-{i}" for i in range(total))
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(c["success"] for c in commits)
    last_commit = {o["partition"]: o["offset"] for c in commits for o in c["offsets"]}
    assert last_commit == {0: 100, 1: 100, 2: 100}

    with Admin({"bootstrap.servers": servers}) as admin:
        committed = admin.fetch_offsets(group)
        [described] = admin.describe_consumer_groups([group]).values()
    assert {tp.partition: o.offset for tp, o in committed.items()} == {0: 100, 1: 100, 2: 100}
    assert described.state == "Empty" and described.members == []  # it left the group on close

    out = run_tool("kafka-consumer-groups", "--bootstrap-server", servers, "--describe",
                   "--group", group).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    header = next(i for i, words in enumerate(lines) if words[0] == "GROUP")
    rows = [dict(zip(lines[header], words, strict=False)) for words in lines[header + 1:]]
    assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows) == [
        ("0", "100", "100", "0"), ("1", "100", "100", "0"), ("2", "100", "100", "0")]
    listed = run_tool("org.apache.kafka.tools.GroupsCommand", "--bootstrap-server", servers,
                      "--list").stdout
    [row] = [line.split() for line in listed.splitlines() if line.split()[:1] == [group]]
    assert row[1:] == ["Consumer", "consumer"]
