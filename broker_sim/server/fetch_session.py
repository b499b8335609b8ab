"""Incremental fetch sessions (KIP-227) for followers: a fetch names only what changed.

Without a session every Fetch names every partition the follower replicates from this
leader, and every response carries an entry for each of them, so each round trip costs in
proportion to the partitions, busy or idle. With a session the leader remembers the
follower's partitions and their fetch state; a request names only the partitions whose
fetch offset, log start offset, leader epoch or size limit changed (plus
``forgotten_topics_data`` for the ones dropped), and a response carries only the
partitions with records or with a high watermark, last stable offset, log start offset or
error the follower has not been sent yet.

The request's ``session_id`` / ``session_epoch`` say which kind it is:

* epoch -1: no session (a full fetch); a non-zero id closes that session first;
* epoch 0: a full fetch that asks for a new session (a non-zero id closes that one first);
  the response's ``session_id`` is the new session's, or 0 when the broker declines;
* epoch n > 0: the n-th incremental fetch of session ``session_id``:
  ``FETCH_SESSION_ID_NOT_FOUND`` if the broker does not hold it (evicted, or a restart),
  ``INVALID_FETCH_SESSION_EPOCH`` if n is not the epoch it expects; either way the follower
  starts over with a full fetch.

Sessions are offered to followers only (``replica_id >= 0``). Consumers get session id 0,
which KIP-227 lets a broker answer to any request for a session: they fetch in full, as
before. The leader still *reads* every partition of a session on every fetch (so each
follower's fetch position, and with it the ISR, is refreshed for idle partitions too);
what the session saves is encoding, decoding and handling the unchanged entries at both
ends.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..protocol.errors import FetchSessionIdNotFound, InvalidFetchSessionEpoch, KafkaError

if TYPE_CHECKING:  # the replica manager imports the fetcher, which imports this module
    from .replica_manager_types import FetchResult, FetchSpec

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
NO_SESSION = 0

Key = tuple[str, int]


@dataclass
class _Sent:
    """What a session last told its follower about one partition (-2: nothing yet)."""

    high_watermark: int = -2
    last_stable_offset: int = -2
    log_start_offset: int = -2
    error_code: int = -2


@dataclass
class FetchSession:
    """One follower's session: its partitions' fetch state, in the order they were added.

    Used by one request at a time: a follower waits for each response before it sends the
    next request of the session, so only :class:`FetchSessionCache` needs a lock.
    """

    session_id: int
    replica_id: int
    #: the epoch the next incremental request must carry
    epoch: int = 1
    specs: dict[Key, FetchSpec] = field(default_factory=dict)
    sent: dict[Key, _Sent] = field(default_factory=dict)

    def update(self, specs: Iterable[FetchSpec], forgotten: Iterable[Key]) -> None:
        for key in forgotten:
            self.specs.pop(key, None)
            self.sent.pop(key, None)
        for spec in specs:
            key = (spec.topic, spec.partition)
            self.specs[key] = spec
            self.sent.setdefault(key, _Sent())

    def changes(self, results: list[FetchResult]) -> tuple[list[FetchResult], list[FetchResult]]:
        """(results to send, results left out): a result is sent when it has records or
        something its follower has not been told yet; what is sent is remembered."""
        send, skip = [], []
        for r in results:
            key = (r.spec.topic, r.spec.partition)
            code = r.error.code if r.error is not None else 0
            before = self.sent.get(key)
            if before is None:  # not (or no longer) in the session: sent as asked
                send.append(r)
                continue
            if (len(r.records) or code != before.error_code
                    or r.high_watermark != before.high_watermark
                    or r.last_stable_offset != before.last_stable_offset
                    or r.log_start_offset != before.log_start_offset):
                before.high_watermark, before.last_stable_offset = r.high_watermark, r.last_stable_offset
                before.log_start_offset, before.error_code = r.log_start_offset, code
                send.append(r)
            else:
                skip.append(r)
        return send, skip


@dataclass
class FetchContext:
    """How to answer one Fetch: the partitions to read, and the session (None: a full
    response, sessionless) whose id the response carries."""

    specs: list[FetchSpec]
    session: FetchSession | None = None
    error: KafkaError | None = None

    @property
    def session_id(self) -> int:
        return self.session.session_id if self.session is not None else NO_SESSION

    def filter(self, results: list[FetchResult]) -> tuple[list[FetchResult], list[FetchResult]]:
        """(results to send, results left out of an incremental response)."""
        if self.session is None:
            return results, []
        return self.session.changes(results)


class FetchSessionCache:
    """The broker's fetch sessions, at most ``slots`` of them (Kafka's
    ``max.incremental.fetch.session.cache.slots``; 0 turns sessions off). A new session
    past the limit evicts the least recently used one; its follower's next incremental
    fetch gets ``FETCH_SESSION_ID_NOT_FOUND`` and starts over.

    Thread-safe: request handler threads call :meth:`context` concurrently; the lock
    guards the map only (see :class:`FetchSession` for why a session needs none).
    """

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._sessions: OrderedDict[int, FetchSession] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def context(self, replica_id: int, session_id: int, epoch: int, specs: list[FetchSpec],
                forgotten: list[Key]) -> FetchContext:
        if replica_id < 0 or self.slots <= 0:  # consumers, or sessions off: always full
            return FetchContext(specs)
        with self._lock:
            if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
                if session_id != NO_SESSION:
                    self._sessions.pop(session_id, None)
                if epoch == FINAL_EPOCH:
                    return FetchContext(specs)
                while len(self._sessions) >= self.slots:
                    self._sessions.popitem(last=False)
                session = FetchSession(self._new_id(), replica_id)
                session.update(specs, ())
                self._sessions[session.session_id] = session
                return FetchContext(specs, session)
            found = self._sessions.get(session_id)
            if found is None or found.replica_id != replica_id:
                return FetchContext([], error=FetchSessionIdNotFound(
                    f"no fetch session {session_id} for replica {replica_id}"))
            session = found
            if epoch != session.epoch:
                return FetchContext([], error=InvalidFetchSessionEpoch(
                    f"fetch session {session_id} expects epoch {session.epoch}, got {epoch}"))
            session.epoch = session.epoch + 1 if session.epoch < 0x7FFFFFFF else 1
            self._sessions.move_to_end(session_id)
        session.update(specs, forgotten)
        return FetchContext(list(session.specs.values()), session)

    def _new_id(self) -> int:
        while True:
            candidate = next(self._ids) & 0x7FFFFFFF
            if candidate != NO_SESSION and candidate not in self._sessions:
                return candidate


class FetchSessionBuilder:
    """The follower's side of a session (one per fetcher thread, used by that thread only):
    builds each request's partition list and tracks the session id and epoch.

    A full request (epoch 0) names every partition and asks for a session; once the leader
    answers with a session id, each request is incremental: it names the partitions whose
    fetch state differs from what the session last sent, and forgets the ones no longer
    fetched. Anything unexpected — a top-level error, a lost response, a reconnection —
    calls :meth:`reset`, and the next request is full again (closing the old session).
    """

    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = INITIAL_EPOCH
        self._sent: dict[Key, tuple[int, int, int, int]] = {}

    def request(self, wanted: dict[Key, tuple[int, int, int, int]]) -> tuple[int, int, list[Key], list[Key]]:
        """(session id, epoch, partitions to name, partitions to forget) for a request
        fetching ``wanted`` (key -> its fetch state: offset, log start, leader epoch,
        size limit, in the order the request carries them)."""
        if self.epoch == INITIAL_EPOCH:
            self._sent = dict(wanted)
            return self.session_id, INITIAL_EPOCH, list(wanted), []
        named = [k for k, state in wanted.items() if self._sent.get(k) != state]
        forgotten = [k for k in self._sent if k not in wanted]
        for k in forgotten:
            del self._sent[k]
        for k in named:
            self._sent[k] = wanted[k]
        return self.session_id, self.epoch, named, forgotten

    def response(self, error_code: int, session_id: int) -> None:
        if error_code:
            self.reset()
        elif self.epoch == INITIAL_EPOCH:
            self.session_id = session_id
            self.epoch = 1 if session_id != NO_SESSION else INITIAL_EPOCH
        else:
            self.epoch = self.epoch + 1 if self.epoch < 0x7FFFFFFF else 1

    def reset(self) -> None:
        """Start over with a full fetch (the leader closes the old session on it)."""
        self.epoch = INITIAL_EPOCH
        self._sent = {}
