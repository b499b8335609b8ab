"""The registry's operations, one method per REST endpoint, over a :class:`~.store.SchemaStore`.

:class:`SchemaRegistry` validates what a request asks (bodies, version ids, modes,
compatibility), reads the state (after a sync: see :mod:`.store`) and turns every change
into one record. It knows nothing of HTTP: arguments are plain values (a request's JSON
body as a dict), results are what the endpoint answers as JSON, refusals are
:class:`~.errors.RegistryError`. Schemas are Avro, JSON Schema or Protobuf (:mod:`.formats`).

Limits: a schema string longer than :data:`MAX_SCHEMA_BYTES` (UTF-8) is refused with
42209 before it is parsed.

Threading: every method may be called from any thread at once. Reads sync and then read
the state under its lock; a change holds the store's ``write_lock`` from its check to its
record's outcome, so changes through one broker are serialised; a change that met a
concurrent one from another broker (outcome ``CONFLICT``) is checked and written again,
:data:`WRITE_ATTEMPTS` times at most.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from . import errors
from .compatibility import DEFAULT_LEVEL, incompatibilities, pair_incompatibilities, parse_level
from .errors import RegistryError
from .formats import DEFAULT_SCHEMA_TYPE, schema_format
from .state import CONFLICT, DEFAULT_MODE, MODES, Reference, StoredSchema, SubjectVersion
from .store import SchemaStore

MAX_SCHEMA_BYTES = 1024 * 1024
WRITE_ATTEMPTS = 10
_MAX_VERSION = 2**31 - 1


def parse_version(text: str | int) -> int | None:
    """A version id of a URL: a number in 1..2^31-1, or ``latest`` / -1 (None)."""
    if isinstance(text, str) and text.strip().lower() == "latest":
        return None
    try:
        v = int(text)
    except (TypeError, ValueError):
        raise errors.invalid_version(text) from None
    if v == -1:
        return None
    if not 1 <= v <= _MAX_VERSION:
        raise errors.invalid_version(text)
    return v


def _command_key() -> bytes:
    return json.dumps({"keytype": "COMMAND", "request": str(uuid.uuid4())}).encode()


def _keyed(keytype: str, subject: str | None) -> bytes:
    return json.dumps({"keytype": keytype, "subject": subject}).encode()


class SchemaRegistry:
    """See the module docstring."""

    def __init__(self, store: SchemaStore) -> None:
        self.store = store
        self.state = store.state

    # ---- subjects and versions --------------------------------------------------------
    def subjects(self, deleted: bool = False) -> list[str]:
        self.store.sync()
        with self.state.lock:
            return sorted(s for s, vs in self.state.subjects.items()
                          if deleted or any(not sv.deleted for sv in vs.values()))

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        self.store.sync()
        with self.state.lock:
            out = sorted(v for v, sv in self.state.subjects.get(subject, {}).items()
                         if deleted or not sv.deleted)
        if not out:
            raise errors.subject_not_found(subject)
        return out

    def _version(self, subject: str, version: str | int, deleted: bool = False) -> SubjectVersion:
        wanted = parse_version(version)
        with self.state.lock:
            versions = self.state.subjects.get(subject, {})
            visible = {v: sv for v, sv in versions.items() if deleted or not sv.deleted}
            if not visible:
                raise errors.subject_not_found(subject)
            if wanted is None:
                return visible[max(visible)]
            if wanted not in visible:
                raise errors.version_not_found(subject, wanted)
            return visible[wanted]

    @staticmethod
    def _text(schema: StoredSchema, fmt: str | None) -> str:
        """The schema as served: as stored, or with ``format=serialized`` a Protobuf schema's
        base64 ``FileDescriptorProto`` (other formats, and other types, as stored)."""
        if fmt == "serialized" and schema.schema_type == "PROTOBUF":
            return str(schema.parsed.serialized())
        return schema.text

    def _describe(self, sv: SubjectVersion, fmt: str | None = None) -> dict[str, Any]:
        schema = self.state.schemas[sv.schema_id]
        out: dict[str, Any] = {"subject": sv.subject, "version": sv.version, "id": sv.schema_id,
                               "schema": self._text(schema, fmt)}
        return {**out, **self._extras(schema)}

    @staticmethod
    def _extras(schema: StoredSchema) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if schema.schema_type != DEFAULT_SCHEMA_TYPE:
            out["schemaType"] = schema.schema_type
        if schema.references:
            out["references"] = [r.to_json() for r in schema.references]
        return out

    def get_version(self, subject: str, version: str | int, deleted: bool = False,
                    fmt: str | None = None) -> dict[str, Any]:
        self.store.sync()
        with self.state.lock:
            return self._describe(self._version(subject, version, deleted), fmt)

    def referenced_by(self, subject: str, version: str | int) -> list[int]:
        self.store.sync()
        with self.state.lock:
            sv = self._version(subject, version)
            return sorted({other.schema_id for vs in self.state.subjects.values()
                           for other in vs.values() if not other.deleted
                           for r in self.state.schemas[other.schema_id].references
                           if r.subject == subject and r.version == sv.version})

    # ---- schemas by id ----------------------------------------------------------------
    def _schema(self, schema_id: str | int) -> StoredSchema:
        try:
            key = int(schema_id)
        except (TypeError, ValueError):
            raise errors.schema_not_found(f"Schema {schema_id} not found") from None
        schema = self.state.schemas.get(key)
        if schema is None:
            raise errors.schema_not_found(f"Schema {schema_id} not found")
        return schema

    def schema_by_id(self, schema_id: str | int, fmt: str | None = None) -> dict[str, Any]:
        self.store.sync()
        with self.state.lock:
            schema = self._schema(schema_id)
            return {"schema": self._text(schema, fmt), **self._extras(schema)}

    def id_versions(self, schema_id: str | int, deleted: bool = False) -> list[dict[str, Any]]:
        self.store.sync()
        with self.state.lock:
            schema = self._schema(schema_id)
            return [{"subject": sv.subject, "version": sv.version}
                    for s in sorted(self.state.subjects) for v, sv in
                    sorted(self.state.subjects[s].items())
                    if sv.schema_id == schema.schema_id and (deleted or not sv.deleted)]

    def id_subjects(self, schema_id: str | int, deleted: bool = False) -> list[str]:
        return sorted({e["subject"] for e in self.id_versions(schema_id, deleted)})

    # ---- registering and looking up ---------------------------------------------------
    def _parse_body(self, body: Any) -> tuple[Any, str, tuple[Reference, ...]]:
        """The schema of a register/lookup/compatibility body, parsed with its references."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        text = body.get("schema")
        if not isinstance(text, str):
            raise RegistryError(422, errors.INVALID_SCHEMA,
                                "Invalid schema: the body has no string field 'schema'")
        if len(text.encode("utf-8", "surrogatepass")) > MAX_SCHEMA_BYTES:
            raise RegistryError(422, errors.SCHEMA_TOO_LARGE,
                                f"Schema too large: {len(text.encode('utf-8', 'surrogatepass'))} "
                                f"bytes, the limit is {MAX_SCHEMA_BYTES}")
        fmt = schema_format(body.get("schemaType"))
        raw_refs = body.get("references") or []
        try:
            refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                         for r in raw_refs)
        except (TypeError, KeyError, ValueError):
            raise errors.invalid_schema("references must be a list of {name, subject, "
                                        "version}") from None
        with self.state.lock:
            parsed = fmt.parse(text, self.state.resolve_references(refs))
        return parsed, fmt.schema_type, refs

    def _check_writable(self, subject: str | None) -> str:
        mode = self.state.mode(subject)
        if mode == "READONLY":
            where = f"Subject {subject}" if subject else "The registry"
            raise errors.not_permitted(f"{where} is in read-only mode")
        return mode

    def register(self, subject: str, body: Any) -> dict[str, Any]:
        given_id = body.get("id") if isinstance(body, dict) else None
        given_version = body.get("version") if isinstance(body, dict) else None
        for name, value in (("id", given_id), ("version", given_version)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 1):
                raise errors.bad_request(f"{name}={value!r} is not allowed: a positive integer")
        for _ in range(WRITE_ATTEMPTS):
            with self.store.write_lock:
                self.store.sync()
                mode = self._check_writable(subject)
                if (given_id is not None or given_version is not None) and mode != "IMPORT":
                    raise errors.not_permitted(f"Subject {subject} is not in import mode: an "
                                               "id or version may be given in IMPORT mode only")
                parsed, schema_type, refs = self._parse_body(body)
                identity = (schema_type, parsed.canonical, refs)
                existing = self.state.live_version_of(subject, identity)
                if existing is not None and given_id in (None, existing.schema_id):
                    return {"id": existing.schema_id}
                live = self.state.live_versions(subject)
                if mode != "IMPORT":
                    self._check_compatible(subject, parsed, live)
                cmd = {"op": "register", "subject": subject, "schema": parsed.text,
                       "schemaType": schema_type, "references": [r.to_json() for r in refs],
                       "expect": live}
                if given_id is not None:
                    cmd["id"] = given_id
                if given_version is not None:
                    cmd["version"] = given_version
                outcome = self.store.write(_command_key(), json.dumps(cmd).encode())
            if outcome != CONFLICT:
                return {"id": outcome["id"]}
        raise errors.store_error(f"subject '{subject}' kept changing under concurrent writes")

    def _check_compatible(self, subject: str, parsed: Any, live: list[int]) -> None:
        with self.state.lock:
            level = self.state.compatibility_level(subject)
            versions = [(v, self.state.schemas[self.state.subjects[subject][v].schema_id].parsed)
                        for v in live]
        problems = incompatibilities(level, parsed, versions)
        if problems:
            raise RegistryError(409, errors.INCOMPATIBLE_SCHEMA,
                                f"Schema being registered is incompatible with an earlier schema "
                                f"for subject \"{subject}\" ({level}), details: {problems}")

    def lookup(self, subject: str, body: Any, deleted: bool = False) -> dict[str, Any]:
        self.store.sync()
        parsed, schema_type, refs = self._parse_body(body)
        identity = (schema_type, parsed.canonical, refs)
        with self.state.lock:
            versions = self.state.subjects.get(subject, {})
            if not any(deleted or not sv.deleted for sv in versions.values()):
                raise errors.subject_not_found(subject)
            for v in sorted(versions, reverse=True):
                sv = versions[v]
                if (deleted or not sv.deleted) and self.state.schemas[sv.schema_id].identity == identity:
                    return self._describe(sv)
        raise errors.schema_not_found("Schema not found")

    def check_compatibility(self, subject: str, version: str | int | None, body: Any,
                            verbose: bool = False) -> dict[str, Any]:
        """``version`` None: against the versions the subject's level names."""
        self.store.sync()
        parsed, _type, _refs = self._parse_body(body)
        with self.state.lock:
            level = self.state.compatibility_level(subject)
            if version is None:
                versions = [(v, self.state.schemas[self.state.subjects[subject][v].schema_id].parsed)
                            for v in self.state.live_versions(subject)]
                problems = incompatibilities(level, parsed, versions)
            else:
                sv = self._version(subject, version)
                old = self.state.schemas[sv.schema_id].parsed
                problems = [] if level == "NONE" else pair_incompatibilities(
                    level, parsed, old, f"version {sv.version}")
        out: dict[str, Any] = {"is_compatible": not problems}
        if verbose:
            out["messages"] = problems
        return out

    # ---- deleting ---------------------------------------------------------------------
    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        with self.store.write_lock:
            self.store.sync()
            self._check_writable(subject)
            self.state.check_delete_subject(subject, permanent)
            cmd = {"op": "delete_subject", "subject": subject, "permanent": permanent}
            return list(self.store.write(_command_key(), json.dumps(cmd).encode()))

    def delete_version(self, subject: str, version: str | int, permanent: bool = False) -> int:
        with self.store.write_lock:
            self.store.sync()
            self._check_writable(subject)
            wanted = parse_version(version)
            if wanted is None:
                live = self.state.live_versions(subject)
                if not live:
                    raise errors.subject_not_found(subject)
                wanted = live[-1]
            self.state.check_delete_version(subject, wanted, permanent)
            cmd = {"op": "delete_version", "subject": subject, "version": wanted,
                   "permanent": permanent}
            return int(self.store.write(_command_key(), json.dumps(cmd).encode()))

    # ---- config and mode --------------------------------------------------------------
    def get_config(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        self.store.sync()
        with self.state.lock:
            if subject is not None and subject not in self.state.configs and not default_to_global:
                raise RegistryError(404, errors.SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
                                    f"Subject '{subject}' does not have subject-level "
                                    "compatibility configured")
            return {"compatibilityLevel": self.state.compatibility_level(subject)}

    def set_config(self, subject: str | None, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        level = parse_level(body.get("compatibility", body.get("compatibilityLevel")))
        with self.store.write_lock:
            self.store.write(_keyed("CONFIG", subject),
                             json.dumps({"compatibilityLevel": level}).encode())
        return {"compatibility": level}

    def delete_config(self, subject: str | None) -> dict[str, Any]:
        with self.store.write_lock:
            self.store.sync()
            if subject is not None and subject not in self.state.configs:
                if not self.state.subjects.get(subject):
                    raise errors.subject_not_found(subject)
                raise RegistryError(404, errors.SUBJECT_COMPATIBILITY_NOT_CONFIGURED,
                                    f"Subject '{subject}' does not have subject-level "
                                    "compatibility configured")
            previous = self.state.configs.get(subject, DEFAULT_LEVEL)
            self.store.write(_keyed("CONFIG", subject), None)
        return {"compatibilityLevel": previous}

    def get_mode(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        self.store.sync()
        with self.state.lock:
            if subject is not None and subject not in self.state.modes and not default_to_global:
                raise RegistryError(404, errors.SUBJECT_MODE_NOT_CONFIGURED,
                                    f"Subject '{subject}' does not have subject-level mode "
                                    "configured")
            return {"mode": self.state.mode(subject)}

    def set_mode(self, subject: str | None, body: Any, force: bool = False) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        mode = body.get("mode")
        mode = mode.upper() if isinstance(mode, str) else mode
        if mode not in MODES:
            raise RegistryError(422, errors.INVALID_MODE,
                                f"Invalid mode {body.get('mode')!r}. Valid values are "
                                + ", ".join(MODES))
        with self.store.write_lock:
            self.store.sync()
            if mode == "IMPORT" and not force:
                with self.state.lock:
                    found = [s for s, vs in self.state.subjects.items()
                             if (subject is None or s == subject) and vs]
                if found:
                    raise errors.not_permitted("Cannot import since found existing subjects "
                                               f"{sorted(found)[:5]}; set force=true to import "
                                               "into them")
            self.store.write(_keyed("MODE", subject), json.dumps({"mode": mode}).encode())
        return {"mode": mode}

    def delete_mode(self, subject: str) -> dict[str, Any]:
        with self.store.write_lock:
            self.store.sync()
            if subject not in self.state.modes:
                raise RegistryError(404, errors.SUBJECT_MODE_NOT_CONFIGURED,
                                    f"Subject '{subject}' does not have subject-level mode "
                                    "configured")
            previous = self.state.modes[subject]
            self.store.write(_keyed("MODE", subject), None)
        return {"mode": previous or DEFAULT_MODE}
