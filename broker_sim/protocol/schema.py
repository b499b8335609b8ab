"""Declarative message schemas: one definition per API, fields carry their version ranges.

A message is declared once with every field it has ever had, each tagged with the
versions it exists in (Kafka's own JSON message definitions work the same way); the codec
for one version is compiled from that declaration on first use and cached::

    FindCoordinatorRequest = Message("FindCoordinatorRequest", api_key=10, valid="0-2",
        flexible="none", fields=[
            Field("key", String),
            Field("key_type", Int8, versions="1+"),
        ])
    FindCoordinatorRequest.encode(0, {"key": "g"})  == b"\\x00\\x01g"
    FindCoordinatorRequest.encode(1, {"key": "g"})  == b"\\x00\\x01g\\x00"  # key_type defaults to 0

A field absent from a version is skipped when encoding and set to its default when
decoding, so code that handles several versions reads every attribute uniformly.
Decoded values are :class:`Data` objects (attribute access); encoding accepts ``Data``
objects or plain dicts. Flexible versions (KIP-482) switch strings, bytes and arrays to
their compact forms and append a tagged-field section to every struct.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import MalformedFrame
from .primitives import Array, Type, read_uvarint, write_uvarint


def parse_versions(spec: str) -> tuple[int, int]:
    """``"3+"`` -> (3, 32767); ``"1-4"`` -> (1, 4); ``"2"`` -> (2, 2); ``"none"`` -> (1, 0)."""
    spec = spec.strip()
    if spec == "none":
        return 1, 0
    if spec.endswith("+"):
        return int(spec[:-1]), 0x7FFF
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


class Data:
    """A decoded struct: plain attributes, equality by value, readable repr."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Data) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"Data({inner})"

    def get(self, name: str, default: Any = None) -> Any:
        return self.__dict__.get(name, default)

    if TYPE_CHECKING:  # fields are set per message: any attribute may be read or written.
        # Declared for the type checker only, so attribute access keeps its plain speed.
        def __getattr__(self, name: str) -> Any: ...

        def __setattr__(self, name: str, value: Any) -> None: ...


class Field:
    """One field of a struct. ``tag`` makes it a tagged field (flexible versions only)."""

    def __init__(
        self,
        name: str,
        type: Type | Struct,
        versions: str = "0+",
        default: Any = None,
        tag: int | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        self.tag = tag
        self.default = type.default if default is None else default

    def present_in(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]


class _CompiledStruct(Type):
    """The codec of one struct at one version (fields fixed, nested types compiled)."""

    def __init__(self, regular: list[tuple[str, Type, Any]], tagged: list[tuple[int, str, Type, Any]],
                 absent: dict[str, Any]) -> None:
        self.regular = regular
        self.tagged = tagged
        self.tag_index = {tag: (name, t) for tag, name, t, _ in tagged}
        self.absent = absent
        self.default = None

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        if isinstance(value, dict):
            get = value.get
        else:
            d = value.__dict__
            get = d.get
        for name, t, default in self.regular:
            v = get(name, default)
            t.write(out, default if v is None and default is not None else v, flexible)
        if flexible:
            present = []
            for tag, name, t, default in self.tagged:
                v = get(name, default)
                # Left out when default, as Kafka does; an empty array is a default one.
                if v is not None and v != default and (v or not isinstance(default, tuple)):
                    present.append((tag, t, v))
            write_uvarint(out, len(present))
            for tag, t, v in present:
                body = bytearray()
                t.write(body, v, True)
                write_uvarint(out, tag)
                write_uvarint(out, len(body))
                out += body

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        values = dict(self.absent)
        for name, t, _ in self.regular:
            values[name], pos = t.read(buf, pos, flexible)
        if flexible:
            for _, name, _, default in self.tagged:
                values[name] = default
            count, pos = read_uvarint(buf, pos)
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                end = pos + size
                if end > len(buf):
                    raise MalformedFrame("tagged field runs past the end of the frame")
                known = self.tag_index.get(tag)
                if known is not None:
                    values[known[0]], _ = known[1].read(buf[:end], pos, True)
                pos = end
        return Data(**values), pos


class Struct(Type):
    """A named group of fields; compiled per version by :meth:`at`."""

    def __init__(self, name: str, fields: list[Field]) -> None:
        self.name = name
        self.fields = fields
        self.default = None
        self._compiled: dict[int, _CompiledStruct] = {}

    def at(self, version: int) -> _CompiledStruct:
        compiled = self._compiled.get(version)
        if compiled is None:
            regular, tagged, absent = [], [], {}
            for f in self.fields:
                if not f.present_in(version):
                    absent[f.name] = f.default
                    continue
                t = _compile(f.type, version)
                if f.tag is None:
                    regular.append((f.name, t, f.default))
                else:
                    tagged.append((f.tag, f.name, t, f.default))
            compiled = _CompiledStruct(regular, tagged, absent)
            self._compiled[version] = compiled
        return compiled

    def __call__(self, **values: Any) -> Data:
        """A new value of this struct with defaults for every field not given."""
        merged = {f.name: f.default for f in self.fields}
        unknown = set(values) - set(merged)
        if unknown:
            raise TypeError(f"{self.name} has no field(s) {sorted(unknown)}")
        merged.update(values)
        return Data(**merged)


class NullableStruct(Type):
    """A struct that may be null: an int8 marker (-1 null, 1 present) and then the struct,
    as Kafka encodes nullable struct fields (e.g. ConsumerGroupHeartbeat's assignment)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.default = None

    def write(self, out: bytearray, value: Any, flexible: bool) -> None:
        if value is None:
            out.append(0xFF)
            return
        out.append(1)
        self.inner.write(out, value, flexible)

    def read(self, buf: Any, pos: int, flexible: bool) -> tuple[Any, int]:
        if pos >= len(buf):
            raise MalformedFrame("truncated nullable struct")
        marker = buf[pos]
        if marker == 0xFF:
            return None, pos + 1
        return self.inner.read(buf, pos + 1, flexible)


def _compile(t: Any, version: int) -> Type:
    if isinstance(t, Struct):
        return t.at(version)
    if isinstance(t, NullableStruct):
        return NullableStruct(_compile(t.inner, version))
    if isinstance(t, Array) and isinstance(t.inner, (Struct, Array)):
        return Array(_compile(t.inner, version), nullable=t.nullable)
    return t


class Message(Struct):
    """A top-level request or response body of one API."""

    def __init__(self, name: str, api_key: int, valid: str, flexible: str, fields: list[Field]) -> None:
        super().__init__(name, fields)
        self.api_key = api_key
        self.min_version, self.max_version = parse_versions(valid)
        self.flexible_from, self.flexible_to = parse_versions(flexible)

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from <= version <= self.flexible_to

    def check_version(self, version: int) -> None:
        if not self.min_version <= version <= self.max_version:
            raise ValueError(f"{self.name} has no version {version} "
                             f"(valid: {self.min_version}-{self.max_version})")

    def encode_into(self, out: bytearray, version: int, value: Any) -> None:
        self.check_version(version)
        self.at(version).write(out, value, self.is_flexible(version))

    def encode(self, version: int, value: Any) -> bytes:
        out = bytearray()
        self.encode_into(out, version, value)
        return bytes(out)

    def decode(self, version: int, buf: Any, pos: int = 0) -> Data:
        self.check_version(version)
        value, _ = self.at(version).read(memoryview(buf) if isinstance(buf, (bytes, bytearray)) else buf,
                                          pos, self.is_flexible(version))
        return value
