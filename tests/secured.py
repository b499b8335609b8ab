"""The secured broker pair that modules checking security on pyq and on Apache Kafka share.

A module whose tests must hold on both over SASL_SSL overrides ``broker_under_test`` with
``yield from secured_broker_under_test(request, tmp_path_factory)``: a pyq broker with its
authorizer, then the session's secured Kafka, the same users (``KAFKA_USERS``, ``admin`` a
super user) and nothing allowed on either unless an ACL says so. A module that needs
several pyq brokers secured the same way starts :func:`secured_pyq_cluster` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from connector.cluster import EmbeddedCluster
from tests.conftest import KAFKA_USERS

#: pyq's authorizer as the session's Kafka runs its own: ``admin`` a super user, nothing
#: allowed unless an ACL says so, no topic created by a client's metadata request.
SECURED_OVERRIDES = {"authorizer.class.name": "pyq", "super.users": "User:admin",
                     "allow.everyone.if.no.acl.found": "false",
                     "auto.create.topics.enable": "false"}


class Secured(NamedTuple):
    name: str
    #: pyq client options (librdkafka names) for a user of ``KAFKA_USERS`` on the SASL_SSL listener
    options: Callable[[str], dict[str, Any]]


def secured_pyq_cluster(data_dir: Path, brokers: int = 1) -> EmbeddedCluster:
    """A pyq cluster (not yet started) secured as the session's Kafka is: SASL_SSL with
    SCRAM-SHA-512 for ``KAFKA_USERS``, certificates from a CA made in ``data_dir``, and
    :data:`SECURED_OVERRIDES`."""
    return EmbeddedCluster(brokers=brokers, data_dir=data_dir, security="SASL_SSL",
                           users=KAFKA_USERS, overrides=dict(SECURED_OVERRIDES))


def secured_broker_under_test(request: pytest.FixtureRequest,
                              tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    if request.param == "kafka":
        yield Secured("kafka", request.getfixturevalue("kafka").client_options)
        return
    cluster = secured_pyq_cluster(tmp_path_factory.mktemp("pyq-secured"))
    cluster.start()
    try:
        yield Secured("pyq", cluster.client_options)
    finally:
        cluster.stop()
