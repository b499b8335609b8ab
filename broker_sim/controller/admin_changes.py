"""The controller's admin changes besides topics: configs, SCRAM credentials and ACLs.

:class:`AdminChanges` is a part of :class:`~.controller.Controller` (a mixin): each change is
validated and made under the controller's lock, committed as one record, and answered once
every live broker has applied it (or after a timeout), so a change is in effect everywhere
when the call returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..protocol.errors import InvalidRequest, KafkaError, UnknownTopicOrPartition
from ..security.acl import AclBinding, AclFilter
from ..security.scram import ScramCredential
from .configs import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    check_broker_resource,
    normalize_topic_configs,
    validate_broker_configs,
    validate_topic_configs,
)
from .image import ClusterImage
from .scram_credentials import Deletion, Upsertion, apply_changes

log = logging.getLogger("broker_sim.controller.controller")


class AdminChanges:
    """The controller's config, credential and ACL changes; the attributes below are the
    controller's."""

    _lock: threading.RLock
    image: ClusterImage

    def _commit(self) -> None:
        raise NotImplementedError

    def await_propagation(self, version: int, timeout_s: float) -> bool:
        raise NotImplementedError

    # ---- configs ---------------------------------------------------------------------
    def alter_configs(self, resource_type: int, resource_name: str,
                      change: Callable[[dict[str, str]], dict[str, str]],
                      validate_only: bool = False, propagation_timeout_s: float = 2.0) -> dict[str, str]:
        """Replace the dynamic configs of a topic or a broker by ``change(current)``.

        The whole new set is validated (InvalidConfig naming the option); a topic must exist
        (UnknownTopicOrPartition). Nothing is stored with ``validate_only`` or when nothing
        changed. Once stored, waits (at most ``propagation_timeout_s``, without the lock)
        until every live broker has applied the new image, so the change is in effect on
        every broker when this returns. Returns the new set.
        """
        with self._lock:
            if resource_type == RESOURCE_TOPIC:
                topic = self.image.topics.get(resource_name)
                if topic is None:
                    raise UnknownTopicOrPartition(f"topic {resource_name!r} does not exist")
                current = dict(topic.configs)
                new = change(dict(current))
                validate_topic_configs(new)
                new = normalize_topic_configs(new)
            elif resource_type == RESOURCE_BROKER:
                check_broker_resource(resource_name)
                current = dict(self.image.broker_configs.get(resource_name, {}))
                new = change(dict(current))
                validate_broker_configs(new)
            else:
                raise InvalidRequest(f"resource type {resource_type} has no configs pyq can change "
                                     f"(topic {RESOURCE_TOPIC}, broker {RESOURCE_BROKER})")
            if validate_only or new == current:
                return new
            if resource_type == RESOURCE_TOPIC:
                self.image.topics[resource_name].configs = new
            elif new:
                self.image.broker_configs[resource_name] = new
            else:
                self.image.broker_configs.pop(resource_name, None)
            self._commit()
            version = self.image.version
            log.info("%s %r configs: %s -> %s", "topic" if resource_type == RESOURCE_TOPIC else "broker",
                     resource_name, current, new)
        if propagation_timeout_s > 0 and not self.await_propagation(version, propagation_timeout_s):
            log.warning("config change (image v%d) not yet applied by every live broker after %.1f s",
                        version, propagation_timeout_s)
        return new

    # ---- SCRAM credentials -----------------------------------------------------------
    def alter_scram(self, deletions: list[Deletion], upsertions: list[Upsertion],
                    propagation_timeout_s: float = 5.0) -> dict[str, KafkaError | None]:
        """Apply credential changes (see :mod:`.scram_credentials`); each user's outcome.

        Returns once every live broker has the change (or after ``propagation_timeout_s``),
        so a user created here can log in on any broker as soon as the call returns."""
        with self._lock:
            results = apply_changes(self.image.scram, deletions, upsertions)
            if not any(e is None for e in results.values()):
                return results
            self._commit()
            version = self.image.version
            log.info("SCRAM credentials changed for %s",
                     sorted(u for u, e in results.items() if e is None))
        if propagation_timeout_s > 0 and not self.await_propagation(version, propagation_timeout_s):
            log.warning("SCRAM change (image v%d) not yet applied by every live broker after %.0f s",
                        version, propagation_timeout_s)
        return results

    def put_scram(self, user: str, mechanism: str, credential: ScramCredential) -> None:
        """Store a credential made at start-up (``--add-scram``)."""
        with self._lock:
            self.image.scram.setdefault(user, {})[mechanism] = credential.to_json()
            self._commit()
            log.info("SCRAM credential %s for %s stored", mechanism, user)

    # ---- ACLs ------------------------------------------------------------------------
    def create_acls(self, bindings: list[AclBinding]) -> None:
        """Store new bindings (one already stored is not stored twice)."""
        with self._lock:
            current = {AclBinding.from_json(a) for a in self.image.acls}
            new = [b for b in dict.fromkeys(bindings) if b not in current]
            if new:
                self.image.acls.extend(b.to_json() for b in new)
                self._commit()
                log.info("ACLs created: %s", new)

    def delete_acls(self, filters: list[AclFilter]) -> list[list[AclBinding]]:
        """Delete the bindings each filter matches; returns them, per filter."""
        with self._lock:
            stored = [AclBinding.from_json(a) for a in self.image.acls]
            matched = [[b for b in stored if f.matches(b)] for f in filters]
            gone = {b for group in matched for b in group}
            if gone:
                self.image.acls = [b.to_json() for b in stored if b not in gone]
                self._commit()
                log.info("ACLs deleted: %s", sorted(gone, key=str))
            return matched
