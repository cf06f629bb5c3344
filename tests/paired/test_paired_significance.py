"""Every paired test against scipy, statsmodels or R (published worked examples).

R values are pinned in tests/reference/paired_reference.json, written by
tests/reference/paired_reference.R (Hollander & Wolfe 1973 p. 29 Table 3.1;
Student 1908 sleep data).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.descriptivestats import sign_test as sm_sign_test

from conftest import REFERENCE, run_rscript
from nlpower.errors import InputError
from nlpower.paired import compare
from nlpower.paired.effects import walsh_quantile
from nlpower.paired.significance import TESTS, _qsignrank, run_test

REF = json.loads((REFERENCE / "paired_reference.json").read_text())
ALTS = ("two-sided", "greater", "less")


def _f(v):
    return {"Inf": np.inf, "-Inf": -np.inf}.get(v, v) if isinstance(v, str) else v


def _run(test, d, alternative="two-sided", alpha=0.05, delta=0.0, center="mean", n_resamples=9999,
         seed=1):
    return run_test(test, np.asarray(d, float), alternative=alternative, alpha=alpha, delta=delta,
                    center=center, n_resamples=n_resamples, seq=np.random.SeedSequence(seed))


@pytest.mark.parametrize("alt", ALTS)
def test_wilcoxon_matches_r_hollander_wolfe(alt):
    # Hollander & Wolfe (1973) p. 29: V = 40, p = 0.039 (two-sided); R wilcox.test exact.
    ref = REF["depression"]["wilcoxon"][alt]
    x, y = np.array(REF["depression"]["x"]), np.array(REF["depression"]["y"])
    res = compare(x, y, test="wilcoxon", alternative=alt)
    assert res.statistic == ref["statistic"]
    assert res.pvalue == pytest.approx(ref["pvalue"], rel=1e-12)
    assert res.estimate == pytest.approx(ref["estimate"], abs=1e-12)
    assert (res.ci.low, res.ci.high) == pytest.approx(tuple(map(_f, ref["ci"])), abs=1e-12)


@pytest.mark.parametrize("alt", ALTS)
@pytest.mark.parametrize("data", ["depression", "sleep"])
def test_t_matches_r(alt, data):
    # R t.test(paired = TRUE); sleep: Student (1908), t = -4.0621, p = 0.00283 two-sided.
    ref = REF[data]["t"][alt]
    keys = ("x", "y") if data == "depression" else ("drug1", "drug2")
    a, b = (np.array(REF[data][k]) for k in keys)
    res = compare(a, b, test="t", alternative=alt)
    assert res.statistic == pytest.approx(ref["statistic"], rel=1e-10)
    assert res.pvalue == pytest.approx(ref["pvalue"], rel=1e-9)
    assert (res.ci.low, res.ci.high) == pytest.approx(tuple(map(_f, ref["ci"])), rel=1e-9)


@pytest.mark.parametrize("alt", ALTS)
@pytest.mark.parametrize("data", ["depression", "sleep"])
def test_sign_test_matches_r_binom_test(alt, data):
    ref = REF[data]["sign"][alt]
    keys = ("x", "y") if data == "depression" else ("drug1", "drug2")
    a, b = (np.array(REF[data][k]) for k in keys)
    res = compare(a, b, test="sign", alternative=alt)
    assert res.statistic == ref["statistic"]
    assert res.pvalue == pytest.approx(ref["pvalue"], rel=1e-12)


def test_sign_test_matches_statsmodels_and_drops_zeros():
    d = np.array([0.3, -0.1, 0.0, 0.2, 0.5, 0.4, 0.0, 0.1, 0.25, -0.05, 0.6, 0.7])
    _, p_sm = sm_sign_test(d, 0.0)                       # two-sided, zeros dropped
    assert _run("sign", d).pvalue == pytest.approx(p_sm, rel=1e-12)


def test_sign_test_interval_is_the_order_statistic_interval():
    # n = 10, alpha = 0.05: P(Bin(10, 1/2) <= 1) = 11/1024 <= 0.025 < P(<= 2) = 56/1024,
    # so the two-sided 95% interval is [d_(2), d_(9)] (coverage 1 - 22/1024 = 97.9%).
    d = np.array([5.0, 1.0, 9.0, 3.0, 7.0, 2.0, 8.0, 4.0, 10.0, 6.0])
    res = _run("sign", d)
    assert (res.ci.low, res.ci.high) == (2.0, 9.0)
    # one-sided 95%: P(Bin <= 1) = 0.0107 <= 0.05 < P(<= 2) = 0.0547 -> [d_(2), inf)
    assert (_run("sign", d, alternative="greater").ci.low, _run("sign", d, "greater").ci.high) \
        == (2.0, np.inf)


@pytest.mark.parametrize("alt", ALTS)
def test_wilcoxon_with_ties_and_zeros_matches_scipy(alt):
    d = np.array([0.5, -0.5, 1.0, 1.0, 2.0, 0.0, 3.0, -1.0, 2.0, 2.0, 4.0, 0.5] * 5)
    expected = stats.wilcoxon(d, alternative=alt)
    res = _run("wilcoxon", d, alternative=alt)
    assert res.pvalue == pytest.approx(expected.pvalue, rel=1e-12)


@pytest.mark.parametrize("alt", ALTS)
def test_t_with_delta_matches_scipy(alt):
    d = np.random.default_rng(3).normal(0.2, 1.0, 25)
    ref = stats.ttest_1samp(d, 0.1, alternative=alt)
    res = _run("t", d, alternative=alt, delta=0.1)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-12)


# --- the direction of one-sided tests (NLPStatTest reverses one-sided Wilcoxon p-values) -----


@pytest.mark.parametrize("test", list(TESTS))
def test_one_sided_p_values_point_the_right_way(test):
    # A clearly better than B: "greater" must be small, "less" large, for every test.
    gen = np.random.default_rng(5)
    b = gen.uniform(0, 1, 30)
    a = b + gen.normal(0.5, 0.3, 30)
    greater = compare(a, b, test=test, alternative="greater", n_resamples=2000, rng=1)
    less = compare(a, b, test=test, alternative="less", n_resamples=2000, rng=1)
    assert greater.pvalue < 0.01 < 0.9 < less.pvalue
    assert greater.ci.low > 0 and greater.ci.high == np.inf
    assert less.ci.low == -np.inf


def test_wilcoxon_one_sided_is_the_mirror_image():
    # Swapping A and B swaps "greater" and "less" (exact scipy p-values, Hollander & Wolfe data).
    x, y = np.array(REF["depression"]["x"]), np.array(REF["depression"]["y"])
    g = compare(x, y, test="wilcoxon", alternative="greater").pvalue
    l_swapped = compare(y, x, test="wilcoxon", alternative="less").pvalue
    assert g == pytest.approx(l_swapped, rel=1e-12) == pytest.approx(0.01953125)


# --- resampling tests ------------------------------------------------------------------------


@pytest.mark.parametrize("alt", ALTS)
@pytest.mark.parametrize("center", ["mean", "median"])
def test_exact_permutation_matches_scipy_permutation_test(alt, center):
    # 2^11 = 2048 <= n_resamples: all sign flips, as scipy's exact 'samples' permutation test.
    gen = np.random.default_rng(11)
    b = gen.normal(0, 1, 11)
    a = b + gen.normal(0.4, 1, 11)
    fn = np.mean if center == "mean" else np.median

    def statistic(x, y, axis):
        return fn(x - y, axis=axis)

    ref = stats.permutation_test((a, b), statistic, permutation_type="samples",
                                 alternative=alt, n_resamples=10_000, vectorized=True)
    res = _run("permutation", a - b, alternative=alt, center=center, n_resamples=10_000)
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-12)
    assert res.n_resamples == 0 and "exact" in res.note


def test_resampled_p_values_have_the_plus_one_correction():
    # All 40 differences positive: no resample is as extreme as the data, so p = 1 / (B + 1).
    d = np.linspace(1.0, 2.0, 40)
    for test in ("bootstrap_percentile", "permutation"):
        assert _run(test, d, alternative="greater", n_resamples=999).pvalue == 1 / 1000
    assert _run("permutation", d, n_resamples=999).pvalue == 2 / 1000   # two-sided: 2 min


def test_bootstrap_resamples_pairs_not_systems():
    # A = B + 0.1 exactly, with B spread widely: every paired resample of the differences has
    # mean 0.1, so the percentile interval is [0.1, 0.1]; resampling A and B independently
    # would give an interval as wide as the spread of B (about +-0.2 here).
    b = np.random.default_rng(2).uniform(0, 1, 50)
    a = b + 0.1
    for test in ("bootstrap_percentile", "permutation"):
        res = compare(a, b, test=test, n_resamples=500, rng=3)
        assert res.ci.high - res.ci.low < 1e-9, test
    # the bootstrap-t of differences equal up to rounding would studentise rounding noise
    with pytest.raises(InputError, match="bootstrap_t' is undefined here"):
        compare(a, b, test="bootstrap_t", n_resamples=500, rng=3)
    pct = compare(a, b, test="bootstrap_percentile", n_resamples=500, rng=3)
    assert pct.ci.low == pytest.approx(0.1) and pct.pvalue == 2 / 501


def test_bootstrap_t_interval_close_to_t_interval_for_normal_data():
    # For normal differences the bootstrap-t interval estimates the t interval; Monte Carlo
    # error of its endpoints with B = 20000 is well below 5% of the half-width.
    d = np.random.default_rng(8).normal(0.3, 1.0, 60)
    t = _run("t", d)
    bt = _run("bootstrap_t", d, n_resamples=20_000)
    half = (t.ci.high - t.ci.low) / 2
    assert abs(bt.ci.low - t.ci.low) < 0.1 * half and abs(bt.ci.high - t.ci.high) < 0.1 * half
    assert bt.pvalue == pytest.approx(t.pvalue, abs=0.01)


def test_permutation_interval_inverts_the_test():
    # delta just inside the interval is not rejected, just outside is (same sign vectors).
    d = np.random.default_rng(4).normal(0.5, 1.0, 30)
    res = _run("permutation", d, n_resamples=4000)
    eps = 1e-3
    for edge, inside in ((res.ci.low, res.ci.low + eps), (res.ci.high, res.ci.high - eps)):
        assert _run("permutation", d, delta=inside, n_resamples=4000).pvalue > 0.05
        outside = 2 * edge - inside
        assert _run("permutation", d, delta=outside, n_resamples=4000).pvalue <= 0.05


def test_percentile_bootstrap_test_inverts_its_interval():
    # The p-value is the share of bootstrap estimates on the null side, so it crosses alpha
    # where delta crosses an interval end -- up to the +1 correction (2 / (B + 1)).
    d = np.random.default_rng(6).normal(0.3, 1.0, 40)
    b = 3000
    res = _run("bootstrap_percentile", d, n_resamples=b)
    for edge, inside in ((res.ci.low, res.ci.low + 1e-3), (res.ci.high, res.ci.high - 1e-3)):
        outside = edge + (edge - inside) * 1e-3
        assert _run("bootstrap_percentile", d, delta=inside, n_resamples=b).pvalue > 0.05
        assert _run("bootstrap_percentile", d, delta=outside, n_resamples=b).pvalue \
            <= 0.05 + 2 / (b + 1)


@pytest.mark.slow
@pytest.mark.parametrize("test", ["bootstrap_t", "bootstrap_percentile", "permutation", "sign",
                                  "wilcoxon", "t"])
def test_type_one_error_at_most_alpha(test):
    # Under H0 (symmetric differences around 0) each test rejects at most alpha of the time;
    # tolerance 3 Monte Carlo SEs of a proportion alpha over R replicates.
    reps, alpha = 600, 0.05
    gen = np.random.default_rng(20)
    rejections = sum(
        compare(gen.normal(0, 1, 25), np.zeros(25), test=test, n_resamples=999,
                rng=i).pvalue < alpha for i in range(reps))
    assert rejections / reps <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / reps)


def test_wilcoxon_interval_normal_approximation_is_within_a_rank_of_exact():
    # n >= 50 uses the normal approximation of the signed-rank quantile; the exact quantile
    # (R's qsignrank, computed by recursion) differs by at most one rank, so the interval ends
    # are neighbouring Walsh averages.
    d = np.random.default_rng(9).normal(0.2, 1.0, 60)
    res = _run("wilcoxon", d)
    assert "normal-approximation" in res.note
    qu = _qsignrank(0.025, 60)
    neighbours = [walsh_quantile(d, k) for k in (qu - 1, qu, qu + 1)]
    assert min(abs(res.ci.low - v) for v in neighbours) < 1e-12
    # R: qsignrank(0.025, 9) = 6 for the depression data (lower end diffs[6] = 0.01)
    assert _qsignrank(0.025, 9) == 6


@pytest.mark.requires_r
def test_pinned_r_values_are_what_the_script_prints():
    live = json.loads(run_rscript(REFERENCE / "paired_reference.R"))
    for key in ("depression", "sleep", "power_t_test"):
        assert live[key] == REF[key]
