"""What the options of the source, the sink and their ``kafka.*`` settings share: the
error an invalid value raises (:class:`OptionError`, naming the option, the value and the
rule) and the parsers of plain values (durations, booleans, positive integers)."""

from __future__ import annotations

import re

from broker_sim.protocol.errors import ConfigError


class OptionError(ConfigError):
    """An invalid source or sink option; the message names the option, value and rule.

    A :class:`~broker_sim.protocol.errors.ConfigError` (so a ``ValueError``) that also keeps
    ``option`` and ``value`` for a caller that re-raises it under another name."""

    def __init__(self, option: str, value: object, allowed: str) -> None:
        super().__init__(f"pyq option {option}={value!r} is not allowed: {allowed}")
        self.option = option
        self.value = value


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1}


def parse_duration_ms(option: str, raw: str) -> int:
    m = _DURATION.match(raw)
    if not m:
        raise OptionError(option, raw, "a duration such as 500ms, 30s, 15m or 1h")
    return int(m.group(1)) * _UNITS_MS[m.group(2)]


def parse_bool(option: str, raw: str) -> bool:
    low = raw.strip().lower()
    if low not in ("true", "false"):
        raise OptionError(option, raw, "true or false")
    return low == "true"


def parse_positive_int(option: str, raw: str, minimum: int = 1) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(option, raw, f"an integer of at least {minimum}") from None
    if value < minimum:
        raise OptionError(option, raw, f"an integer of at least {minimum}")
    return value
