r"""kcat's flags on ``pyq consume`` and ``pyq produce``: the installed ``pyq`` command run as
a separate process against a broker — pyq's broker process, then Apache Kafka
(``broker_under_test``), the same tests on both.

Every ``-o`` form (beginning, end, N, -N, s@MS, stored with --group), ``-e``, ``-f`` and ``-J``
output compared byte for byte, headers and null values through ``produce`` -> ``consume``,
``-l FILE`` and ``-K``; usage errors (exit 2) in this process.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from connector.client import Admin, NewTopic, Producer
from tests.cli.support import pyq_here

pytestmark = pytest.mark.integration

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed
BASE_TS = 1_700_000_000_000


def run(*args: str, input: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """The installed ``pyq ARGS``; stdout and stderr as bytes (compared byte for byte)."""
    return subprocess.run([PYQ, *args], input=input, capture_output=True, timeout=timeout)


def ok(*args: str, input: bytes | None = None) -> bytes:
    out = run(*args, input=input)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


@pytest.fixture(scope="module")
def bootstrap(broker_under_test) -> list[str]:
    return ["--bootstrap-server", broker_under_test.bootstrap_servers]


def create(bootstrap: list[str], topic: str, partitions: int) -> None:
    with Admin(bootstrap_servers=bootstrap[1]) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)])


@pytest.fixture(scope="module")
def numbered(bootstrap: list[str]) -> str:
    """Topic ``kc-numbered``: partition 0 holds v0-0..v0-9 with timestamps BASE_TS + i*1000,
    partition 1 holds v1-0..v1-4 with timestamps BASE_TS + i*2000 (offset = i)."""
    topic = "kc-numbered"
    create(bootstrap, topic, 2)
    with Producer(bootstrap_servers=bootstrap[1], acks="all") as producer:
        for partition, count, step in ((0, 10, 1000), (1, 5, 2000)):
            for i in range(count):
                producer.send(topic, f"v{partition}-{i}".encode(), partition=partition,
                              timestamp=BASE_TS + i * step)
        producer.flush()
    return topic


def offsets(*pairs: tuple[int, range]) -> bytes:
    return b"".join(f"{p}:{o}\n".encode() for p, rng in pairs for o in rng)


@pytest.mark.parametrize(("start", "expected"), [
    (["-o", "beginning"], offsets((0, range(10)), (1, range(5)))),
    (["--from-beginning"], offsets((0, range(10)), (1, range(5)))),
    (["-o", "end"], b""),
    ([], b""),                                                  # the latest, as before
    (["-o", "7"], offsets((0, range(7, 10)))),                  # partition 1 ends at 5
    (["-o", "0"], offsets((0, range(10)), (1, range(5)))),
    (["-o", "-2"], offsets((0, range(8, 10)), (1, range(3, 5)))),
    (["-o", "-20"], offsets((0, range(10)), (1, range(5)))),    # at most back to the first
    (["-o", f"s@{BASE_TS + 5500}"], offsets((0, range(6, 10)), (1, range(3, 5)))),
    (["-o", f"s@{BASE_TS}"], offsets((0, range(10)), (1, range(5)))),
    (["-o", f"s@{BASE_TS + 10**6}"], b""),                      # no record that late: the end
    (["-o", "3", "-p", "1"], offsets((1, range(3, 5)))),
    (["-o", "-1", "--partition", "0"], offsets((0, range(9, 10)))),
], ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_every_offset_form_with_exit_at_end(bootstrap, numbered, start, expected):
    began = time.monotonic()
    out = run("consume", numbered, *start, "-e", "-f", r"%p:%o\n", "--timeout-ms", "60000",
              *bootstrap)
    assert (out.returncode, out.stdout) == (0, expected), out.stderr
    count = expected.count(b"\n")
    assert out.stderr == f"consumed {count} records\n".encode()
    assert time.monotonic() - began < 30  # -e ended it, not the idle timeout


def test_exit_at_end_reads_what_is_there_and_the_count_limit_still_applies(bootstrap, numbered):
    assert ok("consume", numbered, "-o", "beginning", "-c", "3", "-f", r"%s ", *bootstrap) == \
        b"v0-0 v0-1 v0-2 "
    assert ok("consume", numbered, "-o", "beginning", "-e", "-f", "%s,", *bootstrap) == \
        b"".join(f"v0-{i},".encode() for i in range(10)) + \
        b"".join(f"v1-{i},".encode() for i in range(5))


def test_group_with_offsets_commits_and_stored_resumes(bootstrap, numbered):
    # -o -1 moves every partition the group assigns, whatever it committed
    assert ok("consume", numbered, "--group", "kc-tail", "-o", "-1", "-e", "-f", r"%p:%o\n",
              "--timeout-ms", "60000", *bootstrap) == b"0:9\n1:4\n"
    # what was printed was committed: the group's stored offsets are at the end
    assert ok("consume", numbered, "--group", "kc-tail", "-o", "stored", "-e",
              "--timeout-ms", "60000", *bootstrap) == b""
    assert ok("consume", numbered, "--group", "kc-tail", "-o", f"s@{BASE_TS + 8000}", "-e",
              "-f", r"%p:%o:%s\n", "--timeout-ms", "60000", *bootstrap) == \
        b"0:8:v0-8\n0:9:v0-9\n1:4:v1-4\n"


@pytest.fixture(scope="module")
def varied(bootstrap: list[str]) -> str:
    """Topic ``kc-varied`` (one partition): records with and without key, value, headers,
    UTF-8 and not, at known timestamps."""
    topic = "kc-varied"
    create(bootstrap, topic, 1)
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
        (b"user-1", b"clicked \xe2\x82\xac5", [("trace", b"t-1"), ("empty", b""), ("nil", None)]),
        (None, b"no key", []),
        (b"user-2", None, [("reason", b"deleted")]),
        (b"\xff\xfe", b"\x00\x01\x02\xff", [("bin", b"\x80")]),
    ]
    with Producer(bootstrap_servers=bootstrap[1], acks="all") as producer:
        for i, (key, value, headers) in enumerate(records):
            producer.send(topic, value, key=key, partition=0, headers=headers or None,
                          timestamp=BASE_TS + i)
        producer.flush()
    return topic


def test_format_output_byte_exact(bootstrap, varied):
    fmt = r"Topic %t [%p] at offset %o: key %k: %s\n%K %S %T {%h} 100%% \x41\tend\n"
    assert ok("consume", varied, "-o", "beginning", "-e", "-f", fmt, *bootstrap) == (
        b"Topic kc-varied [0] at offset 0: key user-1: clicked \xe2\x82\xac5\n"
        b"6 12 1700000000000 {trace=t-1,empty=,nil=NULL} 100% A\tend\n"
        b"Topic kc-varied [0] at offset 1: key : no key\n"
        b"-1 6 1700000000001 {} 100% A\tend\n"
        b"Topic kc-varied [0] at offset 2: key user-2: \n"
        b"6 -1 1700000000002 {reason=deleted} 100% A\tend\n"
        b"Topic kc-varied [0] at offset 3: key \xff\xfe: \x00\x01\x02\xff\n"
        b"2 4 1700000000003 {bin=\x80} 100% A\tend\n")
    # -Z: a null key or value prints NULL; %R is the value length as 4 big-endian bytes
    assert ok("consume", varied, "-o", "1", "-c", "2", "-Z", "-f", r"%k|%s|%R;", *bootstrap) == \
        b"NULL|no key|\x00\x00\x00\x06;user-2|NULL|\xff\xff\xff\xff;"


def test_json_output_byte_exact(bootstrap, varied):
    with Admin(bootstrap_servers=bootstrap[1]) as admin:  # "broker": the leader's node id
        leader = admin.describe_topics([varied])[varied].partitions[0].leader  # pyq 0, Kafka 1
    out = ok("consume", varied, "-o", "beginning", "-e", "-J", *bootstrap)
    assert out == (
        b'{"topic":"kc-varied","partition":0,"offset":0,"tstype":"create","ts":1700000000000,'
        b'"broker":%d,"headers":["trace","t-1","empty","","nil",null],"key":"user-1",'
        b'"payload":"clicked \xe2\x82\xac5"}\n'
        b'{"topic":"kc-varied","partition":0,"offset":1,"tstype":"create","ts":1700000000001,'
        b'"broker":%d,"key":null,"payload":"no key"}\n'
        b'{"topic":"kc-varied","partition":0,"offset":2,"tstype":"create","ts":1700000000002,'
        b'"broker":%d,"headers":["reason","deleted"],"key":"user-2","payload":null}\n'
        b'{"topic":"kc-varied","partition":0,"offset":3,"tstype":"create","ts":1700000000003,'
        b'"broker":%d,"headers":["bin",{"base64":"gA=="}],"key":{"base64":"//4="},'
        b'"payload":{"base64":"AAEC/w=="}}\n') % ((leader,) * 4)
    last = json.loads(out.splitlines()[-1])
    assert base64.b64decode(last["payload"]["base64"]) == b"\x00\x01\x02\xff"
    # the same records through --group: the same lines
    assert ok("consume", varied, "--group", "kc-json", "-o", "beginning", "-e", "-J",
              "--timeout-ms", "60000", *bootstrap) == out


def test_default_output_with_print_key_and_print_headers(bootstrap, varied):
    assert ok("consume", varied, "-o", "beginning", "-e", "--print-key", "--print-headers",
              *bootstrap) == (
        "trace:t-1,empty:,nil:null\tuser-1\tclicked €5\n"
        "NO_HEADERS\tnull\tno key\n"
        "reason:deleted\tuser-2\tnull\n"
        "bin:\ufffd\t\ufffd\ufffd\t\x00\x01\x02\ufffd\n").encode()


def test_headers_and_null_values_round_trip_through_produce_and_consume(bootstrap):
    topic = "kc-roundtrip"
    create(bootstrap, topic, 1)
    sent = run("produce", topic, "-H", "source=cli", "-H", "empty=", "-H", "nil", "-Z",
               "-p", "0", *bootstrap, input=b"k1\tv1\nk2\t\n\n\tno key\n")
    assert (sent.returncode, sent.stderr) == (0, b"sent 4 records to kc-roundtrip\n")
    # without -Z an empty line is an empty value, an empty key a key
    assert ok("produce", topic, "-H", "x=1", *bootstrap, input=b"\n\tv\n") == b""

    shown = ok("consume", topic, "-o", "beginning", "-e", "-f", r"%K:%k %S:%s [%h]\n",
               *bootstrap)
    assert shown == (b"2:k1 2:v1 [source=cli,empty=,nil=NULL]\n"
                     b"2:k2 -1: [source=cli,empty=,nil=NULL]\n"
                     b"-1: -1: [source=cli,empty=,nil=NULL]\n"
                     b"-1: 6:no key [source=cli,empty=,nil=NULL]\n"
                     b"-1: 0: [x=1]\n"
                     b"0: 1:v [x=1]\n")
    lines = [json.loads(line) for line in
             ok("consume", topic, "-o", "1", "-c", "2", "-J", *bootstrap).splitlines()]
    assert [(r["key"], r["payload"], r["headers"]) for r in lines] == [
        ("k2", None, ["source", "cli", "empty", "", "nil", None]),
        (None, None, ["source", "cli", "empty", "", "nil", None])]


def test_produce_from_a_file_with_a_key_delimiter(bootstrap, tmp_path):
    topic = "kc-file"
    create(bootstrap, topic, 1)
    lines = tmp_path / "events.txt"
    lines.write_bytes(b"a:1\nb:2:two\nno delimiter\n:empty key\r\n")
    sent = run("produce", topic, "-l", str(lines), "-K", ":", *bootstrap)
    assert (sent.returncode, sent.stderr) == (0, b"sent 4 records to kc-file\n")
    assert ok("produce", topic, "-l", str(lines), "-K", r"\x3a", "-Z", "-H", "n=2",
              *bootstrap) == b""
    assert ok("consume", topic, "-o", "beginning", "-e", "-f", r"%o %K[%k]=%s %h\n",
              *bootstrap) == (
        b"0 1[a]=1 \n1 1[b]=2:two \n2 -1[]=no delimiter \n3 0[]=empty key \n"
        b"4 1[a]=1 n=2\n5 1[b]=2:two n=2\n6 -1[]=no delimiter n=2\n7 -1[]=empty key n=2\n")
    missing = run("produce", topic, "-l", str(tmp_path / "nope.txt"), *bootstrap)
    assert missing.returncode == 1
    assert missing.stderr.decode() == \
        f"pyq produce: error: -l {tmp_path / 'nope.txt'}: No such file or directory\n"


@pytest.mark.parametrize(("args", "message"), [
    (["consume", "t", "-o", "middle"], "argument -o/--offset: 'middle' is not allowed: must be "
                                       "beginning, end, stored, an offset N, -N"),
    (["consume", "t", "-o", "s@soon"], "argument -o/--offset: 's@soon' is not allowed"),
    (["consume", "t", "-o", "5", "--from-beginning"], "not allowed with argument -o/--offset"),
    (["consume", "t", "-f", "%k %q"], "argument -f/--format: %q in '%k %q' is not a format "
                                      "token: allowed are %t %p %o %k %s %K %S %R %T %h and %%"),
    (["consume", "t", "-f", "50%"], "ends with a lone '%'"),
    (["consume", "t", "-f", "%s", "-J"], "argument -J/--json: not allowed with argument -f"),
    (["consume", "t", "-J", "--print-key"], "--print-key cannot be used with -J"),
    (["consume", "t", "-f", "%s", "--print-headers"], "--print-headers cannot be used with -f"),
    (["consume", "t", "-Z"], "-Z changes what -f prints"),
    (["consume", "t", "-o", "stored"], "-o stored needs --group"),
    (["consume", "t", "-c", "0"], "argument -c/--max-messages: 0 is not allowed: must be at least 1"),
    (["produce", "t", "-H", "=v"], "argument -H/--header: '=v' is not NAME=VALUE or NAME"),
    (["produce", "t", "-K", ""], "argument -K: '' is not allowed"),
])
def test_usage_errors_exit_2_with_one_line(monkeypatch, args, message):
    result = pyq_here(monkeypatch, *args, "--bootstrap-server", "127.0.0.1:1",
                      "--api-timeout-ms", "500")
    assert result.returncode == 2, result
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert message in result.stderr


def test_help_has_an_example_per_command():
    for command in ("consume", "produce"):
        out = run(command, "--help")
        assert out.returncode == 0
        text = out.stdout.decode()
        assert "examples:" in text and f"pyq {command} clicks" in text
    assert "{\"base64\": " in run("consume", "--help").stdout.decode()


def test_exit_at_end_steps_over_transaction_markers(bootstrap):
    """A transactional topic ends with a commit marker (a control batch, never printed):
    -e still sees the partition at its end, at once rather than at the idle timeout."""
    topic = "kc-txn"
    create(bootstrap, topic, 1)
    with Producer(bootstrap_servers=bootstrap[1], transactional_id="kc-txn") as producer:
        producer.init_transactions()
        for batch in range(2):
            producer.begin_transaction()
            producer.send(topic, f"t{batch}".encode(), partition=0)
            producer.commit_transaction()
    began = time.monotonic()
    out = run("consume", topic, "-o", "beginning", "-e", "-f", r"%o:%s\n", "--timeout-ms",
              "60000", *bootstrap)
    assert (out.returncode, out.stdout) == (0, b"0:t0\n2:t1\n"), out.stderr
    assert time.monotonic() - began < 30
    # the same from a group: its positions step over the marker too
    assert ok("consume", topic, "--group", "kc-txn", "-o", "beginning", "-e", "-f", r"%o:%s\n",
              "--timeout-ms", "60000", *bootstrap) == b"0:t0\n2:t1\n"
