"""SCRAM credential changes (KIP-554 semantics), applied to the cluster image's store.

Changes are judged per user: a user's deletions and upsertions apply together or not at
all. Errors, as Kafka gives them: an empty user name or an iteration count outside
4096..16384 is UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
the same (user, mechanism) twice in one request DUPLICATE_RESOURCE, deleting a credential
that does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import (
    DuplicateResource,
    KafkaError,
    ResourceNotFound,
    UnacceptableCredential,
    UnsupportedSaslMechanism,
)
from ..security.scram import MECHANISM_BY_ID, ScramCredential, check_iterations

#: user -> mechanism -> ScramCredential.to_json(), as kept in ClusterImage.scram
Store = dict[str, dict[str, dict[str, Any]]]


@dataclass(frozen=True)
class Upsertion:
    user: str
    mechanism_id: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class Deletion:
    user: str
    mechanism_id: int


def _mechanism(mechanism_id: int) -> str:
    name = MECHANISM_BY_ID.get(mechanism_id)
    if name is None:
        raise UnsupportedSaslMechanism(f"unknown SCRAM mechanism id {mechanism_id}: 1 is "
                                       "SCRAM-SHA-256, 2 is SCRAM-SHA-512")
    return name


def apply_changes(store: Store, deletions: Iterable[Deletion],
                  upsertions: Iterable[Upsertion]) -> dict[str, KafkaError | None]:
    """Apply what is valid to ``store`` in place; returns each user's outcome."""
    by_user: dict[str, list[Deletion | Upsertion]] = {}
    changes: list[Deletion | Upsertion] = [*deletions, *upsertions]
    for change in changes:
        by_user.setdefault(change.user, []).append(change)
    results: dict[str, KafkaError | None] = {}
    for user, changes in by_user.items():
        try:
            results[user] = None
            new = _changed(store.get(user, {}), user, changes)
        except KafkaError as e:
            results[user] = e
            continue
        if new:
            store[user] = new
        else:
            store.pop(user, None)
    return results


def _changed(current: dict[str, dict[str, Any]], user: str,
             changes: list[Deletion | Upsertion]) -> dict[str, dict[str, Any]]:
    if not user:
        raise UnacceptableCredential("the user name must not be empty")
    seen: set[str] = set()
    new = dict(current)
    for change in changes:
        mechanism = _mechanism(change.mechanism_id)
        if mechanism in seen:
            raise DuplicateResource(f"{user}: {mechanism} is changed twice in one request")
        seen.add(mechanism)
        if isinstance(change, Deletion):
            if mechanism not in new:
                raise ResourceNotFound(f"{user} has no {mechanism} credential to delete")
            del new[mechanism]
        else:
            check_iterations(change.iterations)
            if not change.salt or not change.salted_password:
                raise UnacceptableCredential(f"{user}: salt and salted password must not be empty")
            new[mechanism] = ScramCredential.from_salted_password(
                mechanism, bytes(change.salted_password), bytes(change.salt), change.iterations).to_json()
    return new


def credential_from_spec(spec: str) -> tuple[str, str, ScramCredential]:
    """``SCRAM-SHA-256=[name=alice,password=alice-secret]`` (optionally ``iterations=8192``
    and ``salt=<hex>``), the form ``kafka-storage format --add-scram`` takes, ->
    (user, mechanism, credential). Raises ValueError naming what is wrong.

    >>> user, mech, cred = credential_from_spec("SCRAM-SHA-512=[name=bob,password=pw,iterations=8192]")
    >>> user, mech, cred.iterations, cred.matches_password(mech, "pw")
    ('bob', 'SCRAM-SHA-512', 8192, True)
    """
    mechanism, sep, rest = spec.partition("=")
    mechanism = mechanism.strip().upper()
    if not sep or mechanism not in MECHANISM_BY_ID.values():
        raise ValueError(f"--add-scram {spec!r}: must start with SCRAM-SHA-256= or SCRAM-SHA-512=")
    rest = rest.strip()
    if not (rest.startswith("[") and rest.endswith("]")):
        raise ValueError(f"--add-scram {spec!r}: the attributes go in brackets: [name=...,password=...]")
    attrs = {}
    for item in filter(None, (p.strip() for p in rest[1:-1].split(","))):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in ("name", "password", "iterations", "salt"):
            raise ValueError(f"--add-scram {spec!r}: {item!r} is not one of name=, password=, "
                             "iterations=, salt=")
        attrs[key.strip()] = value.strip().strip('"')
    if not attrs.get("name") or "password" not in attrs:
        raise ValueError(f"--add-scram {spec!r}: name= and password= are required")
    iterations = int(attrs.get("iterations", "4096"))
    try:
        check_iterations(iterations)
    except KafkaError as e:
        raise ValueError(f"--add-scram {spec!r}: {e}") from None
    salt = bytes.fromhex(attrs["salt"]) if "salt" in attrs else None
    return attrs["name"], mechanism, ScramCredential.from_password(mechanism, attrs["password"],
                                                                    iterations, salt)
