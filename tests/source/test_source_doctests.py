"""The worked examples in the source modules' docstrings are run, so they stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["offset_range", "retry_policy", "failed_offsets", "offset_reset", "partition_plan", "partition_discovery",
           "partition_manager", "planning"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"connector.source.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
