"""Committed offsets: OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete (Kafka's
OffsetMetadataManager).

OffsetCommit checks generation and member id against a classic group, member id and
member epoch against a consumer-protocol group (KIP-848, KIP-1251); commits with no member
id and generation -1 (a "simple" group, e.g. the Spark source's) are accepted while the
group has no members. A commit counts as a classic member's heartbeat.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ...protocol.errors import (
    CoordinatorNotAvailable,
    FencedInstanceId,
    GroupIdNotFound,
    GroupSubscribedToTopic,
    IllegalGeneration,
    KafkaError,
    NonEmptyGroup,
    OffsetMetadataTooLarge,
    RebalanceInProgress,
    StaleMemberEpoch,
    UnknownMemberId,
    code_of,
)
from .config import GroupConfig
from .group import CommittedOffset, GroupMetadata, GroupState
from .member import MemberMetadata
from .store import GroupStore
from .subscription import subscribed_topics

S = GroupState


class OffsetManager:
    """The committed offsets of every group this broker coordinates.

    Invariants: ``group.offsets`` holds only offsets whose records are in
    ``__consumer_offsets`` (a commit takes effect in its write's callback, never before);
    an offset committed inside a transaction waits in ``group.pending_txn_offsets`` under its
    producer id until the transaction's marker decides it (:meth:`on_transaction_completed`);
    a deletion removes offsets only once their tombstones are written. A group an
    OffsetCommit creates is hidden (:attr:`.GroupMetadata.first_commit_pending`) until
    one of its commits is written, and is dropped when all of those fail, as Kafka's
    coordinator reads groups at the last committed offset and reverts a failed write.

    Threading: request handlers call in concurrently; every read and change of a group's
    offsets happens under the group's lock, write callbacks included.
    """

    def __init__(self, config: GroupConfig, store: GroupStore,
                 member_alive: Callable[[GroupMetadata, MemberMetadata], None]) -> None:
        self.config = config
        self.store = store
        #: a classic member's commit proves it alive (its heartbeat is re-armed).
        self.member_alive = member_alive

    def commit_offsets(self, group_id: str, member_id: str, instance_id: str | None,
                       generation_id: int, offsets: dict[tuple[str, int], CommittedOffset],
                       callback: Callable[[dict[tuple[str, int], int]], None],
                       transaction: tuple[int, int] | None = None) -> None:
        """OffsetCommit; with ``transaction=(producer id, epoch)`` TxnOffsetCommit: the
        offsets are written inside that transaction and count once it commits
        (:meth:`on_transaction_completed`). A transactional commit with no member and
        generation -1 (a producer outside the group) is not checked against members."""
        def fail(code: int) -> None:
            callback({tp: code for tp in offsets})

        error = self.store.request_error(group_id, needs_id=False)
        if error is not None:
            fail(error.code)
            return
        group = self.store.get(group_id)
        if group is None:
            if generation_id >= 0:
                fail(IllegalGeneration.code)  # a member of a group that is not here
                return
            group = self.store.get_or_create(group_id, GroupMetadata.mark_first_commit_pending)
        with group.lock:
            simple = generation_id < 0 and not member_id and instance_id is None
            if group.is_(S.DEAD):
                fail(CoordinatorNotAvailable.code)
            elif transaction is not None and simple:
                self._store_offsets(group, offsets, callback, transaction)
            elif group.consumer is not None:
                code = self._consumer_member_error(group, member_id, generation_id, offsets)
                if code == StaleMemberEpoch.code and transaction is not None:
                    code = IllegalGeneration.code  # as Kafka answers a TxnOffsetCommit
                if code:
                    fail(code)
                else:
                    self._store_offsets(group, offsets, callback, transaction)
            elif generation_id < 0 and group.is_(S.EMPTY):
                self._store_offsets(group, offsets, callback, transaction)
            elif group.is_static_member_fenced(member_id, instance_id):
                fail(FencedInstanceId.code)
            elif group.is_(S.COMPLETING_REBALANCE) and not simple:
                fail(RebalanceInProgress.code)
            elif not group.has(member_id):
                fail(UnknownMemberId.code)
            elif generation_id != group.generation_id:
                fail(IllegalGeneration.code)
            else:
                self.member_alive(group, group.members[member_id])
                self._store_offsets(group, offsets, callback, transaction)
            self._drop_if_never_written(group)  # refused before any write

    def _drop_if_never_written(self, group: GroupMetadata) -> None:
        """Under the group's lock: a group that only commits created, none of them written
        and none under way, never existed (as Kafka reverts a failed write)."""
        if group.first_commit_pending and group.commits_in_flight == 0 and not group.offsets \
                and not group.pending_txn_offsets and not group.is_(S.DEAD):
            group.transition_to(S.DEAD, self.store.clock.wall_ms())
            self.store.remove(group)

    def _store_offsets(self, group: GroupMetadata, offsets: dict[tuple[str, int], CommittedOffset],
                       callback: Callable[[dict[tuple[str, int], int]], None],
                       transaction: tuple[int, int] | None = None) -> None:
        limit = self.config.offset_metadata_max_bytes
        codes = {tp: OffsetMetadataTooLarge.code for tp, c in offsets.items()
                 if len(c.metadata.encode()) > limit}
        valid = {tp: c for tp, c in offsets.items() if tp not in codes}
        if not valid:
            callback(codes)
            return

        def stored(error: KafkaError | None) -> None:
            with group.lock:
                group.commits_in_flight -= 1
                if error is None:
                    group.first_commit_pending = False
                    if transaction is None:
                        group.offsets.update(valid)
                    else:
                        group.pending_txn_offsets.setdefault(transaction[0], {}).update(valid)
                    if group.is_(S.DEAD):  # deleted meanwhile: the commit revives nothing
                        error = CoordinatorNotAvailable("the group was unloaded")
                else:
                    self._drop_if_never_written(group)
                codes.update({tp: code_of(error) for tp in valid})
                callback(codes)

        group.commits_in_flight += 1  # under the group's lock, held by the caller
        self.store.append(group.group_id, self.store.offset_records(group.group_id, valid), stored,
                          transaction)

    def on_transaction_completed(self, producer_id: int, commit: bool, partition: int) -> None:
        """A marker for ``producer_id`` was written to ``__consumer_offsets`` partition
        ``partition``: its transactional offsets there take effect (commit) or vanish."""
        for group in self.store.groups():
            if self.store.partition_of(group.group_id) != partition:
                continue
            with group.lock:
                pending = group.pending_txn_offsets.pop(producer_id, None)
                if pending and commit:
                    group.offsets.update(pending)

    def _consumer_member_error(self, group: GroupMetadata, member_id: str | None,
                               member_epoch: int,
                               committed: Iterable[tuple[str, int]] | None = None) -> int:
        """A consumer-protocol group's check of an offset commit or fetch; one with no member
        is allowed while the group is empty. A fetch must carry the member's current epoch;
        a commit of ``committed`` may carry an older one for partitions the member has held
        since (KIP-1251, :meth:`~.consumer_group.ConsumerMember.may_commit`)."""
        cg = group.consumer
        assert cg is not None
        if member_epoch < 0 and not member_id and not cg.members:
            return 0
        member = cg.members.get(member_id or "")
        if member is None:
            return UnknownMemberId.code
        if committed is None:
            ok = member_epoch == member.member_epoch
        else:
            ok = member.may_commit(member_epoch, committed)
        return 0 if ok else StaleMemberEpoch.code

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None,
                      member_id: str | None = None, member_epoch: int = -1
                      ) -> tuple[int, dict[tuple[str, int], CommittedOffset]]:
        """(error, offsets): every committed offset of the group if ``partitions`` is None.
        A member id (OffsetFetch v9) is checked against a consumer-protocol group."""
        error = self.store.request_error(group_id, needs_id=False)
        if error is not None:
            return error.code, {}
        group = self.store.get(group_id)
        if group is None:
            return 0, {}
        with group.lock:
            if member_id and group.consumer is not None:
                code = self._consumer_member_error(group, member_id, member_epoch)
                if code:
                    return code, {}
            if partitions is None:
                return 0, dict(group.offsets)
            return 0, {tp: group.offsets[tp] for tp in partitions if tp in group.offsets}

    def unstable_partitions(self, group_id: str) -> set[tuple[str, int]]:
        """Partitions with offsets committed inside a transaction not yet decided: an
        OffsetFetch that requires stable offsets is told UNSTABLE_OFFSET_COMMIT for them."""
        group = self.store.get(group_id)
        if group is None:
            return set()
        with group.lock:
            return {tp for pending in group.pending_txn_offsets.values() for tp in pending}

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]],
                       callback: Callable[[int, dict[tuple[str, int], int]], None]) -> None:
        error = self.store.request_error(group_id)
        if error is not None:
            callback(error.code, {})
            return
        group = self.store.get(group_id)
        if group is None:
            callback(GroupIdNotFound.code, {})
            return
        with group.lock:
            if group.is_(S.DEAD):
                callback(GroupIdNotFound.code, {})
                return
            codes: dict[tuple[str, int], int] = {}
            if group.has_consumer_members:
                topics = group.consumer.subscribed_topics() if group.consumer else set()
                codes = {tp: GroupSubscribedToTopic.code for tp in partitions if tp[0] in topics}
            elif not group.is_(S.EMPTY):
                if group.protocol_type != "consumer":
                    callback(NonEmptyGroup.code, {})
                    return
                topics = subscribed_topics(group)
                codes = {tp: GroupSubscribedToTopic.code for tp in partitions if tp[0] in topics}
            gone = [tp for tp in partitions if tp not in codes]

            def stored(error: KafkaError | None) -> None:
                with group.lock:
                    if error is None:
                        for tp in gone:
                            group.offsets.pop(tp, None)
                    codes.update({tp: code_of(error) for tp in gone})
                    callback(0, codes)

            if gone:
                self.store.append(group_id, self.store.tombstones(group, gone), stored)
            else:
                callback(0, codes)
