"""generate_events + sessionize end to end (in-process, on the session's SparkSession).

The output topic is a changelog of running window totals: the record with the highest
``batch_id`` per (user, window) holds the window's count, and those counts add up to the
parsed events minus the ones Spark dropped as late. An event produced after a run, older
than the watermark that run left behind, is dropped and counted as late.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from connector.client import Admin, Fetcher, Producer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "jobs"))

import generate_events  # noqa: E402
import replay_dead_letters  # noqa: E402
import sessionize  # noqa: E402

pytestmark = pytest.mark.integration


def _end(admin: Admin, topic: str) -> list[int]:
    parts = admin.describe_topics([topic])[topic].partitions
    offsets = admin.list_offsets({(topic, p.partition): "latest" for p in parts})
    return [o.offset for _, o in sorted(offsets.items())]


def test_generate_then_sessionize_reconciles(spark, shared_broker, tmp_path, capsys):
    bootstrap = shared_broker.bootstrap_servers
    assert generate_events.main(["--bootstrap-servers", bootstrap, "--topic", "jobs-clicks",
                                 "--count", "1500", "--malformed-fraction", "0.02",
                                 "--partitions", "2", "--seed", "7", "--no-progress"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    words = line.split()
    produced, malformed = int(words[1]), int(words[3].strip("("))
    assert line == f"produced {produced} events ({malformed} malformed)" and produced == 1500
    assert malformed > 0

    args = ["--bootstrap-servers", bootstrap, "--input-topic", "jobs-clicks",
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
    with Producer({"bootstrap.servers": bootstrap, "acks": "all"}) as producer:
        producer.send("jobs-clicks", json.dumps(late).encode(), key=b"u-late").result(30)
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
    assert pq.read_table(tmp_path / "events").num_rows == produced - malformed

    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        letters = list(fetcher.iter_records("jobs-dlq", 0, 0, dead))
    for r in letters:  # exactly the malformed records: none of them parses
        with pytest.raises(ValueError):
            json.loads(r.value)["user_id"]
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
    assert all("malformed event" in reason for reason in report["by_reason"])


def _end_of(bootstrap: str, topic: str) -> list[int]:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        return _end(admin, topic)
