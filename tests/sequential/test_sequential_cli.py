"""``nlpower sequential boundaries | monitor``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.cli import main
from nlpower.sequential import group_sequential


def test_boundaries_print_and_json(capsys, tmp_path):
    out = tmp_path / "b.json"
    assert main(["sequential", "boundaries", "--looks", "3", "--spending", "pocock",
                 "--futility", "obf", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Pocock type" in text
    got = json.loads(out.read_text())
    want = group_sequential(3, spending="pocock", futility="obf")
    np.testing.assert_allclose([r["efficacy_z"] for r in got["looks"]], want.efficacy)
    np.testing.assert_allclose([r["futility_z"] for r in got["looks"]], want.futility)


def test_monitor_replays_batches(capsys, tmp_path):
    ratings = simulate(CrossedDesign(4, 30), presets.high_variance(0.05), rng=11)
    ratings["batch"] = (ratings["item"].str[1:].astype(int) - 1) // 10 + 1
    path = tmp_path / "ratings.csv"
    ratings.to_csv(path, index=False)
    out = tmp_path / "looks.json"
    code = main(["sequential", "monitor", str(path), "--batch", "batch", "--formula",
                 "rating ~ x + (1 | worker) + (1 | item)", "--max-items", "30", "--looks", "3",
                 "--json", str(out)])
    assert code == 0
    looks = json.loads(out.read_text())["results"]
    assert [lk["n_items"] for lk in looks] == [10, 20, 30][: len(looks)]
    assert looks[-1]["decision"] != "continue" or len(looks) < 3
    assert "look 1: information 0.333" in capsys.readouterr().out


def test_monitor_bad_batch_column(capsys, tmp_path):
    path = tmp_path / "r.csv"
    simulate(CrossedDesign(2, 4), presets.high_variance(0.0), rng=1).to_csv(path, index=False)
    code = main(["sequential", "monitor", str(path), "--batch", "wave", "--formula",
                 "rating ~ x + (1 | item)", "--max-items", "4"])
    assert code == 2
    assert "wave" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--looks", "3", "--information", "0.5,1"],
                                  ["--futility", "1,2,3"]])
def test_boundaries_errors_are_one_line(capsys, argv):
    assert main(["sequential", "boundaries", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nlpower sequential: error:")


def test_monitor_likert_clmm(tmp_path):
    from nlpower import clmm
    from nlpower.outcomes import LikertParams, simulate_likert

    lp = LikertParams(thresholds=[-1.0, 0.0, 1.0], effect=0.2, sd_item=0.5)
    ratings = simulate_likert(CrossedDesign(4, 20), lp, rng=3)
    ratings["batch"] = (ratings["item"].str[1:].astype(int) - 1) // 10 + 1
    path, out = tmp_path / "likert.csv", tmp_path / "looks.json"
    ratings.to_csv(path, index=False)
    formula = "rating ~ x + (1 | worker) + (1 | item)"
    assert main(["sequential", "monitor", str(path), "--batch", "batch", "--outcome", "likert",
                 "--analysis", "clmm", "--levels", "4", "--formula", formula,
                 "--max-items", "20", "--looks", "2", "--json", str(out)]) == 0
    first = json.loads(out.read_text())["results"][0]
    z = clmm(formula, ratings[ratings["batch"] == 1], levels=range(1, 5)).coef_table().loc["x", "z"]
    assert first["statistic"] == pytest.approx(z, rel=1e-6)


def test_monitor_preference_judgements(tmp_path):
    from nlpower import glmer
    from nlpower.pilot.judgements import judgement_frame

    g = np.random.default_rng(4)
    n = 6 * 30
    judged = pd.DataFrame({"rater": np.tile([f"r{k}" for k in range(6)], 30),
                           "prompt": np.repeat(np.arange(30), 6),
                           "left": "base", "right": "new",
                           "pick": g.choice(["base", "new", "tie"], n, p=[.4, .5, .1])})
    judged["wave"] = judged["prompt"] // 10
    path, out = tmp_path / "votes.csv", tmp_path / "looks.json"
    judged.to_csv(path, index=False)
    assert main(["sequential", "monitor", str(path), "--batch", "wave", "--outcome",
                 "preference", "--first", "left", "--second", "right", "--choice", "pick",
                 "--worker", "rater", "--item", "prompt", "--max-items", "30", "--looks", "3",
                 "--json", str(out)]) == 0
    first = json.loads(out.read_text())["results"][0]
    rows, _ = judgement_frame(judged[judged["wave"] == 0], a="left", b="right", choice="pick",
                              worker="rater", item="prompt")
    fit = glmer("win ~ 1 + (1 | worker) + (1 | item)", rows, weights="weight")
    assert first["statistic"] == pytest.approx(fit.coef_table().loc["(Intercept)", "z"], rel=1e-6)
    assert first["n_items"] == 10


def test_monitor_gaussian_needs_a_formula(capsys, tmp_path):
    path = tmp_path / "r.csv"
    frame = simulate(CrossedDesign(2, 4), presets.high_variance(0.0), rng=1)
    frame.assign(batch=1).to_csv(path, index=False)
    assert main(["sequential", "monitor", str(path), "--batch", "batch", "--max-items", "4"]) == 2
    assert "needs --formula" in capsys.readouterr().err
