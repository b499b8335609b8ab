"""DescribeLogDirs (API 35): how many bytes each broker's replica of each partition holds
(what ``kafka-log-dirs.sh --describe`` prints), asked of every broker, since each one
answers for its own disks only."""

from __future__ import annotations

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import error_for_code

from .metadata import TopicPartition
from .sync_client import SyncClient


def describe_log_dirs(sync: SyncClient, broker_ids: list[int], deadline_ms: float
                      ) -> dict[int, dict[TopicPartition, int]]:
    """``{broker: {tp: bytes}}`` over every log directory of each broker (a future replica,
    one being moved between directories, is left out); raises the first error a broker or
    one of its directories reports (e.g. ClusterAuthorizationFailed without Describe on the
    cluster)."""
    out: dict[int, dict[TopicPartition, int]] = {}
    for node in broker_ids:
        response = sync.request(node, ApiKey.DESCRIBE_LOG_DIRS, {"topics": None}, deadline_ms)
        if getattr(response, "error_code", 0):
            raise error_for_code(response.error_code)(f"DescribeLogDirs of broker {node}")
        sizes: dict[TopicPartition, int] = {}
        for result in response.results:
            if result.error_code:
                raise error_for_code(result.error_code)(
                    f"DescribeLogDirs of broker {node}, directory {result.log_dir}")
            for topic in result.topics:
                for p in topic.partitions:
                    if not p.is_future_key:
                        tp = TopicPartition(topic.name, p.partition_index)
                        sizes[tp] = sizes.get(tp, 0) + p.partition_size
        out[node] = sizes
    return out
