"""Several systems: pairwise and many-to-one comparisons with multiplicity control."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower.errors import InputError
from nlpower.study.multiple import adjust_pvalues


@pytest.fixture(scope="module")
def fit():
    rng = np.random.default_rng(3)
    rows = [(w, i, s) for w in range(12) for i in range(20) for s in "ABCD"]
    d = pd.DataFrame(rows, columns=["worker", "item", "system"])
    d["rating"] = (rng.normal(size=len(d)) + d.system.map({"A": 0.0, "B": 0.1, "C": 0.3, "D": 0.6})
                   + 0.3 * rng.normal(size=12)[d.worker] + 0.3 * rng.normal(size=20)[d.item])
    return nlpower.lmer("rating ~ system + (1 | worker) + (1 | item)", d, REML=False)


def test_adjustments_match_p_adjust():
    p = np.array([[0.01, 0.02, 0.03, 0.5]])
    # R: p.adjust(c(.01,.02,.03,.5), "holm") = 0.04 0.06 0.06 0.50; "BH" = 0.04 0.04 0.04 0.50
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), [[0.04, 0.06, 0.06, 0.5]])
    np.testing.assert_allclose(adjust_pvalues(p, "fdr"), [[0.04, 0.04, 0.04, 0.5]])
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [[0.04, 0.08, 0.12, 1.0]])


def test_all_pairs_power_and_best(fit):
    res = nlpower.power(fit, pairwise="system", n_sims=100, rng=1)
    frame = res.to_frame()
    assert len(frame) == 6 and set(frame.comparison) >= {"B - A", "D - C"}
    truth = dict(zip(frame.comparison, frame.true_difference, strict=True))
    fx = fit.fixef
    assert truth["D - A"] == pytest.approx(float(fx["systemD"]))
    assert truth["D - B"] == pytest.approx(float(fx["systemD"] - fx["systemB"]))
    # all true differences detected <= each one <= any
    assert res.n_all <= min(mc.n_rejected for mc in res.per_comparison) <= res.n_any
    assert 0 <= res.power_best <= 1 and "best level declared best" in res.summary()


def test_familywise_error_under_the_null_is_held_by_holm(fit):
    null = fit.with_params(fixef={"systemB": 0.0, "systemC": 0.0, "systemD": 0.0})
    n = 200
    res = nlpower.power(null, pairwise="system", n_sims=n, rng=2)
    assert math.isnan(res.power_any)
    # Holm keeps the family-wise error at or below alpha: 3 MC SEs of room above it
    assert res.familywise_error <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n)
    none = nlpower.power(null, pairwise="system", adjust="none", n_sims=n, rng=2)
    assert none.familywise_error >= res.familywise_error


def test_many_to_one(fit):
    res = nlpower.power(fit, pairwise="system", baseline="A", test="z", n_sims=50, rng=3)
    assert res.labels == ("B - A", "C - A", "D - A") and res.n_best == -1


@pytest.mark.parametrize("kwargs,match", [
    ({"pairwise": "worker"}, "not in the fixed part"),
    ({"pairwise": "sys"}, "not a column"),
    ({"pairwise": "system", "baseline": "Z"}, "not a level"),
    ({"pairwise": "system", "adjust": "tukey"}, "adjust must be one of"),
    ({"pairwise": "system", "test": "lrt"}, "Wald tests"),
    ({"baseline": "A", "term": "systemB"}, "goes with pairwise"),
])
def test_refusals(fit, kwargs, match):
    with pytest.raises(InputError, match=match):
        nlpower.power(fit, n_sims=10, rng=1, **kwargs)
