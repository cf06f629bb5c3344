"""``nlpower elicit``: a thin edge over agreement.elicit, plan and judge_plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlpower.cli import main


def test_elicit_with_plans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "e.json"
    code = main(["elicit", "0.6", "--effect", "0.1", "--judge-r", "0.8", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "implied: alpha = 0.600" in text and "with judge" in text and "human only" in text
    record = json.loads(out.read_text())
    assert [r["plan"] for r in record["judge_plan"]] == ["with judge", "human only"]
    assert record["plan"]["power"] >= 0.8


def test_elicit_bad_agreement_names_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["elicit", "1.5"]) == 2
    assert "agreement" in capsys.readouterr().err
