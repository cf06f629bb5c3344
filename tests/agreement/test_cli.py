"""``nlpower elicit``, and ``--agreement`` of power / plan / mde / grid: thin edges over
agreement.elicit, plan and judge_plan."""

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


# --agreement A in place of --preset / --ratings for power, plan, mde and grid

def test_plan_from_agreement_equals_the_library(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from nlpower import plan
    from nlpower.agreement import AgreementSplit, elicit

    out = tmp_path / "p.json"
    argv = ["plan", "--agreement", "0.6", "--split", "0.5", "0.2", "0.5", "--effect", "0.1",
            "--cost-per-worker", "2", "--max-workers", "30", "--json", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "variance components from alpha = 0.6" in text
    assert "item x system 50% of the item variance, workers 20%" in text  # the split, echoed
    want = plan(elicit(0.6, split=AgreementSplit(0.5, 0.2, 0.5)), effect=0.1,
                cost_per_worker=2.0, max_workers=30)
    record = json.loads(out.read_text())
    chosen = [r for r in record["plans"] if r["n_workers"] == want.n_workers]
    assert chosen and chosen[0]["n_items"] == want.n_items
    assert record["agreement"]["worker_share"] == pytest.approx(0.2)
    params = elicit(0.6, split=AgreementSplit(0.5, 0.2, 0.5))
    assert record["agreement"]["sd_item_slope"] == pytest.approx(params.sd_item_slope)


def test_power_and_mde_from_agreement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nlpower import CrossedDesign, analytic_power, mde
    from nlpower.agreement import elicit

    out = tmp_path / "m.json"
    assert main(["mde", "--agreement", "0.4", "--measure", "ICC(C,1)", "--workers", "5",
                 "--items", "200", "--json", str(out)]) == 0
    assert "consistency of one rater" in capsys.readouterr().out
    want = mde(CrossedDesign(5, 200), elicit(0.4, measure="ICC(C,1)"))
    assert json.loads(out.read_text())["effect"] == pytest.approx(want.effect, rel=1e-9)
    out = tmp_path / "p.json"
    assert main(["power", "--agreement", "0.6", "--workers", "4", "--items", "60", "--effect",
                 "0.1", "--method", "analytic", "--json", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "split (the paper's high-variance scenario's)" in text
    got = json.loads(out.read_text())
    want_p = analytic_power(CrossedDesign(4, 60), elicit(0.6, effect=0.1))
    assert got["power"] == pytest.approx(want_p.power, rel=1e-9)
    assert got["agreement"]["agreement"] == 0.6


def test_grid_from_agreement(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["grid", "--agreement", "0.6", "--workers", "3", "--items", "40,80",
                 "--effects", "0.1", "--method", "analytic", "--quiet"]) == 0
    assert "scenario='alpha 0.6'" in capsys.readouterr().out


@pytest.mark.parametrize("argv, words", [
    (["plan", "--agreement", "0.6", "--preset", "high-variance", "--effect", "0.1"],
     "--preset sets them too"),
    (["power", "--agreement", "0.6", "--ratings", "x.csv", "--workers", "3", "--items", "10",
      "--effect", "0.1"], "--ratings sets them too"),
    (["plan", "--agreement", "0.6", "--sd", "item_slope=0.1", "--effect", "0.1"],
     "--sd sets them too"),
    (["plan", "--split", "0.5", "0.2", "0.5", "--preset", "high-variance", "--effect", "0.1"],
     "--split describes a target agreement: give --agreement"),
    (["mde", "--total-sd", "0.2", "--k", "3", "--preset", "high-variance", "--workers", "3",
      "--items", "10"], "--k, --total-sd describe a target agreement"),
    (["power", "--agreement", "0.6", "--outcome", "likert", "--levels", "5", "--workers", "3",
      "--items", "10", "--effect", "0.1"], "not of --outcome likert"),
    (["plan", "--agreement", "0.6", "--measure", "ICC(A,k)", "--effect", "0.1"], "--k 3"),
    (["plan", "--agreement", "1.5", "--effect", "0.1"], "--agreement must be"),
])
def test_agreement_conflicts_are_refused(argv: list[str], words: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert words in capsys.readouterr().err
