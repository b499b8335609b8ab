"""``pyq console`` in a real headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright; no browser is downloaded), over a 3-broker pyq cluster and over Apache Kafka
(the session's ``kafka``), through ``broker_under_test``: each test runs on both, the console started as a user starts it
(``pyq console --port 0``) and checked against what our client reads from the cluster.
Screenshots of each screen go to tests/console/screenshots/ (ignored by git)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from broker_sim.cluster import LocalCluster
from connector.client import (
    Admin,
    Consumer,
    NewTopic,
    OffsetAndMetadata,
    Producer,
    TopicPartition,
)
from tests.cli.support import pyq
from tests.conftest import BrokerUnderTest
from tests.wire import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.cluster]

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).parent / "screenshots"
ROOT = Path(__file__).parents[2]
LAG_INTERVAL_MS = 300


class Console(NamedTuple):
    name: str  # pyq or kafka
    bootstrap: str
    url: str


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """This module's pyq side of ``broker_under_test``: a 3-broker cluster, not one broker."""
    cluster = LocalCluster(tmp_path_factory.mktemp("console-cluster"), 3,
                           overrides={"auto.create.topics.enable": "false"}).start()
    yield cluster
    cluster.stop()


def start_console(bootstrap: str, *options: str, env: dict[str, str] | None = None
                  ) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "connector.cli", "console", "--bootstrap-server", bootstrap,
         "--port", "0", "--lag-interval-ms", str(LAG_INTERVAL_MS), *options], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    found = re.match(r"pyq console: (http://127\.0\.0\.1:\d+/)", line)
    if found is None:
        proc.kill()
        proc.wait()
        raise AssertionError(f"pyq console printed {line!r}, exit code {proc.poll()}")
    return proc, found.group(1)


@pytest.fixture(scope="module")
def console(broker_under_test: BrokerUnderTest) -> Iterator[Console]:
    bootstrap = broker_under_test.bootstrap_servers
    proc, url = start_console(bootstrap)
    try:
        yield Console(broker_under_test.name, bootstrap, url)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def browser() -> Iterator:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: 'make chromium' installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, console: Console):
    context = browser.new_context(base_url=console.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    yield page
    context.close()


def shot(page, console: Console, screen: str) -> None:
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{screen}-{console.name}.png"), full_page=True)


def admin(console: Console) -> Admin:
    return Admin({"bootstrap.servers": console.bootstrap})


def make_topic(console: Console, name: str, partitions: int = 1) -> None:
    with admin(console) as a:
        a.create_topics([NewTopic(name, partitions, 1)])
        assert a.await_topic(name) == partitions


def cell(page, selector: str) -> str:
    return str(page.locator(selector).inner_text()).strip()


def test_overview_shows_the_brokers(page, console):
    with admin(console) as a:
        described = a.describe_cluster()
    page.goto("/")
    rows = page.locator("#brokers tr[data-broker]")
    assert rows.count() == len(described.brokers) == (3 if console.name == "pyq" else 1)
    for node in described.brokers:
        row = page.locator(f'#brokers tr[data-broker="{node.node_id}"]')
        assert str(node.port) in row.inner_text()
    assert cell(page, "#controller") == str(described.controller_id)
    assert cell(page, "#offline") == "0"
    page.locator("#broker-chart").wait_for()
    assert page.evaluate("typeof Chart") == "function"  # the pinned Chart.js was served
    shot(page, console, "overview")


def test_topic_created_in_the_page_exists(page, console):
    name = f"created-{console.name}"
    page.goto("/topics/new")
    page.fill("input[name=name]", name)
    page.fill("input[name=partitions]", "3")
    page.fill("textarea[name=configs]", "retention.ms=3600000")
    page.click("#create-form button[type=submit]")
    page.locator("#partitions").wait_for()
    assert page.locator("#partitions tr[data-partition]").count() == 3
    assert cell(page, '#configs tr[data-config="retention.ms"] td:nth-child(2)') == "3600000"
    shot(page, console, "topic")
    with admin(console) as a:
        assert len(a.describe_topics([name])[name].partitions) == 3
        configs = next(iter(a.describe_configs([("topic", name)]).values()))
        assert configs["retention.ms"].value == "3600000"
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        p.send(name, b"x" * 1000, partition=1)
        p.flush()
    with admin(console) as a:  # DescribeLogDirs: the leader's bytes of each partition
        leaders = {p.partition: p.leader for p in a.describe_topics([name])[name].partitions}
        sizes = a.describe_log_dirs()
    size = sum(sizes[leader].get(TopicPartition(name, p), 0) for p, leader in leaders.items())
    assert size > 1000
    page.goto("/topics")
    row = page.locator(f'#topics tr[data-topic="{name}"]')
    assert [cell(row, f"td:nth-child({i})") for i in (2, 5, 6)] == ["3", str(size), "1"]
    shot(page, console, "topics")


def test_produced_messages_appear_with_key_value_and_headers(page, console):
    name = f"browse-{console.name}"
    make_topic(console, name)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for i in range(5):
            p.send(name, f'{{"n": {i}, "who": "test"}}'.encode(), f"key-{i}".encode(),
                   partition=0, headers=[("trace", f"t{i}".encode()), ("empty", None)])
        p.flush()
    page.goto(f"/topics/{name}/messages?seek=latest&limit=3&format=json")
    rows = page.locator("#records tr[data-offset]")
    assert [r.get_attribute("data-offset") for r in rows.all()] == ["2", "3", "4"]
    last = page.locator('#records tr[data-offset="4"]')
    assert cell(last, ".key") == "key-4"
    assert cell(last, ".value") == '{\n  "n": 4,\n  "who": "test"\n}'  # pretty-printed JSON
    assert "trace: t4" in cell(last, ".headers") and "empty: (null)" in cell(last, ".headers")
    shot(page, console, "messages")
    page.select_option("select[name=format]", "hex")
    page.click("#seek-form button[type=submit]")
    assert cell(page, '#records tr[data-offset="4"] .key') == b"key-4".hex(" ")
    # Produced in the page: shown at its offset, read back by our client.
    page.fill("#produce-form input[name=key]", "from-page")
    page.fill("#produce-form textarea[name=value]", "hello from the browser")
    page.fill("#produce-form textarea[name=headers]", "source=console")
    page.click("#produce-form button[type=submit]")
    assert cell(page, '#records tr[data-offset="5"] .value') == "hello from the browser"
    with admin(console) as a:
        assert a.list_offsets({(name, 0): "latest"})[TopicPartition(name, 0)].offset == 6


def test_the_filter_keeps_the_records_containing_the_text(page, console):
    name = f"filtered-{console.name}"
    make_topic(console, name)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for i in range(30):
            p.send(name, b"hay" if i not in (7, 21) else b"hay needle hay", partition=0,
                   headers=[("mark", b"pin" if i == 12 else b"none")])
        p.flush()

    def shown(query: str) -> list[str | None]:
        page.goto(f"/topics/{name}/messages?{query}")
        return [r.get_attribute("data-offset") for r in page.locator("#records tr[data-offset]").all()]

    assert shown("seek=latest&limit=20&filter=needle") == ["7", "21"]
    assert cell(page, "#scanned") == "0 to 29"
    assert shown("seek=latest&limit=1&filter=needle") == ["21"]
    assert shown("seek=offset&value=10&filter=needle") == ["21"]
    assert shown("seek=offset&value=0&filter=pin") == ["12"]  # a header value


def test_seek_by_timestamp_lands_on_the_first_record_at_or_after_it(page, console):
    name = f"times-{console.name}"
    make_topic(console, name)
    base = int(time.time() * 1000) - 60_000
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for i in range(6):
            p.send(name, f"v{i}".encode(), partition=0, timestamp=base + i * 1000)
        p.flush()
    page.goto(f"/topics/{name}/messages")
    page.select_option("select[name=seek]", "timestamp")
    page.fill("input[name=value]", str(base + 3500))  # between offsets 3 and 4
    page.fill("input[name=limit]", "10")
    page.click("#seek-form button[type=submit]")
    rows = page.locator("#records tr[data-offset]")
    assert [r.get_attribute("data-offset") for r in rows.all()] == ["4", "5"]
    assert cell(page, '#records tr[data-offset="4"] .timestamp small') == str(base + 4000)


def test_group_lag_drops_to_zero_as_a_consumer_catches_up(page, console):
    name, group = f"lagging-{console.name}", f"catching-up-{console.name}"
    make_topic(console, name, 2)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for i in range(40):
            p.send(name, f"r{i}".encode(), partition=i % 2)
        p.flush()
    with admin(console) as a:
        a.commit_offsets(group, {(name, 0): 0, (name, 1): 0})
    page.goto(f"/groups/{group}")
    assert cell(page, "#total-lag") == "40"

    def charted() -> list[int]:  # the lag history chart's points, as the page fetched them
        points: list[int] = page.evaluate(
            "Chart.getChart('lag-history').data.datasets[0].data")
        return points

    wait_for(lambda: 40 in charted(), what="lag 40 in the lag history chart")
    consumer = Consumer({"bootstrap.servers": console.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.subscribe([name])
        seen = 0

        def caught_up() -> bool:
            nonlocal seen
            seen += consumer.poll(500).num_rows
            return seen >= 40

        wait_for(caught_up, what="the consumer read all 40 records")
        consumer.commit()

        def lag_in_page() -> bool:
            page.goto(f"/groups/{group}")
            return cell(page, "#total-lag") == "0"

        wait_for(lag_in_page, what="lag 0 in the page")
        assert {cell(page, f'#lag tr[data-tp="{name}-{p}"] .lag') for p in (0, 1)} == {"0"}
        history = wait_for(lambda: (points := charted()) and points[-1] == 0 and points,
                           what="lag 0 last in the lag history chart")
        known = [p for p in history if p is not None]  # None: a round that saw the group
        assert known[0] == 40 and set(known) <= set(range(41))  # before its commit was durable
        shot(page, console, "group")
    finally:
        consumer.close()
    page.goto("/groups")
    assert cell(page, f'#groups tr[data-group="{group}"] .lag') == "0"
    shot(page, console, "groups")


def test_reset_offsets_previews_then_executes(page, console):
    name, group = f"resettable-{console.name}", f"resetting-{console.name}"
    make_topic(console, name, 2)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for i in range(10):
            p.send(name, f"r{i}".encode(), partition=i % 2)
        p.flush()
    tps = [TopicPartition(name, 0), TopicPartition(name, 1)]
    with admin(console) as a:  # as a pyq Spark source commits: counters in the metadata
        a.commit_offsets(group, {tp: OffsetAndMetadata(5, json.dumps(
            {"query": "q1", "dead_lettered": tp.partition + 1, "sink": {"rows": 9}})) for tp in tps})
    page.goto(f"/groups/{group}")
    assert [cell(page, f'#lag tr[data-tp="{name}-1"] td[data-field="{f}"]')
            for f in ("query", "dead_lettered", "sink.rows")] == ["q1", "2", "9"]
    page.goto(f"/groups/{group}/reset")
    page.fill("#reset-form input[name=topic]", name)
    page.select_option("#reset-form select[name=strategy]", "offset")
    page.fill("#reset-form input[name=value]", "2")
    page.click("#preview-button")
    page.locator("#preview").wait_for()
    assert [cell(page, f'#plan tr[data-tp="{tp.topic}-{tp.partition}"] .new') for tp in tps] == ["2", "2"]
    shot(page, console, "reset-preview")
    with admin(console) as a:  # a preview commits nothing
        assert {tp: om.offset for tp, om in a.fetch_offsets(group).items()} == dict.fromkeys(tps, 5)
    page.click("#execute-button")
    page.locator("#executed").wait_for()
    with admin(console) as a:
        assert {tp: om.offset for tp, om in a.fetch_offsets(group).items()} == dict.fromkeys(tps, 2)
    page.goto(f"/groups/{group}")
    assert cell(page, "#total-lag") == "6"  # 5 records per partition, 3 of each unread
    out = pyq("lag", "--group", group, "--bootstrap-server", console.bootstrap, "-J")
    assert out.returncode == 0, out.stderr
    assert [(p["partition"], p["committed"], p["lag"]) for p in json.loads(out.stdout)["partitions"]] \
        == [(0, 2, 3), (1, 2, 3)]


def test_destructive_actions_need_their_confirmation(page, console):
    name = f"precious-{console.name}"
    make_topic(console, name)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for i in range(4):
            p.send(name, f"r{i}".encode(), partition=0)
        p.flush()
    tp = TopicPartition(name, 0)
    page.goto(f"/topics/{name}")
    page.click("#delete")
    page.click("#confirm-form button[type=submit]")  # the name not typed
    page.locator("#not-confirmed").wait_for()
    page.goto(f"/topics/{name}/truncate?partition=0&offset=3")
    page.fill("#confirm-form input[name=confirm]", "not-the-name")
    page.click("#confirm-form button[type=submit]")
    page.locator("#not-confirmed").wait_for()
    shot(page, console, "confirm")
    with admin(console) as a:
        assert name in a.list_topics()
        assert a.list_offsets({tp: "earliest"})[tp].offset == 0
    # Confirmed: truncated, then deleted.
    page.fill("#confirm-form input[name=confirm]", name)
    page.click("#confirm-form button[type=submit]")
    assert cell(page, '#partitions tr[data-partition="0"] .start') == "3"
    page.click("#delete")
    page.fill("#confirm-form input[name=confirm]", name)
    page.click("#confirm-form button[type=submit]")
    page.locator("#topics").wait_for()
    with admin(console) as a:
        wait_for(lambda: name not in a.list_topics(), what=f"{name} deleted")


def test_a_config_set_in_the_page_is_the_topics_and_a_bad_value_changes_nothing(page, console):
    name = f"configured-{console.name}"
    make_topic(console, name)

    def retention() -> str | None:
        with admin(console) as a:
            value: str | None = next(iter(a.describe_configs(
                [("topic", name)], ["retention.ms"]).values()))["retention.ms"].value
            return value

    page.goto(f"/topics/{name}")
    page.fill("#config-form input[name=name]", "retention.ms")
    page.fill("#config-form input[name=value]", "7200000")
    page.click("#config-form button[type=submit]")
    assert cell(page, '#configs tr[data-config="retention.ms"] td:nth-child(2)') == "7200000"
    assert retention() == "7200000"
    page.fill("#config-form input[name=name]", "retention.ms")
    page.fill("#config-form input[name=value]", "a week")
    page.click("#config-form button[type=submit]")
    assert "InvalidConfig" in cell(page, "#error")
    assert retention() == "7200000"


def test_a_consumer_protocol_group_shows_its_member_and_assignor(page, console):
    name, group = f"kip848-{console.name}", f"next-gen-{console.name}"
    make_topic(console, name, 2)
    consumer = Consumer({"bootstrap.servers": console.bootstrap, "group.id": group,
                         "group.protocol": "consumer", "enable.auto.commit": False})
    try:
        consumer.subscribe([name])

        def stable() -> bool:  # Stable with one member, which then gets both partitions
            consumer.poll(200)
            page.goto(f"/groups/{group}")
            return cell(page, "#state") == "Stable" and cell(page, "#member-count") == "1" \
                and cell(page, "#members tr:nth-child(2) td:nth-child(4)") == f"{name}-0, {name}-1"

        wait_for(stable, what="the KIP-848 group Stable, its member assigned both partitions")
        assert cell(page, "#protocol") != "-"  # the server-side assignor
    finally:
        consumer.close()


def test_basic_auth_keeps_out_a_browser_without_the_password(browser, console):
    proc, url = start_console(console.bootstrap, "--basic-auth", "ops",
                              env={"PYQ_CONSOLE_PASSWORD": "s3cret"})
    try:
        from playwright.sync_api import Error

        def visit(credentials: dict[str, str] | None) -> tuple[int, str]:
            context = browser.new_context(http_credentials=credentials)
            try:
                page = context.new_page()
                answer = page.goto(url)
                assert answer is not None
                return answer.status, str(page.content())
            finally:
                context.close()

        with pytest.raises(Error, match="ERR_INVALID_AUTH_CREDENTIALS"):  # none to give
            visit(None)
        assert visit({"username": "ops", "password": "guess"})[0] == 401
        context = browser.new_context()
        try:  # the answer itself, through the context's HTTP client
            answer = context.request.get(url)
            assert answer.status == 401 and "Basic" in answer.headers["www-authenticate"]
        finally:
            context.close()
        status, content = visit({"username": "ops", "password": "s3cret"})
        assert status == 200 and 'id="brokers"' in content
    finally:
        stop(proc)
    out = pyq("console", "--bootstrap-server", console.bootstrap, "--basic-auth", "ops")
    assert out.returncode == 2
    assert "--basic-auth 'ops' needs a user name and a password in $PYQ_CONSOLE_PASSWORD" \
        in out.stderr


def test_transactions_users_and_acls_are_listed(page, console):
    from broker_sim.security.acl import (
        AclBinding,
        AclFilter,
        Operation,
        PatternType,
        Permission,
        ResourceType,
    )

    name, txn = f"audited-{console.name}", f"console-txn-{console.name}"
    make_topic(console, name)
    with Producer({"bootstrap.servers": console.bootstrap, "transactional.id": txn}) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(name, b"committed", partition=0)
        p.commit_transaction()

    def completed() -> bool:  # Kafka answers EndTxn at PrepareCommit; markers come after
        page.goto("/transactions")
        return cell(page, f'#transactions tr[data-transactional-id="{txn}"] .state') \
            == "CompleteCommit"

    wait_for(completed, what=f"{txn} CompleteCommit in the page")
    shot(page, console, "transactions")
    user = f"carol-{console.name}"
    with admin(console) as a:
        a.upsert_user(user, "carol-secret", "SCRAM-SHA-512", iterations=8192)
        # Kafka's brokers describe it once their image caught up with the controller
        wait_for(lambda: user in a.describe_users(), 30, what=f"{user} described")
    page.goto("/users")
    assert cell(page, f'#users tr[data-user="{user}"] .mechanisms') == "SCRAM-SHA-512 (8192)"
    if console.name == "kafka":  # its StandardAuthorizer stores ACLs
        with admin(console) as a:
            a.create_acls([AclBinding.create(ResourceType.TOPIC, name, PatternType.LITERAL,
                                             f"User:{user}", "*", Operation.READ, Permission.ALLOW)])
            wait_for(lambda: a.describe_acls(AclFilter(principal=f"User:{user}")), 30,
                     what=f"the ACL of {user} described")
        page.goto("/acls")
        assert f"TOPIC {name}" in cell(page, f'#acls tr[data-principal="User:{user}"]')
        shot(page, console, "acls")
    else:  # no authorizer: the broker's answer, in the page
        page.goto("/acls")
        assert "SecurityDisabled" in cell(page, "#error")


def test_an_option_the_client_refuses_stops_pyq_console_naming_it(console):
    out = pyq("console", "--bootstrap-server", console.bootstrap, "--port", "0",
              "-X", "request.timeout.ms=-5")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("pyq console: error: ConfigError: Invalid value '-5' for "
                                 "configuration request.timeout.ms"), out.stderr


def test_the_brokers_errors_are_shown_and_change_nothing(page, console):
    name = f"bounded-{console.name}"
    make_topic(console, name)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        p.send(name, b"only", partition=0)
        p.flush()
    page.goto("/topics/no-such-topic/messages")
    assert "UnknownTopicOrPartition" in cell(page, "#error")
    page.goto(f"/topics/{name}/messages?seek=offset&value=50")
    error = cell(page, "#error")
    assert "OffsetOutOfRange" in error and "above the log end" in error
    shot(page, console, "error")
    page.goto("/topics/new")
    page.fill("input[name=name]", f"misconfigured-{console.name}")
    page.fill("textarea[name=configs]", "retention.ms=soon")
    page.click("#create-form button[type=submit]")
    assert "InvalidConfig" in cell(page, "#error")
    with admin(console) as a:
        assert f"misconfigured-{console.name}" not in a.list_topics()


def test_many_groups_offsets_come_batched_per_coordinator_and_follow_a_moved_one(console):
    """What the groups page reads: every group's committed offsets in one OffsetFetch (v8+)
    per coordinator; a cached coordinator that answers NOT_COORDINATOR (here: a broker
    that never coordinated the group) is dropped and the group found again."""
    name = f"batched-{console.name}"
    make_topic(console, name, 3)
    groups = [f"batched-{console.name}-{i}" for i in range(12)]
    with admin(console) as a:
        for i, g in enumerate(groups):
            a.commit_offsets(g, {(name, p): OffsetAndMetadata(i + p, f"m{i}") for p in range(3)})
        expected = {g: a.fetch_offsets(g) for g in groups}
        assert expected[groups[5]][TopicPartition(name, 2)] == OffsetAndMetadata(7, "m5", -1)
        assert a.fetch_offsets_of_groups(groups) == expected
        coordinators = {g: a.find_coordinator(g) for g in groups}
        brokers = sorted(b.node_id for b in a.describe_cluster().brokers)
        cache = a._groups._coordinators
        if console.name == "pyq":  # 3 brokers (the Kafka fixture is one node)
            assert len(set(coordinators.values())) > 1
            for g in groups[:4]:  # as if each coordinator had moved since it was cached
                cache[(0, g)] = next(b for b in brokers if b != coordinators[g])
        assert a.fetch_offsets_of_groups(groups) == expected
        assert a.fetch_offsets(groups[0]) == expected[groups[0]]
        assert {g: cache[(0, g)] for g in groups} == coordinators


def test_pipelines_show_a_source_groups_progress_and_its_dead_letters_live(page, console):
    """A group committed as the pyq source commits (query, counters, dead_letter_topic in
    the metadata), its dead letters with the source's pyq.* headers: the pipelines page
    shows its progress and counts them by reason, and follows a new one without a click."""
    name, group, dlq = (f"piped-{console.name}", f"pipeline-{console.name}",
                        f"piped-dead-{console.name}")
    make_topic(console, name, 2)
    make_topic(console, dlq, 1)

    def dead_letter(producer: Producer, reason: str, offset: int) -> None:
        producer.send(dlq, b"bad", headers=[("pyq.reason", reason.encode()),
                                            ("pyq.topic", name.encode()),
                                            ("pyq.partition", b"0"),
                                            ("pyq.offset", str(offset).encode())])

    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for i in range(20):
            p.send(name, f"r{i}".encode(), partition=i % 2)
        for reason, offset in (("not JSON", 3), ("not JSON", 1), ("late", 7)):
            dead_letter(p, reason, offset)
        p.flush()

    def commit(done: int, dead: int) -> None:
        with admin(console) as a:
            a.commit_offsets(group, {(name, part): OffsetAndMetadata(done, json.dumps(
                {"query": "sessions", "skipped": 0, "lost": 0, "retried": 1,
                 "dead_lettered": dead if part == 0 else 0, "dead_letter_topic": dlq}))
                for part in (0, 1)})

    commit(8, 3)
    page.goto("/pipelines")
    section = f'section.pipeline[data-group="{group}"]'
    assert cell(page, f"{section} h2") == f"{group} (query sessions)"
    assert [cell(page, f"{section} .progress .{c}") for c in ("committed", "end", "lag")] == \
        ["16", "20", "4"]
    assert cell(page, f'{section} td[data-counter="dead_lettered"]') == "3"
    assert cell(page, f'{section} td[data-counter="retried"]') == "2"
    reasons = page.locator(f"{section} .dead-letters tr[data-reason]")
    assert [r.get_attribute("data-reason") for r in reasons.all()] == ["not JSON", "late"]
    assert cell(page, f'{section} tr[data-reason="not JSON"] .first') == f"{name}-0@1, {name}-0@3"
    shot(page, console, "pipelines")
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        dead_letter(p, "late", 9)
        p.flush()
    commit(10, 4)
    wait_for(lambda: cell(page, f'{section} tr[data-reason="late"] .count') == "2"
             and cell(page, f"{section} .progress .lag") == "0"
             and cell(page, f"{section} .progress .rate") not in ("-", "0.0"),
             what="the page's own refresh showing the new dead letter, lag 0 and a rate")


def test_the_groups_page_shows_the_lag_historys_last_round_and_computes_new_groups(console):
    """With a recent sampling round the groups list shows its lag (and says when it was
    sampled); a group that round did not see is computed now; a group's page is live."""
    from connector.console import ConsoleServer

    name, sampled, late = (f"rounds-{console.name}", f"sampled-{console.name}",
                           f"late-{console.name}")
    make_topic(console, name)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        for _ in range(10):
            p.send(name, b"r", partition=0)
        p.flush()
    with admin(console) as a:
        a.commit_offsets(sampled, {(name, 0): 4})
    server = ConsoleServer({"bootstrap.servers": console.bootstrap}, lag_interval_ms=60_000)
    try:
        wait_for(lambda: server.lag_history.latest_round() is not None, what="a first round")
        with admin(console) as a:
            a.commit_offsets(sampled, {(name, 0): 9})
            a.commit_offsets(late, {(name, 0): 7})
        web = server.app.test_client()
        listed = web.get("/groups").get_data(as_text=True)
        assert 'id="sampled-at"' in listed
        for group, lag in ((sampled, 6), (late, 3)):  # as sampled; computed now
            row = re.search(rf'data-group="{group}".*?class="lag">(\d+)<', listed, re.S)
            assert row and row.group(1) == str(lag), listed
        detail = web.get(f"/groups/{sampled}").get_data(as_text=True)
        assert re.search(r'id="total-lag">1<', detail)
    finally:
        server.close()


def test_a_group_without_a_known_lag_is_charted_as_a_gap_not_as_zero(page, console):
    """A group whose member joined but never committed has no lag to know: its lag history
    chart has gaps (null points), not a lag of 0 (all caught up)."""
    name, group = f"uncommitted-{console.name}", f"never-committed-{console.name}"
    make_topic(console, name)
    with Producer({"bootstrap.servers": console.bootstrap}) as p:
        p.send(name, b"r", partition=0)
        p.flush()
    consumer = Consumer({"bootstrap.servers": console.bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.subscribe([name])
        wait_for(lambda: consumer.poll(200) is not None and consumer.assignment(),
                 what="the consumer joined")
        page.goto(f"/groups/{group}")
        points = wait_for(lambda: page.evaluate(
            "Chart.getChart('lag-history').data.datasets[0].data"), what="a sample charted")
        assert set(points) == {None}
    finally:
        consumer.close()
