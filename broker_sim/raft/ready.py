"""What a Raft core asks its driver to do: the output of every step."""

from __future__ import annotations

from dataclasses import dataclass, field

from .messages import Entry, Message, Snapshot


@dataclass(frozen=True)
class HardState:
    """The quorum state that must survive a restart: the epoch and the vote cast in it."""

    epoch: int
    voted_for: int | None


@dataclass(frozen=True)
class Truncate:
    """Drop every stored entry at or above ``offset``."""

    offset: int


@dataclass(frozen=True)
class Append:
    entries: tuple[Entry, ...]


@dataclass(frozen=True)
class SaveSnapshot:
    """Store ``snapshot`` as the latest one and drop stored entries below its end offset;
    when ``keep_log`` is False (an installed snapshot the log does not match) drop them all."""

    snapshot: Snapshot
    keep_log: bool = True


PersistOp = HardState | Truncate | Append | SaveSnapshot


@dataclass
class Stored:
    """What a core restarts from: what its driver persisted from earlier Readies."""

    hard_state: HardState = field(default_factory=lambda: HardState(0, None))
    snapshot: Snapshot | None = None
    entries: tuple[Entry, ...] = ()


@dataclass
class Ready:
    """One batch of work for the driver, to be done in this order:

    1. ``persist``: apply the operations in order to durable storage and flush;
    2. ``install``: if set, replace the application's state with this snapshot's image;
    3. ``committed``: apply these entries to the application, in order;
    4. ``messages``: send them (any order; they may be lost).

    Persisting before sending is what makes a vote or an acknowledged fetch offset a promise.
    ``role_changes`` lists ``(role, epoch, leader_id)`` transitions, for logs and metrics.
    """

    persist: list[PersistOp] = field(default_factory=list)
    install: Snapshot | None = None
    committed: list[Entry] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    role_changes: list[tuple[str, int, int | None]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.persist or self.install or self.committed or self.messages
                    or self.role_changes)
