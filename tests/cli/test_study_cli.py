"""``nlpower study``: a thin edge over nlpower.study (fit, set the truth, extend, ask)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import REFERENCE
from nlpower.cli import main

SIMDATA = str(REFERENCE / "data" / "simdata.csv")


def test_power_of_a_term_with_the_truth_set(capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["study", SIMDATA, "--formula", "z ~ x + (1 | g)", "--family", "poisson",
                 "--set", "x=-0.05", "--term", "x", "--n-sims", "40", "--seed", "1",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Power for x (z test" in text and "x=-0.05" in text
    record = json.loads(out.read_text())
    assert record["hypothesis"] == "x" and record["n_sims"] == 40
    assert record["run"]["seed"] == 1


def test_curve_on_an_extended_design_and_a_plan(capsys):
    assert main(["study", SIMDATA, "--formula", "y ~ x + (1 | g)", "--set", "x=0.3",
                 "--extend", "g=6", "--curve", "g=2,6", "--term", "x", "--test", "z",
                 "--n-sims", "30", "--seed", "2"]) == 0
    assert "by number of levels of g" in capsys.readouterr().out
    assert main(["study", SIMDATA, "--formula", "y ~ x + (1 | g)", "--set", "x=0.3",
                 "--plan", "g", "--n-max", "12", "--term", "x", "--test", "z",
                 "--n-sims", "30", "--seed", "3"]) == 0
    assert "Plan for x" in capsys.readouterr().out


def test_pairwise_comparisons(capsys, tmp_path):
    rng = np.random.default_rng(1)
    d = pd.DataFrame([(w, i, s) for w in range(6) for i in range(10) for s in "ABC"],
                     columns=["worker", "item", "system"])
    d["y"] = rng.normal(size=len(d)) + d.system.map({"A": 0, "B": 0.5, "C": 1.0})
    path = tmp_path / "r.csv"
    d.to_csv(path, index=False)
    assert main(["study", str(path), "--formula", "y ~ system + (1 | worker) + (1 | item)",
                 "--pairwise", "system", "--n-sims", "20", "--seed", "4"]) == 0
    assert "C - A" in capsys.readouterr().out


@pytest.mark.parametrize("extra,match", [
    (["--set", "x"], "NAME=VALUE"),
    (["--set", "x=abc"], "not a number"),
    (["--set", "nope=1"], "no coefficient 'nope'"),
    (["--extend", "g=0"], "at least 1"),
])
def test_bad_flags_are_refused_in_words(capsys, extra, match):
    assert main(["study", SIMDATA, "--formula", "y ~ x + (1 | g)", "--term", "x",
                 "--n-sims", "5", *extra]) == 2
    assert match in capsys.readouterr().err
