"""Pairwise comparisons of many systems (NLPStatTest Figure 4) and their adjustment."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from nlpower.errors import InputError
from nlpower.paired import adjust_pvalues, compare, pairwise

GEN = np.random.default_rng(0)
BASE = GEN.uniform(0, 1, 150)
SCORES = {"A": BASE + 0.08 + GEN.normal(0, 0.1, 150), "B": BASE + GEN.normal(0, 0.1, 150),
          "C": BASE + GEN.normal(0, 0.1, 150), "D": BASE + 0.05 + GEN.normal(0, 0.1, 150)}


@pytest.mark.parametrize("method, sm", [("holm", "holm"), ("bonferroni", "bonferroni")])
def test_adjustment_matches_statsmodels(method, sm):
    p = np.array([0.3, 0.01, 0.2, 0.04, 0.01, 0.5, 0.0001])     # unsorted, with a tie
    assert adjust_pvalues(p, method) == pytest.approx(multipletests(p, method=sm)[1], rel=1e-12)
    assert np.array_equal(adjust_pvalues(p, "none"), p)


def test_pairs_agree_with_compare_and_are_adjusted():
    res = pairwise(SCORES, test="wilcoxon", adjust="bonferroni", rng=1)
    assert len(res.comparisons) == 6 and res.systems == ("A", "B", "C", "D")
    ab = compare(SCORES["A"], SCORES["B"], test="wilcoxon")
    got = res.to_frame().set_index(["a", "b"]).loc[("A", "B")]
    assert got["pvalue"] == pytest.approx(ab.pvalue, rel=1e-12)
    assert got["p_adjusted"] == pytest.approx(min(1.0, 6 * ab.pvalue), rel=1e-12)
    mat = res.matrix()
    assert np.allclose(mat.to_numpy(), mat.to_numpy().T, equal_nan=True)
    assert np.isnan(np.diag(mat.to_numpy())).all()
    assert mat.loc["A", "B"] < 0.05 and mat.loc["B", "C"] > 0.05
    assert "bonferroni adjustment over 6 pairs" in res.summary()
    assert "pairs=6" in repr(res)


def test_all_pairs_share_one_shuffle():
    res = pairwise(SCORES, test="t", eu_size=5, shuffle=True, rng=4)
    ab, ac = res.comparisons[0], res.comparisons[1]
    assert np.array_equal(ab.units.a, ac.units.a)              # A's units are the same
    assert ab.units.eu_size == 5 and ab.units.n_instances == 150 and ab.units.shuffle


def test_dataframe_input_and_heatmap():
    res = pairwise(pd.DataFrame(SCORES), test="sign", rng=0)
    fig = res.plot()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["A", "B", "C", "D"]
    fig.clf()


@pytest.mark.parametrize("scores, kwargs, match", [
    ({"A": [1, 2, 3]}, {}, r"scores must hold at least 2 systems; got 1"),
    ({"A": [1, 2, 3, 4], "B": [1, 2, 3]}, {}, "every system needs one score per test instance"),
    ([1, 2, 3], {}, "scores must be a mapping from system name to scores"),
    ({"A": [1, 2, 3], "B": [3, 2, 1]}, {"adjust": "fdr"}, "adjust must be one of 'holm', "
                                                          "'bonferroni', 'none'; got 'fdr'"),
    ({"A": [1, 2, 3, 4], "B": [3, 2, 1, 0]}, {"eu_size": 2}, r"give 2 evaluation unit\(s\)"),
])
def test_pairwise_errors(scores, kwargs, match):
    with pytest.raises(InputError, match=match):
        pairwise(scores, **kwargs)
