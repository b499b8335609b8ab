"""All partition logs of a broker under one data directory.

Layout (as Kafka's ``log.dirs``): one directory per partition named ``<topic>-<partition>``
(the partition is after the *last* dash, so topic names may contain dashes)::

    data/
        .lock                           held (flock) while a LogManager uses the directory
        orders-0/                       a Log directory (see log.py)
            00000000000000000000.log
            00000000000000000000.index
            log-state.json
            topic-config.json           {"retention.ms": "3600000"}  (only if overridden)
        orders-1/
        old-topic-0.3f2a...-delete/     a deletion interrupted by a crash: removed on start

``topic-config.json`` holds the topic's config *overrides* as Kafka dotted names; on load
they are applied on top of the manager's current default config, so a changed broker
default still reaches topics that did not override it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

from ..common import SYSTEM_CLOCK, Clock, TopicPartition
from ..protocol.errors import InvalidConfig, InvalidTopic, KafkaStorageError
from .config import LogConfig
from .log import Log

TOPIC_CONFIG_FILE = "topic-config.json"
LOCK_FILE = ".lock"
DELETE_SUFFIX = "-delete"
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def validate_topic_name(topic: str) -> None:
    """Raise InvalidTopic unless ``topic`` is a legal Kafka topic name."""
    if not isinstance(topic, str) or not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
        raise InvalidTopic(
            f"topic name {topic!r} is illegal: it must be 1 to 249 characters of "
            "ASCII letters, digits, '.', '_' and '-', and not '.' or '..'"
        )


def parse_partition_dir(name: str) -> TopicPartition | None:
    """``"orders-3"`` -> ``TopicPartition("orders", 3)``; None for any other name."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not partition.isdigit() or not _LEGAL_TOPIC.fullmatch(topic) or topic in (".", ".."):
        return None
    return TopicPartition(topic, int(partition))


class LogManager:
    """Creates, loads, cleans and deletes the partition logs under ``data_dir``.

    Invariants: exactly one :class:`Log` per ``(topic, partition)`` directory, all loaded
    at construction (a restarted broker serves its data at once); only one LogManager
    per data directory at a time (an exclusive ``flock`` on ``data_dir/.lock``; a second
    one raises KafkaStorageError).

    Threading: a lock guards the map of logs, so every method may be called from any
    thread; the logs themselves are thread-safe (see :class:`Log`). Retention
    (:meth:`cleanup`) and :meth:`flush_all` work on a snapshot of the map, so a topic
    deleted meanwhile is skipped.
    """

    def __init__(
        self,
        data_dir: Path,
        default_config: LogConfig | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.default_config = default_config if default_config is not None else LogConfig()
        self.clock = clock
        self._lock = threading.Lock()
        self._logs: dict[TopicPartition, Log] = {}
        self._closed = False
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise KafkaStorageError(f"cannot use data directory {self.data_dir}: {e}") from e
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(self._lock_fd)
            raise KafkaStorageError(
                f"data directory {self.data_dir} is in use by another broker (cannot lock {LOCK_FILE})"
            ) from e
        try:
            self._load_all()
        except BaseException:
            self.close()
            raise

    # --------------------------------------------------------------- loading

    def _load_all(self) -> None:
        for d in sorted(self.data_dir.iterdir()):
            if not d.is_dir():
                continue
            if d.name.endswith(DELETE_SUFFIX):
                shutil.rmtree(d, ignore_errors=True)
                continue
            tp = parse_partition_dir(d.name)
            if tp is None:
                continue
            self._logs[tp] = Log(d, self._read_config(d), self.clock)

    def _read_config(self, d: Path) -> LogConfig:
        path = d / TOPIC_CONFIG_FILE
        try:
            overrides = json.loads(path.read_text())
        except FileNotFoundError:
            return self.default_config
        except (OSError, ValueError) as e:
            raise KafkaStorageError(f"cannot read topic config {path}: {e}") from e
        if not isinstance(overrides, dict):
            raise KafkaStorageError(f"topic config {path} is not a JSON object")
        return LogConfig.from_properties({str(k): str(v) for k, v in overrides.items()}, self.default_config)

    def _write_config(self, d: Path, config: LogConfig) -> None:
        path = d / TOPIC_CONFIG_FILE
        overrides = config.overrides_from(self.default_config)
        if not overrides:
            path.unlink(missing_ok=True)
            return
        tmp = d / (TOPIC_CONFIG_FILE + ".tmp")
        tmp.write_text(json.dumps(overrides, sort_keys=True))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)

    def _resolve(self, config: LogConfig | Mapping[str, str] | None) -> LogConfig:
        if config is None:
            return self.default_config
        if isinstance(config, LogConfig):
            return config
        return LogConfig.from_properties(config, self.default_config)

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"log manager for {self.data_dir} is closed")

    # ----------------------------------------------------------------- access

    def get_or_create(
        self,
        topic: str,
        partition: int,
        config: LogConfig | Mapping[str, str] | None = None,
    ) -> Log:
        """The log of ``topic``-``partition``, created if missing.

        ``config`` (a LogConfig, or overrides as Kafka dotted names applied on the
        default) is used only when the log is created; its differences from the default
        are persisted in the partition directory. An existing log keeps its config.
        """
        validate_topic_name(topic)
        if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
            raise InvalidConfig(f"partition must be an integer >= 0, not {partition!r}")
        tp = TopicPartition(topic, partition)
        with self._lock:
            self._check_open()
            log = self._logs.get(tp)
            if log is not None:
                return log
            cfg = self._resolve(config)
            d = self.data_dir / f"{topic}-{partition}"
            try:
                d.mkdir(parents=True, exist_ok=True)
                self._write_config(d, cfg)
            except OSError as e:
                raise KafkaStorageError(f"cannot create log directory {d}: {e}") from e
            log = Log(d, cfg, self.clock)
            self._logs[tp] = log
            return log

    def get(self, topic: str, partition: int) -> Log | None:
        return self._logs.get(TopicPartition(topic, partition))

    def all_logs(self) -> dict[TopicPartition, Log]:
        """A snapshot copy of every log, keyed by (topic, partition)."""
        with self._lock:
            return dict(self._logs)

    def partitions(self, topic: str) -> list[int]:
        """The partitions of ``topic`` that have a log here, sorted."""
        with self._lock:
            return sorted(tp.partition for tp in self._logs if tp.topic == topic)

    def update_topic_config(self, topic: str, config: LogConfig | Mapping[str, str]) -> int:
        """Give every log of ``topic`` a new config (overrides are replaced, and persisted).

        A mapping is applied on top of the *default* config (AlterConfigs semantics: the
        overrides not named are dropped). Returns the number of logs updated.
        """
        cfg = self._resolve(config)
        with self._lock:
            self._check_open()
            logs = [log for tp, log in self._logs.items() if tp.topic == topic]
            for log in logs:
                try:
                    self._write_config(log.dir, cfg)
                except OSError as e:
                    raise KafkaStorageError(f"cannot write topic config in {log.dir}: {e}") from e
                log.update_config(cfg)
            return len(logs)

    def delete_topic(self, topic: str) -> int:
        """Close and remove every log of ``topic``; return how many were deleted.

        Each directory is first renamed to ``<name>.<uuid>-delete`` (so a crash midway
        leaves nothing that loads as a log), then removed. Readers still inside a
        deleted log's read get OffsetOutOfRange/KafkaStorageError, never a crash.
        """
        with self._lock:
            self._check_open()
            victims = [(tp, log) for tp, log in self._logs.items() if tp.topic == topic]
            for tp, _log in victims:
                del self._logs[tp]
        for _tp, log in victims:
            doomed = log.dir.with_name(f"{log.dir.name}.{uuid.uuid4().hex}{DELETE_SUFFIX}")
            try:
                os.rename(log.dir, doomed)
            except OSError:
                doomed = log.dir
            log.delete()
            shutil.rmtree(doomed, ignore_errors=True)
        return len(victims)

    # ------------------------------------------------------------ maintenance

    def cleanup(self, now_ms: int | None = None) -> int:
        """Run retention on every log; return the number of segments deleted."""
        now = self.clock.wall_ms() if now_ms is None else now_ms
        deleted = 0
        for log in self.all_logs().values():
            if log.closed:
                continue  # deleted meanwhile
            try:
                deleted += log.delete_old_segments(now)
            except KafkaStorageError:
                if not log.closed:
                    raise
        return deleted

    def flush_all(self) -> None:
        for log in self.all_logs().values():
            try:
                log.flush()
            except KafkaStorageError:
                if not log.closed:  # a log deleted meanwhile is not an error
                    raise

    def close(self) -> None:
        """Close every log and release the data directory (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            logs = list(self._logs.values())
            self._logs.clear()
        try:
            errors: list[BaseException] = []
            for log in logs:
                try:
                    log.close()
                except Exception as e:  # close the others anyway
                    errors.append(e)
            if errors:
                raise errors[0]
        finally:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)

    def __enter__(self) -> LogManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
