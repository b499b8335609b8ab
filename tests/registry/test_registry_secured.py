"""The schema registry of a SASL_SSL cluster: ``https://`` with the broker's certificate and
HTTP basic auth against the cluster's SCRAM users, judged by confluent-kafka's client."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlparse

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, SchemaRegistryError

from connector.cluster import EmbeddedCluster

pytestmark = [pytest.mark.integration, pytest.mark.cluster]  # starts controller + broker processes

SCHEMA = json.dumps({"type": "record", "name": "Secret", "fields": [{"name": "x", "type": "int"}]})


def test_https_and_basic_auth_against_the_scram_users() -> None:
    with EmbeddedCluster(brokers=1, security="SASL_SSL", users={"alice": "alice-secret"},
                         schema_registry=True) as cluster:
        options = cluster.schema_registry_options()
        assert options["url"].startswith("https://127.0.0.1:")
        assert options["basic.auth.user.info"] == "alice:alice-secret"
        client = SchemaRegistryClient(options)
        # A client that connects and never starts its TLS handshake holds only its own
        # connection: the registry answers everyone else meanwhile.
        url = urlparse(options["url"])
        silent = socket.create_connection((url.hostname, url.port))
        try:
            sid = client.register_schema("secret-value", Schema(SCHEMA, "AVRO"))
        finally:
            silent.close()
        assert client.get_latest_version("secret-value").schema_id == sid
        for user_info in ("alice:wrong", "mallory:alice-secret"):
            intruder = SchemaRegistryClient({**options, "basic.auth.user.info": user_info})
            with pytest.raises(SchemaRegistryError) as info:
                intruder.get_subjects()
            assert info.value.http_status_code == 401
        anonymous = SchemaRegistryClient({k: v for k, v in options.items()
                                          if k != "basic.auth.user.info"})
        with pytest.raises(SchemaRegistryError) as info:
            anonymous.get_schema(sid)
        assert info.value.http_status_code == 401
        assert client.get_subjects() == ["secret-value"]  # still serving
