"""Security benchmark: the same producer and fetcher runs over PLAINTEXT and over SASL_SSL.

What is measured (one run, one broker process on 127.0.0.1, the client in this process):

* **broker**: one ``python -m broker_sim`` broker with two listeners,
  ``PLAINTEXT://127.0.0.1:0`` and ``SASL_SSL://127.0.0.1:0`` (a P-256 certificate from a
  throwaway CA, TLS 1.3 as negotiated by Python's ``ssl``), SCRAM-SHA-512 credentials
  stored with ``--add-scram``. One topic per run, one partition, replication factor 1.
* **produce**: ``--records`` records of ``--value-bytes`` (1 KiB) random bytes, no key,
  pyq's ``Producer`` with acks=1, linger 5 ms, batch 256 KiB, no compression, idempotence
  on (the default). The producer connects, authenticates and loads the topic's metadata
  before the clock starts; the clock runs from the first ``send()`` to the return of
  ``flush()``.
* **fetch**: pyq's ``Fetcher.iter_arrow`` (the Spark source's columnar path, CRC checks on)
  reads the records back from offset 0 to the end, connected before the clock starts.

Each side (PLAINTEXT, SASL_SSL) runs ``--runs`` times (3), alternating, each produce into a
fresh topic; the median wall time counts. Ratios are SASL_SSL throughput / PLAINTEXT
throughput (target >= 0.6 each); the broker's and this process's CPU seconds per phase are
figures.

Where the time goes: with TLS, both sides encrypt and decrypt every byte (AES-GCM in
OpenSSL, fast) and, more costly here, move it through Python's ``ssl`` objects: the broker
reads a request in TLS-record-sized pieces (16 KiB) joined into one buffer, and writes a
response in 256 KiB slices, each a separate ``SSL_write``; the client does the same. SASL
costs one SCRAM exchange per connection, before the clock starts.

Output: human-readable lines, then one JSON line (the last line)::

    {"benchmark": "security", "ratios": {"tls_produce_vs_plaintext": ...,
     "tls_fetch_vs_plaintext": ...}, "figures": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._proc import Timed
from broker_sim.process import BrokerProcess
from broker_sim.security.local_ca import LocalCA
from connector.client import Admin, Fetcher, Producer

USER, PASSWORD = "bench", "bench-secret"


def options(broker: BrokerProcess, ca: LocalCA, secured: bool) -> dict[str, Any]:
    if not secured:
        return {"bootstrap.servers": broker.listeners["PLAINTEXT"]}
    return {"bootstrap.servers": broker.listeners["SASL_SSL"], "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(ca.ca_path), "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": USER, "sasl.password": PASSWORD}


def produce(opts: dict[str, Any], topic: str, n: int, value: bytes, pid: int) -> Timed:
    producer = Producer(opts, acks=1, linger_ms=5, batch_size=256 * 1024)
    try:
        producer.partitions_for(topic)  # connect, authenticate and load metadata first
        with Timed([pid]) as t:
            for _ in range(n):
                producer.send(topic, value)
            producer.flush(300)
    finally:
        producer.close()
    return t


def fetch(opts: dict[str, Any], topic: str, n: int, value_bytes: int, pid: int) -> Timed:
    with Fetcher(opts) as fetcher:
        fetcher.offset_bounds(topic, 0)  # connect and authenticate first
        rows = nbytes = 0
        with Timed([pid]) as t:
            for batch in fetcher.iter_arrow(topic, 0, 0, n):
                rows += batch.num_rows
                nbytes += batch.column("value").nbytes
    if rows != n or nbytes < n * value_bytes:
        raise SystemExit(f"fetched {rows} rows / {nbytes} value bytes, expected {n} / {n * value_bytes}")
    return t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--value-bytes", type=int, default=1024)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    n, size = args.records, args.value_bytes
    value = os.urandom(size)
    mb = n * size / 1e6
    with tempfile.TemporaryDirectory(prefix="pyq-bench-security-") as tmp:
        ca = LocalCA(Path(tmp) / "ca")
        broker = BrokerProcess(Path(tmp) / "broker", overrides={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "ssl.keystore.location": str(ca.issue("broker").pem)},
            add_scram=[f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]"]).start()
        try:
            runs: dict[str, dict[str, list[Timed]]] = {s: {"produce": [], "fetch": []}
                                                      for s in ("plaintext", "sasl_ssl")}
            for i in range(args.runs):
                for side in ("plaintext", "sasl_ssl"):
                    opts = options(broker, ca, side == "sasl_ssl")
                    topic = f"{side}-{i}"
                    with Admin(opts) as admin:
                        admin.create_topic(topic, num_partitions=1)
                    pt = produce(opts, topic, n, value, broker.pid)
                    ft = fetch(opts, topic, n, size, broker.pid)
                    runs[side]["produce"].append(pt)
                    runs[side]["fetch"].append(ft)
                    print(f"run {i} {side:9s} produce {mb / pt.wall:7.1f} MB/s (broker cpu "
                          f"{pt.server_cpu:.2f} s, client {pt.client_cpu:.2f} s)  fetch "
                          f"{mb / ft.wall:7.1f} MB/s (broker {ft.server_cpu:.2f} s, client "
                          f"{ft.client_cpu:.2f} s)", flush=True)
        finally:
            broker.stop()

    def median(side: str, phase: str) -> Timed:
        timed = sorted(runs[side][phase], key=lambda t: t.wall)
        return timed[len(timed) // 2]

    figures: dict[str, Any] = {"records": n, "value_bytes": size, "runs": args.runs}
    for side in ("plaintext", "sasl_ssl"):
        for phase in ("produce", "fetch"):
            t = median(side, phase)
            figures[f"{side}_{phase}_mb_s"] = round(mb / t.wall, 1)
            figures[f"{side}_{phase}_broker_cpu_s"] = round(t.server_cpu, 3)
            figures[f"{side}_{phase}_client_cpu_s"] = round(t.client_cpu, 3)
    ratios = {
        "tls_produce_vs_plaintext": round(median("plaintext", "produce").wall
                                          / median("sasl_ssl", "produce").wall, 3),
        "tls_fetch_vs_plaintext": round(median("plaintext", "fetch").wall
                                        / median("sasl_ssl", "fetch").wall, 3),
    }
    print(f"SASL_SSL vs PLAINTEXT: produce {ratios['tls_produce_vs_plaintext']}x, "
          f"fetch {ratios['tls_fetch_vs_plaintext']}x (target >= 0.6 each)")
    print(json.dumps({"benchmark": "security", "ratios": ratios, "figures": figures}))


if __name__ == "__main__":
    main()
