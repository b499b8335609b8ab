"""The controller quorum shown to users: ``pyq cluster status`` (text and ``--format json``)
and Kafka's own ``kafka-metadata-quorum describe --status`` / ``--replication`` (Kafka 4.4's
jars) on a 2-broker pyq cluster, asked of the controller (``--bootstrap-controller``) and of a
broker (``--bootstrap-server``, which forwards DescribeQuorum); ``pyq cluster add-controller``
/ ``remove-controller`` refused with their reasons; then pyq's client and commands on Apache
Kafka's own quorum. The cluster has one controller: the metadata quorum's only voter and
leader (node 3000, epoch 1), the brokers its observers."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from connector.client import Admin
from connector.client.admin import NewTopic
from connector.cluster import EmbeddedCluster
from reference.kafka_tools import run_tool
from tests.cli.support import Result, pyq_here
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

CONTROLLER_ID = 3000
#: given to the brokers and the controller alike: both paths of Kafka's tool print it
CLUSTER_ID = "quorum-test-cluster"


@pytest.fixture(scope="module")
def pyq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(brokers=2, data_dir=tmp_path_factory.mktemp("pyq-quorum"),
                              overrides={"cluster.id": CLUSTER_ID})
    cluster.start()
    yield cluster
    cluster.stop()


def controller_endpoint(cluster: EmbeddedCluster) -> str:
    return f"127.0.0.1:{cluster.controller.port}"


def caught_up_quorum(servers: str) -> int:
    """Commit a change (a topic), wait until both brokers applied it; the high watermark."""
    with Admin({"bootstrap.servers": servers}) as admin:
        before = admin.describe_quorum().high_watermark
        admin.create_topics([NewTopic(f"quorum-{before}", 1, 2)])
        quorum = wait_for(lambda: (q := admin.describe_quorum()).high_watermark > before
                          and all(r.lag == 0 for r in q.observers) and q)
    assert quorum.high_watermark > before
    return quorum.high_watermark


def pyq_cluster(monkeypatch: pytest.MonkeyPatch, servers: str, *args: str,
                options: dict | None = None) -> Result:
    """``pyq cluster ARGS --bootstrap-server SERVERS [-X NAME=VALUE ...]`` in this process."""
    extra = [a for k, v in (options or {}).items() if k != "bootstrap.servers"
             for a in ("-X", f"{k}={v}")]
    return pyq_here(monkeypatch, "cluster", *args, "--bootstrap-server", servers, *extra)


def pyq_status(monkeypatch: pytest.MonkeyPatch, servers: str, *extra: str) -> str:
    out = pyq_cluster(monkeypatch, servers, "status", *extra)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_pyq_cluster_status_shows_the_quorum(monkeypatch: pytest.MonkeyPatch,
                                             pyq: EmbeddedCluster) -> None:
    hw = caught_up_quorum(pyq.bootstrap_servers)
    text = pyq_status(monkeypatch, pyq.bootstrap_servers)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("quorum:"))
    assert lines[start] == f"quorum: leader {CONTROLLER_ID}, epoch 1, high watermark {hw}"
    assert lines[start + 1].split() == ["NODE", "ROLE", "ENDPOINT", "LOG-END-OFFSET", "LAG",
                                        "LAST-FETCH-MS"]
    rows = [line.split() for line in lines[start + 2:]]
    assert [r[:5] for r in rows] == [
        [str(CONTROLLER_ID), "leader", f"CONTROLLER://{controller_endpoint(pyq)}", str(hw), "0"],
        ["0", "observer", "-", str(hw), "0"],
        ["1", "observer", "-", str(hw), "0"]]
    # the brokers poll the controller: each fetched within a poll's wait, not never
    assert all(0 <= int(r[5]) < 10_000 for r in rows)

    document = json.loads(pyq_status(monkeypatch, pyq.bootstrap_servers, "--format", "json"))
    assert document["quorum_error"] is None
    quorum = document["quorum"]
    assert (quorum["leader"], quorum["epoch"], quorum["high_watermark"]) == (CONTROLLER_ID, 1, hw)
    assert [(r["node"], r["role"], r["log_end_offset"], r["lag"]) for r in quorum["replicas"]] == [
        (CONTROLLER_ID, "leader", hw, 0), (0, "observer", hw, 0), (1, "observer", hw, 0)]
    assert quorum["replicas"][0]["endpoint"] == [f"CONTROLLER://{controller_endpoint(pyq)}"]


@pytest.mark.parametrize("bootstrap", ["--bootstrap-controller", "--bootstrap-server"])
def test_kafka_metadata_quorum_describes_pyqs_quorum(pyq: EmbeddedCluster, bootstrap: str) -> None:
    hw = caught_up_quorum(pyq.bootstrap_servers)
    servers = controller_endpoint(pyq) if bootstrap == "--bootstrap-controller" else pyq.bootstrap_servers
    status = run_tool("kafka-metadata-quorum", bootstrap, servers, "describe", "--status").stdout
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", status, re.MULTILINE))
    assert (fields["ClusterId"], fields["LeaderId"], fields["LeaderEpoch"]) == (
        CLUSTER_ID, str(CONTROLLER_ID), "1")
    assert int(fields["HighWatermark"]) == hw  # the topic's commit was the last change
    assert json.loads(fields["CurrentVoters"]) == [
        {"id": CONTROLLER_ID, "endpoints": [f"CONTROLLER://{controller_endpoint(pyq)}"]}]
    assert sorted(o["id"] for o in json.loads(fields["CurrentObservers"])) == [0, 1]
    assert fields["MaxFollowerLag"] == "0"

    if bootstrap == "--bootstrap-server":  # Kafka's admin's RemoveRaftVoter, forwarded
        refused = run_tool("kafka-metadata-quorum", bootstrap, servers, "remove-controller",
                           "--controller-id", str(CONTROLLER_ID), "--controller-directory-id",
                           "AAECAwQFBgcICQoLDA0ODw", check=False)
        assert refused.returncode == 1
        assert ("org.apache.kafka.common.errors.InvalidRequestException: node 3000 is the only "
                "voter") in refused.stderr, refused.stderr[-2000:]
    if bootstrap == "--bootstrap-controller":  # the same answer: one table is enough
        replication = run_tool("kafka-metadata-quorum", bootstrap, servers, "describe",
                               "--replication").stdout
        rows = [line.split() for line in replication.splitlines()[1:] if line.strip()]
        assert sorted((r[0], r[2], r[3], r[-1]) for r in rows) == [
            ("0", str(hw), "0", "Observer"), ("1", str(hw), "0", "Observer"),
            (str(CONTROLLER_ID), str(hw), "0", "Leader")]


def test_pyqs_client_reads_kafkas_quorum(kafka) -> None:
    """The same request on Apache Kafka (one node, broker and controller): its only voter
    leads, is caught up, and names its controller listener."""
    node = kafka.nodes[0]
    with Admin(kafka.client_options("admin")) as admin:
        quorum = admin.describe_quorum()
    assert quorum.leader_id == node.node_id and quorum.leader_epoch >= 1
    assert [(v.node_id, v.lag) for v in quorum.voters] == [(node.node_id, 0)]
    assert quorum.high_watermark > 0 and quorum.voters[0].log_end_offset == quorum.high_watermark
    assert f"CONTROLLER://127.0.0.1:{node.controller_port}" in quorum.endpoints[node.node_id]


@pytest.mark.parametrize(("args", "error"), [
    (["remove-controller", "--controller-id", "3000"],
     "InvalidRequest: RemoveRaftVoter of node 3000: node 3000 is the only voter"),
    (["remove-controller", "--controller-id", "7"],
     "VoterNotFound: RemoveRaftVoter of node 7: node 7 is not a voter (voters: [3000])"),
    (["add-controller", "--controller-id", "3000", "--controller-endpoint", "127.0.0.1:1"],
     "DuplicateVoter: AddRaftVoter of node 3000: node 3000 is a voter already"),
    (["add-controller", "--controller-id", "3005", "--controller-endpoint", "127.0.0.1:1"],
     "InvalidRequest: AddRaftVoter of node 3005: node 3005 has not fetched from leader 3000 in "
     "epoch 1: start it as an observer first"),
], ids=["last-voter", "not-a-voter", "already-a-voter", "not-fetching"])
def test_voter_changes_refused_with_their_reason(monkeypatch: pytest.MonkeyPatch,
                                                 pyq: EmbeddedCluster, args: list[str],
                                                 error: str) -> None:
    """Through a broker (forwarded) to the controller's quorum: exit 1, the command and why."""
    out = pyq_cluster(monkeypatch, pyq.bootstrap_servers, *args)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.strip() == f"pyq cluster {args[0]}: error: {error}"
    with Admin({"bootstrap.servers": pyq.bootstrap_servers}) as admin:
        assert [v.node_id for v in admin.describe_quorum().voters] == [CONTROLLER_ID]


def test_voter_changes_on_a_static_kafka_quorum_say_it_is_unsupported(
        monkeypatch: pytest.MonkeyPatch, kafka) -> None:
    """Kafka's quorum from ``controller.quorum.voters`` (kraft.version 0) cannot change its
    voters: add-controller says the cluster does not support it, naming the request; its
    static voter has no directory id, which Kafka's RemoveRaftVoter refuses."""
    node = kafka.nodes[0]
    options = kafka.client_options("admin")
    out = pyq_cluster(monkeypatch, options["bootstrap.servers"], "add-controller", "--controller-id", "9",
                      "--controller-endpoint", "127.0.0.1:1", "--controller-directory-id",
                      "AAECAwQFBgcICQoLDA0ODw", options=options)
    assert out.returncode == 1, out
    assert out.stderr.startswith("pyq cluster add-controller: error: the cluster does not "
                                 "support controller voter changes (AddRaftVoter): "), out.stderr
    out = pyq_cluster(monkeypatch, options["bootstrap.servers"], "remove-controller", "--controller-id",
                      str(node.node_id), options=options)
    assert out.returncode == 1
    assert out.stderr.strip() == (f"pyq cluster remove-controller: error: InvalidRequest: "
                                  f"RemoveRaftVoter of node {node.node_id}: Remove voter request "
                                  "didn't include a valid voter")


def test_status_without_describe_on_the_cluster_says_the_quorum_is_unavailable(
        monkeypatch: pytest.MonkeyPatch, kafka) -> None:
    """On Kafka as a user without Describe on the cluster: the brokers are listed, the quorum
    is not, and the command still exits 0."""
    options = kafka.client_options("alice")
    out = pyq_cluster(monkeypatch, options["bootstrap.servers"], "status", options=options)
    assert out.returncode == 0, out.stderr
    assert "quorum: unavailable (ClusterAuthorizationFailed: DescribeQuorum: " in out.stdout
    document = json.loads(pyq_cluster(monkeypatch, options["bootstrap.servers"], "status",
                                      "--format", "json", options=options).stdout)
    assert document["quorum"] is None
    assert document["quorum_error"].startswith("ClusterAuthorizationFailed: ")
