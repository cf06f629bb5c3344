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


def test_plan_with_judge_beside_human_only(tmp_path, capsys) -> None:
    import json

    from nlpower import presets
    from nlpower.cli import main
    from nlpower.judge import judge_plan

    out = tmp_path / "plan.json"
    argv = ["plan", "--preset", "high-variance", "--effect", "0.1", "--coding", "half",
            "--judge-r", "0.8", "--cost-per-rating", "0.5", "--cost-per-worker", "2",
            "--cost-per-judge-call", "0.01", "--n-unlabelled", "500", "--json", str(out)]
    assert main(argv) == 0
    assert "beside humans only" in capsys.readouterr().out
    want = judge_plan(presets.high_variance().to_coding("half").with_effect(0.1), judge_r=0.8,
                      n_unlabelled=500, cost_per_rating=0.5, cost_per_worker=2.0,
                      cost_per_judge_call=0.01)
    got = {r["plan"]: r for r in json.loads(out.read_text())["judge_plan"]}
    for plan in ("with judge", "human only"):
        assert got[plan]["n_ratings"] == want.loc[plan, "n_ratings"]
        assert got[plan]["cost"] == pytest.approx(want.loc[plan, "cost"])
    assert got["with judge"]["ratings_saved"] > 0


@pytest.mark.parametrize("argv, words", [
    (["plan", "--preset", "high-variance", "--effect", "0.05", "--n-unlabelled", "50"],
     "--n-unlabelled describes an LLM judge: give --judge-r"),
    (["plan", "--ratings", "x.csv", "--effect", "0.05", "--judge-r", "0.8"],
     "--judge-r plans from parameters"),
])
def test_plan_judge_flags_refused(argv, words, capsys) -> None:
    from nlpower.cli import main

    assert main(argv) == 2
    assert words in capsys.readouterr().err
