"""One way to declare an option, for every configurable part of pyq (Kafka's ``ConfigDef``).

The broker (:class:`~broker_sim.server.config.BrokerConfig` and the parts it holds), the
client (:class:`~connector.client.config.ClientConfig` and its producer, consumer and admin
subclasses), the Spark source and the Spark sink each declare their options here, once: a
frozen dataclass whose option fields are made by :func:`option`. The field carries what
Kafka's ``ConfigDef.define`` carries — the name users write, the :class:`Kind` of value
(its parser and the rule it states when it refuses one), the default, the documentation,
whether the value is secret, and whether it may change while the process runs — so that
parsing, error messages, ``DescribeConfigs``-style listings and the documentation tables
(``docs/options.md``, checked by ``tests/test_option_model.py``) all read one declaration.

>>> import dataclasses
>>> @dataclasses.dataclass(frozen=True)
... class Example:
...     linger_ms: int = option("linger.ms", 5, integer(0), doc="how long a batch waits")
...     idempotent: bool = option("enable.idempotence", True, BOOL)
>>> sorted(declared(Example))
['enable.idempotence', 'linger.ms']
>>> parse_value(declared(Example)["enable.idempotence"], " TRUE ")
True
>>> parse_value(declared(Example)["linger.ms"], "-1")
Traceback (most recent call last):
...
ValueError: an integer in [0, 2147483647]

Rules this module owns:

* **One name, one option.** A name (or alias) appears once among a class's options;
  :func:`declared` raises ``TypeError`` at the class's first use otherwise.
* **One parser per kind.** Every boolean option of pyq accepts ``true``/``false`` in any
  case, with surrounding spaces, and Python's ``bool`` — nothing else, as Kafka's
  ``ConfigDef.Type.BOOLEAN`` (so ``yes`` or ``1`` is refused everywhere, not only in some
  places).
* **Refusing names the rule.** A kind's parser raises ``ValueError``/``TypeError``; callers
  turn that into their own error (``ConfigError``, ``InvalidConfig``, ``OptionError``)
  with the option's name, the value given and :attr:`Kind.allowed`. This module raises
  none of them itself: it sits below the codec (``broker_sim.common`` imports nothing of
  pyq), so every layer can declare options with it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

_MISSING: Any = dataclasses.MISSING


class Refused(ValueError):
    """Raised by a kind's parser to state a more precise rule than :attr:`Kind.allowed`
    for this value (``a valid regex (missing ), unterminated subpattern)``)."""


@dataclasses.dataclass(frozen=True)
class Kind:
    """What an option accepts: ``parse`` turns a typed or string value into the field's
    value (raising ``ValueError`` or ``TypeError`` when it does not fit) and ``allowed``
    says, for the error message and the docs, what would have fitted."""

    name: str
    parse: Callable[[Any], Any]
    allowed: str

    def __call__(self, value: Any) -> Any:
        return self.parse(value)


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ValueError(value)


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise ValueError(value)


def _parse_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return float(value.strip())
    raise ValueError(value)


def _parse_list(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(s for s in (str(item).strip() for item in items) if s)


BOOL = Kind("bool", _parse_bool, "true or false")
STRING = Kind("string", lambda value: str(value), "a string")
#: A string, or None (unset).
OPTIONAL_STRING = Kind("string", lambda value: None if value is None else str(value), "a string")
#: A comma-separated list (``"a, b"`` or an iterable) -> a tuple of non-empty, stripped items.
LIST = Kind("list", _parse_list, "a comma-separated list")


def _range_text(low: int | float | None, high: int | float | None, what: str) -> str:
    if low is not None and high is not None:
        return f"{what} in [{low}, {high}]"
    if low is not None:
        return f"{what} of at least {low}"
    if high is not None:
        return f"{what} of at most {high}"
    return what


def integer(low: int | None = 0, high: int | None = INT32_MAX, *, optional: bool = False,
            allowed: str | None = None) -> Kind:
    """An integer in ``[low, high]`` (``None``: unbounded on that side); with ``optional``,
    ``None`` is accepted too (unset)."""

    def parse(value: Any) -> int | None:
        if value is None and optional:
            return None
        number = _parse_int(value)
        if (low is not None and number < low) or (high is not None and number > high):
            raise ValueError(value)
        return number

    return Kind("int", parse, allowed or _range_text(low, high, "an integer"))


def number(low: float | None = None, high: float | None = None) -> Kind:
    """A floating-point number in ``[low, high]``."""

    def parse(value: Any) -> float:
        result = _parse_float(value)
        if (low is not None and result < low) or (high is not None and result > high):
            raise ValueError(value)
        return result

    return Kind("double", parse, _range_text(low, high, "a number"))


def choice(values: Iterable[str], *, case: str = "lower", optional: bool = False,
           aliases: Mapping[str, str] | None = None, allowed: str | None = None) -> Kind:
    """One of ``values``, compared after stripping and folding to ``case`` ("lower",
    "upper" or "exact"); ``aliases`` maps other accepted spellings to a value."""
    options = tuple(values)
    fold: Callable[[str], str] = {"lower": str.lower, "upper": str.upper,
                                  "exact": lambda s: s}[case]
    spellings = {**{fold(v): v for v in options},
                 **{fold(k): v for k, v in (aliases or {}).items()}}

    def parse(value: Any) -> str | None:
        if value is None and optional:
            return None
        text = fold(str(value).strip())
        if text not in spellings:
            raise ValueError(value)
        return spellings[text]

    return Kind("choice", parse, allowed or "one of " + ", ".join(options))


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1}


def _parse_duration_ms(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(value)
    return int(m.group(1)) * _UNIT_MS[m.group(2)]


#: A duration in milliseconds: ``500ms``, ``30s``, ``15m``, ``1h``, ``2d`` or a bare number of ms.
DURATION_MS = Kind("duration", _parse_duration_ms, "a duration such as 500ms, 30s, 15m or 1h")


def custom(name: str, parse: Callable[[Any], Any], allowed: str) -> Kind:
    """A kind of its own (a listener list, a principal list, a JSON map ...)."""
    return Kind(name, parse, allowed)


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """One declared option: what :func:`option` put on the field, plus the field's name."""

    name: str
    kind: Kind
    default: Any
    doc: str = ""
    secret: bool = False
    #: May change while the process runs (Kafka's dynamic broker configs, AlterConfigs).
    dynamic: bool = False
    #: Other names accepted for the same option (``node.id`` for ``broker.id``).
    aliases: tuple[str, ...] = ()
    #: A broker-wide option that sets this (topic-level) option's default, as Kafka's
    #: ``ServerTopicConfigSynonyms`` (``log.segment.bytes`` for ``segment.bytes``).
    synonym: str | None = None
    #: Documentation of a default that is not a plain value ("the client's ...").
    default_doc: str | None = None
    attr: str = ""

    @property
    def default_text(self) -> str:
        """The default as the docs show it."""
        if self.default_doc is not None:
            return self.default_doc
        return format_value(self.default)


def format_value(value: Any) -> str:
    """A value in its option's string form (the inverse of the kinds' parsers)."""
    if value is None or value is _MISSING:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ",".join(f"{k}:{v}" for k, v in value.items())
    if isinstance(value, (tuple, list)):
        return ",".join(format_value(v) for v in value)
    return str(value)


def option(name: str, default: Any = _MISSING, kind: Kind = STRING, *, doc: str = "",
           secret: bool = False, dynamic: bool = False, aliases: tuple[str, ...] = (),
           synonym: str | None = None, default_doc: str | None = None,
           default_factory: Callable[[], Any] | None = None) -> Any:
    """Declare one option as a dataclass field (use it as the field's default)."""
    spec = OptionSpec(name=name, kind=kind, doc=doc, secret=secret, dynamic=dynamic,
                      aliases=tuple(aliases), synonym=synonym, default_doc=default_doc,
                      default=default_factory() if default_factory is not None else default)
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, repr=not secret,
                                 metadata={"option": spec})
    return dataclasses.field(default=default, repr=not secret, metadata={"option": spec})


_DECLARED: dict[type, dict[str, OptionSpec]] = {}


def declared(cls: type) -> dict[str, OptionSpec]:
    """The options a dataclass declares, by name (aliases not repeated), in field order."""
    found = _DECLARED.get(cls)
    if found is not None:
        return found
    found = {}
    seen: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        spec = f.metadata.get("option")
        if spec is None:
            continue
        spec = dataclasses.replace(spec, attr=f.name)
        for name in (spec.name, *spec.aliases):
            if name in seen:
                raise TypeError(f"{cls.__name__} declares option {name!r} twice "
                                f"({seen[name]} and {f.name})")
            seen[name] = f.name
        found[spec.name] = spec
    _DECLARED[cls] = found
    return found


def names(cls: type) -> dict[str, OptionSpec]:
    """Every accepted spelling (names and aliases) -> its option."""
    return {name: spec for spec in declared(cls).values() for name in (spec.name, *spec.aliases)}


def parse_value(spec: OptionSpec, value: Any) -> Any:
    """``value`` parsed by the option's kind; ``ValueError(rule)`` if refused, the rule
    being the parser's :class:`Refused` text or else the kind's ``allowed``."""
    try:
        return spec.kind.parse(value)
    except Refused as e:
        raise ValueError(str(e)) from None
    except (ValueError, TypeError):
        raise ValueError(spec.kind.allowed) from None


def parse_declared(instance: Any, error: Callable[[OptionSpec, Any, str], Exception]) -> None:
    """Parse every option field of a frozen dataclass in place (call from ``__post_init__``):
    strings and typed values alike become the declared type; a refused value raises
    ``error(spec, value, rule)``."""
    for spec in declared(type(instance)).values():
        raw = getattr(instance, spec.attr)
        try:
            value = parse_value(spec, raw)
        except ValueError as e:
            raise error(spec, raw, str(e)) from None
        object.__setattr__(instance, spec.attr, value)


def markdown_table(cls: type, *, columns: tuple[str, ...] = ("option", "default", "allowed",
                                                              "meaning"),
                   skip: Iterable[str] = ()) -> str:
    """The class's options as a Markdown table (what ``docs/options.md`` shows), but those
    named in ``skip`` (shown already, e.g. under a base class)."""
    rows = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    left_out = set(skip)
    for spec in declared(cls).values():
        if spec.name in left_out:
            continue
        cells = {
            "option": f"`{spec.name}`" + "".join(f" (`{a}`)" for a in spec.aliases),
            "default": "" if not spec.default_text else "(hidden)" if spec.secret
            else spec.default_doc if spec.default_doc is not None else f"`{spec.default_text}`",
            "allowed": spec.kind.allowed,
            "meaning": spec.doc + (" Dynamic." if spec.dynamic else ""),
            "synonym": f"`{spec.synonym}`" if spec.synonym else "",
        }
        rows.append("| " + " | ".join(cells[c].replace("|", "\\|") for c in columns) + " |")
    return "\n".join(rows)
