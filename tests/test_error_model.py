"""One error model: every error the library raises is a PyqError carrying ``retriable``.

Retry loops of the client, the source and the sink ask one predicate,
:func:`broker_sim.protocol.errors.is_retriable`; an exception that is not a
:class:`PyqError` (a ``TypeError`` from a bug) is never retried. A refused option is one
class, :class:`ConfigError`, whether the broker, the client or the connector refused it.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

from broker_sim.protocol.errors import (
    ConfigError,
    KafkaError,
    NotLeaderOrFollower,
    PyqError,
    TopicAuthorizationFailed,
    is_retriable,
)

ROOT = Path(__file__).resolve().parents[1]

#: Exceptions that never leave the code that raises them: control flow, caught a few lines
#: up the stack (a segment replaced under a reader, a cleaning pass stopped, a retry signal).
SIGNALS = {
    "broker_sim.log.cleaner.CleanAborted",
    "broker_sim.log.file_records.SegmentChanged",
    "broker_sim.log.segment.SegmentGone",
    "broker_sim.network.processor._FileChanged",
    "broker_sim.protocol.primitives.ExternalBytesChanged",
    "broker_sim.registry.kafka_log._Retry",
    # an option kind's parser states its rule; options.parse_value turns it into the
    # ValueError each part raises as its own ConfigError
    "broker_sim.common.options.Refused",
}

#: Not folded yet, and why (each is a user-facing error that should become a PyqError).
NOT_YET = {
    # broker_sim.raft imports nothing of pyq (the sans-I/O core stands alone)
    "broker_sim.raft.errors.RaftError",
    "broker_sim.raft.errors.NotLeaderError",
}


def _library_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in ("broker_sim", "connector"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            if info.name.endswith("__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if (inspect.isclass(obj) and issubclass(obj, BaseException)
                        and obj.__module__ == module.__name__):
                    found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_error_of_the_library_is_a_pyq_error() -> None:
    errors = _library_exceptions()
    assert len(errors) > 120  # the walk found the Kafka errors and the library's own
    outside = {name for name, cls in errors.items() if not issubclass(cls, PyqError)}
    assert outside - SIGNALS - NOT_YET == set(), "errors outside the one hierarchy"
    for name in (SIGNALS | NOT_YET) & set(errors):
        if name in NOT_YET and issubclass(errors[name], PyqError):
            pytest.fail(f"{name} is a PyqError now: take it out of NOT_YET")


def test_retriable_is_declared_by_the_hierarchy_and_asked_by_one_predicate() -> None:
    from connector.client.errors import ClientError, DisconnectError, KafkaTimeoutError
    from connector.option_values import OptionError
    from connector.sink.transactions import TransactionNotCommitted
    from connector.source.partition_discovery import NoOffsetForTimestamp
    from connector.source.read import DataLossDuringRead

    assert is_retriable(NotLeaderOrFollower()) and NotLeaderOrFollower.invalid_metadata
    assert is_retriable(DisconnectError("gone")) and is_retriable(KafkaTimeoutError("late"))
    assert not is_retriable(TopicAuthorizationFailed())
    assert not is_retriable(TypeError("a bug")) and not is_retriable(OSError("no such file"))
    for cls in (ClientError, KafkaError, DataLossDuringRead, NoOffsetForTimestamp,
                TransactionNotCommitted, OptionError, ConfigError):
        assert issubclass(cls, PyqError) and cls.retriable is False, cls
    # ValueError / RuntimeError callers that caught them before still do
    assert issubclass(OptionError, ValueError) and issubclass(NoOffsetForTimestamp, ValueError)
    assert issubclass(DataLossDuringRead, RuntimeError)


def test_one_config_error_for_broker_client_and_connector() -> None:
    from broker_sim.security.stores import StoreError
    from broker_sim.server import ConfigError as BrokerConfigError
    from connector.client import ConfigError as ClientConfigError
    from connector.client.config import ProducerConfig
    from connector.option_values import OptionError
    from connector.source.options import parse_source_options

    assert BrokerConfigError is ClientConfigError is ConfigError
    assert issubclass(OptionError, ConfigError) and issubclass(StoreError, ConfigError)
    with pytest.raises(ConfigError, match="acks"):
        ProducerConfig.from_options({"bootstrap.servers": "127.0.0.1:9092", "acks": "some"})
    with pytest.raises(ConfigError, match="failOnDataLoss"):
        parse_source_options({"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t",
                              "failOnDataLoss": "maybe"}, streaming=True)


def test_no_retry_loop_asks_an_attribute_by_getattr() -> None:
    """``getattr(e, "retriable", True)`` once retried a TypeError until the deadline."""
    pattern = re.compile(r"getattr\(\s*\w+\s*,\s*[\"'](retriable|invalid_metadata)[\"']")
    hits = [f"{path.relative_to(ROOT)}:{n}"
            for package in ("broker_sim", "connector", "jobs")
            for path in sorted((ROOT / package).rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert hits == []


@pytest.mark.parametrize("name", ["broker_sim.protocol.errors", "connector.client.errors",
                                  "broker_sim.server.config"])
def test_the_error_modules_worked_examples_hold(name: str) -> None:
    import doctest

    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0 and result.failed == 0


def test_every_kafka_error_class_is_found_by_its_code() -> None:
    """The code table is built from the classes, so a class added is never left out of it
    (three were: a FETCH_SESSION_ID_NOT_FOUND answer was read as UNKNOWN_SERVER_ERROR)."""
    from broker_sim.protocol import errors

    classes = [cls for cls in vars(errors).values() if isinstance(cls, type)
               and issubclass(cls, KafkaError) and cls.__module__ == errors.__name__]
    assert sorted(errors.ERRORS_BY_CODE.values(), key=lambda c: c.code) == sorted(
        classes, key=lambda c: c.code)
    for code, name in ((70, "FetchSessionIdNotFound"), (71, "InvalidFetchSessionEpoch"),
                       (52, "TransactionCoordinatorFenced")):
        assert errors.error_for_code(code).__name__ == name
    assert errors.error_for_code(70).retriable
