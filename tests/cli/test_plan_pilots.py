"""``nlpower plan --ratings`` on both bundled pilots and on a pilot with a missing rating."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nlpower.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PILOT = FIXTURES / "pilot_ratings.csv"
NESTED = FIXTURES / "nested_4sys_ratings.csv"


def _plan(args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    out = tmp_path / "plan.json"
    code = main(["plan", "--scale", "1,5", "--effect", "0.1", "--n-boot", "20", "--seed", "3",
                 "--json", str(out), *args])
    assert code == 0
    return capsys.readouterr().out, json.loads(out.read_text())


def _check_plans(rec: dict) -> None:
    point, safe = rec["plans"]
    assert point["plan"] == "point" and safe["plan"] == "safeguard"
    assert point["power_at_estimates"] >= 0.8 and safe["power_at_upper_sds"] >= 0.8
    assert safe["cost"] >= point["cost"]
    a = rec["point_assurance"]
    assert 0.0 < a["assurance"] < 1.0 and a["n_boot"] >= 10


def test_plan_from_the_bundled_paired_pilot(tmp_path, capsys):
    text, rec = _plan(["--ratings", str(PILOT)], tmp_path, capsys)
    assert "640 ratings by 8 workers of 40 items" in text
    assert "fully crossed (640 ratings)" in rec["point_assurance"]["pilot"]
    _check_plans(rec)


def test_plan_from_the_bundled_nested_pilot(tmp_path, capsys):
    text, rec = _plan(["--ratings", str(NESTED), "--contrast", "C"], tmp_path, capsys)
    # only the contrast's two systems are fitted, and the output says so
    assert "2 systems" in rec["point_assurance"]["pilot"]
    assert "contrast C vs A: fitting only the 90 ratings of these two systems (of 180 " \
        "ratings of 4 systems)" in text
    assert "general parametric bootstrap" in rec["point_assurance"]["pilot"]
    _check_plans(rec)


def test_plan_from_a_pilot_with_a_missing_rating(tmp_path, capsys):
    """The issue's case: one rating of 640 deleted used to make `plan` refuse."""
    df = pd.read_csv(PILOT).drop(index=[17])
    path = tmp_path / "missing.csv"
    df.to_csv(path, index=False)
    text, rec = _plan(["--ratings", str(path)], tmp_path, capsys)
    assert "639 ratings" in rec["point_assurance"]["pilot"]
    assert "general parametric bootstrap" in rec["point_assurance"]["pilot"]
    _check_plans(rec)


def test_plan_from_the_bundled_pilot_as_ordinal(tmp_path, capsys):
    """--family ordinal: clmm pilot fit, clmm refits, simulated power (the LMM analysis here)."""
    text, rec = _plan(["--ratings", str(PILOT), "--family", "ordinal", "--analysis", "lmm",
                       "--n-sims", "2", "--max-workers", "12", "--cost-per-worker", "10",
                       "--effect", "1.0"], tmp_path, capsys)
    a = rec["point_assurance"]
    assert a["outcome"] == "likert" and a["analysis"] == "lmm" and a["n_sims"] == 2
    assert "ordinal pilot, 640 ratings on 5 levels" in a["pilot"]
    assert "latent scale" in text and "simulated" in text
    assert rec["plans"][0]["power_at_estimates"] >= 0.8 or "below the target" in rec["note"]


def test_ordinal_options_need_the_ordinal_family(capsys):
    code = main(["plan", "--ratings", str(PILOT), "--scale", "1,5", "--effect", "0.1",
                 "--analysis", "clmm"])
    assert code == 2
    assert "--analysis and --n-sims are for --family ordinal" in capsys.readouterr().err
