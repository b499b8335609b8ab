"""The secured broker pair that modules checking security on pyq and on Apache Kafka share.

A module whose tests must hold on both over SASL_SSL overrides ``broker_under_test`` with
``yield from secured_broker_under_test(request, tmp_path_factory)``: a pyq broker with its
authorizer, then the session's secured Kafka, the same users (``KAFKA_USERS``, ``admin`` a
super user) and nothing allowed on either unless an ACL says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest

from connector.cluster import EmbeddedCluster
from tests.conftest import KAFKA_USERS


class Secured(NamedTuple):
    name: str
    #: pyq client options (librdkafka names) for a user of ``KAFKA_USERS`` on the SASL_SSL listener
    options: Callable[[str], dict[str, Any]]


def secured_broker_under_test(request: pytest.FixtureRequest,
                              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    if request.param == "kafka":
        yield Secured("kafka", request.getfixturevalue("kafka").client_options)
        return
    cluster = EmbeddedCluster(brokers=1, data_dir=tmp_path_factory.mktemp("pyq-secured"),
                              security="SASL_SSL", users=KAFKA_USERS,
                              overrides={"authorizer.class.name": "pyq", "super.users": "User:admin",
                                         "allow.everyone.if.no.acl.found": "false",
                                         "auto.create.topics.enable": "false"})
    cluster.start()
    try:
        yield Secured("pyq", cluster.client_options)
    finally:
        cluster.stop()
