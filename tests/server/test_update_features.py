"""UpdateFeatures (57) on a broker process at each version: pyq's finalized levels are fixed,
so a feature set to its own level succeeds (v0-1 answer each feature, v2 only the top
level) and any other level fails the whole request with INVALID_UPDATE_VERSION and no
per-feature results, as Kafka's controller answers an update it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from broker_sim.process import BrokerProcess
from broker_sim.protocol.api import ApiKey
from broker_sim.protocol.errors import InvalidUpdateVersion
from tests.wire import WireClient

pytestmark = pytest.mark.integration


def update(broker: BrokerProcess, version: int, *features: tuple[str, int], upgrade_type: int = 1,
           allow_downgrade: bool = False, validate_only: bool = False) -> Any:
    assert broker.port is not None
    with WireClient(broker.port) as client:
        return client.request(ApiKey.UPDATE_FEATURES, version, {
            "timeout_ms": 10_000, "validate_only": validate_only, "feature_updates": [
                {"feature": name, "max_version_level": level, "upgrade_type": upgrade_type,
                 "allow_downgrade": allow_downgrade} for name, level in features]})


@pytest.mark.parametrize("version", [0, 1])
def test_before_v2_each_feature_set_to_its_level_answers_on_its_own(shared_broker: BrokerProcess,
                                                                     version: int) -> None:
    r = update(shared_broker, version, ("group.version", 1), ("transaction.version", 0))
    assert (r.error_code, r.error_message) == (0, None)
    assert [(x.feature, x.error_code) for x in r.results] == [("group.version", 0), ("transaction.version", 0)]


def test_v2_answers_only_the_top_level(shared_broker: BrokerProcess) -> None:
    r = update(shared_broker, 2, ("group.version", 1), upgrade_type=2, validate_only=True)
    assert (r.error_code, r.error_message, r.results) == (0, None, ())


@pytest.mark.parametrize(("version", "feature", "kwargs", "said"), [
    (2, ("transaction.version", 2), {}, "pyq supports only version 0 of transaction.version"),
    (1, ("group.version", 0), {"upgrade_type": 2}, "pyq supports only version 1 of group.version"),
    (0, ("group.version", 0), {"allow_downgrade": True}, "pyq supports only version 1 of group.version"),
    (2, ("metadata.version", 21), {}, "pyq does not support this feature"),
    (2, ("group.version", 1), {"upgrade_type": 7}, "upgrade type 7 is none of"),
])
def test_any_other_level_fails_the_whole_request(shared_broker: BrokerProcess, version: int,
                                                 feature: tuple[str, int], kwargs: dict, said: str) -> None:
    r = update(shared_broker, version, ("group.version", 1), feature, **kwargs)
    assert r.error_code == InvalidUpdateVersion.code and r.results in ([], ())
    assert r.error_message.startswith("No feature was updated. Invalid update version") and said in r.error_message
