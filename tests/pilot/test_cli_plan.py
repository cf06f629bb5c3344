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


def _judgement_file(tmp_path: Path) -> Path:
    import pandas as pd
    path = tmp_path / "judgements.csv"
    pd.DataFrame({"rater": ["r1", "r2", "r3"] * 4, "prompt": [f"p{i // 3}" for i in range(12)],
                  "left": ["x", "y"] * 6, "right": ["y", "x"] * 6,
                  "pick": ["y", "x", "tie", "y"] * 3}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("extra, match", [
    (["--effect", "0.4", "--p-win", "0.6"], "give the effect to detect once"),
    ([], "give the effect to detect once"),
    (["--p-win", "1.2"], "strictly between 0 and 1"),
    (["--p-win", "0.6", "--ratings", PILOT], "one source of parameters"),
    (["--p-win", "0.6", "--choice", "verdict"], "not a column"),
])
def test_plan_from_judgements_refuses_bad_flags(capsys, tmp_path, extra, match):
    args = ["plan", "--judgements", str(_judgement_file(tmp_path)), "--first", "left",
            "--second", "right", "--choice", "pick", "--worker", "rater", "--item", "prompt"]
    args += extra
    try:
        code = main(args)            # the package's errors: a message and a nonzero code
    except SystemExit as exc:        # argparse's usage errors
        code = exc.code
    assert code not in (0, None)
    assert match in capsys.readouterr().err
