"""The runnable examples in nlpower.accuracy's docstrings stay true."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["table", "mcnemar", "priors", "power", "planning", "estimate", "metrics", "grid"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"nlpower.accuracy.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
