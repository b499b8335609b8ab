"""Where delayed operations wait: watcher lists per key, plus a timer for their timeouts."""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

from ..common.clock import SYSTEM_CLOCK, Clock
from ..timer.reaper import TimerReaper
from ..timer.system_timer import SystemTimer
from .delayed_operation import DelayedOperation
from .watchers import Watchers

log = logging.getLogger(__name__)

T = TypeVar("T", bound=DelayedOperation)

DEFAULT_SHARDS = 64
REAPER_POLL_MS = 200


class _WatcherShard(Generic[T]):
    """One shard of the key -> Watchers map, with the lock that guards it."""

    __slots__ = ("lock", "watchers")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.watchers: dict[Hashable, Watchers[T]] = {}


class DelayedOperationPurgatory(Generic[T]):
    """Holds operations until their condition holds (checked per key) or they time out.

    An operation is *watched* under one or more keys (e.g. a topic partition); whoever
    changes the state behind a key calls :meth:`check_and_complete`, which tries to
    complete the operations watching it. Each watched operation is also in the timer, so
    it completes with :meth:`~DelayedOperation.on_expiration` if nothing completes it in
    time. A completed operation's timer entry is unlinked at once (O(1)); it may linger in
    the watcher lists of its other keys until they are checked or purged: whenever the
    estimated number of such completed-but-watched operations exceeds ``purge_interval``,
    the reaper sweeps every watcher list.

    The reaper is the timer's :class:`~broker_sim.timer.TimerReaper` (``timer.advance_clock``
    with a 200 ms wait, then the purge check) in a loop; with ``reaper_enabled=False`` a
    test drives the same work through ``reaper.run_once(timeout_ms)``.

    Threading contract:

    * every public method may be called from any thread;
    * the key map is split into ``shards`` shards, each guarded by its own lock, held only
      to look up, create or drop a key's :class:`Watchers` (a watch is added under the
      shard lock so that dropping an empty key can never lose it);
    * each :class:`Watchers` has its own lock, held only to edit its dict;
    * no purgatory lock is ever held while an operation's code runs, and operations are
      checked with ``maybe_try_complete``, which never blocks on the operation's lock;
      so :meth:`check_and_complete` never waits for another thread's ``try_complete``.
      As Kafka advises, call it without holding locks that ``try_complete`` may need;
    * ``_estimated_total`` (operations ever watched, reset to the pending count on each
      purge) is guarded by ``_estimate_lock``; it is an estimate, used only to trigger purges.
    """

    def __init__(
        self,
        name: str,
        timer: SystemTimer | None = None,
        purge_interval: int = 1000,
        reaper_enabled: bool = True,
        clock: Clock | None = None,
        shards: int = DEFAULT_SHARDS,
    ) -> None:
        self.name = name
        if timer is None:
            timer = SystemTimer(f"executor-{name}", clock=clock or SYSTEM_CLOCK)
        self._timer = timer
        self.purge_interval = purge_interval
        self._shards: tuple[_WatcherShard[T], ...] = tuple(
            _WatcherShard() for _ in range(shards)
        )
        self._estimated_total = 0
        self._estimate_lock = threading.Lock()
        self.reaper = TimerReaper(timer, f"ExpirationReaper-{name}", REAPER_POLL_MS,
                                  after_round=self._purge_if_needed)
        if reaper_enabled:
            self.reaper.start()

    @property
    def timer(self) -> SystemTimer:
        return self._timer

    def _shard(self, key: Hashable) -> _WatcherShard[T]:
        return self._shards[hash(key) % len(self._shards)]

    def try_complete_else_watch(self, operation: T, keys: Iterable[Hashable]) -> bool:
        """Complete ``operation`` now if possible; otherwise watch it and start its timer.

        Returns True if the operation was completed by this call. The order matters: once
        the operation is watched on every key, any later state change finds it, so the
        second check (after watching) closes the window in which a change could have come
        between the first check and the watch. Only then is the timeout started.
        """
        keys = list(keys)
        if not keys:
            raise ValueError("an operation must be watched on at least one key")
        if operation.safe_try_complete():
            return True
        watch_created = False
        for key in keys:
            if operation.is_completed:  # completed by a check on an earlier key
                return False
            self._watch_for_operation(key, operation)
            if not watch_created:
                watch_created = True
                with self._estimate_lock:
                    self._estimated_total += 1
        if operation.maybe_try_complete():
            return True
        if not operation.is_completed:
            self._timer.add(operation)
            if operation.is_completed:  # completed between the check and the add
                operation.cancel()
        return False

    def check_and_complete(self, key: Hashable) -> int:
        """Try to complete the operations watching ``key``; returns how many completed."""
        shard = self._shard(key)
        with shard.lock:
            watchers = shard.watchers.get(key)
        if watchers is None:
            return 0
        completed = watchers.try_complete_watched()
        if watchers.is_empty():
            self._remove_key_if_empty(key, watchers)
        return completed

    def watched(self) -> int:
        """Operations in watcher lists (an operation watched on k keys counts k times;
        completed operations count until checked or purged)."""
        total = 0
        for shard in self._shards:
            with shard.lock:
                watchers = list(shard.watchers.values())
            total += sum(w.count_watched() for w in watchers)
        return total

    def num_delayed(self) -> int:
        """Operations waiting for their timeout: the timer's exact size."""
        return self._timer.size

    def cancel_for_key(self, key: Hashable) -> list[T]:
        """Stop watching ``key``; cancel the timeouts of its operations; return them.

        The operations are not completed (Kafka uses this when a partition moves away).
        """
        shard = self._shard(key)
        with shard.lock:
            watchers = shard.watchers.pop(key, None)
        return watchers.cancel() if watchers is not None else []

    def _purge_if_needed(self) -> None:
        """After each reaper round: purge once enough completed operations piled up."""
        pending = self._timer.size
        if self._estimated_total - pending > self.purge_interval:
            self.purge(pending)

    def purge(self, pending: int | None = None) -> int:
        """Drop completed operations from every watcher list; returns how many."""
        with self._estimate_lock:
            # Operations completing during the sweep keep the estimate a little high.
            self._estimated_total = self._timer.size if pending is None else pending
        purged = 0
        for shard in self._shards:
            with shard.lock:
                items = list(shard.watchers.items())
            for key, watchers in items:
                purged += watchers.purge_completed()
                if watchers.is_empty():
                    self._remove_key_if_empty(key, watchers)
        log.debug("purgatory %s purged %d completed operations", self.name, purged)
        return purged

    def _watch_for_operation(self, key: Hashable, operation: T) -> None:
        shard = self._shard(key)
        with shard.lock:
            watchers = shard.watchers.get(key)
            if watchers is None:
                watchers = shard.watchers[key] = Watchers(key)
            watchers.watch(operation)

    def _remove_key_if_empty(self, key: Hashable, watchers: Watchers[T]) -> None:
        shard = self._shard(key)
        with shard.lock:
            # Another thread may have replaced the key's list or watched something since.
            if shard.watchers.get(key) is watchers and watchers.is_empty():
                del shard.watchers[key]

    def keys(self) -> list[Hashable]:
        """Keys that currently have a watcher list."""
        out: list[Hashable] = []
        for shard in self._shards:
            with shard.lock:
                out.extend(shard.watchers)
        return out

    def shutdown(self) -> None:
        """Stop the reaper and the timer; pending operations neither complete nor expire."""
        self.reaper.request_stop()
        self._timer.shutdown()
        self.reaper.stop()
