"""``make demo`` (``python jobs/demo.py``): a 3-broker cluster, a clickstream, the Spark pipeline, a reconciliation.

1. starts :class:`connector.cluster.EmbeddedCluster` (controller + 3 broker processes);
2. ``jobs/generate_events.py --value-format avro`` produces a clickstream as Avro through
   the cluster's schema registry (the event schema ``jobs/schemas/click_event.avsc``
   registered under ``clicks-value``, each value in Confluent's wire format), with some
   malformed records: stray JSON text (no magic byte) and events naming an unknown schema id;
3. ``spark-submit jobs/sessionize.py --value-format avro --trigger available-now`` (the
   venv's spark-submit) decodes it with the source's ``valueFormat=avro``, dead-letters
   the records that do not decode after ``maxRetries`` redeliveries, with the reason, writes
   events to Parquet and per-user event-time window totals (Spark's watermarked
   aggregation, update mode) to a pyq topic, exactly once. An
   AvailableNow run may end before the last redeliveries are due, so it is run again from
   the same checkpoint until the dead-letter count settles (at most ``MAX_RUNS`` times);
   the retry bookkeeping travels in the checkpointed source offsets, so a later run
   delivers what the previous one scheduled;
4. shows the output changelog compacted: its size, then ``min.compaction.lag.ms`` lowered
   at runtime (IncrementalAlterConfigs) so the log cleaner may clean it, then its size
   again (the latest total per (user, window) stays);
5. publishes the latest (user, window) totals as schema'd data with the ``pyq`` command:
   ``pyq produce --value-format avro --value-schema`` registers the schema in the
   cluster's schema registry and writes Confluent-framed Avro, ``pyq consume
   --value-format avro`` decodes it back through the registry (:func:`publish_avro`);
6. prints counts in/out/dead-lettered (the dead letters summed up: a count per
   ``pyq.reason`` and the first few source offsets, not a line each) and the group's lag,
   stops the cluster.

Exit code 0 only if parsed + malformed == produced, dead letters == malformed, the
Parquet files hold every parsed event, the latest total of every (user, window) in the
output topic adds up to the parsed events (less any Spark dropped as late), the Avro
totals read back equal the ones written, and the lag is 0.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sessionize import latest_totals  # jobs/ is this script's directory, hence on sys.path

from connector.client import Fetcher

ROOT = Path(__file__).resolve().parents[1]
COUNT = 5000
TOPIC, OUTPUT, DLQ, GROUP = "clicks", "user-window-counts", "clicks-dlq", "sessionize-demo"
MAX_RUNS = 4
AVRO_TOPIC = "user-window-totals-avro"
WINDOW_TOTAL = {"type": "record", "name": "WindowTotal", "namespace": "pyq.demo", "fields": [
    {"name": "user_id", "type": "string"}, {"name": "window_start", "type": "string"},
    {"name": "events", "type": "long"}]}
LOG4J2 = """rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


def _end_offsets(admin, topic: str) -> dict[int, int]:
    if topic not in admin.list_topics():
        return {}
    parts = admin.describe_topics([topic])[topic].partitions
    offsets = admin.list_offsets({(topic, p.partition): "latest" for p in parts})
    return {tp.partition: o.offset for tp, o in offsets.items()}


def _changelog(bootstrap: str, partitions: int) -> tuple[list[dict], int]:
    """The output changelog as a read_committed consumer sees it: its updates, and the
    bytes of record batches holding them."""
    updates: list[dict] = []
    size = 0
    with Fetcher({"bootstrap.servers": bootstrap, "isolation.level": "read_committed"}) as fetcher:
        for p in range(partitions):
            start, end = fetcher.offset_bounds(OUTPUT, p)
            size += sum(len(b) for b in fetcher.fetch_record_sets(OUTPUT, p, start, end))
            for r in fetcher.iter_records(OUTPUT, p, start, end):
                assert r.value is not None, "the job writes no tombstones"
                updates.append(json.loads(r.value))
    return updates, size


def dead_letter_summary(bootstrap: str, topic: str, ends: dict[int, int]
                        ) -> dict[str, list[tuple[str, int, int]]]:
    """The dead letters in ``topic`` (up to ``ends``) by their ``pyq.reason`` header: where
    each one came from, (topic, partition, offset) from its ``pyq.*`` headers, sorted."""
    by_reason: dict[str, list[tuple[str, int, int]]] = {}
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        for p, end in sorted(ends.items()):
            start, _ = fetcher.offset_bounds(topic, p)
            for r in fetcher.iter_records(topic, p, start, end):
                h = {k: (v or b"").decode("utf-8", "replace") for k, v in r.headers}
                source = (h.get("pyq.topic", "?"), int(h.get("pyq.partition") or -1),
                          int(h.get("pyq.offset") or -1))
                by_reason.setdefault(h.get("pyq.reason", "(no pyq.reason header)"), []).append(source)
    return {reason: sorted(sources) for reason, sources in by_reason.items()}


def summary_lines(by_reason: dict[str, list[tuple[str, int, int]]], first: int = 5) -> list[str]:
    """One line per reason, most frequent first: the count, the reason, the first few
    source records (``topic-partition@offset``).

    >>> summary_lines({"not JSON": [("clicks", 0, 3), ("clicks", 1, 9)], "late": [("c", 2, 7)]}, 1)
    ['     2  not JSON  (first: clicks-0@3, ...)', '     1  late  (first: c-2@7)']
    """
    lines = []
    for reason, sources in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(f"{t}-{p}@{o}" for t, p, o in sources[:first])
        more = ", ..." if len(sources) > first else ""
        lines.append(f"{len(sources):>6}  {reason}  (first: {shown}{more})")
    return lines


def _compact(admin, bootstrap: str, partitions: int) -> tuple[list[dict], int]:
    """Let the log cleaner at the changelog (lag 0, at runtime); wait until it settles."""
    admin.incremental_alter_configs({("topic", OUTPUT): {"min.compaction.lag.ms": "0"}})
    last, since, deadline = -1, time.monotonic(), time.monotonic() + 30
    while time.monotonic() < deadline:
        updates, size = _changelog(bootstrap, partitions)
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since > 2.5:  # unchanged over several cleaner passes
            break
        time.sleep(0.5)
    return updates, last


def publish_avro(bootstrap: str, registry: str, windows: dict[tuple[str, str], int],
                 env: dict[str, str], tmp: Path) -> tuple[list[dict], list[dict], int]:
    """The (user, window) totals to :data:`AVRO_TOPIC` (one partition, created first) as
    Avro of :data:`WINDOW_TOTAL` with ``pyq produce --value-format avro --value-schema``
    (the schema registered under ``<topic>-value``), then read back with ``pyq consume
    --value-format avro``: (written, read back, bytes of the Avro values)."""
    from connector.client import Admin, NewTopic

    written = [{"user_id": u, "window_start": w, "events": n}
               for (u, w), n in sorted(windows.items())]
    schema, lines = tmp / "window_total.avsc", tmp / "window_totals.jsonl"
    schema.write_text(json.dumps(WINDOW_TOTAL))
    lines.write_text("".join(f"{t['user_id']}\t{json.dumps(t)}\n" for t in written))
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(AVRO_TOPIC, 1, 3)])
    pyq = [sys.executable, "-m", "connector.cli"]
    registry_args = ["--bootstrap-server", bootstrap, "--value-format", "avro", "-r", registry]
    for cmd in ([*pyq, "produce", AVRO_TOPIC, *registry_args, "--value-schema", str(schema),
                 "-l", str(lines)],
                [*pyq, "consume", AVRO_TOPIC, *registry_args, "-o", "beginning", "-e",
                 "-f", "%s\n"]):
        print("$ pyq " + " ".join(cmd[3:5] + ["..."]), flush=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"demo: pyq {cmd[3]} exited with {proc.returncode}: {proc.stderr}")
    read = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        start, end = fetcher.offset_bounds(AVRO_TOPIC, 0)
        size = sum(len(r.value or b"") for r in fetcher.iter_records(AVRO_TOPIC, 0, start, end))
    return written, read, size


def _run(cmd: list[str], env: dict[str, str]) -> str:
    print("$ " + " ".join(cmd[:2] + ["..."]), flush=True)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise SystemExit(f"demo: {cmd[1]} exited with {proc.returncode}")
    return proc.stdout


def main() -> int:
    from connector.client import Admin, NewTopic, TopicPartition
    from connector.cluster import EmbeddedCluster

    bindir = Path(sys.executable).parent
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    spark_submit = str(bindir / "spark-submit")
    cleaner = {"log.cleaner.backoff.ms": "500"}
    with tempfile.TemporaryDirectory(prefix="pyq-demo-") as tmp, \
            EmbeddedCluster(brokers=3, overrides=cleaner, schema_registry=True) as cluster:
        # Spark logs its start-up at INFO before the job can lower the level: a conf dir
        # whose log4j2.properties says WARN keeps the demo's output readable.
        conf = Path(tmp) / "spark-conf"
        conf.mkdir()
        (conf / "log4j2.properties").write_text(LOG4J2)
        env["SPARK_CONF_DIR"] = str(conf)
        bootstrap = cluster.bootstrap_servers
        print(f"started a controller and 3 brokers on {bootstrap}", flush=True)
        registry = cluster.schema_registry_url
        avro = ["--value-format", "avro", "--schema-registry", registry]
        out = _run([sys.executable, "jobs/generate_events.py", "--bootstrap-server", bootstrap,
                    "--topic", TOPIC, "--count", str(COUNT), "--partitions", "3", *avro,
                    "--replication-factor", "3", "--malformed-fraction", "0.02"], env)
        words = out.strip().splitlines()[-1].split()
        produced, malformed = int(words[1]), int(words[3].strip("("))
        # "avro: subject S schema id N: A bytes of values (J as JSON)"
        avro_line = out.strip().splitlines()[-2].split()
        subject, schema_id = avro_line[2], int(avro_line[5].rstrip(":"))
        event_bytes, event_json_bytes = int(avro_line[6]), int(avro_line[10].strip("("))

        parquet = Path(tmp) / "events"
        totals: dict[str, int] = {}
        dead = -1
        t0 = time.monotonic()
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            # the changelog, compacted; a segment per second so that most of it is in closed
            # (cleanable) segments, and no clean until the demo has shown its size
            admin.create_topics([NewTopic(OUTPUT, 3, 3, {
                "cleanup.policy": "compact", "segment.ms": "1000",
                "min.cleanable.dirty.ratio": "0.1", "min.compaction.lag.ms": "3600000"})])
            for run in range(1, MAX_RUNS + 1):
                out = _run([spark_submit, "--master", "local[2]", "--conf", "spark.ui.enabled=false",
                            "--conf", "spark.log.level=ERROR",
                            "jobs/sessionize.py", "--bootstrap-server", bootstrap, *avro,
                            "--input-topic", TOPIC, "--output-topic", OUTPUT,
                            "--dead-letter-topic", DLQ, "--group-id", GROUP, "--max-retries", "2",
                            "--max-offsets-per-trigger", "1000", "--parquet-dir", str(parquet),
                            "--checkpoint-dir", str(Path(tmp) / "checkpoint"),
                            "--trigger", "available-now"], env)
                summary = json.loads(out.split("SUMMARY ", 1)[1].splitlines()[0])
                for k, v in summary.items():
                    totals[k] = totals.get(k, 0) + v
                before, dead = dead, sum(_end_offsets(admin, DLQ).values())
                print(f"run {run}: {dead} dead letter(s) so far", flush=True)
                if dead >= malformed or (dead == before and summary["redeliveries"] == 0):
                    break
            letters = dead_letter_summary(bootstrap, DLQ, _end_offsets(admin, DLQ))
            committed = admin.fetch_offsets(GROUP)
            latest = _end_offsets(admin, TOPIC)
            lag = {p: end - committed[TopicPartition(TOPIC, p)].offset
                   if TopicPartition(TOPIC, p) in committed else None
                   for p, end in sorted(latest.items())}
            updates, size_before = _changelog(bootstrap, 3)
            results = len(updates)
            compacted, size_after = _compact(admin, bootstrap, 3)
            windows = latest_totals(compacted)
            avro_t0 = time.monotonic()
            avro_written, avro_read, avro_bytes = publish_avro(
                bootstrap, registry, windows, env, Path(tmp))
            avro_s = time.monotonic() - avro_t0
        import pyarrow.parquet as pq

        in_parquet = pq.read_table(parquet).num_rows if parquet.exists() else 0
        elapsed = time.monotonic() - t0 - avro_s
        print()
        print(f"produced:          {produced} ({malformed} malformed) as Avro through the "
              f"schema registry (subject {subject}, schema id {schema_id}): {event_bytes:,} "
              f"bytes of well-formed values against {event_json_bytes:,} as JSON")
        print(f"read by Spark:     {totals.get('events_in', 0)} in {totals.get('batches', 0)} "
              f"batch(es), {run} run(s), {elapsed:.1f}s")
        print(f"parsed:            {totals.get('parsed', 0)} (Parquet rows: {in_parquet})")
        print(f"malformed:         {totals.get('malformed', 0)} "
              f"(reported {totals.get('malformed_reported', 0)} times)")
        print(f"dead-lettered:     {dead} (topic {DLQ}), by reason:")
        for line in summary_lines(letters):
            print(line)
        print(f"window updates:    {totals.get('results_written', 0)} "
              f"(topic {OUTPUT} holds {results}, read_committed): {len(windows)} (user, window) "
              f"totals adding up to {sum(windows.values())} events; "
              f"{totals.get('late_dropped', 0)} late event(s) dropped")
        print(f"compaction:        {OUTPUT} {results} records / {size_before:,} bytes before, "
              f"{len(compacted)} records / {size_after:,} bytes after the log cleaner "
              "(the latest total per (user, window) kept)")
        as_json = sum(len(json.dumps(t)) for t in avro_written)
        print(f"schema'd (Avro):   {len(avro_written)} (user, window) totals written by pyq produce "
              f"--value-format avro to {AVRO_TOPIC} (subject {AVRO_TOPIC}-value in the cluster's "
              f"schema registry): {avro_bytes:,} bytes against {as_json:,} as JSON; pyq consume "
              f"--value-format avro read back {len(avro_read)}, "
              f"{'equal' if avro_read == avro_written else 'NOT equal'}; the first: "
              f"{json.dumps(avro_read[0]) if avro_read else None}")
        print(f"lag of {GROUP}:  {lag}")
        problems = []
        if totals.get("parsed", 0) + totals.get("malformed", 0) != produced:
            problems.append("parsed + malformed != produced")
        if dead != malformed:
            problems.append(f"dead letters {dead} != malformed {malformed}")
        if in_parquet != produced - malformed:
            problems.append("Parquet rows != parsed events")
        if results != totals.get("results_written", 0):
            problems.append("output topic != results written (exactly once)")
        if latest_totals(updates) != windows:
            problems.append("compaction changed a (user, window) total")
        if sum(windows.values()) + totals.get("late_dropped", 0) != totals.get("parsed", 0):
            problems.append("window totals + late events != parsed events")
        if avro_read != avro_written:
            problems.append("the Avro totals read back differ from the ones written")
        if any(v != 0 for v in lag.values()):
            problems.append(f"lag is not 0: {lag}")
        print("stopping the cluster", flush=True)
    if problems:
        print("demo: counts do NOT reconcile: " + "; ".join(problems))
        return 1
    print("demo: counts reconcile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
