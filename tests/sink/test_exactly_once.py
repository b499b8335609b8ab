"""The exactly-once sink's two-phase commit, task by task, against a real broker.

These drive the executor side (:func:`write_batches`) and the driver side
(:mod:`connector.sink.transactions`) directly, in the orders a crash can leave them, and
check what a read_committed reader sees: every row once, or (before the commit) nothing.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from connector.client import Admin, Fetcher
from connector.sink.options import SinkOptions
from connector.sink.transactions import (
    Decision,
    TransactionNotCommitted,
    end_transactions,
    read_decision,
    record_decision,
)
from connector.sink.writer import write_batches
from tests.wire import wait_for

pytestmark = pytest.mark.integration

ROWS = 600


@pytest.fixture(scope="module")
def bootstrap(shared_broker):
    return shared_broker.bootstrap_servers


def _options(bootstrap: str, topic: str, query: str, **kw) -> SinkOptions:
    return SinkOptions(bootstrap, topic, exactly_once=True, query_name=query, **kw)


def _rows(task: int) -> list[pa.RecordBatch]:
    values = [b"t%d-row-%d" % (task, i) for i in range(ROWS)]
    return [pa.RecordBatch.from_pydict({"value": values[a:a + 200]}) for a in range(0, ROWS, 200)]


def _expected(*tasks: int) -> list[bytes]:
    return sorted(b"t%d-row-%d" % (t, i) for t in tasks for i in range(ROWS))


def _read(bootstrap: str, topic: str, committed: bool = True) -> list[bytes]:
    config = {"bootstrap.servers": bootstrap,
              "isolation.level": "read_committed" if committed else "read_uncommitted"}
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        parts = [p.partition for p in admin.describe_topics([topic])[topic].partitions]
    with Fetcher(config) as fetcher:
        return sorted(r.value or b"" for p in parts
                      for r in fetcher.iter_records(topic, p, 0, fetcher.offset_bounds(topic, p)[1]))


def _settled(bootstrap: str, topic: str, expected: list[bytes]) -> list[bytes]:
    """What read_committed readers see once the commit markers are written."""
    wait_for(lambda: _read(bootstrap, topic) == expected, timeout=20, interval=0.1,
             what="the commit markers")
    return _read(bootstrap, topic)


def _create(bootstrap: str, topic: str) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topic(topic, 2, 1)


def test_rows_stay_invisible_until_the_driver_commits_every_task(bootstrap):
    _create(bootstrap, "eo-visible")
    options = _options(bootstrap, "eo-visible", "visible")
    messages = [write_batches(_rows(task), options, task, batch_id=0) for task in (0, 1)]
    assert [m.transaction.spark_partition for m in messages] == [0, 1]
    assert _read(bootstrap, "eo-visible", committed=False) == _expected(0, 1)
    assert _read(bootstrap, "eo-visible") == []  # acknowledged, not yet committed
    end_transactions(options.client(), [m.transaction for m in messages], commit=True)
    assert _settled(bootstrap, "eo-visible", _expected(0, 1)) == _expected(0, 1)


def test_a_retried_task_fences_and_aborts_its_predecessor(bootstrap):
    _create(bootstrap, "eo-retry")
    options = _options(bootstrap, "eo-retry", "retry")
    first = write_batches(_rows(3)[:2], options, 3, batch_id=5)  # the attempt that "died"
    retry = write_batches(_rows(3), options, 3, batch_id=5)
    assert retry.transaction.epoch > first.transaction.epoch
    with pytest.raises(TransactionNotCommitted, match="transaction.timeout.ms"):
        end_transactions(options.client(), [first.transaction], commit=True)  # a zombie's message
    end_transactions(options.client(), [retry.transaction], commit=True)
    assert _settled(bootstrap, "eo-retry", _expected(3)) == _expected(3)
    # the aborted attempt's rows are in the log, for read_uncommitted readers only
    assert len(_read(bootstrap, "eo-retry", committed=False)) == ROWS + 400


def test_a_batch_replayed_before_its_decision_is_written_again(bootstrap):
    _create(bootstrap, "eo-undecided")
    options = _options(bootstrap, "eo-undecided", "undecided")
    for task in (0, 1):  # the run that crashed before the driver's commit
        write_batches(_rows(task), options, task, batch_id=2)
    assert read_decision(options.client(), "undecided") is None
    replay = [write_batches(_rows(task), options, task, batch_id=2, decided=None) for task in (0, 1)]
    record_decision(options.client(), "undecided", Decision(2, frozenset({0, 1})), "eo-undecided")
    end_transactions(options.client(), [m.transaction for m in replay], commit=True)
    assert _settled(bootstrap, "eo-undecided", _expected(0, 1)) == _expected(0, 1)


def test_a_batch_replayed_after_a_crash_mid_commit_is_resolved_not_rewritten(bootstrap):
    _create(bootstrap, "eo-decided")
    options = _options(bootstrap, "eo-decided", "decided")
    messages = [write_batches(_rows(task), options, task, batch_id=7) for task in (0, 1)]
    record_decision(options.client(), "decided", Decision(7, frozenset({0, 1})), "eo-decided")
    # the driver dies after committing task 0's transaction, before task 1's
    end_transactions(options.client(), [messages[0].transaction], commit=True)
    decided = read_decision(options.client(), "decided")
    assert decided == Decision(7, frozenset({0, 1}))
    replay = [write_batches(_rows(task), options, task, batch_id=7, decided=decided)
              for task in (0, 1)]
    assert [m.rows for m in replay] == [0, 0]  # nothing written again ...
    assert all(m.transaction.committed for m in replay)  # ... both transactions committed
    assert _settled(bootstrap, "eo-decided", _expected(0, 1)) == _expected(0, 1)
    assert len(_read(bootstrap, "eo-decided", committed=False)) == 2 * ROWS
    # the next batch is written as usual, under a new epoch
    nxt = write_batches(_rows(4), options, 0, batch_id=8, decided=decided)
    assert nxt.rows == ROWS and nxt.transaction.epoch > messages[0].transaction.epoch


def test_a_decided_transaction_that_timed_out_is_written_again(bootstrap):
    _create(bootstrap, "eo-expired")
    options = _options(bootstrap, "eo-expired", "expired", transaction_timeout_ms=1000)
    message = write_batches(_rows(0), options, 0, batch_id=3)
    record_decision(options.client(), "expired", Decision(3, frozenset({0})), "eo-expired")
    with Admin({"bootstrap.servers": bootstrap}) as admin:  # the coordinator aborts it
        wait_for(lambda: admin.describe_transactions([message.transaction.transactional_id])[
            message.transaction.transactional_id].state == "CompleteAbort", timeout=30,
            interval=0.2, what="the expired transaction's abort")
    with pytest.raises(TransactionNotCommitted):
        end_transactions(options.client(), [message.transaction], commit=True)
    decided = read_decision(options.client(), "expired")
    replay = write_batches(_rows(0), options, 0, batch_id=3, decided=decided)
    assert replay.rows == ROWS and not replay.transaction.committed
    end_transactions(options.client(), [replay.transaction], commit=True)
    assert _settled(bootstrap, "eo-expired", _expected(0)) == _expected(0)


def test_a_task_without_rows_opens_no_transaction(bootstrap):
    _create(bootstrap, "eo-empty")
    message = write_batches([], _options(bootstrap, "eo-empty", "empty"), 0, batch_id=0)
    assert message.rows == 0 and message.transaction is None


def test_decisions_stay_small():
    decision = Decision(12, frozenset([*range(0, 200), 205, 207, *range(300, 400)]))
    assert decision.encode() == "pyq-sink/1 partitions=0-199,205,207,300-399"
    assert Decision.decode(12, decision.encode()) == decision
    assert Decision.decode(12, "something else") is None


def test_the_driver_ends_many_tasks_transactions_at_once(bootstrap):
    _create(bootstrap, "eo-many")
    options = _options(bootstrap, "eo-many", "many")
    tasks = range(12)  # more than END_PARALLELISM: every worker ends several
    messages = [write_batches(_rows(t), options, t, batch_id=0) for t in tasks]
    assert _read(bootstrap, "eo-many") == []
    end_transactions(options.client(), [m.transaction for m in messages], commit=True)
    assert _settled(bootstrap, "eo-many", _expected(*tasks)) == _expected(*tasks)
