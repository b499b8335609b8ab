"""Requests the controller parks until the image moves: metadata long polls and admin answers.

Brokers learn of metadata changes by long-polling the controller (BrokerMetadataFetch, as a
KRaft broker fetches the metadata log): a poll from a broker that already has the current
version waits as a :class:`DelayedMetadataFetch` until the next commit, then carries the new
image back at once. A change that clients must be able to rely on as soon as it is answered
(a new topic, more partitions, configs, credentials, ACLs) is answered through a
:class:`DelayedPropagation`: once every live broker acknowledged the image version holding
it (each acknowledges in its next poll, i.e. right after applying), or after a timeout, so
a broker that died but is not fenced yet cannot hold the answer back for long.

Both are delayed operations in one purgatory of the controller (:mod:`.apis`), watched on
:data:`IMAGE` and :data:`APPLIED` respectively; the controller's change listener checks
both keys after every commit and every acknowledgement. Their ``try_complete`` reads only
the controller's lock-free state (:attr:`Controller.published`,
:meth:`Controller.propagated`), which is what allows that listener to run under the
controller's lock. Parking holds no request handler thread: with a few handler threads, a
parked poll per broker and a CreateTopics waiting for acknowledgements, a blocking wait
would leave no thread to take the acknowledgements in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..purgatory import DelayedOperation
from .controller import Controller

log = logging.getLogger(__name__)

#: Watch key of the parked metadata polls: checked after every commit.
IMAGE = "image"
#: Watch key of the answers waiting for acknowledgements: checked after every commit
#: (the live set may have shrunk) and every acknowledgement.
APPLIED = "applied"


class DelayedMetadataFetch(DelayedOperation):
    """A broker's metadata poll, parked until the image version differs from ``known``
    (or ``max_wait_ms``); answers ``respond(version, image JSON or None)``."""

    def __init__(self, controller: Controller, known_version: int, max_wait_ms: int,
                 respond: Callable[[int, str | None], None]) -> None:
        super().__init__(max_wait_ms)
        self.controller = controller
        self.known_version = known_version
        self.respond = respond

    def try_complete(self) -> bool:
        if self.controller.version != self.known_version:
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        version, image = self.controller.snapshot(self.known_version)
        self.respond(version, image)


class DelayedPropagation(DelayedOperation):
    """An answer held until every live broker applied image ``version`` (or ``timeout_ms``)."""

    def __init__(self, controller: Controller, version: int, timeout_ms: int,
                 respond: Callable[[], None], what: str) -> None:
        super().__init__(timeout_ms)
        self.controller = controller
        self.version = version
        self.respond = respond
        self.what = what

    def try_complete(self) -> bool:
        if self.controller.propagated(self.version):
            return self.force_complete()
        return False

    def on_complete(self) -> None:
        self.respond()

    def on_expiration(self) -> None:
        log.warning("%s answered before every live broker applied image v%d (after %d ms)",
                    self.what, self.version, self.delay_ms)
