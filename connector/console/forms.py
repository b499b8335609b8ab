"""Reading form and query values: a bad one is a :class:`FormError` naming the field, its
value and what is allowed (rendered in the page; nothing is done)."""

from __future__ import annotations

from collections.abc import Mapping

from broker_sim.protocol.errors import PyqError


class FormError(PyqError, ValueError):
    pass


def integer(values: Mapping[str, str], name: str, default: int | None = None,
            low: int | None = None) -> int:
    text = (values.get(name) or "").strip()
    if not text:
        if default is None:
            raise FormError(f"{name}: a value is required")
        return default
    try:
        value = int(text)
    except ValueError:
        raise FormError(f"{name}={text!r} is not an integer") from None
    if low is not None and value < low:
        raise FormError(f"{name}={value} is not allowed: must be at least {low}")
    return value


def choice(values: Mapping[str, str], name: str, allowed: tuple[str, ...]) -> str:
    value = (values.get(name) or allowed[0]).strip()
    if value not in allowed:
        raise FormError(f"{name}={value!r} is not allowed: must be one of {', '.join(allowed)}")
    return value


def name_values(text: str, field: str) -> dict[str, str]:
    """``name=value`` lines (blank lines skipped) -> {name: value}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise FormError(f"{field}: {line.strip()!r} is not NAME=VALUE")
        out[name.strip()] = value.strip()
    return out
