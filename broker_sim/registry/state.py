"""The registry's state, rebuilt by applying the ``_schemas`` records in log order.

:class:`RegistryState` is a deterministic state machine: every broker that applies the
same records in the same order holds the same subjects, versions, ids, configs and modes.
That is what keeps ids unique across brokers without electing a writer: a write is a
*command* record (``register``, ``delete_subject``, ``delete_version``; ``config`` and
``mode`` values), and the id or version a ``register`` gets is decided when the record is
applied, from the state the records before it built -- not by the broker that wrote it.
Two brokers registering different schemas at once write two records; whichever the log
holds first gets id N, the other N+1, on every broker.

Record layout (JSON key, JSON value):

- ``{"keytype": "COMMAND", "request": UUID}`` -> ``{"op": "register", "subject", "schema",
  "schemaType", "references", "id"?, "version"?, "expect"?}`` |
  ``{"op": "delete_subject", "subject", "permanent"}`` |
  ``{"op": "delete_version", "subject", "version", "permanent"}``. Command keys are unique,
  so compaction keeps every command: replaying them from the start rebuilds the ids.
- ``{"keytype": "CONFIG", "subject": S | null}`` -> ``{"compatibilityLevel": L}`` or a
  tombstone (back to the default / the global level); ``{"keytype": "MODE", ...}`` ->
  ``{"mode": M}`` or a tombstone. Keyed by subject, so compaction keeps the last one; no
  command's outcome depends on them when applied (the writer checks them beforehand).

``expect`` (the subject's live versions when the writer checked compatibility) makes the
check hold under concurrent writers: if the subject changed before the record applied,
the outcome is :data:`CONFLICT` and the writer checks again and writes a new record.

Outcomes of the last :data:`OUTCOMES_KEPT` records are kept by offset for the writer that
waits for its own (:meth:`RegistryState.outcome`): a value, a
:class:`~.errors.RegistryError`, or :data:`CONFLICT`.

A command record written twice (a produce retried after its answer was lost) is applied
once: the second copy gets the first one's outcome (``_requests``, by the key's request id).

Invariants: an id maps to one schema forever (``identity_ids`` is never shrunk, so the same
schema text always gets the same id, also after a hard delete); a version number is never
reused while a soft-deleted version holds it; ``position`` is the next offset to apply.

Threading: :attr:`lock` guards everything; :meth:`apply` is called by the store's one
syncing thread at a time with the lock held by the store, queries take it themselves.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .compatibility import DEFAULT_LEVEL
from .errors import RegistryError
from .formats import DEFAULT_SCHEMA_TYPE, NamedReference
from .formats import parse as parse_schema

log = logging.getLogger(__name__)

#: The outcome of a command whose ``expect`` no longer held: check again and retry.
CONFLICT = "conflict"
OUTCOMES_KEPT = 10_000
MODES = ("READWRITE", "READONLY", "IMPORT")
DEFAULT_MODE = "READWRITE"


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class StoredSchema:
    """One id's schema: its text as stored and served, what it references, and the parsed
    schema (whose ``canonical`` text, with the type and references, is its identity)."""

    schema_id: int
    schema_type: str
    text: str
    references: tuple[Reference, ...]
    parsed: Any

    @property
    def identity(self) -> tuple[str, str, tuple[Reference, ...]]:
        return (self.schema_type, self.parsed.canonical, self.references)


@dataclass
class SubjectVersion:
    subject: str
    version: int
    schema_id: int
    deleted: bool = False


@dataclass
class RegistryState:
    """See the module docstring."""

    subjects: dict[str, dict[int, SubjectVersion]] = field(default_factory=dict)
    schemas: dict[int, StoredSchema] = field(default_factory=dict)
    identity_ids: dict[tuple[str, str, tuple[Reference, ...]], int] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0
    position: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    _outcomes: OrderedDict[int, Any] = field(default_factory=OrderedDict, repr=False)
    #: Every command's request id -> its outcome (a command is applied once).
    _requests: dict[str, Any] = field(default_factory=dict, repr=False)

    # ---- applying records -------------------------------------------------------------
    def apply(self, offset: int, key: bytes | None, value: bytes | None) -> None:
        """Apply the record at ``offset`` (the next one: ``offset >= position``)."""
        with self.lock:
            try:
                outcome = self._apply(key, value)
            except RegistryError as e:
                outcome = e
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                log.warning("_schemas record at offset %d skipped: %s", offset, e)
                outcome = errors.store_error(f"record at offset {offset} is malformed: {e}")
            self._outcomes[offset] = outcome
            while len(self._outcomes) > OUTCOMES_KEPT:
                self._outcomes.popitem(last=False)
            self.position = offset + 1

    def outcome(self, offset: int) -> Any:
        with self.lock:
            return self._outcomes.get(offset)

    def _apply(self, key: bytes | None, value: bytes | None) -> Any:
        k = json.loads(key or b"{}")
        kind = k.get("keytype")
        if kind == "CONFIG":
            subject = k.get("subject")
            if value is None:
                self.configs.pop(subject, None)
            else:
                self.configs[subject] = json.loads(value)["compatibilityLevel"]
            return None
        if kind == "MODE":
            subject = k.get("subject")
            if value is None:
                self.modes.pop(subject, None)
            else:
                self.modes[subject] = json.loads(value)["mode"]
            return None
        if kind != "COMMAND" or value is None:
            return None  # not ours (or a tombstone of nothing we write): ignored
        request = str(k["request"])
        if request in self._requests:  # the same produce written twice (a lost answer)
            return self._requests[request]
        cmd = json.loads(value)
        op = cmd["op"]
        try:
            if op == "register":
                outcome: Any = self._register(cmd)
            elif op == "delete_subject":
                outcome = self._delete_subject(cmd["subject"], bool(cmd["permanent"]))
            elif op == "delete_version":
                outcome = self._delete_version(cmd["subject"], int(cmd["version"]),
                                               bool(cmd["permanent"]))
            else:
                raise ValueError(f"unknown command {op!r}")
        except RegistryError as e:
            outcome = e
        self._requests[request] = outcome
        if isinstance(outcome, RegistryError):
            raise outcome
        return outcome

    def _register(self, cmd: dict[str, Any]) -> Any:
        subject = cmd["subject"]
        refs = tuple(Reference(r["name"], r["subject"], int(r["version"]))
                     for r in cmd.get("references") or ())
        schema_type = cmd.get("schemaType") or DEFAULT_SCHEMA_TYPE
        parsed = parse_schema(schema_type, cmd["schema"], self.resolve_references(refs))
        identity = (schema_type, parsed.canonical, refs)
        existing = self.live_version_of(subject, identity)
        given_id, given_version = cmd.get("id"), cmd.get("version")
        if existing is not None and given_id in (None, existing.schema_id):
            return {"id": existing.schema_id, "version": existing.version}
        expect = cmd.get("expect")
        if expect is not None and expect != self.live_versions(subject):
            return CONFLICT
        versions = self.subjects.get(subject, {})
        if given_id is not None:
            taken = self.schemas.get(int(given_id))
            if (taken is not None and taken.identity != identity) or \
                    self.identity_ids.get(identity, given_id) != given_id:
                raise errors.not_permitted(f"Overwrite new schema with id {given_id} is not "
                                           "permitted: the id holds another schema")
            schema_id = int(given_id)
        else:
            schema_id = self.identity_ids.get(identity, self.max_id + 1)
        if given_version is not None:
            version = int(given_version)
            if version in versions:
                raise errors.not_permitted(f"Version {version} of subject '{subject}' exists "
                                           "already")
        else:
            version = max(versions, default=0) + 1
        self.identity_ids.setdefault(identity, schema_id)
        self.schemas[schema_id] = StoredSchema(schema_id, schema_type, cmd["schema"], refs, parsed)
        self.max_id = max(self.max_id, schema_id)
        self.subjects.setdefault(subject, {})[version] = SubjectVersion(subject, version, schema_id)
        return {"id": schema_id, "version": version}

    def _delete_subject(self, subject: str, permanent: bool) -> list[int]:
        self.check_delete_subject(subject, permanent)
        versions = self.subjects[subject]
        if permanent:
            gone = sorted(versions)
            del self.subjects[subject]
            for v in gone:
                self._forget_unused(versions[v].schema_id)
            return gone
        live = sorted(v for v, sv in versions.items() if not sv.deleted)
        for v in live:
            versions[v].deleted = True
        return live

    def _delete_version(self, subject: str, version: int, permanent: bool) -> int:
        sv = self.check_delete_version(subject, version, permanent)
        if permanent:
            del self.subjects[subject][version]
            if not self.subjects[subject]:
                del self.subjects[subject]
            self._forget_unused(sv.schema_id)
        else:
            sv.deleted = True
        return version

    def _forget_unused(self, schema_id: int) -> None:
        """After a hard delete: the id is no longer served once no version holds it (its
        identity keeps the id, so registering the same schema again gives it back)."""
        if not any(sv.schema_id == schema_id for vs in self.subjects.values() for sv in vs.values()):
            self.schemas.pop(schema_id, None)

    # ---- checks shared by the writer (before writing) and apply -----------------------
    def check_delete_subject(self, subject: str, permanent: bool) -> None:
        versions = self.subjects.get(subject)
        if not versions:
            raise errors.subject_not_found(subject)
        live = [v for v, sv in versions.items() if not sv.deleted]
        if permanent and live:
            raise RegistryError(404, errors.SUBJECT_NOT_SOFT_DELETED,
                                f"Subject '{subject}' was not deleted first before being "
                                "permanently deleted")
        if not permanent and not live:
            raise RegistryError(404, errors.SUBJECT_SOFT_DELETED,
                                f"Subject '{subject}' was soft deleted. Set permanent=true to "
                                "delete permanently")
        for v in sorted(versions):
            self._check_not_referenced(subject, v, permanent)

    def check_delete_version(self, subject: str, version: int, permanent: bool) -> SubjectVersion:
        versions = self.subjects.get(subject)
        if not versions:
            raise errors.subject_not_found(subject)
        sv = versions.get(version)
        if sv is None:
            raise errors.version_not_found(subject, version)
        if permanent and not sv.deleted:
            raise RegistryError(404, errors.VERSION_NOT_SOFT_DELETED,
                                f"Subject '{subject}' Version {version} was not deleted first "
                                "before being permanently deleted")
        if not permanent and sv.deleted:
            raise RegistryError(404, errors.VERSION_SOFT_DELETED,
                                f"Subject '{subject}' Version {version} was soft deleted. Set "
                                "permanent=true to delete permanently")
        self._check_not_referenced(subject, version, permanent)
        return sv

    def _check_not_referenced(self, subject: str, version: int, permanent: bool) -> None:
        for vs in self.subjects.values():
            for sv in vs.values():
                if sv.deleted and not permanent:
                    continue
                schema = self.schemas.get(sv.schema_id)
                if schema and any(r.subject == subject and r.version == version
                                  for r in schema.references):
                    raise RegistryError(422, errors.REFERENCE_EXISTS,
                                        f"One or more references exist to the schema "
                                        f"{{subject={subject},version={version}}}: "
                                        f"subject '{sv.subject}' version {sv.version}")

    # ---- queries ----------------------------------------------------------------------
    def resolve_references(self, refs: tuple[Reference, ...]) -> list[NamedReference]:
        """(name, parsed schema) of each of ``refs`` (each with its own references resolved)."""
        out = []
        for ref in refs:
            sv = self.subjects.get(ref.subject, {}).get(ref.version)
            schema = self.schemas.get(sv.schema_id) if sv else None
            if schema is None:
                raise errors.invalid_schema(f"reference {ref.name!r} to subject "
                                            f"'{ref.subject}' version {ref.version} not found")
            out.append((ref.name, schema.parsed))
        return out

    def live_versions(self, subject: str) -> list[int]:
        with self.lock:
            return sorted(v for v, sv in self.subjects.get(subject, {}).items() if not sv.deleted)

    def live_version_of(self, subject: str, identity: tuple[Any, ...]) -> SubjectVersion | None:
        with self.lock:
            for v in sorted(self.subjects.get(subject, {})):
                sv = self.subjects[subject][v]
                schema = self.schemas.get(sv.schema_id)
                if not sv.deleted and schema is not None and schema.identity == identity:
                    return sv
            return None

    def compatibility_level(self, subject: str | None) -> str:
        with self.lock:
            if subject is not None and subject in self.configs:
                return self.configs[subject]
            return self.configs.get(None, DEFAULT_LEVEL)

    def mode(self, subject: str | None) -> str:
        with self.lock:
            if subject is not None and subject in self.modes:
                return self.modes[subject]
            return self.modes.get(None, DEFAULT_MODE)
