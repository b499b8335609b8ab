"""generate_events + sessionize end to end (in-process, on the session's SparkSession), in
Avro through the broker's schema registry, as ``make demo`` runs them.

The generator registers the click event's schema under ``<topic>-value`` and writes
Confluent-framed Avro; its malformed records are stray JSON (no magic byte) and events
naming an unknown schema id. confluent-kafka's ``AvroDeserializer`` is the judge: it reads
every well-formed record, refuses every malformed one, and what it reads equals the events
the pipeline wrote to Parquet. The source decodes with ``valueFormat=avro`` and dead-letters
the malformed records with their reasons.

The output topic is a changelog of running window totals: the record with the highest
``batch_id`` per (user, window) holds the window's count, and those counts add up to the
parsed events minus the ones Spark dropped as late. An event produced after a run, older
than the watermark that run left behind, is dropped and counted as late.

The JSON mode of both jobs (malformed records reported by the job) is run end to end by
``tests/jobs/test_secured_jobs.py``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from broker_sim.process import BrokerProcess
from connector.client import Admin, Fetcher, Producer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

import generate_events  # noqa: E402
import replay_dead_letters  # noqa: E402
import sessionize  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The module's broker, serving a schema registry."""
    proc = BrokerProcess(tmp_path_factory.mktemp("pipeline-broker"), overrides={
        "auto.create.topics.enable": "false", "schema.registry.listeners": "http://127.0.0.1:0"})
    proc.start()
    yield proc
    proc.stop()


def _judged(registry: str, records: list) -> tuple[list[dict], int]:
    """confluent-kafka's AvroDeserializer over the records: the events it reads, and how
    many it refuses."""
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry}))
    read, refused = [], 0
    for r in records:
        try:
            read.append(deserializer(r.value, SerializationContext("jobs-clicks", MessageField.VALUE)))
        except (SerializationError, SchemaRegistryError):  # no magic byte; unknown id
            refused += 1
    return read, refused


def _end(admin: Admin, topic: str) -> list[int]:
    parts = admin.describe_topics([topic])[topic].partitions
    offsets = admin.list_offsets({(topic, p.partition): "latest" for p in parts})
    return [o.offset for _, o in sorted(offsets.items())]


def test_generate_then_sessionize_reconciles(spark, shared_broker, tmp_path, capsys):
    bootstrap, registry = shared_broker.bootstrap_servers, shared_broker.schema_registry_url
    avro = ["--value-format", "avro", "--schema-registry", registry]
    assert generate_events.main(["--bootstrap-server", bootstrap, "--topic", "jobs-clicks",
                                 "--count", "1500", "--malformed-fraction", "0.02", *avro,
                                 "--partitions", "2", "--seed", "7", "--no-progress"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    words = lines[-1].split()
    produced, malformed = int(words[1]), int(words[3].strip("("))
    assert lines[-1] == f"produced {produced} events ({malformed} malformed)" and produced == 1500
    assert malformed > 1
    assert lines[-2].startswith("avro: subject jobs-clicks-value schema id ")

    with Admin({"bootstrap.servers": bootstrap}) as admin, \
            Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        records = [r for p, end in enumerate(_end(admin, "jobs-clicks"))
                   for r in fetcher.iter_records("jobs-clicks", p, 0, end)]
    judged, refused = _judged(registry, records)
    assert len(judged) == produced - malformed and refused == malformed
    assert all(r.key.decode() == e["user_id"] for r, e in
               zip((r for r in records if r.value[:1] == b"\0" and r.value[1:5] != b"\x7f\xff\xff\xff"),
                   judged, strict=True))

    args = ["--bootstrap-server", bootstrap, "--input-topic", "jobs-clicks", *avro,
            "--output-topic", "jobs-counts", "--dead-letter-topic", "jobs-dlq",
            "--group-id", "jobs-sessionize", "--max-retries", "2",
            "--parquet-dir", str(tmp_path / "events"), "--checkpoint-dir", str(tmp_path / "ck")]
    totals: dict[str, int] = {}
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        for _ in range(4):  # AvailableNow may end before the last retries are dead-lettered
            assert sessionize.main(args, spark=spark) == 0
            out = capsys.readouterr().out
            counts = json.loads(out.split("SUMMARY ", 1)[1].splitlines()[0])
            for k, v in counts.items():
                totals[k] = totals.get(k, 0) + v
            if "jobs-dlq" in admin.list_topics() and sum(_end(admin, "jobs-dlq")) >= malformed:
                break
        dead = sum(_end(admin, "jobs-dlq"))
        committed = admin.fetch_offsets("jobs-sessionize", [("jobs-clicks", 0), ("jobs-clicks", 1)])
        assert sorted(om.offset for om in committed.values()) == sorted(_end(admin, "jobs-clicks"))

    # An event three hours older than anything produced: past the watermark of the first run.
    late = {"user_id": "u-late", "session_hint": "u-late-s1", "page": "/", "event_type": "click",
            "event_time": "2026-01-01T06:00:00+00:00"}
    value = generate_events.AvroValues(registry, "jobs-clicks-value").encode(late)
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        producer.send("jobs-clicks", value, key=b"u-late").result(30)
    assert sessionize.main(args, spark=spark) == 0
    counts = json.loads(capsys.readouterr().out.split("SUMMARY ", 1)[1].splitlines()[0])
    assert counts["parsed"] == 1 and counts["late_dropped"] == 1
    for k, v in counts.items():
        totals[k] = totals.get(k, 0) + v
    produced += 1

    assert totals["events_in"] == produced
    assert totals["parsed"] + totals["malformed"] == produced
    assert totals["malformed"] == malformed
    assert dead == malformed
    assert totals["results_written"] > 0
    events = pq.read_table(tmp_path / "events").to_pylist()
    assert len(events) == produced - malformed
    # what Spark decoded is what the judge read (and the late event)
    fields = ("user_id", "session_hint", "page", "event_type")
    assert sorted((*(e[f] for f in fields), e["event_time"].timestamp()) for e in events) == sorted(
        [(*(e[f] for f in fields), e["event_time"].timestamp()) for e in judged]
        + [(*(late[f] for f in fields), dt.datetime.fromisoformat(late["event_time"]).timestamp())])

    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        letters = list(fetcher.iter_records("jobs-dlq", 0, 0, dead))
    assert _judged(registry, letters) == ([], malformed)  # exactly the malformed records
    assert len({(dict(r.headers)["pyq.partition"], dict(r.headers)["pyq.offset"])
                for r in letters}) == malformed
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        counts_end = _end_of(bootstrap, "jobs-counts")
        results = [json.loads(r.value) for p, end in enumerate(counts_end)
                   for r in fetcher.iter_records("jobs-counts", p, 0, end)]
    assert len(results) == totals["results_written"]
    latest = sessionize.latest_totals(results)
    assert sum(latest.values()) + totals["late_dropped"] == produced - malformed
    assert totals["late_dropped"] == 1 and all(u != "u-late" for u, _w in latest)

    report = replay_dead_letters.report(spark, bootstrap, "jobs-dlq")
    assert report["count"] == malformed and sum(report["by_reason"].values()) == malformed
    kinds = {"no magic byte" if "no magic byte" in reason else
             "unknown schema id" if "unknown schema id 2147483647" in reason else reason
             for reason in report["by_reason"]}
    assert kinds == {"no magic byte", "unknown schema id"}


def _end_of(bootstrap: str, topic: str) -> list[int]:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        return _end(admin, topic)


@pytest.mark.parametrize("job, argv, message", [
    (generate_events, ["--value-format", "avro"], "--value-format avro needs --schema-registry URL"),
    (generate_events, ["--schema-registry", "http://127.0.0.1:1"],
     "--schema-registry http://127.0.0.1:1: only with --value-format avro (not json)"),
    (sessionize, ["--parquet-dir", "x", "--value-format", "avro"],
     "--value-format avro needs --schema-registry URL"),
    (sessionize, ["--parquet-dir", "x", "--value-format", "xml"], "invalid choice: 'xml'"),
])
def test_value_format_and_registry_go_together(job, argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        job.main(argv)
    assert e.value.code == 2 and message in capsys.readouterr().err
