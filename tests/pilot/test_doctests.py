"""The docstring examples of nlpower.pilot run (from the repository root: they read fixtures/)."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["nlpower.convert", "nlpower.pilot.assurance"])
def test_docstring_examples(name, monkeypatch):
    # import_module: nlpower.pilot.assurance the attribute is the function, not the module
    module = importlib.import_module(name)
    monkeypatch.chdir(ROOT)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
