"""Stopping a broker is prompt even while its log cleaner is in the middle of a long pass."""

from __future__ import annotations

import time
from pathlib import Path

from broker_sim.log.segment_swap import CLEANING, SWAP
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.records.builder import RecordBatchBuilder
from broker_sim.server import Broker, BrokerConfig
from tests.wire import WireClient, produce_body, wait_for

SET = 0  # IncrementalAlterConfigs operation


def _topic_configs(port: int, topic: str, configs: dict[str, str]) -> None:
    with WireClient(port) as c:
        r = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, {
            "resources": [{"resource_type": 2, "resource_name": topic, "configs": [
                {"name": k, "config_operation": SET, "value": v} for k, v in configs.items()]}],
            "validate_only": False})
    assert r.responses[0].error_code == 0, r


def test_stopping_a_broker_abandons_the_clean_in_progress(tmp_path: Path) -> None:
    """~3.5 million updates of 5,000 keys, held back from the cleaner by
    ``min.compaction.lag.ms`` until all are written; then the lag is dropped and, while
    the cleaner's pass over them (a few seconds) is under way, the broker is stopped: it
    returns within a second, leaving the segments as they were and no clean half done."""
    config = BrokerConfig(broker_id=0, port=0, data_dir=tmp_path / "b", log_cleaner_backoff_ms=50)
    broker = Broker(config).start()
    try:
        with WireClient(broker.port) as c:
            r = c.request(ApiKey.CREATE_TOPICS, 4, {"topics": [{
                "name": "compacted", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                "configs": [{"name": k, "value": v} for k, v in {
                    "cleanup.policy": "compact", "segment.bytes": str(48 << 20),
                    "min.compaction.lag.ms": str(86_400_000)}.items()]}],
                "timeout_ms": 10_000, "validate_only": False})
            assert r.topics[0].error_code == 0, r
            b = RecordBatchBuilder()
            now = int(time.time() * 1000)
            for i in range(10_000):
                b.append(now, b"k%05d" % (i % 5_000), b"v%d" % i)
            batch = b.build()
            for _ in range(350):
                r = c.request(ApiKey.PRODUCE, 8, produce_body("compacted", 0, batch, acks=1))
                assert r.responses[0].partition_responses[0].error_code == 0, r
        log = broker.replica_manager.partition("compacted", 0).log
        assert len(log.segments) == 2  # one large closed segment for the cleaner
        files = {p.name: p.stat().st_size for p in log.dir.glob("*.log")}

        _topic_configs(broker.port, "compacted", {"min.compaction.lag.ms": "0"})
        cleaner = broker.log_cleaner
        assert cleaner is not None
        # well into the pass: the offset map is built and the segment is being rewritten
        # into cleaning/ (which stopping must drop)
        wait_for(lambda: (log.dir / CLEANING).is_dir(), timeout=30, interval=0.005,
                 what="the cleaner rewriting the segment")
        assert cleaner.cleans == 0
        started = time.monotonic()
    finally:
        broker.shutdown()
    stopped_in = time.monotonic() - started
    assert stopped_in < 1.0, f"the broker took {stopped_in:.2f} s to stop"
    assert cleaner.cleans == 0  # the pass was abandoned, not finished
    assert not (log.dir / CLEANING).exists() and not (log.dir / SWAP).exists()
    assert {p.name: p.stat().st_size for p in log.dir.glob("*.log")} == files
