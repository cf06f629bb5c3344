"""docs/glmm.md executes and prints what it shows (the runner of docs/tutorials/)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_glmm_page_prints_what_it_shows() -> None:
    spec = importlib.util.spec_from_file_location("tutorials", ROOT / "scripts" / "tutorials.py")
    assert spec is not None and spec.loader is not None
    tutorials = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("tutorials", tutorials)
    spec.loader.exec_module(tutorials)
    problems = tutorials.differences(ROOT / "docs" / "glmm.md")
    assert not problems, "\n\n".join(problems)
