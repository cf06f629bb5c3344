"""``nlpower fit --judge`` and ``--agreement``: the thin CLI edge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nlpower.cli import main
from nlpower.judge import simulate_study

FIXTURES = Path(__file__).parents[2] / "fixtures"


def test_fit_with_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    human, judge = simulate_study(n_items=120, n_labelled=20, workers_per_item=3, effect=0.3,
                                  rng=5)
    human.to_csv(tmp_path / "human.csv", index=False)
    judge.to_csv(tmp_path / "judge.csv", index=False)
    out = tmp_path / "out.json"
    code = main(["fit", str(tmp_path / "human.csv"), "--judge", str(tmp_path / "judge.csv"),
                 "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "ppi++" in text and "human" in text and "judge" in text
    record = json.loads(out.read_text())
    assert {r["method"] for r in record["estimates"]} == {"ppi++", "human", "judge"}


def test_fit_with_judge_names_the_flag_on_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    human, judge = simulate_study(n_items=60, n_labelled=10, rng=5)
    human.to_csv(tmp_path / "human.csv", index=False)
    judge.rename(columns={"score": "p"}).to_csv(tmp_path / "judge.csv", index=False)
    code = main(["fit", str(tmp_path / "human.csv"), "--judge", str(tmp_path / "judge.csv")])
    assert code == 2
    assert "'score'" in capsys.readouterr().err


def test_fit_reports_agreement(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit", str(FIXTURES / "pilot_ratings.csv"), "--scale", "1", "5", "--agreement"])
    text = capsys.readouterr().out
    assert code == 0
    assert "Krippendorff's alpha (interval)" in text and "ICC(A,1)" in text
