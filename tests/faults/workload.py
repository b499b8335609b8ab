"""The fault tests' client process: ``python -m tests.faults.workload CONFIG_JSON``, run by
:class:`tests.faults.client.WorkloadProcess` (inside the clients' network namespace when
the test has one, so it reaches the cluster's private addresses).

CONFIG_JSON: ``bootstrap``, ``topic`` (idempotent producer), ``txn_topic`` (transactions and
the read_committed reader; empty for none), ``partitions``, ``seed``. It creates both topics
(replication factor 3, ``min.insync.replicas=2``), starts the clients of
:mod:`tests.faults.history`, prints ``{"ready": true}`` and then answers one JSON line per
command read from stdin:

- ``phase NAME``: what is sent from now on is tagged NAME;
- ``status``: counts so far (sent, acked, transactions, records read);
- ``leader P``: the leader of the idempotent topic's partition P (a fresh Metadata request);
- ``controller``: the active controller's node id (DescribeQuorum's leader; asked again
  while the quorum elects one, 30 s at most);
- ``stop``: stop writing, wait for every outcome, resolve open transactions, write a marker
  record to each partition of the transactions' topic and wait (90 s at most) until the
  reader read every marker, then check; prints the verdict and exits.

Only the main thread reads stdin and prints; the clients' threads write the history.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from confluent_kafka import Producer

from broker_sim.protocol.errors import PyqError
from connector.client import Admin
from tests.faults.history import Idempotent, Reader, Transactions, check, check_transactions


def _say(obj: dict[str, Any]) -> None:
    print(json.dumps(obj), flush=True)


def _markers(bootstrap: str, topic: str, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for p in range(partitions):
        producer.produce(topic, b"end-%d" % p, partition=p)
    assert producer.flush(60) == 0, "the end markers were not acknowledged within 60 s"


def _active_controller(bootstrap: str, timeout_s: float = 30.0) -> int:
    """DescribeQuorum's leader, asked again while the quorum is between leaders."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                leader = admin.describe_quorum(timeout_ms=10_000).leader_id
            if leader >= 0:
                return leader
        except PyqError as e:
            if time.monotonic() > deadline:
                raise
            print(f"DescribeQuorum: {e}", file=sys.stderr)
        if time.monotonic() > deadline:
            raise TimeoutError(f"no controller leads the quorum after {timeout_s} s")
        time.sleep(0.1)


def main(config: dict[str, Any]) -> None:
    bootstrap, topic, txn_topic = config["bootstrap"], config["topic"], config["txn_topic"]
    partitions, seed = int(config["partitions"]), int(config["seed"])
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        for name in filter(None, (topic, txn_topic)):
            admin.create_topic(name, partitions, 3, {"min.insync.replicas": "2"})
    current = ["healthy"]

    def phase() -> str:
        return current[0]

    idempotent = Idempotent(bootstrap, topic, partitions, phase).start()
    txns = Transactions(bootstrap, txn_topic, partitions, phase, seed).start() if txn_topic else None
    reader = Reader(bootstrap, txn_topic, partitions).start() if txn_topic else None
    _say({"ready": True})
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "phase":
            current[0] = arg
            _say({"phase": arg})
        elif command == "status":
            _say({"sent": idempotent.history.sent, "acked": len(idempotent.history.acked),
                  "transactions": len(txns.outcome) if txns else 0,
                  "read": len(reader.read) if reader else 0})
        elif command == "leader":
            meta = idempotent.producer.list_topics(topic, timeout=10)
            _say({"leader": meta.topics[topic].partitions[int(arg)].leader})
        elif command == "controller":
            _say({"controller": _active_controller(bootstrap)})
        elif command == "stop":
            break
        else:
            _say({"error": f"unknown command {line.strip()!r}"})
    history = idempotent.stop()
    if txns is not None:
        txns.stop()
    phases: dict[str, dict[str, int]] = {}
    verdict: dict[str, Any] = {"sent": history.sent, "acked": len(history.acked),
                               "failed": len(history.failed)}
    verdict.update(check(bootstrap, topic, partitions, history, phases))
    verdict["lost"] = [v.decode() for v in verdict["lost"]]
    verdict["duplicated"] = [v.decode() for v in verdict["duplicated"]]
    verdict["misplaced"] = [v.decode() for v in verdict["misplaced"]]
    if txns is not None and reader is not None:
        _markers(bootstrap, txn_topic, partitions)
        start = time.monotonic()
        ends = {b"end-%d" % p for p in range(partitions)}
        while time.monotonic() - start < 90 and not ends <= {v for v, _, _ in reader.read}:
            time.sleep(0.1)
        reader.stop()
        read = {v for v, _, _ in reader.read}
        verdict["stuck"] = sorted(p for p in range(partitions) if b"end-%d" % p not in read)
        verdict["caught_up_s"] = round(time.monotonic() - start, 1)
        verdict["transactions"] = check_transactions(txns, reader, phases)
        verdict["transactions"]["errors"] = dict(txns.errors)
    verdict["phases"] = phases
    _say({"verdict": verdict})


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
