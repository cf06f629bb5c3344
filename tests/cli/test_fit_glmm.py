"""``nlpower fit --family binomial|poisson``: a thin edge over ``nlpower.glmer``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from nlpower.cli import main
from nlpower.glmm import glmer


def _judgements(tmp_path, kind: str = "binomial"):
    """12 workers x 30 items x 2 systems; system B better by 0.8 on the logit (log) scale."""
    rng = np.random.default_rng(5)
    u, v = rng.normal(0, 0.6, 12), rng.normal(0, 0.5, 30)
    rows = []
    for w in range(12):
        for i in range(30):
            for s, x in (("A", -0.5), ("B", 0.5)):
                eta = 0.2 + 0.8 * x + u[w] + v[i]
                y = (rng.random() < 1 / (1 + np.exp(-eta))) if kind == "binomial" else \
                    rng.poisson(np.exp(eta))
                rows.append((f"w{w}", f"i{i}", s, int(y)))
    d = pd.DataFrame(rows, columns=["annotator", "item", "system", "win"])
    path = tmp_path / f"{kind}.csv"
    d.to_csv(path, index=False)
    return path, d


def _library_fit(d: pd.DataFrame, family: str, baseline: str | None = None, coding: str = "sum"):
    d = d.copy()
    levels = sorted(d["system"].unique())
    others = [s for s in levels if s != baseline]
    order = (levels if baseline is None else [baseline, *others] if coding == "treatment"
             else [*others, baseline])
    d["system"] = pd.Categorical(d["system"], categories=order)
    return glmer("win ~ system + (1 | annotator) + (1 | item)", d, family,
                 contrasts={"system": coding})


def test_binomial_prints_the_glmer_summary(tmp_path, capsys):
    path, d = _judgements(tmp_path)
    assert main(["fit", str(path), "--family", "binomial", "--worker", "annotator",
                 "--rating", "win"]) == 0
    out = capsys.readouterr().out
    lib = _library_fit(d, "binomial")
    assert "Family: binomial  ( logit )" in out
    assert "Formula: win ~ system + (1 | annotator) + (1 | item)" in out
    assert f"{lib.loglik:.1f}" in out
    # R's order (as glmer on the column): A, B; sum coding gives B -1, so system[A] (lme4's
    # system1) is A's deviation from the mean of the two (negative here: B is better)
    assert list(lib.fixef.index) == ["(Intercept)", "system[A]"]
    assert lib.fixef["system[A]"] < 0
    assert f"{lib.fixef['system[A]']:.4g}" in out
    assert "levels in fitted order: 1='A', 2='B' ('B' gets -1: -(system[A]))" in out
    assert "system[A] = (level 'A' - mean of the levels), on the link scale (lme4: system1)" in out
    assert "system1 " not in out.split("Fixed effects:")[-1]     # the summary shows level names
    assert "720 ratings by 12 workers of 30 items under 2 systems" in out


def test_json_matches_the_library_and_treatment_baseline(tmp_path, capsys):
    path, d = _judgements(tmp_path)
    out = tmp_path / "fit.json"
    assert main(["fit", str(path), "--family", "binomial", "--worker", "annotator", "--rating",
                 "win", "--coding", "treatment", "--baseline", "B", "--json", str(out)]) == 0
    rec = json.loads(out.read_text())
    lib = _library_fit(d, "binomial", baseline="B", coding="treatment")
    assert rec["family"] == "binomial" and rec["nobs"] == 720
    assert rec["systems"] == ["B", "A"] and rec["coding"] == "treatment"
    assert rec["loglik"] == pytest.approx(lib.loglik, abs=1e-8)
    coefs = {r["term"]: r["estimate"] for r in rec["coefficients"] if r["effect"] == "fixed"}
    assert coefs["systemA"] == pytest.approx(lib.fixef["systemA"], abs=1e-8)
    assert coefs["systemA"] < 0          # A is worse than the baseline B
    assert f"wrote {out}" in capsys.readouterr().out


def test_poisson_and_a_formula_of_ones_own(tmp_path, capsys):
    path, d = _judgements(tmp_path, "poisson")
    assert main(["fit", str(path), "--family", "poisson", "--model",
                 "win ~ system + (1 | annotator)"]) == 0
    out = capsys.readouterr().out
    dd = d.assign(system=pd.Categorical(d["system"], categories=["B", "A"]))
    lib = glmer("win ~ system + (1 | annotator)", dd, "poisson", contrasts={"system": "sum"})
    assert "Family: poisson  ( log )" in out and f"{lib.loglik:.1f}" in out


def test_a_likert_file_is_refused_with_what_to_do(tmp_path, capsys):
    path, d = _judgements(tmp_path)
    d.assign(win=d["win"] + 1).to_csv(path, index=False)
    assert main(["fit", str(path), "--family", "binomial", "--worker", "annotator",
                 "--rating", "win"]) == 2
    err = capsys.readouterr().err
    assert "binomial response must be 0/1" in err and "Recode" in err


def test_unknown_baseline(tmp_path, capsys):
    path, _ = _judgements(tmp_path)
    assert main(["fit", str(path), "--family", "binomial", "--worker", "annotator",
                 "--rating", "win", "--baseline", "C"]) == 2
    assert "'C' is not a system" in capsys.readouterr().err


def test_binomial_three_numbered_systems_in_rs_order_with_level_names(tmp_path, capsys):
    # R's factor() of a numeric column sorts numerically (1, 2, 10), not as text (1, 10, 2)
    path, d = _judgements(tmp_path)
    rng = np.random.default_rng(2)
    d = d.assign(system=rng.choice([1, 2, 10], len(d)))
    d.to_csv(path, index=False)
    assert main(["fit", str(path), "--family", "binomial", "--worker", "annotator",
                 "--rating", "win"]) == 0
    out = capsys.readouterr().out
    assert out.index("ratings by 12 workers") < out.index("levels in fitted order")  # report first
    assert "levels in fitted order: 1='1', 2='2', 3='10' ('10' gets -1: " \
           "-(system[1] + system[2]))" in out
    dd = d.assign(system=pd.Categorical(d["system"].astype(str), categories=["1", "2", "10"]))
    lib = glmer("win ~ system + (1 | annotator) + (1 | item)", dd, "binomial",
                contrasts={"system": "sum"})
    assert list(lib.fixef.index) == ["(Intercept)", "system[1]", "system[2]"]
    for name in ("system[1]", "system[2]"):
        assert f"{lib.fixef[name]:.4g}" in out.split("Fixed effects:")[-1]
