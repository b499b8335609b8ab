"""An executor's read of one input partition (``read_ranges``) against a real broker.

A packed task may hold several ranges of one partition — retry runs planned beside the
partition's new range — and ranges of other partitions; every range's rows must come
back exactly once, with the attempt number of the piece that delivered them.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from connector.client import Admin, NewTopic, Producer
from connector.source.read import DataLossDuringRead, InputRange, read_ranges

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def topic(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic("read-ranges", 3, 1)])
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for i in range(300):
            producer.send("read-ranges", b"%d:%d" % (i % 3, i // 3), partition=i % 3)
        producer.flush()
    return "read-ranges"


def rows(ranges: tuple[InputRange, ...]) -> list[tuple]:
    table = pa.Table.from_batches(list(read_ranges(ranges)))
    columns = ["partition", "offset", "value"] + (["attempt"] if "attempt" in table.column_names else [])
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def test_several_ranges_of_one_partition_in_one_task(shared_broker, topic):
    bootstrap = shared_broker.bootstrap_servers

    def r(partition, start, end, retries=()):
        return InputRange(bootstrap, topic, partition, start, end, retries=retries,
                          include_attempt=True)

    ranges = (r(0, 0, 0, ((3, 1), (4, 1), (9, 2))),  # partition 0's retries ...
              r(1, 10, 20),
              r(0, 50, 60),                            # ... and its new range, apart
              r(2, 0, 0, ((7, 3),)), r(2, 90, 100))
    want = sorted([(0, 3, b"0:3", 1), (0, 4, b"0:4", 1), (0, 9, b"0:9", 2), (2, 7, b"2:7", 3)]
                  + [(0, o, b"0:%d" % o, 0) for o in range(50, 60)]
                  + [(1, o, b"1:%d" % o, 0) for o in range(10, 20)]
                  + [(2, o, b"2:%d" % o, 0) for o in range(90, 100)])
    assert rows(ranges) == want


def test_a_lost_range_fails_the_task_naming_it_and_spares_nothing_silently(shared_broker, topic):
    bootstrap = shared_broker.bootstrap_servers
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.delete_records({(topic, 1): 30})
    kept = InputRange(bootstrap, topic, 0, 20, 40)
    lost = InputRange(bootstrap, topic, 1, 20, 40)
    with pytest.raises(DataLossDuringRead, match=r"read-ranges-1: offsets \[20, 30\)"):
        rows((kept, lost))
    lenient = InputRange(bootstrap, topic, 1, 20, 40, fail_on_data_loss=False)
    assert rows((kept, lenient)) == sorted(
        [(0, o, b"0:%d" % o) for o in range(20, 40)] + [(1, o, b"1:%d" % o) for o in range(30, 40)])
