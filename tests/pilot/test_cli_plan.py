"""``nlpower plan --ratings``: the thin CLI over plan_with_assurance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlpower.cli import main
from nlpower.pilot import plan_with_assurance
from nlpower.ratings import fit_ratings, read_ratings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PILOT = str(FIXTURES / "pilot_ratings.csv")


def test_plan_from_a_rating_file(capsys, tmp_path):
    out = tmp_path / "plan.json"
    code = main(["plan", "--ratings", PILOT, "--scale", "1,5", "--effect", "0.1",
                 "--cost-per-worker", "20", "--seed", "1", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    ref = plan_with_assurance(fit_ratings(read_ratings(PILOT, scale=(1, 5))), effect=0.1,
                              cost_per_worker=20, rng=1)
    assert "640 ratings by 8 workers of 40 items" in text
    assert "safeguard" in text and "assurance" in text
    rec = json.loads(out.read_text())
    assert rec["plans"][0]["n_workers"] == ref.point.n_workers
    assert rec["plans"][1]["n_items"] == ref.safeguard.n_items
    assert rec["point_assurance"]["assurance"] == pytest.approx(ref.point_assurance.assurance)


def test_plan_needs_the_effect(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--ratings", PILOT, "--scale", "1,5"])
    assert "--effect" in capsys.readouterr().err


def test_bad_scale_is_explained(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--ratings", PILOT, "--scale", "1-5", "--effect", "0.1"])
    assert "expected the Likert range as LO,HI" in capsys.readouterr().err


def test_library_errors_are_one_line(capsys):
    code = main(["plan", "--ratings", str(FIXTURES / "nested_4sys_ratings.csv"), "--scale", "1,5",
                 "--effect", "0.1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "nlpower plan: error:" in err and "Traceback" not in err
