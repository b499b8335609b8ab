"""The CLI against a secured broker: ``--command-config`` (Kafka's properties file), ``-X``,
and ``pyq users`` managing the SCRAM users others then log in as."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.support import pyq, pyq_here
from tests.security.secured_broker import ALICE, SecuredBroker, start_secured_broker


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    broker = start_secured_broker(tmp_path_factory.mktemp("cli-secured"))
    yield broker
    broker.proc.stop()


@pytest.fixture
def properties(secured: SecuredBroker, tmp_path: Path) -> Path:
    """A client.properties as Kafka's tools take it, Java's JAAS line included."""
    path = tmp_path / "client.properties"
    path.write_text(
        "# SASL_SSL as alice\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="{ALICE[0]}" password="{ALICE[1]}";\n'
        f"ssl.ca.location={secured.ca.ca_path}\n")
    return path


def test_topics_and_records_through_a_command_config(secured: SecuredBroker, properties: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    conn = ["--bootstrap-server", secured.address("SASL_SSL"), "--command-config", str(properties)]
    assert pyq_here(monkeypatch, "topics", "create", "cli-sec", *conn).returncode == 0
    produced = pyq_here(monkeypatch, "produce", "cli-sec", *conn, input="a\nb\nc\n")
    assert produced.returncode == 0, produced.stderr
    consumed = pyq_here(monkeypatch, "consume", "cli-sec", "--from-beginning", "--max", "3",
                        "--timeout-ms", "10000", *conn)
    assert consumed.stdout.splitlines() == ["a", "b", "c"], consumed.stderr


def test_users_create_list_delete_and_the_new_user_logs_in(secured: SecuredBroker, properties: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    conn = ["--bootstrap-server", secured.address("SASL_SSL"), "--command-config", str(properties)]
    created = pyq_here(monkeypatch, "users", "create", "dave", "--password", "dave-pw",
                       "--mechanism", "SCRAM-SHA-512", "--iterations", "8192", *conn)
    assert created.returncode == 0, created.stderr
    listed = pyq_here(monkeypatch, "users", "list", *conn).stdout.splitlines()
    assert listed[0].split() == ["USER", "MECHANISM", "ITERATIONS"]
    assert ["dave", "SCRAM-SHA-512", "8192"] in [line.split() for line in listed]

    # dave logs in; -X settings win over the file's
    as_dave = ["--bootstrap-server", secured.address("SASL_SSL"), "--command-config", str(properties),
               "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=dave",
               "-X", "sasl.password=dave-pw", "-X", "sasl.jaas.config="]
    # an empty jaas line is still a jaas line: refused, naming the option (usage error)
    refused = pyq_here(monkeypatch, "topics", "list", *as_dave)
    assert refused.returncode == 2 and "sasl.jaas.config" in refused.stderr
    as_dave = ["--bootstrap-server", secured.address("SASL_SSL"), "-X", "security.protocol=SASL_SSL",
               "-X", f"ssl.ca.location={secured.ca.ca_path}", "-X", "sasl.mechanism=SCRAM-SHA-512",
               "-X", "sasl.username=dave", "-X", "sasl.password=dave-pw"]
    assert pyq_here(monkeypatch, "topics", "list", *as_dave).returncode == 0

    assert pyq_here(monkeypatch, "users", "delete", "dave", "--mechanism", "SCRAM-SHA-512",
                    *conn).returncode == 0
    denied = pyq("topics", "list", *as_dave, "--api-timeout-ms", "10000")  # a fresh process
    assert denied.returncode == 1
    assert "AuthenticationError: SASL SCRAM-SHA-512 authentication of 'dave'" in denied.stderr
    missing = pyq_here(monkeypatch, "users", "list", "dave", *conn)
    assert missing.returncode == 1 and "ResourceNotFound" in missing.stderr


def test_bad_client_options_are_usage_errors(secured: SecuredBroker, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    out = pyq_here(monkeypatch, "topics", "list", "-X", "security.protocol=KERBEROS")
    assert out.returncode == 2 and "security.protocol" in out.stderr and "KERBEROS" in out.stderr
    out = pyq_here(monkeypatch, "topics", "list", "-X", "no.such.option=1")
    assert out.returncode == 2 and "no.such.option" in out.stderr
    out = pyq_here(monkeypatch, "topics", "list", "--command-config", str(tmp_path / "missing"))
    assert out.returncode == 2 and "missing" in out.stderr
