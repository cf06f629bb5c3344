"""Replicability analysis (Dror et al. 2017): partial conjunction, k_hat, Holm."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

import nlpower
from nlpower.errors import InputError
from nlpower.partial_conjunction import (
    IndependenceAssumptionWarning,
    holm,
    holm_adjust,
    parse_pvalues,
    partial_conjunction_pvalues,
    read_pvalues,
    replicability,
)


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IndependenceAssumptionWarning)
        return replicability(*args, **kwargs)


# --- worked example ----------------------------------------------------------------------------
# The seed's rendering (shared/seeds/004) keeps the method but not the numbers of the paper's
# toy examples, so this worked example is computed by hand from Dror et al. (2017) sec. 4:
# N = 5 datasets with one-sided p-values (input order) 0.012, 0.003, 0.047, 0.26, 0.009.
# Sorted: p_(1..5) = 0.003, 0.009, 0.012, 0.047, 0.26.
P = [0.012, 0.003, 0.047, 0.26, 0.009]


def test_worked_example_bonferroni():
    # p^{u/N}_Bonf = (N - u + 1) p_(u): 5*0.003 = 0.015, 4*0.009 = 0.036, 3*0.012 = 0.036,
    # 2*0.047 = 0.094, 1*0.26 = 0.26 (already non-decreasing).  At alpha = 0.05: u = 1, 2, 3
    # rejected -> k_hat = 3.  Holm: 0.003 <= 0.05/5, 0.009 <= 0.05/4, 0.012 <= 0.05/3,
    # 0.047 > 0.05/2 -> datasets 2, 5, 1 (1-based, input order 1, 2, 5).
    res = replicability(P, alpha=0.05)
    assert res.partial_conjunction.to_numpy() == pytest.approx([0.015, 0.036, 0.036, 0.094, 0.26])
    assert res.k_hat == 3
    assert res.identified == (1, 2, 5)
    assert list(res.partial_conjunction.index) == [1, 2, 3, 4, 5]


def test_worked_example_fisher():
    # p^{u/N}_Fisher = P(chi2_{2(N-u+1)} >= -2 sum_{i >= u} log p_(i)):
    #   u = 5: -2 log 0.26 = 2.6941, df 2 -> 0.26
    #   u = 4: -2 (log 0.047 + log 0.26) = 8.8094, df 4 -> 0.06605 > 0.05
    #   u = 3: + (-2 log 0.012) = 17.6551, df 6 -> 0.007155 <= 0.05
    #   u = 2: 27.0761, df 8 -> 0.000686;  u = 1: 38.6944, df 10 -> 2.87e-5
    # (non-decreasing already, so the running maximum changes nothing) -> k_hat = 3.
    res = _quiet(P, alpha=0.05, method="fisher")
    assert res.partial_conjunction.to_numpy() == pytest.approx(
        [2.8715e-5, 6.859e-4, 7.1546e-3, 0.066045, 0.26], rel=2e-4)
    assert stats.chi2.sf(8.8094, 4) == pytest.approx(0.066045, rel=1e-4)     # the table value
    assert res.k_hat == 3
    assert res.identified == (1, 2, 5)                 # identification is Holm either way


def test_fisher_u1_is_fishers_combined_p_value():
    p = [0.2, 0.04, 0.5, 0.01, 0.7, 0.33]
    first = partial_conjunction_pvalues(p, "fisher")[0]
    assert first == pytest.approx(stats.combine_pvalues(p, method="fisher").pvalue, rel=1e-12)


def test_holm_matches_statsmodels_including_permutation_sensitive_orders():
    # p = [0.3, 0.01, 0.2]: argsort = [1, 2, 0] but its inverse is [2, 0, 1]; un-sorting with
    # argsort (the popular port's bug) would give adjusted p-values to the wrong datasets.
    for p in ([0.3, 0.01, 0.2], [0.04, 0.001, 0.03, 0.2, 0.012, 0.01],
              list(np.random.default_rng(0).uniform(0, 0.1, 12))):
        ref = multipletests(p, method="holm")
        assert holm_adjust(p) == pytest.approx(ref[1], rel=1e-12)
        assert np.array_equal(holm(p, 0.05), ref[0])
    wrong = np.minimum.accumulate(np.array([0.3, 0.01, 0.2])[np.argsort([0.3, 0.01, 0.2])])
    assert not np.allclose(holm_adjust([0.3, 0.01, 0.2]), wrong)


def test_running_maximum_makes_k_hat_agree_with_holm():
    # Raw Bonferroni p^{u/N}: 4*0.001 = 0.004, 3*0.04 = 0.12, 2*0.041 = 0.082, 1*0.042 = 0.042.
    # Without the running maximum max{u : p^{u/N} <= 0.05} would be 4 ("A wins on all four")
    # although Holm identifies only one dataset; with it, 0.004, 0.12, 0.12, 0.12 -> k_hat = 1.
    p = [0.042, 0.001, 0.041, 0.04]
    res = replicability(p)
    assert res.partial_conjunction.to_numpy() == pytest.approx([0.004, 0.12, 0.12, 0.12])
    assert res.k_hat == 1 == len(res.identified)
    assert res.identified == (2,)


def test_bonferroni_k_hat_equals_the_holm_count():
    gen = np.random.default_rng(1)
    for _ in range(200):
        p = gen.uniform(0, 0.2, gen.integers(1, 15))
        res = replicability(p, alpha=0.05)
        assert res.k_hat == int(holm(p, 0.05).sum())


def test_labelled_inputs_name_the_datasets():
    named = {"books": 0.001, "dvd": 0.02, "kitchen": 0.04, "music": 0.3}
    assert replicability(named).identified == ("books",)
    series = pd.Series(named)
    res = replicability(series)
    assert res.labels == ("books", "dvd", "kitchen", "music") and res.identified == ("books",)
    frame = res.to_frame()
    assert list(frame["dataset"]) == ["books", "dvd", "kitchen", "music"]
    assert list(frame["identified"]) == [True, False, False, False]
    # an unlabelled Series (RangeIndex) is positional
    assert replicability(pd.Series([0.001, 0.5])).identified == (1,)


def test_fisher_warns_about_independence():
    with pytest.warns(IndependenceAssumptionWarning, match="assumes the datasets are independent"):
        res = replicability(P, method="fisher")
    assert "independent" in res.summary()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replicability(P, method="bonferroni")             # no warning


def test_summary_and_repr():
    res = replicability(P)
    text = res.summary()
    assert "at least k_hat = 3 of 5 datasets" in text and "identification (Holm" in text
    assert repr(res) == ("ReplicabilityResult(method='bonferroni', alpha=0.05, k_hat=3/5, "
                         "identified=[1, 2, 5])")


def test_top_level_name_is_the_function():
    assert nlpower.replicability is replicability


# --- P(k_hat > k) <= alpha under each method's assumptions -----------------------------------


def _overestimation_rate(method, reps, n, k, rho, seed):
    """Share of replicates with k_hat > k; k strong effects, N - k true nulls (uniform p)."""
    gen = np.random.default_rng(seed)
    shared = gen.normal(size=(reps, 1))
    z = np.sqrt(rho) * shared + np.sqrt(1 - rho) * gen.normal(size=(reps, n))
    z[:, :k] += 6.0                                     # effects: p-values near 0
    p = stats.norm.sf(z)
    k_hat = np.array([_quiet(row, alpha=0.05, method=method).k_hat for row in p])
    naive = np.sum(p <= 0.05, axis=1)                   # "count the significant datasets"
    return float(np.mean(k_hat > k)), float(np.mean(naive > k))


@pytest.mark.parametrize("method, rho", [("bonferroni", 0.0), ("bonferroni", 0.7),
                                         ("fisher", 0.0)])
def test_k_hat_overestimates_at_most_alpha(method, rho):
    # Bonferroni holds under any dependence (equicorrelated z, rho = 0.7), Fisher under
    # independence.  With strong effects on k datasets the bound is nearly attained for Fisher
    # (p^{(k+1)/N} combines exactly the N - k null p-values).  Tolerance: 3 binomial SEs at alpha.
    reps, alpha = 1500, 0.05
    rate, naive = _overestimation_rate(method, reps, n=8, k=3, rho=rho, seed=7)
    se = np.sqrt(alpha * (1 - alpha) / reps)
    assert rate <= alpha + 3 * se
    assert naive > alpha + 3 * se                       # the check can fail: naive counting does
    if method == "fisher":
        assert rate >= alpha - 4 * se                   # calibrated, not vacuously conservative


# --- inputs ------------------------------------------------------------------------------------


@pytest.mark.parametrize("pvalues, kwargs, match", [
    ([0.1, 1.2], {}, r"pvalues must lie in \[0, 1\]; got 1.2 for dataset position 2"),
    ({"a": 0.1, "b": -0.1}, {}, r"got -0.1 for dataset b"),
    ([], {}, "pvalues must be a non-empty 1-d list"),
    ("0.1", {}, "pvalues must be a sequence of p-values"),
    ([0.1, "x"], {}, r"pvalues must be numbers in \[0, 1\]"),
    ([0.1], {"method": "stouffer"}, "method must be one of 'bonferroni', 'fisher'; got 'stouffer'"),
    ([0.1], {"alpha": 1.0}, "alpha must be < 1.0; got 1.0"),
])
def test_errors(pvalues, kwargs, match):
    with pytest.raises(InputError, match=match):
        replicability(pvalues, **kwargs)


def test_parse_and_read_pvalues(tmp_path):
    assert parse_pvalues(["0.1", "0.02"]) == [0.1, 0.02]
    assert parse_pvalues(["en=0.1", "de=0.02"]) == {"en": 0.1, "de": 0.02}
    with pytest.raises(InputError, match="give every p-value a name"):
        parse_pvalues(["en=0.1", "0.02"])
    with pytest.raises(InputError, match="'abc' is not a p-value"):
        parse_pvalues(["abc"])
    with pytest.raises(InputError, match="dataset name 'en' is given twice"):
        parse_pvalues(["en=0.1", "en=0.2"])
    f = tmp_path / "p.csv"
    f.write_text("dataset,pvalue\nen,0.01\n# comment\nde,0.3\n")
    assert read_pvalues(f) == {"en": 0.01, "de": 0.3}
    g = tmp_path / "p.txt"
    g.write_text("0.01\n\n0.3\n")
    assert read_pvalues(g) == [0.01, 0.3]
    bad = tmp_path / "bad.txt"
    bad.write_text("a b c\n")
    with pytest.raises(InputError, match="line 1 is 'a b c'"):
        read_pvalues(bad)
    with pytest.raises(InputError, match="does not exist"):
        read_pvalues(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    with pytest.raises(InputError, match="no p-values found"):
        read_pvalues(empty)
