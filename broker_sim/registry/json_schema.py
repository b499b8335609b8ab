"""JSON Schemas as the registry keeps them (``schemaType: JSON``), checked by ``jsonschema``.

:meth:`JsonSchema.parse` reads the text as JSON (an object or a boolean), picks the draft
its ``$schema`` names (4, 6, 7, 2019-09, 2020-12; draft 7 when absent, as Confluent's
registry) and validates it against that draft's meta-schema with the ``jsonschema``
library; every ``$ref`` must resolve (``referencing``): within the schema, or to a
reference of the request by its *name* (``{"$ref": "address.json"}`` with a reference
named ``address.json``), or inside such a reference. A failure is 42201 with the library's
reason. Under a root ``$id`` a reference's name is also taken relative to it
(``https://example.com/address.json`` for ``address.json`` under
``https://example.com/user.json``).

:attr:`JsonSchema.canonical` (and :attr:`JsonSchema.text`, what is stored and served) is
the JSON printed compact, **keys in the order registered**, as Confluent's registry keeps
it (its ``canonicalString`` is Jackson's compact print of the parsed tree): whitespace
does not make a new schema, key order does (the same keys in another order register a new
version and do not match a lookup, as on Confluent). The order matters to readers: a
struct's fields follow its ``properties`` in this order. With ``normalize=true`` the
request's schema is first :func:`normalized` (keys sorted at every level, Confluent's
normal form), so key order no longer tells schemas apart.

Compatibility (:func:`reader_incompatibilities`, Confluent's JSON Schema rules, named as
its registry names them): data valid under the writer must be valid under the reader.
Checked: ``type`` changed or narrowed (``integer`` reads as ``number``), ``enum``
narrowed, ``minimum``/``maximum``/``exclusive*``, ``minLength``/``maxLength``,
``minItems``/``maxItems``, ``minProperties``/``maxProperties`` added or tightened,
``pattern`` added or changed, ``multipleOf`` added or changed, ``uniqueItems`` added,
``required`` added (a property with a ``default`` excepted), the content model of objects
(a property added to an open model, or not covered by a partially open one; removed from
a closed model, or not covered by a partially open one; ``additionalProperties``
narrowed), ``items`` (a single schema) recursively, ``oneOf``/``anyOf`` narrowed,
``allOf`` extended, ``allOf`` (of more than one part) on one side against a schema
without ``oneOf``/``anyOf``/``allOf`` on the other is ``TYPE_CHANGED`` whatever the parts
(Confluent's verdict: a product type and a plain schema are different kinds; a singleton
``allOf`` is compared as its part), ``$ref`` followed (each pair once), ``dependencies`` /
``dependentRequired`` / ``dependentSchemas`` added or extended, tuples (``items`` as a list
with ``additionalItems``, or ``prefixItems`` with ``items``) as content models of their
positions (an item added to an open tuple, removed from a closed one, not covered by a
partially open one; additional items removed or narrowed). Not checked yet: ``not``,
``patternProperties``, ``propertyNames``, ``const``, ``if``/``then``/``else``,
``contains``.

Instances are immutable after parse and safe to share between threads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urljoin

import jsonschema
import jsonschema.exceptions
import referencing
import referencing._core
import referencing.exceptions
import referencing.jsonschema

from .errors import invalid_schema

SCHEMA_TYPE = "JSON"
_DEFAULT_VALIDATOR = jsonschema.Draft7Validator
#: Keywords whose values are data, not schemas: a "$ref" key inside them is no reference.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            elif key not in _DATA_KEYWORDS:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


class JsonSchema:
    """One parsed JSON Schema (see the module docstring)."""

    schema_type = SCHEMA_TYPE

    def __init__(self, data: Any, canonical: str, resolver: referencing._core.Resolver[Any],
                 registry: referencing.Registry[Any]) -> None:
        self.data = data
        self.canonical = canonical
        self.resolver = resolver
        self.registry = registry

    @property
    def text(self) -> str:
        return self.canonical

    @classmethod
    def parse(cls, text: str, references: Sequence[tuple[str, JsonSchema]] = ()) -> JsonSchema:
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as e:
            raise invalid_schema(f"not JSON: {e}") from None
        if not isinstance(data, (dict, bool)):
            raise invalid_schema("a JSON Schema is an object or a boolean, not "
                                 f"{type(data).__name__}")
        validator = jsonschema.validators.validator_for(data, default=_DEFAULT_VALIDATOR)
        if isinstance(data, dict) and "$schema" in data and \
                validator is _DEFAULT_VALIDATOR and \
                data["$schema"].rstrip("#") not in _known_meta_schemas():
            raise invalid_schema(f"unknown $schema {data['$schema']!r}: this registry "
                                 "takes drafts 4, 6, 7, 2019-09 and 2020-12")
        try:
            validator.check_schema(data)
        except jsonschema.exceptions.SchemaError as e:
            where = "/".join(str(p) for p in e.absolute_path)
            raise invalid_schema(f"not valid against its meta-schema at /{where}: "
                                 f"{e.message}") from None
        spec = referencing.jsonschema.specification_with(
            validator.META_SCHEMA.get("$schema", ""), default=referencing.jsonschema.DRAFT7)
        registry: referencing.Registry[Any] = referencing.Registry()
        for name, ref in references:
            registry = registry.with_resources(
                [(name, res) for res in [ref.registry[""]]]).with_resources(
                [(uri, ref.registry[uri]) for uri in ref.registry if uri])
        root = referencing.Resource.from_contents(data, default_specification=spec)
        base = root.id() or ""
        registry = registry.with_resources([("", root)] + ([(base, root)] if base else []))
        if base:  # "$ref": "address.json" under "$id": "https://x/user.json" names the same
            registry = registry.with_resources(
                [(urljoin(base, name), ref.registry[""]) for name, ref in references])
        registry = registry.crawl()
        resolver = registry.resolver(base_uri=base)
        for pointer in _refs(data):
            try:
                resolver.lookup(pointer)
            except referencing.exceptions.Unresolvable as e:
                raise invalid_schema(f"$ref {pointer!r} does not resolve (a reference's name, or a "
                                     f"pointer within the schema): {type(e).__name__}") from None
        canonical = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        return cls(data, canonical, resolver, registry)

    def __repr__(self) -> str:
        return f"JsonSchema({self.canonical[:80]})"


def normalized(text: str) -> str:
    """The schema ``normalize=true`` asks for (Confluent's ``JsonSchema.normalize``): its
    keys sorted at every level (so the same schema with its keys in another order is one
    schema). Text that is not JSON is returned as it is, for :meth:`JsonSchema.parse` to
    refuse."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)
    except (ValueError, TypeError):
        return text


def _known_meta_schemas() -> set[str]:
    return {v.META_SCHEMA["$schema"].rstrip("#") for v in (
        jsonschema.Draft4Validator, jsonschema.Draft6Validator, jsonschema.Draft7Validator,
        jsonschema.Draft201909Validator, jsonschema.Draft202012Validator)}


# ---- compatibility --------------------------------------------------------------------
_BOUNDS = (
    # keyword, the reader is tighter when its value is ..., names when added / tightened
    ("maximum", "lower", "MAXIMUM_ADDED", "MAXIMUM_DECREASED"),
    ("minimum", "higher", "MINIMUM_ADDED", "MINIMUM_INCREASED"),
    ("exclusiveMaximum", "lower", "EXCLUSIVE_MAXIMUM_ADDED", "EXCLUSIVE_MAXIMUM_DECREASED"),
    ("exclusiveMinimum", "higher", "EXCLUSIVE_MINIMUM_ADDED", "EXCLUSIVE_MINIMUM_INCREASED"),
    ("maxLength", "lower", "MAX_LENGTH_ADDED", "MAX_LENGTH_DECREASED"),
    ("minLength", "higher", "MIN_LENGTH_ADDED", "MIN_LENGTH_INCREASED"),
    ("maxItems", "lower", "MAX_ITEMS_ADDED", "MAX_ITEMS_DECREASED"),
    ("minItems", "higher", "MIN_ITEMS_ADDED", "MIN_ITEMS_INCREASED"),
    ("maxProperties", "lower", "MAX_PROPERTIES_ADDED", "MAX_PROPERTIES_DECREASED"),
    ("minProperties", "higher", "MIN_PROPERTIES_ADDED", "MIN_PROPERTIES_INCREASED"),
)
_COMBINERS = ("oneOf", "anyOf", "allOf")


class _Side:
    """A schema node and the resolver its ``$ref`` resolve against."""

    def __init__(self, node: Any, resolver: referencing._core.Resolver[Any]) -> None:
        self.node = node
        self.resolver = resolver

    def deref(self) -> _Side:
        side = self
        for _ in range(64):
            node = side.node
            if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
                return side
            resolved = side.resolver.lookup(node["$ref"])
            side = _Side(resolved.contents, resolved.resolver)
        return side

    def child(self, node: Any) -> _Side:
        return _Side(node, self.resolver)


def _types(node: dict[str, Any]) -> set[str] | None:
    t = node.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _accepts_anything(node: Any) -> bool:
    return node is True or node == {}


def _is_open(node: dict[str, Any]) -> bool:
    return _accepts_anything(node.get("additionalProperties", True))


def _is_closed(node: dict[str, Any]) -> bool:
    return node.get("additionalProperties", True) is False


def _combines(node: Any) -> bool:
    return isinstance(node, dict) and any(k in node for k in _COMBINERS)


def _solo(side: _Side, other: _Side) -> _Side:
    """The one part of ``{"allOf": [part]}`` when ``other`` combines nothing (Confluent
    compares such a singleton as its part)."""
    node = side.node
    while isinstance(node, dict) and set(node) == {"allOf"} and isinstance(node["allOf"], list) \
            and len(node["allOf"]) == 1 and not _combines(other.node):
        side = side.child(node["allOf"][0]).deref()
        node = side.node
    return side


def _compare(reader: _Side, writer: _Side, path: str, seen: set[tuple[int, int]]) -> list[str]:
    reader, writer = reader.deref(), writer.deref()
    reader, writer = _solo(reader, writer), _solo(writer, reader)
    r, w = reader.node, writer.node
    key = (id(r), id(w))
    if key in seen:
        return []
    seen = seen | {key}
    if _accepts_anything(r) or w is False:
        return []
    if r is False:
        return [f"SCHEMA_REMOVED at {path}: the reader accepts nothing"]
    if w is True:
        w = {}
    out: list[str] = []

    def say(name: str, detail: str) -> None:
        out.append(f"{name} at {path}: {detail}")

    # allOf against a schema that combines nothing: Confluent's TYPE_CHANGED (a product
    # type and a plain schema are different kinds of schema there, whatever their parts)
    r_product, w_product = isinstance(r.get("allOf"), list), isinstance(w.get("allOf"), list)
    if r_product != w_product and not _combines(w if r_product else r):
        say("TYPE_CHANGED", "allOf on the " + ("reader's" if r_product else "writer's") +
            " side only (a product of schemas against a plain schema)")
        return out
    # types
    rt, wt = _types(r), _types(w)
    w_combined = any(k in w for k in _COMBINERS)
    if rt is not None and not (wt is None and w_combined):
        def covered(t: str) -> bool:
            return t in rt or (t == "integer" and "number" in rt)
        if wt is None:
            say("TYPE_NARROWED", f"the writer takes any type, the reader only {sorted(rt)}")
        elif not all(covered(t) for t in wt):
            overlap = any(covered(t) or (t == "number" and "integer" in rt) for t in wt)
            name = "TYPE_NARROWED" if overlap else "TYPE_CHANGED"
            say(name, f"the writer's types {sorted(wt)}, the reader's {sorted(rt)}")
    # enums
    if "enum" in r:
        r_enum = {json.dumps(v, sort_keys=True) for v in r["enum"]}
        if "enum" not in w:
            say("ENUM_ARRAY_NARROWED", "the reader adds an enum")
        elif not {json.dumps(v, sort_keys=True) for v in w["enum"]} <= r_enum:
            say("ENUM_ARRAY_NARROWED", "the reader's enum lacks values of the writer's")
    # bounds
    for kw, tighter, added, tightened in _BOUNDS:
        rv = r.get(kw)
        if not isinstance(rv, (int, float)) or isinstance(rv, bool):
            continue
        wv = w.get(kw)
        if not isinstance(wv, (int, float)) or isinstance(wv, bool):
            say(added, f"{kw}={rv} added")
        elif (rv < wv) if tighter == "lower" else (rv > wv):
            say(tightened, f"{kw} {wv} -> {rv}")
    if "pattern" in r and r.get("pattern") != w.get("pattern"):
        say("PATTERN_ADDED" if "pattern" not in w else "PATTERN_CHANGED",
            f"pattern {r['pattern']!r}")
    if "multipleOf" in r:
        if "multipleOf" not in w:
            say("MULTIPLE_OF_ADDED", f"multipleOf={r['multipleOf']} added")
        elif (w["multipleOf"] / r["multipleOf"]) % 1 != 0:
            say("MULTIPLE_OF_CHANGED", f"multipleOf {w['multipleOf']} -> {r['multipleOf']}")
    if r.get("uniqueItems") is True and w.get("uniqueItems") is not True:
        say("UNIQUE_ITEMS_ADDED", "uniqueItems added")
    # objects
    r_props: dict[str, Any] = r.get("properties", {}) if isinstance(r.get("properties"), dict) else {}
    w_props: dict[str, Any] = w.get("properties", {}) if isinstance(w.get("properties"), dict) else {}
    for name in sorted(set(r.get("required", [])) - set(w.get("required", []))):
        prop = reader.child(r_props.get(name, {})).deref().node
        if not (isinstance(prop, dict) and "default" in prop):
            say("REQUIRED_ATTRIBUTE_ADDED", f"property {name!r} now required")
    for name in sorted(set(r_props) | set(w_props)):
        where = f"{path}/properties/{name}"
        if name in r_props and name in w_props:
            out += _compare(reader.child(r_props[name]), writer.child(w_props[name]), where, seen)
        elif name in r_props:  # added by the reader: what did the writer allow under it?
            if _is_open(w):
                say("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", f"property {name!r} added")
            elif not _is_closed(w) and _compare(reader.child(r_props[name]),
                                                writer.child(w["additionalProperties"]),
                                                where, seen):
                say("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                    f"property {name!r} added")
        else:  # removed by the reader
            if _is_closed(r):
                say("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", f"property {name!r} removed")
            elif not _is_open(r) and _compare(reader.child(r["additionalProperties"]),
                                              writer.child(w_props[name]), where, seen):
                say("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                    f"property {name!r} removed")
    if not _is_open(r):
        if _is_closed(r):
            if not _is_closed(w):
                say("ADDITIONAL_PROPERTIES_REMOVED", "the reader closes the content model")
        elif _is_open(w):
            say("ADDITIONAL_PROPERTIES_NARROWED", "the reader restricts additional properties")
        elif not _is_closed(w):
            out += _compare(reader.child(r["additionalProperties"]),
                            writer.child(w["additionalProperties"]),
                            f"{path}/additionalProperties", seen)
    # dependencies
    r_arrays, r_schemas = _dependencies(r)
    w_arrays, w_schemas = _dependencies(w)
    for name, needed in sorted(r_arrays.items()):
        if name not in w_arrays:
            say("DEPENDENCY_ARRAY_ADDED", f"property {name!r} now needs {sorted(needed)}")
        elif not needed <= w_arrays[name]:
            say("DEPENDENCY_ARRAY_EXTENDED", f"property {name!r} now needs "
                f"{sorted(needed - w_arrays[name])} too")
    for name, sub in sorted(r_schemas.items()):
        if name not in w_schemas:
            say("DEPENDENCY_SCHEMA_ADDED", f"a schema depends on property {name!r}")
        else:
            out += _compare(reader.child(sub), writer.child(w_schemas[name]),
                            f"{path}/dependencies/{name}", seen)
    # arrays
    r_tuple, w_tuple = _tuple(r), _tuple(w)
    if r_tuple is not None or w_tuple is not None:
        out += _compare_tuples(reader, writer, r_tuple or ([], r.get("items", True)),
                               w_tuple or ([], w.get("items", True)), path, seen)
    else:
        ri, wi = r.get("items"), w.get("items")
        if isinstance(ri, (dict, bool)) and not _accepts_anything(ri):
            if isinstance(wi, (dict, bool)):
                out += _compare(reader.child(ri), writer.child(wi), f"{path}/items", seen)
            elif wi is None:
                say("ITEMS_NARROWED", "the reader restricts the items of an array")
    # combined schemas
    out += _compare_combined(reader, writer, r, w, path, seen)
    return out


def _dependencies(node: dict[str, Any]) -> tuple[dict[str, set[str]], dict[str, Any]]:
    """(property -> properties it requires, property -> schema applied when present), from
    ``dependencies`` (drafts 4-7) and ``dependentRequired``/``dependentSchemas`` (2019-09+)."""
    arrays: dict[str, set[str]] = {}
    schemas: dict[str, Any] = {}
    for key in ("dependencies", "dependentRequired", "dependentSchemas"):
        for name, value in (node.get(key) or {}).items():
            if isinstance(value, list):
                arrays[name] = set(value)
            else:
                schemas[name] = value
    return arrays, schemas


def _tuple(node: dict[str, Any]) -> tuple[list[Any], Any] | None:
    """(positional item schemas, the schema of the items after them) of a tuple array:
    ``prefixItems`` + ``items`` (2020-12) or ``items`` as a list + ``additionalItems``."""
    if isinstance(node.get("prefixItems"), list):
        return node["prefixItems"], node.get("items", True)
    if isinstance(node.get("items"), list):
        return node["items"], node.get("additionalItems", True)
    return None


def _compare_tuples(reader: _Side, writer: _Side, r: tuple[list[Any], Any],
                    w: tuple[list[Any], Any], path: str, seen: set[tuple[int, int]]) -> list[str]:
    """Positional items as properties of a content model whose rest is the items after."""
    (r_items, r_rest), (w_items, w_rest) = r, w
    out: list[str] = []
    for i in range(max(len(r_items), len(w_items))):
        where = f"{path}/items/{i}"
        if i < len(r_items) and i < len(w_items):
            out += _compare(reader.child(r_items[i]), writer.child(w_items[i]), where, seen)
        elif i < len(r_items):
            if _accepts_anything(w_rest):
                out.append(f"ITEM_ADDED_TO_OPEN_CONTENT_MODEL at {where}")
            elif w_rest is not False and _compare(reader.child(r_items[i]),
                                                  writer.child(w_rest), where, seen):
                out.append(f"ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at {where}")
        else:
            if r_rest is False:
                out.append(f"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL at {where}")
            elif not _accepts_anything(r_rest) and _compare(reader.child(r_rest),
                                                            writer.child(w_items[i]), where, seen):
                out.append(f"ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL at {where}")
    if r_rest is False:
        if w_rest is not False:
            out.append(f"ADDITIONAL_ITEMS_REMOVED at {path}: the reader closes the tuple")
    elif not _accepts_anything(r_rest):
        if _accepts_anything(w_rest):
            out.append(f"ADDITIONAL_ITEMS_NARROWED at {path}: the reader restricts later items")
        elif w_rest is not False:
            out += _compare(reader.child(r_rest), writer.child(w_rest), f"{path}/items/*", seen)
    return out


def _compare_combined(reader: _Side, writer: _Side, r: dict[str, Any], w: dict[str, Any],
                      path: str, seen: set[tuple[int, int]]) -> list[str]:
    out: list[str] = []

    def compatible(rs: Any, ws: Any) -> bool:
        return not _compare(reader.child(rs), writer.child(ws), path, seen)

    r_sum = next((k for k in ("oneOf", "anyOf") if isinstance(r.get(k), list)), None)
    w_sum = next((k for k in ("oneOf", "anyOf") if isinstance(w.get(k), list)), None)
    if r_sum is not None:
        w_alternatives = w[w_sum] if w_sum is not None else [
            {k: v for k, v in w.items() if k not in _COMBINERS}]
        if w_sum is not None and w_sum != r_sum and r_sum == "oneOf":
            out.append(f"COMBINED_TYPE_CHANGED at {path}: {w_sum} -> {r_sum}")
        for i, ws in enumerate(w_alternatives):
            if not any(compatible(rs, ws) for rs in r[r_sum]):
                out.append(f"SUM_TYPE_NARROWED at {path}/{r_sum}: the writer's alternative "
                           f"{i} is read by none of the reader's")
    elif w_sum is not None:
        rest = {k: v for k, v in r.items() if k not in _COMBINERS}
        for i, ws in enumerate(w[w_sum]):
            if not compatible(rest, ws):
                out.append(f"COMBINED_TYPE_CHANGED at {path}: the writer's {w_sum} alternative "
                           f"{i} is not read by the reader")
    r_all, w_all = r.get("allOf"), w.get("allOf")
    if isinstance(r_all, list):
        w_parts = w_all if isinstance(w_all, list) else [
            {k: v for k, v in w.items() if k not in _COMBINERS}]
        if isinstance(w_all, list) and len(r_all) > len(w_all):
            out.append(f"PRODUCT_TYPE_EXTENDED at {path}/allOf: {len(w_all)} -> {len(r_all)} "
                       "schemas")
        else:
            for i, rs in enumerate(r_all):
                if not any(compatible(rs, ws) for ws in w_parts):
                    out.append(f"COMBINED_TYPE_SUBSCHEMAS_CHANGED at {path}/allOf/{i}: no part "
                               "of the writer is read by it")
    return out


def reader_incompatibilities(reader: JsonSchema, writer: JsonSchema) -> list[str]:
    """Why data valid under ``writer`` may be invalid under ``reader``; empty if it cannot."""
    return _compare(_Side(reader.data, reader.resolver), _Side(writer.data, writer.resolver),
                    "#", set())
