"""What one scrape of a broker's Prometheus endpoint costs with many partitions and groups.

A broker process (``metrics.port=0``) leads ``--topics`` x ``--partitions`` partitions
(1,000 by default: 10 topics of 100), each holding one record, and coordinates
``--groups`` (100) groups, each having committed an offset for every partition of one
topic (100 offsets per group, 10,000 in all). The client then scrapes ``/metrics`` over
HTTP ``--scrapes`` (30) times in a row and ends with the benchmarks' JSON line, its figures
the median and the slowest scrape in milliseconds, the exposition's size and its number of
samples (no ratios: nothing else serves these metrics to compare with).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata
from prometheus_client.parser import text_string_to_metric_families

from broker_sim.process import BrokerProcess
from tests.wire import create_topic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--scrapes", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker = BrokerProcess(Path(tmp), overrides={"metrics.port": "0"}).start()
        assert broker.port is not None
        try:
            topics = [f"scraped-{i}" for i in range(args.topics)]
            for t in topics:
                create_topic(broker.port, t, partitions=args.partitions)
            producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, linger_ms=5)
            for t in topics:
                for p in range(args.partitions):
                    producer.send(t, b"x" * 100, partition=p)
            producer.flush()
            producer.close()
            for g in range(args.groups):
                topic = topics[g % len(topics)]
                consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers,
                                         group_id=f"group-{g}", enable_auto_commit=False)
                consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(1, "", -1)
                                 for p in range(args.partitions)})
                consumer.close()
            url = f"http://127.0.0.1:{broker.metrics_port}/metrics"
            times, text = [], ""
            for _ in range(args.scrapes):
                start = time.perf_counter()
                with urllib.request.urlopen(url, timeout=30) as r:
                    text = r.read().decode()
                times.append((time.perf_counter() - start) * 1000)
            samples = sum(len(f.samples) for f in text_string_to_metric_families(text))
            figures = {
                "partitions": args.topics * args.partitions, "groups": args.groups,
                "scrape_median_ms": round(statistics.median(times), 1),
                "scrape_max_ms": round(max(times), 1),
                "exposition_bytes": len(text), "samples": samples}
            # no reference to compare with: the figures alone (ratios stays empty)
            print(json.dumps({"benchmark": "metrics_scrape", "ratios": {}, "figures": figures}))
        finally:
            broker.stop()


if __name__ == "__main__":
    main()
