"""What the options of the source, the sink and their ``kafka.*`` settings share: the
error an invalid value raises (:class:`OptionError`, naming the option, the value and the
rule) and :func:`parse_option`, one declared option read by name. The options themselves are declared with :mod:`broker_sim.common.options`, whose
kinds parse every value (one boolean parser for every part of pyq)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from broker_sim.common.options import declared, integer, parse_value
from broker_sim.protocol.errors import ConfigError


class OptionError(ConfigError):
    """An invalid source or sink option; the message names the option, value and rule.

    A :class:`~broker_sim.protocol.errors.ConfigError` (so a ``ValueError``) that also keeps
    ``option`` and ``value`` for a caller that re-raises it under another name."""

    def __init__(self, option: str, value: object, allowed: str) -> None:
        super().__init__(f"pyq option {option}={value!r} is not allowed: {allowed}")
        self.option = option
        self.value = value


def parse_positive_int(option: str, raw: str, minimum: int = 1) -> int:
    """An integer option of the connector's functions (``version=``, ``schemaId=``): the
    model's integer kind, refused with :class:`OptionError`."""
    try:
        return int(integer(minimum, None).parse(raw))
    except (ValueError, TypeError):
        raise OptionError(option, raw, f"an integer of at least {minimum}") from None


def parse_option(declarations: type, get: Callable[[str], str | None], name: str) -> Any:
    """The option ``name`` that ``declarations`` (a class of the option model) declares,
    as ``get`` finds it, parsed by its kind; None when unset; refused: :class:`OptionError`."""
    raw = get(name)
    if raw is None:
        return None
    try:
        return parse_value(declared(declarations)[name], raw)
    except ValueError as e:
        raise OptionError(name, raw, str(e)) from None
