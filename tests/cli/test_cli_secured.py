"""The CLI against a secured broker: ``--command-config`` (Kafka's properties file), ``-X``,
``pyq users`` managing the SCRAM users others then log in as, and ``pyq acls`` managing the
ACLs the broker then enforces — on a secured pyq broker (its authorizer), then on the
session's secured Apache Kafka (``StandardAuthorizer``), the same tests on both
(``broker_under_test``). Both listen on SASL_SSL with SCRAM-SHA-512 for the users of
``KAFKA_USERS`` (``admin`` a super user) and allow nothing an ACL does not."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import pyq, pyq_here
from tests.secured import Secured, secured_broker_under_test
from tests.wire import wait_for


@pytest.fixture(scope="module", params=["pyq", "kafka"])
def broker_under_test(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    """A secured pyq broker with its authorizer, then the session's secured Apache Kafka."""
    yield from secured_broker_under_test(request, tmp_path_factory)


@pytest.fixture
def properties(broker_under_test: Secured, tmp_path: Path) -> Path:
    """A client.properties as Kafka's tools take it, Java's JAAS line included: the admin's."""
    admin = broker_under_test.options("admin")
    path = tmp_path / "client.properties"
    path.write_text(
        "# SASL_SSL as the admin\n"
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={admin['sasl.mechanism']}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="{admin["sasl.username"]}" password="{admin["sasl.password"]}";\n'
        f"ssl.ca.location={admin['ssl.ca.location']}\n")
    return path


def connection(broker: Secured, properties: Path) -> list[str]:
    return ["--bootstrap-server", broker.options("admin")["bootstrap.servers"],
            "--command-config", str(properties)]


def as_user(broker: Secured, user: str, password: str) -> list[str]:
    """``-X`` options alone (no properties file) for ``user``."""
    admin = broker.options("admin")
    return ["--bootstrap-server", admin["bootstrap.servers"], "-X", "security.protocol=SASL_SSL",
            "-X", f"ssl.ca.location={admin['ssl.ca.location']}", "-X", "sasl.mechanism=SCRAM-SHA-512",
            "-X", f"sasl.username={user}", "-X", f"sasl.password={password}"]


def table(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines()]


def test_topics_and_records_through_a_command_config(broker_under_test: Secured, properties: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connection(broker_under_test, properties)
    assert pyq_here(monkeypatch, "topics", "create", "cli-sec", *conn).returncode == 0
    produced = pyq_here(monkeypatch, "produce", "cli-sec", *conn, input="a\nb\nc\n")
    assert produced.returncode == 0, produced.stderr
    consumed = pyq_here(monkeypatch, "consume", "cli-sec", "--from-beginning", "--max", "3",
                        "--timeout-ms", "10000", *conn)
    assert consumed.stdout.splitlines() == ["a", "b", "c"], consumed.stderr


def test_users_create_list_delete_and_the_new_user_logs_in(broker_under_test: Secured, properties: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connection(broker_under_test, properties)
    created = pyq_here(monkeypatch, "users", "create", "cli-dave", "--password", "dave-pw",
                       "--mechanism", "SCRAM-SHA-512", "--iterations", "8192", *conn)
    assert created.returncode == 0, created.stderr
    listed = pyq_here(monkeypatch, "users", "list", *conn).stdout.splitlines()
    assert listed[0].split() == ["USER", "MECHANISM", "ITERATIONS"]
    assert ["cli-dave", "SCRAM-SHA-512", "8192"] in [line.split() for line in listed]
    assert ["admin", "SCRAM-SHA-512", "4096"] in [line.split() for line in listed]
    as_json = json.loads(pyq_here(monkeypatch, "users", "list", "--format", "json", *conn).stdout)
    assert {"user": "cli-dave", "mechanism": "SCRAM-SHA-512", "iterations": 8192} in as_json

    # dave logs in; -X settings win over the file's
    as_dave = [*conn, "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=cli-dave",
               "-X", "sasl.password=dave-pw", "-X", "sasl.jaas.config="]
    # an empty jaas line is still a jaas line: refused, naming the option (usage error)
    refused = pyq_here(monkeypatch, "topics", "list", *as_dave)
    assert refused.returncode == 2 and "sasl.jaas.config" in refused.stderr
    as_dave = as_user(broker_under_test, "cli-dave", "dave-pw")
    # the credential reaches the listener through the controller (on Kafka, a moment later)
    wait_for(lambda: pyq_here(monkeypatch, "topics", "list", *as_dave).returncode == 0, 30,
             what="cli-dave logs in")

    assert pyq_here(monkeypatch, "users", "delete", "cli-dave", "--mechanism", "SCRAM-SHA-512",
                    *conn).returncode == 0

    def denied() -> str | None:
        out = pyq("topics", "list", *as_dave, "--api-timeout-ms", "10000")  # a fresh process
        return out.stderr if out.returncode == 1 else None

    message = wait_for(denied, 30, what="cli-dave refused")
    assert "AuthenticationError: SASL SCRAM-SHA-512 authentication of 'cli-dave'" in message, message
    missing = pyq_here(monkeypatch, "users", "list", "cli-dave", *conn)
    assert missing.returncode == 1 and "ResourceNotFound" in missing.stderr


def test_acls_add_list_remove_and_what_they_allow(broker_under_test: Secured, properties: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    conn = connection(broker_under_test, properties)

    def ok(*args: str, input: str = "") -> str:
        out = pyq_here(monkeypatch, *args, input=input)
        assert out.returncode == 0, out.stderr
        return out.stdout

    ok("users", "create", "cli-erin", "--password", "erin-pw", "--mechanism", "SCRAM-SHA-512", *conn)
    ok("topics", "create", "cli-acl-t", *conn)
    ok("produce", "cli-acl-t", *conn, input="r0\nr1\n")
    ok("acls", "add", "--allow-principal", "User:cli-erin", "--operation", "Read",
       "--operation", "Describe", "--topic", "cli-acl-t", *conn)
    ok("acls", "add", "--allow-principal", "User:cli-erin", "--operation", "Read", "--group", "cli-acl-",
       "--resource-pattern-type", "prefixed", *conn)
    listed = table(ok("acls", "list", "--principal", "User:cli-erin", *conn))
    assert listed[0] == ["PRINCIPAL", "HOST", "PERMISSION", "OPERATION", "RESOURCE", "NAME", "PATTERN"]
    expected = [["User:cli-erin", "*", "ALLOW", "DESCRIBE", "TOPIC", "cli-acl-t", "LITERAL"],
                ["User:cli-erin", "*", "ALLOW", "READ", "GROUP", "cli-acl-", "PREFIXED"],
                ["User:cli-erin", "*", "ALLOW", "READ", "TOPIC", "cli-acl-t", "LITERAL"]]
    assert sorted(listed[1:]) == expected
    as_json = json.loads(ok("acls", "list", "--principal", "User:cli-erin", "-J", *conn))
    assert sorted([a["principal"], a["host"], a["permission"], a["operation"], a["resource"],
                   a["name"], a["pattern"]] for a in as_json) == expected
    # --resource-pattern-type match: what applies to the group cli-acl-etl
    assert table(ok("acls", "list", "--group", "cli-acl-etl", "--resource-pattern-type", "match",
                    *conn))[1:] == [expected[1]]

    erin = as_user(broker_under_test, "cli-erin", "erin-pw")

    def reads() -> list[str] | None:
        out = pyq_here(monkeypatch, "consume", "cli-acl-t", "--group", "cli-acl-etl",
                       "--from-beginning", "--max", "2", "--timeout-ms", "5000", *erin)
        return out.stdout.splitlines() if out.returncode == 0 else None

    # users and ACLs reach the listener through the controller (on Kafka, a moment later)
    assert wait_for(reads, 30, what="cli-erin reads under her ACLs") == ["r0", "r1"]
    # no Write anywhere: an idempotent producer gets no producer id, any other no append
    written = pyq_here(monkeypatch, "produce", "cli-acl-t", *erin, input="no\n")
    assert written.returncode == 1 and "ClusterAuthorizationFailed" in written.stderr, written.stderr
    assert "Write on some topic" in written.stderr
    written = pyq_here(monkeypatch, "produce", "cli-acl-t", "--acks", "1", *erin, input="no\n")
    assert written.returncode == 1 and "TopicAuthorizationFailed" in written.stderr, written.stderr
    refused = pyq_here(monkeypatch, "acls", "list", *erin)
    assert refused.returncode == 1 and "ClusterAuthorizationFailed" in refused.stderr, refused.stderr

    removed = table(ok("acls", "remove", "--principal", "User:cli-erin", *conn))
    assert sorted(removed[1:]) == expected
    assert table(ok("acls", "list", "--principal", "User:cli-erin", *conn))[1:] == []
    ok("users", "delete", "cli-erin", "--mechanism", "SCRAM-SHA-512", *conn)


def test_bad_client_options_are_usage_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = pyq_here(monkeypatch, "topics", "list", "-X", "security.protocol=KERBEROS")
    assert out.returncode == 2 and "security.protocol" in out.stderr and "KERBEROS" in out.stderr
    out = pyq_here(monkeypatch, "topics", "list", "-X", "no.such.option=1")
    assert out.returncode == 2 and "no.such.option" in out.stderr
    out = pyq_here(monkeypatch, "topics", "list", "--command-config", str(tmp_path / "missing"))
    assert out.returncode == 2 and "missing" in out.stderr
