"""Bradley-Terry fits against R (BradleyTerry2, ordinal, glm, sandwich) and choix.

R values are pinned in tests/reference/bradley_terry_reference.json, written by
tests/reference/bradley_terry_reference.R from BradleyTerry2 1.1.2's example
data (citations, baseball, football 2008-9).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import REFERENCE, run_rscript
from nlpower.arena import bradley_terry

REF = json.loads((REFERENCE / "bradley_terry_reference.json").read_text())
TOL = 1e-6


def citations_votes() -> pd.DataFrame:
    d = REF["citations"]["data"]
    return pd.DataFrame({"a": d["winner"] * 2, "b": d["loser"] * 2,
                         "o": ["a"] * 6 + ["b"] * 6, "n": d["win1"] + d["win2"]})


def football_votes() -> pd.DataFrame:
    d = REF["football"]["data"]
    return pd.DataFrame({"home": d["home"], "away": d["away"],
                         "result": [{1: "a", -1: "b", 0: "tie"}[r] for r in d["result"]]})


def test_citations_match_btm():
    ref = REF["citations"]["bt"]
    fit = bradley_terry(citations_votes(), a="a", b="b", outcome="o", count="n", ties="drop",
                        reference="Biometrika")
    assert list(fit.systems) == ref["names"]
    np.testing.assert_allclose(fit.estimate, ref["estimate"], atol=TOL)
    np.testing.assert_allclose(fit.se("model"), ref["se"], atol=TOL)


def test_baseball_home_advantage_matches_btm():
    ref, d = REF["baseball"], REF["baseball"]["data"]
    votes = pd.DataFrame({"a": d["home"] * 2, "b": d["away"] * 2, "o": ["a"] * 42 + ["b"] * 42,
                          "n": d["home_wins"] + d["away_wins"]})
    fit = bradley_terry(votes, a="a", b="b", outcome="o", count="n", ties="drop", position=True,
                        reference="Baltimore")
    np.testing.assert_allclose(fit.estimate, ref["bt"]["estimate"], atol=TOL)
    np.testing.assert_allclose(fit.se("model"), ref["bt"]["se"], atol=TOL)   # BTm's glm stops at 1e-8
    assert fit.position == pytest.approx(ref["position"]["estimate"], abs=TOL)
    assert fit.position_se == pytest.approx(ref["position"]["se"], abs=TOL)


@pytest.mark.parametrize(("key", "ties", "position"), [
    ("davidson", "davidson", False), ("davidson_position", "davidson", True),
    ("rao_kupper", "rao-kupper", False), ("rao_kupper_position", "rao-kupper", True)])
def test_football_ties_match_r(key, ties, position):
    ref = REF["football"][key]
    fit = bradley_terry(football_votes(), a="home", b="away", outcome="result", ties=ties,
                        position=position, reference="Ars")
    np.testing.assert_allclose(fit.estimate, ref["scores"]["estimate"], atol=TOL)
    np.testing.assert_allclose(fit.se("model"), ref["scores"]["se"], atol=TOL)
    assert fit.tie == pytest.approx(ref["tie"]["estimate"], abs=TOL)
    assert fit.tie_se == pytest.approx(ref["tie"]["se"], abs=TOL)
    # Davidson's reference is a Poisson log-linear model: its log-likelihood is the
    # multinomial one minus one per match (sum of the fitted means)
    shift = len(REF["football"]["data"]["result"]) if ties == "davidson" else 0
    assert fit.loglik == pytest.approx(ref["loglik"] + shift, abs=1e-6)
    if position:
        assert fit.position == pytest.approx(ref["position"]["estimate"], abs=TOL)
        assert fit.position_se == pytest.approx(ref["position"]["se"], abs=TOL)


def test_sandwich_matches_r_sandwich_package():
    ref = REF["football"]["bt_dropped"]
    fit = bradley_terry(football_votes(), a="home", b="away", outcome="result", ties="drop",
                        reference="Ars")
    np.testing.assert_allclose(fit.estimate, ref["scores"]["estimate"], atol=TOL)
    np.testing.assert_allclose(fit.se("sandwich"), ref["sandwich_se"], atol=TOL)


def test_citations_match_choix():
    choix = pytest.importorskip("choix")
    d = REF["citations"]["data"]
    names = REF["citations"]["bt"]["names"]
    idx = {n: i for i, n in enumerate(names)}
    pairs = []
    for w, lo, n1, n2 in zip(d["winner"], d["loser"], d["win1"], d["win2"], strict=True):
        pairs += [(idx[w], idx[lo])] * n1 + [(idx[lo], idx[w])] * n2
    theirs = choix.ilsr_pairwise(len(names), pairs, alpha=0.0, tol=1e-12)
    fit = bradley_terry(citations_votes(), a="a", b="b", outcome="o", count="n", ties="drop")
    np.testing.assert_allclose(fit.estimate, theirs - theirs.mean(), atol=1e-6)


@pytest.mark.requires_r
def test_pinned_reference_is_what_the_script_writes():
    live = json.loads(run_rscript(REFERENCE / "bradley_terry_reference.R"))
    for key in ("davidson", "rao_kupper_position", "bt_dropped"):
        np.testing.assert_allclose(live["football"][key]["scores"]["estimate"],
                                   REF["football"][key]["scores"]["estimate"], atol=1e-9)
    np.testing.assert_allclose(live["citations"]["bt"]["estimate"],
                               REF["citations"]["bt"]["estimate"], atol=1e-9)
