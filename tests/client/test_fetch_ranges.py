"""Many partitions' ranges read together (``Fetcher.fetch_ranges``) against real brokers:
pyq's, then Apache Kafka's (``broker_under_test``), the same tests on both.

A Spark task packing many small ranges reads them with one Fetch per leader: every range's
records arrive exactly once, in far fewer responses than ranges, and an out-of-range
partition is handled on its own without disturbing the others.
"""

from __future__ import annotations

import pytest

from connector.client import (
    Admin,
    Fetcher,
    FetchRange,
    NewTopic,
    OffsetOutOfRangeError,
    Producer,
)
from connector.client.columnar import RecordSetPart, decode_parts

pytestmark = pytest.mark.integration

PARTITIONS = 48


def fill(bootstrap: str, topic: str, partitions: int, per_partition: int,
         replication: int = 1) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions, replication)])
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"}) as producer:
        for i in range(partitions * per_partition):
            p = i % partitions
            producer.send(topic, b"%d:%d" % (p, i // partitions), key=b"k%d" % i, partition=p)
        producer.flush()


def read_together(fetcher: Fetcher, ranges: list[FetchRange], **kwargs) -> tuple[list, int]:
    """(sorted (partition, offset, value) rows, number of responses) of one fetch_ranges."""
    rows: list[tuple[int, int, bytes]] = []
    responses = 0
    for answered in fetcher.fetch_ranges(ranges, **kwargs):
        responses += 1
        parts = [RecordSetPart(ranges[i].topic, ranges[i].partition, records, offset,
                               ranges[i].until) for i, offset, records, _ in answered]
        columns = decode_parts(parts)
        assert columns is not None
        batch = columns.to_arrow()
        rows += zip(batch.column("partition").to_pylist(), batch.column("offset").to_pylist(),
                    batch.column("value").to_pylist(), strict=True)
    return sorted(rows), responses


def expected(ranges: list[FetchRange]) -> list:
    return sorted((r.partition, o, b"%d:%d" % (r.partition, o))
                  for r in ranges for o in range(r.start, r.until))


@pytest.fixture(scope="module")
def bootstrap(broker_under_test) -> str:
    return broker_under_test.bootstrap_servers


@pytest.fixture(scope="module")
def many(bootstrap):
    fill(bootstrap, "many-ranges", PARTITIONS, 30)
    return "many-ranges"


@pytest.fixture
def three_brokers(broker_under_test, request) -> str:
    """The bootstrap servers of three brokers of the kind under test: a pyq cluster of this
    test's own, or the module's three Apache Kafka nodes (``kafka_cluster``)."""
    if broker_under_test.name == "kafka":
        return request.getfixturevalue("kafka_cluster").bootstrap_servers
    return request.getfixturevalue("cluster_factory")(3).bootstrap_servers


def test_small_ranges_of_many_partitions_come_back_in_a_few_responses(bootstrap, many):
    ranges = [FetchRange(many, p, p % 7, 30 - p % 5) for p in range(PARTITIONS)]
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        rows, responses = read_together(fetcher, ranges)
        assert rows == expected(ranges)
        assert responses <= 2  # one Fetch for all 48 (a second only if the first was cut)
        # the same ranges read again give the same rows
        assert read_together(fetcher, ranges)[0] == rows


def test_response_size_limits_spread_ranges_over_more_fetches(bootstrap, many):
    """fetch.max.bytes smaller than all the ranges together: the broker answers what fits
    (at least one batch) and the rest is asked for again until every range is done."""
    ranges = [FetchRange(many, p, 0, 30) for p in range(PARTITIONS)]
    with Fetcher({"bootstrap.servers": bootstrap,
                  "fetch.max.bytes": 2048}) as fetcher:
        rows, responses = read_together(fetcher, ranges)
    assert rows == expected(ranges)
    assert responses > 2


def test_an_out_of_range_partition_is_handled_alone(bootstrap, many):
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        fill(bootstrap, "lost-one", 8, 20)
        admin.delete_records({("lost-one", 3): 12})
    ranges = [FetchRange("lost-one", p, 5, 20) for p in range(8)]
    seen: list[tuple[int, int, int]] = []

    def resume(index: int, error: OffsetOutOfRangeError) -> int:
        seen.append((ranges[index].partition, error.offset, error.log_start_offset))
        return error.log_start_offset

    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        rows, _ = read_together(fetcher, ranges, on_out_of_range=resume)
        assert seen == [(3, 5, 12)]
        kept = [r for r in ranges if r.partition != 3] + [FetchRange("lost-one", 3, 12, 20)]
        assert rows == expected(kept)
        with pytest.raises(OffsetOutOfRangeError, match="lost-one-3"):
            read_together(fetcher, ranges)


@pytest.mark.cluster  # three broker processes, either kind
def test_ranges_on_different_leaders_are_read_from_each(three_brokers):
    """A topic whose partitions are led by three brokers: one Fetch per leader, all rows."""
    bootstrap = three_brokers
    fill(bootstrap, "spread", 12, 25, replication=2)
    ranges = [FetchRange("spread", p, 3, 25) for p in range(12)]
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        leaders = {d.leader for d in admin.describe_topics(["spread"])["spread"].partitions}
    assert len(leaders) == 3
    with Fetcher({"bootstrap.servers": bootstrap}) as fetcher:
        rows, responses = read_together(fetcher, ranges)
    assert rows == expected(ranges)
    assert responses <= 2 * len(leaders)
