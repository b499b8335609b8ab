"""``EmbeddedCluster(console_port=N)``: the web console served beside a local cluster, a
client of it as the cluster's first user (here over SASL_SSL), stopped with it."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from connector.client import Admin
from connector.cluster import EmbeddedCluster

pytestmark = pytest.mark.cluster


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_the_console_serves_a_secured_cluster_beside_it_and_stops_with_it():
    with EmbeddedCluster(brokers=1, security="SASL_SSL", console_port=0) as cluster:
        url = cluster.console_url
        assert url.startswith("http://127.0.0.1:")
        with Admin(cluster.client_options()) as admin:
            admin.create_topic("audited", 2)
        status, page = get(url + "topics")
        assert status == 200 and 'data-topic="audited"' in page  # it authenticated
        status, page = get(url + "topics/missing")
        assert status == 400 and "UnknownTopicOrPartition" in page
    with pytest.raises(urllib.error.URLError):
        get(url)  # stopped before the brokers


@pytest.mark.parametrize("port", [-1, 65536])
def test_a_console_port_out_of_range_is_refused_naming_it(port):
    with pytest.raises(ValueError, match=f"console_port={port} is not allowed: must be a port "
                                         r"0\.\.65535"):
        EmbeddedCluster(console_port=port)
