"""Log compaction vs appending: how fast the cleaner rewrites what the broker appends.

What is measured (one run, one machine):

* **append**: a broker process (``BrokerProcess``, cleaner off) and a compacted topic of
  one partition (``segment.bytes`` 16 MiB). confluent-kafka (librdkafka, so the client
  is not the bottleneck) produces ``--records`` (400,000) records, keys drawn from
  ``--keys`` (10,000), 100-byte values, acks=1, ``linger.ms`` 5; the clock runs from the
  first ``produce()`` to the end of ``flush()``. Append MB/s = bytes the partition's log
  grew by (its segment files) / seconds. This is the broker's whole produce path for a
  compacted topic: request handling, validation (a compacted topic checks that every
  record has a key), the write.
* **clean**: the broker is stopped and the same log directory is opened in this process
  (the broker's own :class:`~broker_sim.log.log.Log`), the active segment rolled, and one
  clean run (:func:`broker_sim.log.cleaner.clean`, what the broker's cleaner threads run).
  Cleaner MB/s = log bytes read by the clean / its seconds (it reads every segment once,
  builds the offset map over the dirty ones, and writes ~1 % back: the latest value of
  each key).
* ``compaction_vs_append`` = cleaner MB/s ÷ append MB/s (target ≥ 0.5).

Where the time goes: appending costs the broker little per byte (one write of each
request's batches) but something per record here, because a compacted topic's records
are indexed to check their keys; the cleaner pays per record too — finding each record's
end, offset and key in Python (:class:`~broker_sim.protocol.records.reader.RecordIndex`)
once per record, then C-speed dict updates for the offset map and a list comprehension
for the keep decision — and little for the few bytes it writes back.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "compaction", "ratios": {"compaction_vs_append": ...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from broker_sim.common import ManualClock
from broker_sim.log import Log, LogConfig
from broker_sim.log.cleaner import clean
from broker_sim.process import BrokerProcess
from broker_sim.protocol.records.builder import RecordBatchBuilder
from connector.client import Admin, NewTopic

TOPIC = "compaction-bench"
CONFIGS = {"cleanup.policy": "compact", "segment.bytes": str(16 * 1024 * 1024),
           "min.cleanable.dirty.ratio": "0.01"}


def _log_bytes(dir: Path) -> int:
    return sum(p.stat().st_size for p in dir.glob("*.log"))


def measure_compaction(tmp: Path, records: int = 400_000, keys: int = 10_000) -> dict[str, Any]:
    """Append through a broker, then clean its log; MB/s of each and the ratio."""
    from confluent_kafka import Producer as CKProducer

    broker = BrokerProcess(tmp / "broker", overrides={"log.cleaner.enable": "false"})
    broker.start()
    try:
        with Admin({"bootstrap.servers": broker.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(TOPIC, 1, 1, CONFIGS)])
        part_dir = tmp / "broker" / "logs" / f"{TOPIC}-0"
        rng = random.Random(1)
        values = [bytes(rng.randrange(256) for _ in range(100)) for _ in range(1000)]
        producer = CKProducer({"bootstrap.servers": broker.bootstrap_servers, "acks": 1,
                               "linger.ms": 5, "batch.size": 1_000_000,
                               "queue.buffering.max.messages": 1_000_000})
        before = _log_bytes(part_dir)
        t0 = time.perf_counter()
        for i in range(records):
            value = values[i % len(values)]
            key = b"key-%05d" % ((i * 7919) % keys)  # every key, updated in turn
            while True:
                try:
                    producer.produce(TOPIC, value, key, partition=0)
                    break
                except BufferError:
                    producer.poll(0.01)
        remaining = producer.flush(120)
        append_s = time.perf_counter() - t0
        if remaining:
            raise RuntimeError(f"{remaining} records not acknowledged")
        appended = _log_bytes(part_dir) - before
    finally:
        broker.stop()
    clock = ManualClock(0, wall_start_ms=int(time.time() * 1000))
    config = LogConfig.from_properties({**CONFIGS, "segment.ms": "60000"})
    log = Log(part_dir, config, clock)
    try:
        clock.advance(61_000)  # roll: every record the broker appended in a closed segment
        tail = RecordBatchBuilder()
        tail.append(clock.wall_ms(), b"tail", b"t")
        log.append_as_leader(tail.build(), 0)
        log.high_watermark = log.log_end_offset
        stats = clean(log, clock.wall_ms(), 10_000_000)
        if stats is None:
            raise RuntimeError("nothing was cleanable")
        left = sum(s.size for s in log.segments)
    finally:
        log.close()
    append_mb_s = appended / 1e6 / append_s
    clean_mb_s = stats.bytes_read / 1e6 / stats.seconds
    print(f"append: {appended / 1e6:.1f} MB in {append_s:.2f} s = {append_mb_s:.0f} MB/s "
          f"({records:,} records through the broker, acks=1)")
    print(f"clean:  {stats.bytes_read / 1e6:.1f} MB in {stats.seconds:.2f} s = {clean_mb_s:.0f} MB/s "
          f"({stats.records_kept:,} of {stats.records_read:,} records kept, log now "
          f"{left / 1e6:.2f} MB)")
    return {"ratio": clean_mb_s / append_mb_s,
            "figures": {"append_mb_per_s": round(append_mb_s, 1), "clean_mb_per_s": round(clean_mb_s, 1),
                        "log_mb": round(appended / 1e6, 1), "records": records, "keys": keys,
                        "records_kept": stats.records_kept}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--keys", type=int, default=10_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pyq-compaction-bench-"))
    try:
        result = measure_compaction(tmp, args.records, args.keys)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"cleaner / append: {result['ratio']:.2f}")
    print(json.dumps({"benchmark": "compaction",
                      "ratios": {"compaction_vs_append": round(result["ratio"], 3)},
                      "figures": result["figures"]}))


if __name__ == "__main__":
    main()
