"""The engine validation corpus: native optimum at or below lme4's (issue 13).

``benchmarks/validation_corpus.py`` builds the cases (lme4's and lmerTest's
real data, simulated multi-system designs from Card et al. 2020 Tables 13-15,
with shuffled level orders, sum/treatment coding and rescaled responses) and
``tests/reference/validation_corpus.R`` fits them with lme4 1.1-31.

* fast: a subset against lme4's deviances pinned in
  ``tests/reference/validation_corpus.json`` (written by
  ``benchmarks/validation_corpus.py``, copied from
  ``benchmarks/out/validation_corpus_lme4.json``); the data identity is
  checked through the response sum R saw.
* slow: every case, both engines in the same run (R live).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import validation_corpus as vc  # noqa: E402

PINNED = ROOT / "tests" / "reference" / "validation_corpus.json"
FAST = ("sleepstudy", "penicillin", "carrots", "ham/shuf", "tvbo", "tvbo/shuf",
        "tvbo/shuf+trt/01")


@pytest.fixture(scope="module")
def pinned() -> dict:
    return {c["name"]: c for c in json.loads(PINNED.read_text())["cases"]}


@pytest.mark.parametrize("name", FAST)
def test_native_reaches_lme4_optimum_pinned(name, pinned):
    case = next(c for c in vc.all_cases(quick=True, names=[name.split("/")[0]]) if c.name == name)
    ref = pinned[name]
    resp = case.formula.split("~")[0].strip()
    if ref["ysum"] != "NA":                 # R's sum() is NA with missing responses (carrots)
        assert case.data[resp].sum() == pytest.approx(ref["ysum"], rel=1e-12)
    nat = vc.run_native(case, case.data)
    assert nat["deviance"] <= float(ref["deviance"]) + vc.OBJ_TOL
    if abs(nat["deviance"] - float(ref["deviance"])) <= vc.SAME_OPT:
        for k, v in nat["fixef"].items():
            assert v == pytest.approx(float(ref["fixef"][k]), rel=vc.PAR_TOL, abs=1e-6)


def test_shuffled_levels_reach_the_same_optimum():
    """TVbo with TV sets in another order: BOBYQA alone stopped 0.36 deviance units short
    (a zero Cholesky pivot); the unfold restart reaches the unshuffled optimum."""
    cases = {c.name: c for c in vc.all_cases(quick=True, names=["tvbo"])}
    base = vc.run_native(cases["tvbo"], cases["tvbo"].data)["deviance"]
    shuf = vc.run_native(cases["tvbo/shuf"], cases["tvbo/shuf"].data)
    assert shuf["deviance"] == pytest.approx(base, abs=1e-6)
    assert any(s.startswith("unfold") for s in shuf["optinfo"]["steps"])


# Parameters: two cases of the 2026-11-23 run (sim4_paired_sparse, sim7_paired_kofw/01)
# differ from a tightly converged lme4 by 1.0e-3 and 1.9e-3 relative in a weakly identified
# variance while both deviances agree within 1.2e-6 (flat ridge); the tests allow 2.5e-3.
PAR_TOL_TEST = 2.5e-3


@pytest.mark.slow
def test_pinned_corpus_every_case(pinned):
    """Every pinned case (InstEval included): native deviance <= pinned lme4 deviance + 1e-6."""
    cases = [c for c in vc.all_cases(quick=False) if c.name in pinned]
    assert len(cases) == len(pinned)
    rows = vc.run(cases, PINNED)
    bad = [r for r in rows if not r["objective_ok"]]
    assert not bad, vc.table(bad)


@pytest.mark.slow
@pytest.mark.requires_r
def test_live_corpus_against_lme4():
    """Both engines in the same run (R live): all cases at or below lme4's objective."""
    rows = vc.run(vc.all_cases(quick=True))
    bad = [r for r in rows if not r["objective_ok"]
           or max(r["fixef_rel"], r["vc_rel"]) > PAR_TOL_TEST]
    assert not bad, vc.table(bad)
