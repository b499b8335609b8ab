"""A group consumer in its own process, for tests that kill it: run as a script.

    python consumer_worker.py CLIENT BOOTSTRAP GROUP TOPIC [--session-ms N]
        [--instance-id ID] [--pause-ms N] [--heartbeat-ms N]

CLIENT is ``kafka-python``, ``confluent`` (classic protocol) or ``confluent-consumer``
(KIP-848, ``group.protocol=consumer``). The worker subscribes, and after every poll that
returned records commits them synchronously, then prints one JSON line::

    {"event": "consumed", "records": [[partition, offset, value], ...]}

so a record it printed is committed; a commit that fails (the member was fenced meanwhile)
prints ``{"event": "commit_failed"}`` instead, as an application would carry on, and the
records are left to whoever owns them next. On every change of assignment it prints
``{"event": "assigned", "partitions": [...]}``. SIGTERM closes the consumer cleanly (it
leaves the group); SIGKILL is what the tests use to make it vanish.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time

stopping = False


def emit(**event: object) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def on_term(signum: int, frame: object) -> None:
    global stopping
    stopping = True


def run_kafka_python(args: argparse.Namespace) -> None:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        args.topic, bootstrap_servers=args.bootstrap, group_id=args.group,
        group_instance_id=args.instance_id, session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms or max(100, args.session_ms // 5),
        auto_offset_reset="earliest",
        enable_auto_commit=False, max_poll_records=50)
    assigned: list[int] | None = None
    while not stopping:
        # Not a short timeout: kafka-python 3.0 drops a (re)join whose SyncGroup answer
        # arrives after the poll that sent it timed out (the next poll no longer sees a
        # rejoin pending, so the assignment is never applied and heartbeats stay off until
        # the session expires). poll() returns as soon as records arrive either way.
        batches = consumer.poll(timeout_ms=2000)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != assigned:
            assigned = now
            emit(event="assigned", partitions=now)
        records = [[r.partition, r.offset, r.value.decode()] for rs in batches.values() for r in rs]
        if records:
            consumer.commit()
            emit(event="consumed", records=records)
            time.sleep(args.pause_ms / 1000)
    consumer.close()


def run_confluent(args: argparse.Namespace, protocol: str) -> None:
    from confluent_kafka import Consumer, KafkaException

    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    else:
        conf["session.timeout.ms"] = args.session_ms
        conf["heartbeat.interval.ms"] = args.heartbeat_ms or max(100, args.session_ms // 5)
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    consumer = Consumer(conf)
    state: dict[str, list[int]] = {"now": []}

    def on_assign(c: Consumer, partitions: list) -> None:
        state["now"] = sorted(set(state["now"]) | {p.partition for p in partitions})
        emit(event="assigned", partitions=state["now"])

    def on_revoke(c: Consumer, partitions: list) -> None:
        state["now"] = sorted(set(state["now"]) - {p.partition for p in partitions})
        emit(event="assigned", partitions=state["now"])

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not stopping:
        messages = consumer.consume(num_messages=50, timeout=0.2)
        records = [[m.partition(), m.offset(), (m.value() or b"").decode()]
                   for m in messages if not m.error()]
        if records:
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as e:  # as an application must: a commit may fail, e.g.
                emit(event="commit_failed", error=str(e))  # when the member was fenced
                continue
            emit(event="consumed", records=records)
            time.sleep(args.pause_ms / 1000)
    consumer.close()


def main() -> None:
    # the clients' warnings go to stderr, which the test shows when a wait times out
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=["kafka-python", "confluent", "confluent-consumer"])
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("--session-ms", type=int, default=10_000)
    parser.add_argument("--instance-id")
    parser.add_argument("--pause-ms", type=int, default=0)
    parser.add_argument("--heartbeat-ms", type=int, default=0)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    if args.client == "kafka-python":
        run_kafka_python(args)
    else:
        run_confluent(args, "consumer" if args.client == "confluent-consumer" else "classic")
    emit(event="closed")


if __name__ == "__main__":
    main()
