"""``pyq schemas``, ``pyq consume --value-format avro`` and ``pyq produce --value-schema``:
the CLI against the schema registry of a one-broker pyq cluster, judged by
confluent-kafka's ``SchemaRegistryClient`` (the reference client of the Confluent Schema
Registry API): what the CLI registers, the reference client reads, and what the reference
client registers, the CLI reads; evolution, a compatibility refusal (exit 1 and the
registry's reasons), compatibility levels, soft and hard deletes, references, and the
registry's refusals as one line with their error code; Avro records written by
confluent-kafka's ``AvroSerializer`` printed as JSON by ``pyq consume``, and JSON lines
encoded by ``pyq produce`` read by its ``AvroDeserializer``. Most runs call ``main`` in this
process (``pyq_here``); one runs the installed ``pyq`` script as a separate process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connector.client import Admin
from connector.cluster import EmbeddedCluster
from tests import avro_schemas
from tests.cli.support import Result, pyq_here

pytestmark = [pytest.mark.integration]  # starts controller + broker processes

PYQ = str(Path(sys.executable).parent / "pyq")  # the console script pip installed


record = partial(avro_schemas.record, namespace="pyq.cli")


CLICK_V1 = record("Click", {"name": "id", "type": "long"}, {"name": "page", "type": "string"})
CLICK_V2 = record("Click", {"name": "id", "type": "long"}, {"name": "page", "type": "string"},
                  {"name": "referrer", "type": ["null", "string"], "default": None})
CLICK_BAD = record("Click", {"name": "id", "type": "long"}, {"name": "page", "type": "string"},
                   {"name": "score", "type": "int"})  # no default: cannot read older data


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(brokers=1, schema_registry=True) as c:
        yield c


@pytest.fixture(scope="module")
def reference(cluster: EmbeddedCluster) -> SchemaRegistryClient:
    return SchemaRegistryClient(cluster.schema_registry_options())


@pytest.fixture
def cli(cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch):  # -> the runner below
    def run(*args: str, input: str = "") -> Result:
        return pyq_here(monkeypatch, "schemas", *args, "-r", cluster.schema_registry_url,
                        input=input)
    return run


def schema_file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_register_get_evolve_check_config_delete(cli, reference: SchemaRegistryClient,
                                                  tmp_path: Path) -> None:
    subject = "clicks-value"
    v1 = schema_file(tmp_path, "click.avsc", CLICK_V1)
    registered = cli("register", subject, "--schema", v1)
    assert registered.returncode == 0, registered
    schema_id = int(registered.stdout)
    # what the CLI registered, the reference client reads
    latest = reference.get_latest_version(subject)
    assert (latest.schema_id, latest.version) == (schema_id, 1)
    assert latest.schema.schema_str is not None
    assert json.loads(latest.schema.schema_str) == json.loads(CLICK_V1)
    # registering the same schema again is no new version
    assert cli("register", subject, "--schema", v1).stdout.strip() == str(schema_id)

    # what the reference client registers (the evolution), the CLI reads
    v2_id = reference.register_schema(subject, Schema(CLICK_V2, "AVRO"))
    got = cli("get", subject)
    assert got.returncode == 0, got
    assert json.loads(got.stdout) == json.loads(CLICK_V2)
    whole = json.loads(cli("get", subject, "--version", "1", "-J").stdout)
    assert (whole["subject"], whole["version"], whole["id"], whole["schemaType"]) == \
        (subject, 1, schema_id, "AVRO")
    assert json.loads(cli("get", "--id", str(v2_id)).stdout) == json.loads(CLICK_V2)
    assert cli("list").stdout.split() == reference.get_subjects()
    assert cli("list", subject).stdout.split() == ["1", "2"]
    assert json.loads(cli("list", "--format", "json").stdout) == reference.get_subjects()
    assert json.loads(cli("list", subject, "-J").stdout) == [1, 2]
    assert json.loads(cli("get", subject, "--version", "1", "--format", "json").stdout) == whole

    # compatibility: v2 against v1 is fine, a new field without default is refused
    v2 = schema_file(tmp_path, "click-v2.avsc", CLICK_V2)
    assert cli("check", subject, "--schema", v2, "--version", "1").stdout == "compatible\n"
    bad = schema_file(tmp_path, "click-bad.avsc", CLICK_BAD)
    refused = cli("check", subject, "--schema", bad)
    assert refused.returncode == 1, refused
    assert refused.stdout.startswith("incompatible\n")
    assert "score" in refused.stdout  # the registry's reason names the field
    assert not reference.test_compatibility(subject, Schema(CLICK_BAD, "AVRO"))
    not_registered = cli("register", subject, "--schema", bad)
    assert not_registered.returncode == 1
    assert "(registry error 409)" in not_registered.stderr
    assert not_registered.stderr.count("\n") == 1

    # compatibility levels: set by the CLI, read by the reference client, and back
    assert cli("config", subject).stdout.strip() == reference.get_compatibility()
    assert cli("config", subject, "--compatibility", "none").stdout == \
        f"{subject} compatibility set to NONE\n"
    assert reference.get_compatibility(subject) == "NONE"
    assert cli("check", subject, "--schema", bad).returncode == 0
    reference.set_compatibility(subject, "FULL")
    assert cli("config", subject).stdout == "FULL\n"
    assert cli("config").stdout.strip() == reference.get_compatibility()

    # deletes: one version soft, then the subject for good
    deleted = cli("delete", subject, "--version", "2")
    assert deleted.stdout == f"deleted {subject} version 2\n", deleted
    assert reference.get_versions(subject) == [1]
    assert cli("list", subject, "--deleted").stdout.split() == ["1", "2"]
    assert cli("delete", subject).stdout == f"deleted {subject} (version 1)\n"
    assert subject not in reference.get_subjects()
    assert subject in cli("list", "--deleted").stdout.split()
    gone = cli("delete", subject, "--permanent")
    assert gone.stdout == f"permanently deleted {subject} (versions 1, 2)\n", gone
    assert subject not in cli("list", "--deleted").stdout.split()


def test_permanent_delete_of_a_live_version(cli, reference: SchemaRegistryClient,
                                            tmp_path: Path) -> None:
    subject = "views-value"
    reference.register_schema(subject, Schema(CLICK_V1, "AVRO"))
    reference.register_schema(subject, Schema(CLICK_V2, "AVRO"))
    gone = cli("delete", subject, "--version", "latest", "--permanent")
    assert gone.stdout == f"permanently deleted {subject} version 2\n", gone
    assert reference.get_versions(subject) == [1]
    assert cli("list", subject, "--deleted").stdout.split() == ["1"]


def test_references(cli, reference: SchemaRegistryClient, tmp_path: Path) -> None:
    page = json.dumps({"type": "record", "name": "Page", "namespace": "pyq.cli",
                       "fields": [{"name": "url", "type": "string"}]})
    visit = json.dumps({"type": "record", "name": "Visit", "namespace": "pyq.cli",
                        "fields": [{"name": "page", "type": "pyq.cli.Page"}]})
    assert cli("register", "page", "--schema", schema_file(tmp_path, "page.avsc", page)
               ).returncode == 0
    # the schema from standard input, its reference from the option
    visited = cli("register", "visits-value", "--schema", "-",
                  "--reference", "pyq.cli.Page=page:1", input=visit)
    assert visited.returncode == 0, visited
    read = reference.get_latest_version("visits-value")
    assert read.schema_id == int(visited.stdout)
    assert read.schema.references == [SchemaReference("pyq.cli.Page", "page", 1)]
    whole = json.loads(cli("get", "visits-value", "-J").stdout)
    assert whole["references"] == [{"name": "pyq.cli.Page", "subject": "page", "version": 1}]


def test_registry_errors_are_one_line_with_their_code(cli, tmp_path: Path) -> None:
    unknown = cli("get", "no-such-subject")
    assert (unknown.returncode, unknown.stdout) == (1, "")
    assert unknown.stderr.startswith("pyq schemas get: error: ")
    assert unknown.stderr.endswith("(registry error 40401)\n")
    assert unknown.stderr.count("\n") == 1
    assert cli("get", "--id", "99999").stderr.endswith("(registry error 40403)\n")

    malformed = cli("register", "broken-value", "--schema",
                    schema_file(tmp_path, "broken.avsc", '{"type": "record", "name": "X"'))
    assert malformed.returncode == 1
    assert malformed.stderr.startswith("pyq schemas register: error: Invalid schema")
    assert malformed.stderr.endswith("(registry error 42201)\n")
    assert "broken-value" not in cli("list", "--deleted").stdout.split()  # nothing registered


@pytest.mark.parametrize(("args", "message"), [
    (["get"], "one of the arguments SUBJECT --id is required"),
    (["get", "s", "--version", "0"],
     "argument --version: '0' is not allowed: must be a version number (1 or more) or latest"),
    (["config", "--compatibility", "sideways"],
     "argument --compatibility: 'sideways' is not allowed: must be one of BACKWARD, "
     "BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL, FULL_TRANSITIVE, NONE"),
    (["register", "s", "--schema", "/no/such.avsc"],
     "argument --schema: '/no/such.avsc': No such file or directory"),
    (["register", "s", "--schema", "-", "--schema-type", "xml"],
     "argument --schema-type: 'xml' is not allowed: must be one of AVRO, PROTOBUF, JSON"),
    (["register", "s", "--schema", "-", "--reference", "a=b"], "'a=b' is not NAME=SUBJECT:VERSION"),
])
def test_usage_errors_exit_2(monkeypatch: pytest.MonkeyPatch, args: list[str],
                             message: str) -> None:
    result = pyq_here(monkeypatch, "schemas", *args, "-r", "http://127.0.0.1:1")
    assert result.returncode == 2, result
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_unreachable_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    result = pyq_here(monkeypatch, "schemas", "list", "-r", "http://127.0.0.1:1")
    assert result.returncode == 1
    assert result.stderr == ("pyq schemas list: error: cannot reach the schema registry: "
                             "http://127.0.0.1:1 (Connection refused)\n")


def test_installed_script(cluster: EmbeddedCluster, reference: SchemaRegistryClient,
                          tmp_path: Path) -> None:
    path = schema_file(tmp_path, "script.avsc", CLICK_V1)
    done = subprocess.run([PYQ, "schemas", "register", "script-value", "--schema", path,
                           "--schema-registry", cluster.schema_registry_url],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done
    assert reference.get_latest_version("script-value").schema_id == int(done.stdout)


# ---- pyq consume --value-format avro, pyq produce --value-schema ---------------------------
ROWS = [{"id": i, "page": f"/p/{i}", "referrer": None if i % 2 else f"r{i}"} for i in range(5)]


def create_topic(cluster: EmbeddedCluster, topic: str) -> None:
    with Admin(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topic(topic, num_partitions=1, replication_factor=1)


def confluent_values(cluster: EmbeddedCluster, topic: str, count: int) -> list[bytes]:
    """The first ``count`` values of partition 0, read by confluent-kafka's consumer."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "cli-avro",
                         "enable.auto.commit": False})
    consumer.assign([ConfluentPartition(topic, 0, OFFSET_BEGINNING)])
    got: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                value = msg.value()
                assert value is not None
                got.append(value)
    finally:
        consumer.close()
    return got


def test_consume_decodes_what_confluents_serializer_wrote(
        cluster: EmbeddedCluster, reference: SchemaRegistryClient,
        monkeypatch: pytest.MonkeyPatch) -> None:
    topic = "avro-clicks"
    create_topic(cluster, topic)
    serialize = AvroSerializer(reference, CLICK_V2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers})
    for row in ROWS:
        producer.produce(topic, key=str(row["id"]).encode(),
                         value=serialize(row, SerializationContext(topic, MessageField.VALUE)))
    assert producer.flush(30) == 0
    url = cluster.schema_registry_url
    read = pyq_here(monkeypatch, "consume", topic, "-o", "beginning", "-e", "--bootstrap-server",
                    cluster.bootstrap_servers, "--value-format", "avro", "--schema-registry", url)
    assert read.returncode == 0, read
    assert [json.loads(line) for line in read.stdout.splitlines()] == ROWS
    # kcat's spelling, with a format
    kcat = pyq_here(monkeypatch, "consume", topic, "-o", "beginning", "-e", "-f", "%k %s\n",
                    "--bootstrap-server", cluster.bootstrap_servers, "-s", "value=avro", "-r", url)
    assert kcat.returncode == 0, kcat
    assert [(k, json.loads(v)) for k, v in (line.split(" ", 1) for line in kcat.stdout.splitlines())] \
        == [(str(row["id"]), row) for row in ROWS]
    # keys are not Avro: a clear error naming the record
    keys = pyq_here(monkeypatch, "consume", topic, "-o", "beginning", "-e", "--bootstrap-server",
                    cluster.bootstrap_servers, "-s", "avro", "-r", url)
    assert keys.returncode == 1
    assert keys.stderr == (f"pyq consume: error: the key of {topic}-0@0 is not Confluent-framed "
                           "Avro: no magic byte 0 (first bytes 30)\n")


def test_produce_encodes_what_confluents_deserializer_reads(
        cluster: EmbeddedCluster, reference: SchemaRegistryClient,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    topic = "avro-produced"
    create_topic(cluster, topic)
    schema = schema_file(tmp_path, "click-v2.avsc", CLICK_V2)
    lines = "".join(json.dumps(row) + "\n" for row in ROWS)
    sent = pyq_here(monkeypatch, "produce", topic, "--bootstrap-server", cluster.bootstrap_servers,
                    "--value-schema", schema, "-r", cluster.schema_registry_url, input=lines)
    assert sent.returncode == 0, sent
    registered = reference.get_latest_version(f"{topic}-value")
    values = confluent_values(cluster, topic, len(ROWS))
    assert {int.from_bytes(v[1:5], "big") for v in values} == {registered.schema_id}
    deserialize = AvroDeserializer(reference)
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert [deserialize(v, ctx) for v in values] == ROWS

    bad = pyq_here(monkeypatch, "produce", topic, "--bootstrap-server", cluster.bootstrap_servers,
                   "--value-schema", schema, "-r", cluster.schema_registry_url,
                   input='{"id": 1, "page": "/"}\n{"id": "x", "page": "/"}\n')
    assert bad.returncode == 1
    assert bad.stderr.startswith("pyq produce: error: line 2: the value does not match schema "
                                 f"{registered.schema_id}: ")
    assert bad.stderr.count("\n") == 1

    # a schema the subject's compatibility level refuses is not registered, nothing is sent
    refused = pyq_here(monkeypatch, "produce", topic, "--bootstrap-server",
                       cluster.bootstrap_servers, "-s", "value=avro", "--value-schema",
                       schema_file(tmp_path, "bad.avsc", CLICK_BAD), "-r",
                       cluster.schema_registry_url, input='{"id": 1}\n')
    assert refused.returncode == 1
    assert refused.stderr.endswith("(registry error 409)\n"), refused


@pytest.mark.parametrize(("args", "message"), [
    (["consume", "t", "--value-format", "json"],
     "argument --value-format: 'json' is not allowed: must be one of binary, avro"),
    (["consume", "t", "-s", "kex=avro"],
     "argument -s: 'kex=avro' is not allowed: must be key=FORMAT, value=FORMAT or FORMAT"),
    (["consume", "t", "-s", "value=avro", "--value-format", "binary"],
     "-s value=avro conflicts with value format binary"),
    (["produce", "t", "-s", "value=avro"], "value format avro needs the schema: --value-schema FILE"),
])
def test_format_usage_errors(monkeypatch: pytest.MonkeyPatch, args: list[str],
                             message: str) -> None:
    result = pyq_here(monkeypatch, *args, "--bootstrap-server", "127.0.0.1:1")
    assert result.returncode == 2, result
    assert message in result.stderr


def test_https_registry_with_basic_auth(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``--registry-ca`` and ``--registry-user`` against the registry of a SASL_SSL cluster
    (https with the broker's certificate, basic auth against the SCRAM users)."""
    with EmbeddedCluster(brokers=1, security="SASL_SSL", users={"alice": "alice-secret"},
                         schema_registry=True) as secured:
        options = secured.schema_registry_options()
        reach = ["-r", options["url"], "--registry-ca", options["ssl.ca.location"]]
        path = schema_file(tmp_path, "click.avsc", CLICK_V1)
        done = pyq_here(monkeypatch, "schemas", "register", "secured-value", "--schema", path,
                        *reach, "--registry-user", options["basic.auth.user.info"])
        assert done.returncode == 0, done
        judge = SchemaRegistryClient(options)
        assert judge.get_latest_version("secured-value").schema_id == int(done.stdout)
        wrong = pyq_here(monkeypatch, "schemas", "list", *reach, "--registry-user", "alice:wrong")
        assert wrong.returncode == 1
        assert wrong.stderr.startswith("pyq schemas list: error: ")
        assert wrong.stderr.count("\n") == 1 and "401" in wrong.stderr, wrong
        untrusted = pyq_here(monkeypatch, "schemas", "list", "-r", options["url"],
                             "--registry-user", options["basic.auth.user.info"])
        assert untrusted.returncode == 1
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr, untrusted
        assert untrusted.stderr.endswith("(its CA: --registry-ca FILE)\n")
