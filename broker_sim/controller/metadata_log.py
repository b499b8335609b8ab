"""The controller's image on the metadata quorum: each change a record, committed before it
is answered; every controller applies the same records in the same order.

:class:`MetadataLog` is the :class:`~broker_sim.quorum.RaftListener` of a controller. It
keeps the *committed* image: every record the quorum commits (:meth:`ClusterImage.apply`),
or a whole image from a snapshot (at start-up, or installed from the leader by a lagging
standby). Every ``snapshot_every`` records it hands the quorum the image's JSON as a
snapshot at that offset, and the quorum drops the log below it, so a restart replays at most
that many records. When this controller's quorum member becomes the leader of an epoch —
called only once the epoch's first entry has committed, so the committed image holds every
change made by earlier leaders — it calls ``on_active(epoch)`` on a thread of its own (the
quorum's thread must never wait for the controller's lock: the controller holds it while it
waits for a commit).

The active controller (:class:`~.controller.Controller`) changes its working image under its
lock, turns the change into a record (:meth:`ClusterImage.record`: the entities it touched)
and calls :meth:`commit` (append as the leader of its epoch, then wait for the commit); if
that fails (NotController: the leadership is gone; RequestTimedOut: no majority in time) it
puts back the last committed image, stops being active, and the caller answers with that
error; :meth:`resync_later` makes it active again from the committed image once the failed
record's fate is known (a timed-out record may still commit), if it still leads.

A single controller is a quorum of one voter, as in Kafka: it elects itself at once and
commits on its own fsync.

Threading: ``_lock`` guards the committed image and the record count; the listener methods
run on the quorum's thread, :meth:`committed_image` and :meth:`commit` on the controller's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..quorum import MetadataQuorum
from .image import ClusterImage

log = logging.getLogger(__name__)

#: Kafka's default time for a controller change to commit before it is answered with a timeout.
COMMIT_TIMEOUT_S = 5.0


class MetadataLog:
    def __init__(self, quorum: MetadataQuorum, on_active: Callable[[int], None],
                 snapshot_every: int = 1000) -> None:
        if snapshot_every < 1:
            raise ValueError(f"controller option snapshot_every={snapshot_every} is invalid: "
                             "a positive number of records is allowed")
        self.quorum = quorum
        self.snapshot_every = snapshot_every
        #: how long :meth:`commit` waits for a record to commit
        self.commit_timeout_s = COMMIT_TIMEOUT_S
        self._on_active = on_active
        self._lock = threading.Lock()
        self._image = ClusterImage()
        self._since_snapshot = 0
        #: the leader and epoch last heard (the leader None when unknown)
        self.leader: tuple[int | None, int] = (None, 0)
        quorum.register(self)

    # ---- the quorum's listener -----------------------------------------------------------
    def handle_commit(self, offset: int, record: bytes) -> None:
        with self._lock:
            self._image.apply(record)
            self._since_snapshot += 1
            data = None
            if self._since_snapshot >= self.snapshot_every:
                self._since_snapshot = 0
                data = self._image.to_json().encode()
        if data is not None:
            self.quorum.snapshot(offset + 1, data)
            log.info("controller %d: metadata snapshot at offset %d", self.quorum.node_id,
                     offset + 1)

    def handle_snapshot(self, offset: int, data: bytes) -> None:
        with self._lock:
            self._image = ClusterImage.from_json(data.decode()) if data else ClusterImage()
            self._since_snapshot = 0

    def handle_leader_change(self, leader_id: int | None, epoch: int) -> None:
        self.leader = (leader_id, epoch)
        if leader_id == self.quorum.node_id:
            threading.Thread(target=self._on_active, args=(epoch,), daemon=True,
                             name=f"controller-{leader_id}-activate").start()

    # ---- the controller's calls ----------------------------------------------------------
    def committed_image(self) -> ClusterImage:
        """A copy of the committed image (the caller may change it)."""
        with self._lock:
            return ClusterImage.from_json(self._image.to_json())

    def commit(self, record: bytes, epoch: int) -> None:
        """Append ``record`` as the leader of ``epoch`` and wait (``commit_timeout_s``) until
        it is committed and applied to the committed image. NotController or
        RequestTimedOut otherwise."""
        offset = self.quorum.append(record, epoch)
        self.quorum.await_committed(offset, self.commit_timeout_s)

    def resync_later(self, epoch: int, timeout_s: float = 60.0) -> None:
        """After a change that failed but may still commit (a timeout): once every entry
        this node holds is applied, or it no longer leads ``epoch``, call
        ``on_active(epoch)`` again so the controller starts over from the committed image
        (it does nothing if the leadership is gone)."""
        def run() -> None:
            deadline = time.monotonic() + timeout_s
            while self.quorum.is_active(epoch) and not self.quorum.caught_up() \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
            self._on_active(epoch)
        threading.Thread(target=run, daemon=True,
                         name=f"controller-{self.quorum.node_id}-resync").start()

    def close(self) -> None:
        self.quorum.close()
