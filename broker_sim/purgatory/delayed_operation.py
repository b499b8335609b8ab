"""An operation that waits in a purgatory until its condition holds or its timeout expires."""

from __future__ import annotations

import threading
from abc import abstractmethod
from typing import Protocol

from ..timer.timer_task import TimerTask


class OperationLock(Protocol):
    """What an operation needs from its lock (``threading.RLock`` by default)."""

    def acquire(self, blocking: bool = ..., timeout: float = ...) -> bool: ...

    def release(self) -> None: ...


# Emulated atomics. Kafka keeps ``completed`` and ``tryCompletePending`` in AtomicBooleans;
# Python has no compare-and-set, so the few read-modify-write steps on these flags run under
# one of a fixed pool of small locks chosen by the operation's identity. A stripe lock is
# held only for the flag update itself, never while user code runs, so sharing a stripe
# between unrelated operations costs at most a short wait and can never deadlock.
_STRIPES = tuple(threading.Lock() for _ in range(64))


def _stripe(obj: object) -> threading.Lock:
    return _STRIPES[(id(obj) >> 4) & 63]


class DelayedOperation(TimerTask):
    """A request that completes when a condition holds, or when ``delay_ms`` elapses.

    Subclasses implement :meth:`try_complete` (check the condition; if it holds, call
    :meth:`force_complete` and return its result), :meth:`on_complete` (the completion
    logic, e.g. send the response; called exactly once) and :meth:`on_expiration` (extra
    work when the timeout fired, called after ``on_complete``).

    Completion happens exactly once. :meth:`force_complete` flips the ``completed`` flag
    atomically; only the caller that flipped it cancels the timer entry and calls
    :meth:`on_complete`, whether it got there through ``try_complete`` on some thread or
    through the timer's expiry (:meth:`run`).

    The story about the lock. ``try_complete`` reads state that other threads change (the
    log end offset, the replicas' fetch positions...), so it runs under the operation's
    ``lock`` (an ``RLock`` unless one is given, e.g. a group's lock shared by its
    operations): two threads never check the same operation at once. But a thread that
    *blocks* on that lock while another checks would waste a request-handler thread and
    can deadlock, because ``check_and_complete`` is often called while the caller holds
    other locks. So :meth:`maybe_try_complete` only *tries* the lock. If it is taken, the
    caller sets ``try_again`` instead of waiting, and returns. The holder clears the flag
    before each ``try_complete`` and, having finished, looks at it again (both before
    releasing the lock and after, since the flag may be set just as it releases): if it
    was set meanwhile, the condition may have changed under it, so it runs
    ``try_complete`` once more. A thread that finds the lock taken and the flag *not yet*
    set sets it and retries itself, because the holder may already be past its last look;
    a thread that finds the flag already set can leave, because someone is bound to see
    it. So a wake-up is never lost, and no thread ever waits for another's
    ``try_complete``. :meth:`safe_try_complete` is the blocking variant, for a first check
    by the only thread that knows the operation.

    Threading contract: every public method may be called from any thread. ``try_complete``
    is only ever called with ``lock`` held (by the two methods above); ``on_complete`` runs
    on the thread that won ``force_complete``, possibly under ``lock``, possibly on the
    timer's executor; ``on_expiration`` runs on the executor.
    """

    __slots__ = ("_lock", "_completed", "_try_again")

    def __init__(self, delay_ms: int, lock: OperationLock | None = None) -> None:
        super().__init__(delay_ms)
        self._lock: OperationLock = lock if lock is not None else threading.RLock()
        self._completed = False
        self._try_again = False

    @property
    def lock(self) -> OperationLock:
        return self._lock

    @property
    def is_completed(self) -> bool:
        return self._completed

    def force_complete(self) -> bool:
        """Complete now unless already completed. True only for the one caller that did.

        The winner cancels the timeout (an O(1) unlink from the timer) and calls
        :meth:`on_complete`.
        """
        with _stripe(self):
            if self._completed:
                return False
            self._completed = True
        self.cancel()
        self.on_complete()
        return True

    @abstractmethod
    def try_complete(self) -> bool:
        """If the condition holds, ``return self.force_complete()``; else return False.

        Always called with :attr:`lock` held.
        """

    @abstractmethod
    def on_complete(self) -> None:
        """The completion logic. Runs exactly once, on the thread that completed."""

    def on_expiration(self) -> None:  # optional hook
        """Called after :meth:`on_complete` when the completion was due to the timeout."""

    def maybe_try_complete(self) -> bool:
        """Try to complete without ever blocking on :attr:`lock` (see the class docstring).

        True if this call completed the operation.
        """
        lock = self._lock
        done = False
        while True:
            if lock.acquire(False):
                try:
                    while True:
                        self._try_again = False
                        done = self.try_complete()
                        # Re-check before releasing: a caller that found the lock taken
                        # asked for another look while try_complete was running.
                        if done or self._completed or not self._try_again:
                            break
                finally:
                    lock.release()
                # ...and after: the flag may have been set just before the release.
                retry = self._try_again
            else:
                with _stripe(self):  # getAndSet(True)
                    already_set = self._try_again
                    self._try_again = True
                # If it was already set, the holder is bound to see it; if we set it, the
                # holder may be past its last look, so we must retry ourselves.
                retry = not already_set
            if self._completed or not retry:
                return done

    def safe_try_complete(self) -> bool:
        """Check the condition under :attr:`lock`, waiting for the lock if need be."""
        lock = self._lock
        lock.acquire()
        try:
            return self.try_complete()
        finally:
            lock.release()

    def run(self) -> None:
        """Timer expiry: complete (if nobody has) and report the expiration."""
        if self.force_complete():
            self.on_expiration()
