"""The partition log: segments of record batches on disk, as Kafka stores them.

* :class:`LogConfig` (``config.py``): segment/retention/index settings with Kafka's names.
* :class:`OffsetIndex` (``offset_index.py``): sparse offset -> file position index.
* :class:`LogSegment` (``segment.py``): one ``.log`` file plus its index.
* :class:`Log` (``log.py``): one topic-partition: appends, reads, recovery, retention.
* :class:`LogManager` (``log_manager.py``): every partition log under a data directory.
"""

from .config import LogConfig
from .leader_epoch_cache import LeaderEpochCache
from .log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    AppendInfo,
    FetchDataInfo,
    Log,
    UnexpectedAppendOffset,
)
from .log_dir import segment_name
from .log_manager import LogManager, TopicPartition, parse_partition_dir, validate_topic_name
from .offset_index import CorruptIndex, OffsetIndex
from .segment import LogSegment

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_TIMESTAMP",
    "AppendInfo",
    "CorruptIndex",
    "FetchDataInfo",
    "LeaderEpochCache",
    "Log",
    "LogConfig",
    "LogManager",
    "LogSegment",
    "OffsetIndex",
    "TopicPartition",
    "UnexpectedAppendOffset",
    "parse_partition_dir",
    "segment_name",
    "validate_topic_name",
]
