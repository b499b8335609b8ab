"""The command line's pure parts, without a broker: line splitting, the consume loop's
stop rules on a manual clock, the lag table, and the docstring examples."""

from __future__ import annotations

import argparse
import doctest
import importlib

import pytest

from broker_sim.common import ManualClock
from connector.cli.consume import consume
from connector.cli.lag import lag_table
from connector.cli.produce import separator, split_line
from connector.cli.table import format_table
from connector.client import OffsetAndMetadata, TopicPartition
from connector.client.commit_metadata import metadata_fields


@pytest.mark.parametrize("name", ["connector.cli.table", "connector.cli.produce",
                                  "connector.client.commit_metadata", "connector.cli.record_output",
                                  "connector.cli.readers"])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("line, sep, expected", [
    (b"k\tv\n", b"\t", (b"k", b"v")),
    (b"k\tv\tw", b"\t", (b"k", b"v\tw")),        # split at the first separator only
    (b"\tv\n", b"\t", (b"", b"v")),               # an empty key is still a key
    (b"plain value\n", b"\t", (None, b"plain value")),
    (b"crlf\r\n", b"\t", (None, b"crlf")),
    (b"\n", b"\t", (None, b"")),                  # an empty line is an empty value
    (b"a::b\n", b"::", (b"a", b"b")),
    (b"k\tv\n", None, (None, b"k\tv")),           # --no-key
    (b"\xff\tbytes\n", b"\t", (b"\xff", b"bytes")),  # nothing is decoded
])
def test_split_line(line, sep, expected):
    assert split_line(line, sep) == expected


def test_separator_names():
    assert separator("TAB") == separator("tab") == separator("\\t") == "\t"
    assert separator(",") == separator("COMMA") == ","
    assert separator("::") == "::"
    with pytest.raises(argparse.ArgumentTypeError, match="must be a non-empty string"):
        separator("")


class Rounds:
    """poll() rounds scripted as lists of records; each round advances the clock."""

    def __init__(self, clock: ManualClock, rounds: list[list[str]], round_ms: float = 10) -> None:
        self.clock, self.rounds, self.round_ms, self.polls = clock, list(rounds), round_ms, 0

    def poll(self):
        self.polls += 1
        self.clock.advance(self.round_ms)
        return iter(self.rounds.pop(0) if self.rounds else [])


def run(rounds: Rounds, clock: ManualClock, max_records: int | None, idle_timeout_ms: float):
    emitted: list[str] = []
    slept: list[float] = []

    def sleep_ms(ms: float) -> None:
        slept.append(ms)
        clock.advance(int(ms))

    count = consume(rounds.poll, emitted.append, max_records, idle_timeout_ms, clock, sleep_ms,
                    poll_interval_ms=100)
    return count, emitted, slept


def test_consume_stops_at_max_records_in_the_middle_of_a_round():
    clock = ManualClock()
    rounds = Rounds(clock, [["a", "b"], ["c", "d", "e"], ["f"]])
    count, emitted, slept = run(rounds, clock, max_records=4, idle_timeout_ms=5000)
    assert (count, emitted, slept) == (4, ["a", "b", "c", "d"], [])
    assert rounds.polls == 2


def test_consume_stops_after_the_idle_timeout_counted_from_the_last_record():
    clock = ManualClock()
    # records at t=10, then 3 empty rounds, a record at t=~360, then nothing at all
    rounds = Rounds(clock, [["a"], [], [], [], ["b"]])
    count, emitted, slept = run(rounds, clock, max_records=None, idle_timeout_ms=1000)
    assert (count, emitted) == (2, ["a", "b"])
    last_record = 10 + 3 * (10 + 100) + 10
    assert clock.monotonic_ms() >= last_record + 1000
    assert clock.monotonic_ms() < last_record + 1000 + 10 + 100  # no round after the timeout
    assert all(0 < ms <= 100 for ms in slept)


def test_consume_with_a_zero_timeout_makes_one_round():
    clock = ManualClock()
    rounds = Rounds(clock, [[], ["late"]])
    count, emitted, slept = run(rounds, clock, max_records=None, idle_timeout_ms=0)
    assert (count, emitted, slept, rounds.polls) == (0, [], [], 1)


def test_lag_table_with_counters_from_json_metadata():
    tp0, tp1, tp2 = (TopicPartition("events", p) for p in range(3))
    committed = {
        tp0: OffsetAndMetadata(1200, '{"query": "q1", "skipped": 0, "lost": 2, "retried": 3, '
                                     '"dead_lettered": 1}'),
        tp2: OffsetAndMetadata(7, "plain text"),
    }
    columns, rows = lag_table([tp2, tp0, tp1], committed, {tp0: 1250, tp1: 980})
    assert columns == ["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG", "QUERY", "SKIPPED",
                       "LOST", "RETRIED", "DEAD_LETTERED"]
    assert rows == [["events", 0, 1200, 1250, 50, "q1", 0, 2, 3, 1],
                    ["events", 1, None, 980, None, None, None, None, None, None],
                    ["events", 2, 7, None, None, None, None, None, None, None]]
    assert format_table(columns, rows).splitlines()[2].split() == ["events", "1", "-", "980"] + ["-"] * 6


def test_lag_table_without_json_has_only_the_offset_columns():
    tp = TopicPartition("t", 0)
    columns, rows = lag_table([tp], {tp: OffsetAndMetadata(3, "")}, {tp: 10})
    assert (columns, rows) == (["TOPIC", "PARTITION", "COMMITTED", "LATEST", "LAG"],
                               [["t", 0, 3, 10, 7]])


@pytest.mark.parametrize("metadata", ["", "null", "[1, 2]", "42", "{not json", '"a string"'])
def test_metadata_that_is_not_a_json_object_has_no_fields(metadata):
    assert metadata_fields(metadata) == {}
