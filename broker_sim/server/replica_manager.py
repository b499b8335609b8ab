"""The partitions this broker hosts, and everything that moves records in and out of them.

* :meth:`apply_image` turns the controller's image into local state: for each partition
  assigned here, become leader (new epoch: reset follower tracking) or follower (start a
  replica fetcher, which truncates first); drop partitions no longer assigned (deleted
  topics lose their logs). Waiting requests on changed partitions are re-checked, so they
  answer NOT_LEADER_OR_FOLLOWER at once instead of at their timeout. Configs take effect
  here too: each hosted log gets its topic's overrides over this broker's log defaults (its
  start-up options, then the dynamic broker configs of the image), swapped in whole when
  they changed (retention and segment sizes apply from the next retention run or roll),
  and each partition its ``min.insync.replicas``.
* :meth:`append` (Produce): appends to leaders; with acks=all the request waits in the
  produce purgatory until the high watermark passes it (DelayedProduce).
* :meth:`fetch` (Fetch): reads below the HW (consumers) or the LEO (followers); a fetch
  that finds fewer than ``min_bytes`` waits in the fetch purgatory (DelayedFetch). A
  follower's fetch also records its LEO, which may move the HW and complete produces.
* :meth:`delete_records` (DeleteRecords): moves leaders' log start offsets; the request
  waits in the delete-records purgatory until the ISR's low watermark reaches each
  requested offset (DelayedDeleteRecords). Follower fetches carry the follower's log start
  offset, so each one may complete such a request.
* An ISR maintenance thread asks the controller to shrink the ISR of lagging followers
  and to expand it with caught-up ones (AlterPartition) — never with a broker the image
  says is fenced (KIP-841): a follower that died caught up looks in sync until
  ``replica.lag.time.max.ms`` passes, and the controller refuses it.

Threading: the partition map is guarded by ``_lock``; each Partition guards itself;
purgatory callbacks may run on handler threads, fetcher threads or the timer's executor.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..common import SYSTEM_CLOCK, Clock, PeriodicThread
from ..controller.configs import NON_LOG_TOPIC_CONFIGS, broker_log_overrides, effective_min_isr
from ..controller.image import ClusterImage
from ..log import LogConfig, LogManager
from ..protocol.errors import (
    KafkaError,
    NotLeaderOrFollower,
    UnknownLeaderEpoch,
    UnknownTopicOrPartition,
)
from ..purgatory import DelayedOperationPurgatory
from .delayed_delete_records import DelayedDeleteRecords, DeleteRecordsStatus
from .delayed_fetch import DelayedFetch
from .delayed_produce import DelayedProduce, ProduceStatus
from .partition import Partition
from .replica_fetcher import ReplicaFetcherManager
from .replica_manager_types import FetchResult, FetchSpec, release_results

log = logging.getLogger(__name__)

READ_UNCOMMITTED, READ_COMMITTED = 0, 1


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager,
                 address: Callable[[int], tuple[str, int] | None],
                 alter_partition: Callable[[Partition, list[int]], None],
                 replica_lag_time_max_ms: int = 10_000, clock: Clock = SYSTEM_CLOCK) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.log_manager = log_manager
        self.alter_partition = alter_partition
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._partitions: dict[tuple[str, int], Partition] = {}
        self._lock = threading.Lock()
        #: brokers the controller's image says are not alive (fenced): never added to an ISR.
        self._fenced: frozenset[int] = frozenset()
        self.produce_purgatory: DelayedOperationPurgatory[DelayedProduce] = DelayedOperationPurgatory(
            "Produce", clock=clock)
        self.fetch_purgatory: DelayedOperationPurgatory[DelayedFetch] = DelayedOperationPurgatory(
            "Fetch", clock=clock)
        self.delete_records_purgatory: DelayedOperationPurgatory[DelayedDeleteRecords] = \
            DelayedOperationPurgatory("DeleteRecords", clock=clock)
        self.fetchers = ReplicaFetcherManager(broker_id, address, self._after_follower_append, clock)
        interval_ms = int(max(50, min(replica_lag_time_max_ms / 4, 500)))
        self._isr_thread = PeriodicThread(f"isr-maintenance-{broker_id}", interval_ms,
                                          lambda: self.maintain_isr(self.clock.monotonic_ms()))
        self._isr_thread.start()

    # ---- the image ------------------------------------------------------------------------
    def apply_image(self, image: ClusterImage) -> None:
        assigned: set[tuple[str, int]] = set()
        changed: list[tuple[str, int]] = []
        now = self.clock.monotonic_ms()
        defaults = self.log_defaults(image)
        self._fenced = frozenset(b for b, info in image.brokers.items() if not info.alive)
        for name, topic in image.topics.items():
            if not any(self.broker_id in p.replicas for p in topic.partitions):
                continue
            config = self._topic_log_config(name, topic.configs, defaults)
            min_isr = effective_min_isr(topic.configs, len(topic.partitions[0].replicas))
            updated = False
            for index, pinfo in enumerate(topic.partitions):
                if self.broker_id not in pinfo.replicas:
                    continue
                key = (name, index)
                assigned.add(key)
                p = self._partitions.get(key)
                if p is None:
                    p = Partition(name, index, self.log_manager.get_or_create(name, index, config),
                                  self.broker_id, min_isr)
                    with self._lock:
                        self._partitions[key] = p
                if p.log.config != config and not updated:
                    self.log_manager.update_topic_config(name, config)
                    updated = True
                    log.info("%s: log config now %s", name, config.overrides_from(LogConfig()))
                if p.min_isr != min_isr:
                    log.info("%s-%d: min.insync.replicas %d -> %d", name, index, p.min_isr, min_isr)
                p.min_isr = min_isr
                if pinfo.leader == self.broker_id:
                    isr_before = list(p.isr)
                    if p.make_leader(pinfo.leader_epoch, pinfo.partition_epoch, pinfo.replicas, pinfo.isr, now):
                        self.fetchers.unfollow(key)
                        log.info("%s-%d: leader in epoch %d, isr %s", name, index, pinfo.leader_epoch, pinfo.isr)
                        changed.append(key)
                    elif p.isr != isr_before:
                        # The controller shrank the ISR (a fenced follower) in the same epoch:
                        # the high watermark may have moved, and acks=all produces waiting on
                        # the dead follower are now satisfied.
                        changed.append(key)
                elif pinfo.leader >= 0:
                    if p.make_follower(pinfo.leader, pinfo.leader_epoch, pinfo.partition_epoch,
                                       pinfo.replicas, pinfo.isr):
                        self.fetchers.follow(p, pinfo.leader, pinfo.leader_epoch)
                        log.info("%s-%d: following broker %d in epoch %d", name, index, pinfo.leader,
                                 pinfo.leader_epoch)
                        changed.append(key)
                else:
                    if p.make_follower(-1, pinfo.leader_epoch, pinfo.partition_epoch, pinfo.replicas, pinfo.isr):
                        self.fetchers.unfollow(key)
                        changed.append(key)
        with self._lock:
            gone = [k for k in self._partitions if k not in assigned]
            for key in gone:
                del self._partitions[key]
        for key in gone:
            self.fetchers.unfollow(key)
            changed.append(key)
        for deleted in {k[0] for k in gone} - set(image.topics):
            self.log_manager.delete_topic(deleted)
            log.info("deleted the logs of topic %s", deleted)
        for key in changed:
            self.produce_purgatory.check_and_complete(key)
            self.fetch_purgatory.check_and_complete(key)
            self.delete_records_purgatory.check_and_complete(key)

    def log_defaults(self, image: ClusterImage) -> LogConfig:
        """This broker's log defaults: its start-up options with the image's dynamic broker
        configs (cluster-wide, then this broker's) on top. Values the controller accepted
        are valid; should one not be (an older image), the start-up defaults stay."""
        overrides = broker_log_overrides(image.broker_configs, self.broker_id)
        try:
            return LogConfig.from_properties(overrides, self.log_manager.default_config)
        except KafkaError as e:
            log.warning("dynamic broker configs %s ignored: %s", overrides, e)
            return self.log_manager.default_config

    def _topic_log_config(self, name: str, configs: dict[str, str], defaults: LogConfig) -> LogConfig:
        props = {k: v for k, v in configs.items() if k not in NON_LOG_TOPIC_CONFIGS}
        try:
            return LogConfig.from_properties(props, defaults)
        except KafkaError as e:
            log.warning("topic %s: configs %s ignored: %s", name, props, e)
            return defaults

    # ---- lookups ----------------------------------------------------------------------------
    def partition(self, topic: str, index: int) -> Partition:
        p = self._partitions.get((topic, index))
        if p is None:
            raise UnknownTopicOrPartition(f"this broker does not host {topic}-{index}")
        return p

    def partitions(self) -> list[Partition]:
        with self._lock:
            return list(self._partitions.values())

    # ---- produce ------------------------------------------------------------------------------
    def append(self, acks: int, timeout_ms: int, entries: list[tuple[str, int, memoryview | bytes]],
               respond: Callable[[list[ProduceStatus]], None], *, markers: bool = False,
               in_place: bool = False) -> None:
        """Append to the partitions this broker leads; ``respond`` once ``acks`` allow.
        Control batches (transaction markers) are accepted only with ``markers``: the
        transaction coordinator's WriteTxnMarkers, never a producer. ``in_place``: the
        records are the caller's to patch (a produce request's frame), see
        :meth:`Log.append_as_leader`."""
        statuses = []
        for topic, index, records in entries:
            s = ProduceStatus(topic, index, -1)
            try:
                p = self.partition(topic, index)
                result = p.append_records_to_leader(records, acks, markers=markers,
                                                    in_place=in_place)
                s.base_offset = result.base_offset
                s.log_start_offset = result.log_start_offset
                s.required_offset = result.last_offset + 1
            except KafkaError as e:
                s.error, s.done = e, True
                if not isinstance(e, UnknownTopicOrPartition):
                    log.info("produce to %s-%d rejected: %s", topic, index, e)
            statuses.append(s)
            if s.error is None:
                self.fetch_purgatory.check_and_complete((topic, index))  # followers long-polling
        if acks != -1 or all(s.done for s in statuses):
            for s in statuses:
                s.done = True
            respond(statuses)
            return
        op = DelayedProduce(timeout_ms, statuses, self.partition, respond)
        self.produce_purgatory.try_complete_else_watch(op, [(s.topic, s.partition) for s in statuses])

    # ---- fetch --------------------------------------------------------------------------------
    def fetch(self, replica_id: int, specs: list[FetchSpec], max_bytes: int, min_bytes: int,
              max_wait_ms: int, respond: Callable[[list[FetchResult]], None],
              isolation: int = READ_UNCOMMITTED, zero_copy: bool = False) -> None:
        """A consumer reads below the high watermark (read_committed: below the last stable
        offset, with the aborted transactions of that range); a follower below the LEO.
        With ``zero_copy`` the results carry segment file ranges instead of bytes (see
        :mod:`broker_sim.log.file_records`): ``respond`` owns them."""
        is_follower = replica_id >= 0
        committed = isolation == READ_COMMITTED and not is_follower
        if not is_follower:
            respond = self._counting_fetched(respond)
        if is_follower:
            now = self.clock.monotonic_ms()
            for spec in specs:
                try:
                    p = self.partition(spec.topic, spec.partition)
                except KafkaError:
                    continue
                key = (spec.topic, spec.partition)
                if p.update_follower_fetch(replica_id, spec.fetch_offset, now, spec.log_start_offset):
                    self.produce_purgatory.check_and_complete(key)
                    self.fetch_purgatory.check_and_complete(key)
                self.delete_records_purgatory.check_and_complete(key)  # its log start may have moved
        results = self.read(specs, max_bytes, is_follower, read_committed=committed,
                            zero_copy=zero_copy)
        available = sum(len(r.records) for r in results)
        errors = [r.error for r in results if r.error is not None]
        # A follower ahead of this broker's metadata (it knows of the partition, or of this
        # broker's leadership, first) waits for the image instead of being refused.
        ahead = is_follower and bool(errors) and all(isinstance(
            e, UnknownTopicOrPartition | NotLeaderOrFollower | UnknownLeaderEpoch) for e in errors)
        if max_wait_ms <= 0 or available >= min_bytes or (errors and not ahead) or not specs:
            respond(results)
            return
        release_results(results)  # read again when the fetch completes
        op = DelayedFetch(max_wait_ms, specs, max_bytes, min_bytes, is_follower, self, respond,
                          read_committed=committed, zero_copy=zero_copy, await_metadata=ahead)
        self.fetch_purgatory.try_complete_else_watch(op, [(s.topic, s.partition) for s in specs])

    def _counting_fetched(self, respond: Callable[[list[FetchResult]], None]
                          ) -> Callable[[list[FetchResult]], None]:
        """``respond`` that first adds each result's record bytes to its partition's
        traffic (a consumer's fetch, counted once, when it is answered)."""
        def counted(results: list[FetchResult]) -> None:
            for r in results:
                if r.records:
                    p = self._partitions.get((r.spec.topic, r.spec.partition))
                    if p is not None:
                        p.traffic.record_out(len(r.records))
            respond(results)
        return counted

    # ---- DeleteRecords ------------------------------------------------------------------------
    def delete_records(self, timeout_ms: int, entries: list[tuple[str, int, int]],
                       respond: Callable[[list[DeleteRecordsStatus]], None]) -> None:
        """Move the log start offset of each (topic, partition) this broker leads up to the
        offset given (-1: its high watermark); ``respond`` once the ISR's low watermark
        reached every offset (or at ``timeout_ms``). Consumers waiting in the fetch
        purgatory below a new log start answer OFFSET_OUT_OF_RANGE at once."""
        statuses = []
        for topic, index, offset in entries:
            s = DeleteRecordsStatus(topic, index, -1)
            try:
                p = self.partition(topic, index)
                s.required_offset, s.low_watermark = p.delete_records_on_leader(offset)
                s.done = s.low_watermark >= s.required_offset
                log.info("%s-%d: records before offset %d deleted (log start %d)", topic, index,
                         s.required_offset, p.log_start_offset)
                self.fetch_purgatory.check_and_complete((topic, index))
            except KafkaError as e:
                s.error, s.done = e, True
                log.info("DeleteRecords on %s-%d before %d refused: %s", topic, index, offset, e)
            statuses.append(s)
        if all(s.done for s in statuses):
            respond(statuses)
            return
        op = DelayedDeleteRecords(timeout_ms, statuses, self.partition, respond)
        self.delete_records_purgatory.try_complete_else_watch(
            op, [(s.topic, s.partition) for s in statuses if not s.done])

    def read(self, specs: list[FetchSpec], max_bytes: int, is_follower: bool,
             min_one_batch: bool = True, read_committed: bool = False,
             zero_copy: bool = False) -> list[FetchResult]:
        """Read each partition in order, sharing ``max_bytes`` across them.

        Like Kafka from Fetch v3 on, the first partition that has data returns at least
        one whole batch even when it is larger than the limits, so a consumer can always
        make progress; later partitions get only what still fits. With ``zero_copy`` the
        records are pinned segment file ranges (the same bytes), owned by the caller.
        """
        results = []
        remaining = max_bytes
        for spec in specs:
            result = FetchResult(spec)
            try:
                p = self.partition(spec.topic, spec.partition)
                p.check_leader()
                p.check_leader_epoch(spec.current_leader_epoch)
                result.high_watermark = p.high_watermark
                result.log_start_offset = p.log_start_offset
                result.log_end_offset = p.log_end_offset
                result.last_stable_offset = p.log.last_stable_offset
                limit = min(spec.max_bytes, remaining)
                upper = None if is_follower else (
                    result.last_stable_offset if read_committed else result.high_watermark)
                if limit > 0 or min_one_batch:
                    data = p.log.read(spec.fetch_offset, max(limit, 0), max_offset=upper,
                                      min_one_batch=min_one_batch, zero_copy=zero_copy)
                    result.records = data.records
                if read_committed and upper is not None:
                    result.aborted = [(a.producer_id, a.first_offset) for a in
                                      p.log.aborted_transactions(spec.fetch_offset, upper)]
            except KafkaError as e:
                result.error = e
            if result.records:
                remaining -= len(result.records)
                min_one_batch = False
            results.append(result)
        return results

    def _after_follower_append(self, partition: Partition) -> None:
        key = (partition.topic, partition.index)
        self.fetch_purgatory.check_and_complete(key)

    # ---- ISR maintenance -------------------------------------------------------------------
    @property
    def isr_maintenance_runs(self) -> int:
        """How many rounds of :meth:`maintain_isr` the background thread has finished."""
        return self._isr_thread.runs

    def maintain_isr(self, now: int) -> None:
        for p in self.partitions():
            proposed = p.proposed_isr(now, self.replica_lag_time_max_ms, self._fenced)
            if proposed is not None:
                self.alter_partition(p, proposed)
                key = (p.topic, p.index)
                self.produce_purgatory.check_and_complete(key)
                self.fetch_purgatory.check_and_complete(key)
                self.delete_records_purgatory.check_and_complete(key)

    def shutdown(self) -> None:
        self._isr_thread.stop()
        self.fetchers.shutdown()
        self.produce_purgatory.shutdown()
        self.fetch_purgatory.shutdown()
        self.delete_records_purgatory.shutdown()
