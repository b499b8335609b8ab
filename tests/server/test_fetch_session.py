"""Incremental fetch sessions (KIP-227) on a real broker process, over the wire.

A follower's Fetch (``replica_id`` >= 0) with epoch 0 opens a session; later fetches of
the session name only what changed and get back only the partitions with news. Consumers
are answered without a session. Errors send the follower back to a full fetch.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest

from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import FetchSessionIdNotFound, InvalidFetchSessionEpoch
from broker_sim.protocol.records import RecordBatchBuilder
from broker_sim.server.fetch_session import FetchSessionBuilder
from tests.wire import WireClient, create_topic, produce_body

TOPIC = "sessions"
PARTITIONS = 4
REPLICA = 7  # not a replica of anything here: the leader reads for it, tracks nothing


def fetch(client: WireClient, session_id: int, epoch: int, offsets: dict[int, int],
          forgotten: Sequence[int] = (), replica_id: int = REPLICA) -> tuple[int, int, dict[int, Any]]:
    """(error code, session id, {partition: partition data}) of one Fetch v11."""
    body = {"replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": o,
                 "log_start_offset": 0, "partition_max_bytes": 1 << 20}
                for p, o in offsets.items()]}] if offsets else [],
            "forgotten_topics_data": [{"topic": TOPIC, "partitions": list(forgotten)}] if forgotten else [],
            "rack_id": ""}
    r = client.request(ApiKey.FETCH, 11, body)
    parts = {p.partition_index: p for t in r.responses for p in t.partitions}
    return r.error_code, r.session_id, parts


def produce(client: WireClient, partition: int, *values: bytes) -> None:
    b = RecordBatchBuilder()
    for v in values:
        b.append(int(time.time() * 1000), None, v)
    r = client.request(ApiKey.PRODUCE, 8, produce_body(TOPIC, partition, b.build(), acks=1))
    assert r.responses[0].partition_responses[0].error_code == 0


@pytest.fixture
def broker(broker_factory):
    proc = broker_factory()
    create_topic(proc.port, TOPIC, PARTITIONS)
    return proc


def test_a_session_returns_only_the_partitions_with_news(broker) -> None:
    with WireClient(broker.port) as c:
        produce(c, 0, b"a", b"b")
        error, session, parts = fetch(c, 0, 0, {p: 0 for p in range(PARTITIONS)})
        assert error == 0 and session != 0
        assert sorted(parts) == list(range(PARTITIONS))  # a full first answer
        assert parts[0].high_watermark == 2 and len(parts[0].records) > 0

        # Incremental: partition 0 moved on (named with its new offset); nothing is new.
        error, same, parts = fetch(c, session, 1, {0: 2})
        assert (error, same, parts) == (0, session, {})

        produce(c, 2, b"c")  # news on a partition the request does not name
        error, _, parts = fetch(c, session, 2, {})
        assert error == 0 and sorted(parts) == [2]
        assert parts[2].high_watermark == 1 and len(parts[2].records) > 0

        # The follower appended it and names its new offset: nothing more to say.
        error, _, parts = fetch(c, session, 3, {2: 1})
        assert error == 0 and parts == {}

        # Forgotten partitions are no longer read: news on 3 is not sent once forgotten.
        error, _, parts = fetch(c, session, 4, {}, forgotten=[3])
        assert error == 0 and parts == {}
        produce(c, 3, b"d")
        produce(c, 1, b"e")
        error, _, parts = fetch(c, session, 5, {})
        assert error == 0 and sorted(parts) == [1]


def test_session_errors_send_the_follower_back_to_a_full_fetch(broker) -> None:
    with WireClient(broker.port) as c:
        error, session, _ = fetch(c, 0, 0, {p: 0 for p in range(PARTITIONS)})
        assert error == 0 and session != 0
        error, sid, parts = fetch(c, session, 5, {})  # the broker expects epoch 1
        assert (error, sid, parts) == (InvalidFetchSessionEpoch.code, 0, {})
        error, sid, parts = fetch(c, session + 1000, 1, {})
        assert (error, sid, parts) == (FetchSessionIdNotFound.code, 0, {})
        error, sid, _ = fetch(c, session, 1, {}, replica_id=REPLICA + 1)  # not its session
        assert error == FetchSessionIdNotFound.code
        # epoch 0 with the old id: the old session is closed and a new one opened
        error, fresh, parts = fetch(c, session, 0, {p: 0 for p in range(PARTITIONS)})
        assert error == 0 and fresh not in (0, session) and len(parts) == PARTITIONS
        assert fetch(c, session, 1, {})[0] == FetchSessionIdNotFound.code
        # epoch -1 closes it and fetches in full, without a session
        error, sid, parts = fetch(c, fresh, -1, {p: 0 for p in range(PARTITIONS)})
        assert (error, sid, len(parts)) == (0, 0, PARTITIONS)
        assert fetch(c, fresh, 1, {})[0] == FetchSessionIdNotFound.code


def test_consumers_fetch_without_a_session(broker) -> None:
    with WireClient(broker.port) as c:
        produce(c, 1, b"x")
        error, session, parts = fetch(c, 0, 0, {p: 0 for p in range(PARTITIONS)}, replica_id=-1)
        assert error == 0 and session == 0 and sorted(parts) == list(range(PARTITIONS))


def test_sessions_can_be_turned_off(broker_factory) -> None:
    proc = broker_factory(overrides={"max.incremental.fetch.session.cache.slots": "0"})
    create_topic(proc.port, TOPIC, PARTITIONS)
    with WireClient(proc.port) as c:
        error, session, parts = fetch(c, 0, 0, {p: 0 for p in range(PARTITIONS)})
        assert error == 0 and session == 0 and len(parts) == PARTITIONS


def test_the_builder_names_only_changed_partitions_and_starts_over_on_errors() -> None:
    b = FetchSessionBuilder()
    wanted = {("t", 0): (0, 0, 1, 100), ("t", 1): (5, 0, 1, 100)}
    assert b.request(wanted) == (0, 0, [("t", 0), ("t", 1)], [])
    b.response(0, 42)
    assert b.request(wanted) == (42, 1, [], [])
    b.response(0, 42)
    wanted = {("t", 0): (3, 0, 1, 100), ("t", 2): (0, 0, 1, 100)}  # 0 moved, 1 gone, 2 new
    assert b.request(wanted) == (42, 2, [("t", 0), ("t", 2)], [("t", 1)])
    b.response(InvalidFetchSessionEpoch.code, 0)
    assert b.request(wanted) == (42, 0, [("t", 0), ("t", 2)], [])  # closes 42, opens anew
    b.response(0, 0)  # the leader declined: stay sessionless, ask again next time
    assert b.request(wanted)[1] == 0
