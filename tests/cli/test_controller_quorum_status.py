"""Three controllers shown and changed: on a pyq cluster of 3 controllers and 1 broker,
``pyq cluster status`` shows three voters with their request listeners, Kafka's
``kafka-metadata-quorum`` bootstrapped from a standby finds the leader, and ``pyq cluster
remove-controller`` / ``add-controller`` take a standby out of the voters (it goes on
following the log as an observer) and bring it back."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator

import pytest

from broker_sim.cluster import LocalCluster
from broker_sim.quorum import parse_voters
from connector.client import Admin
from reference.kafka_tools import run_tool
from tests.cli.support import Result, pyq_here
from tests.wire import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

IDS = [3000, 3001, 3002]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("three-controllers"), 1, controllers=3)
    local.start()
    yield local
    local.stop()


Pyq = Callable[..., Result]


@pytest.fixture
def pyq(monkeypatch: pytest.MonkeyPatch) -> Pyq:
    """``pyq cluster ARGS --bootstrap-server <the cluster>`` in this process."""
    def run(cluster: LocalCluster, *args: str) -> Result:
        return pyq_here(monkeypatch, "cluster", *args, "--bootstrap-server",
                        cluster.bootstrap_servers)
    return run


def quorum(pyq: Pyq, cluster: LocalCluster) -> dict:
    out = pyq(cluster, "status", "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["quorum"]


def caught_up(pyq: Pyq, cluster: LocalCluster, voters: list[int]) -> dict:
    def check() -> dict | None:
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            q = admin.describe_quorum()
        ok = sorted(v.node_id for v in q.voters) == voters and all(v.lag == 0 for v in q.voters)
        return quorum(pyq, cluster) if ok else None
    return wait_for(check, timeout=20, interval=0.2, what=f"voters {voters} caught up")


def test_three_voters_shown_removed_and_added_back(pyq: Pyq, cluster: LocalCluster) -> None:
    listeners = {c_id: f"CONTROLLER://127.0.0.1:{c.port}" for c_id, c in zip(IDS, cluster.controllers,
                                                                              strict=True)}
    q = caught_up(pyq, cluster, IDS)
    leader = q["leader"]
    assert leader in IDS and q["epoch"] >= 1
    voters = [r for r in q["replicas"] if r["role"] in ("leader", "voter")]
    assert [(r["node"], r["endpoint"], r["lag"]) for r in voters] == [
        (i, [listeners[i]], 0) for i in IDS]
    assert [r["role"] for r in voters].count("leader") == 1

    standby = next(i for i in IDS if i != leader)
    status = run_tool("kafka-metadata-quorum", "--bootstrap-controller",
                      listeners[standby].removeprefix("CONTROLLER://"), "describe", "--status").stdout
    fields = dict(re.findall(r"^(\w+):\s+(.*)$", status, re.MULTILINE))
    assert fields["LeaderId"] == str(leader)
    assert sorted(v["id"] for v in json.loads(fields["CurrentVoters"])) == IDS

    out = pyq(cluster, "remove-controller", "--controller-id", str(standby))
    assert (out.returncode, out.stdout.strip()) == (0, f"controller {standby} is no longer a voter"), out
    caught_up(pyq, cluster, [i for i in IDS if i != standby])
    wait_for(lambda: standby in [r["node"] for r in quorum(pyq, cluster)["replicas"]
                                 if r["role"] == "observer"], timeout=10,
             what="the removed controller following the log as an observer")

    voters_option = next(a for a in cluster.controllers[0].command
                         if a.startswith("controller.quorum.voters="))
    host, port = parse_voters(voters_option.partition("=")[2])[standby]
    out = wait_for(lambda: (o := pyq(cluster, "add-controller", "--controller-id", str(standby),
                                     "--controller-endpoint", f"{host}:{port}")).returncode == 0 and o,
                   timeout=20, interval=0.5, what="the observer added back")
    assert out.stdout.strip() == f"controller {standby} ({host}:{port}) is a voter"
    caught_up(pyq, cluster, IDS)
