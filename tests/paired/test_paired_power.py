"""Prospective and retrospective power (NLPStatTest sec. 3.4) against statsmodels and R."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import TTestPower

from conftest import REFERENCE
from nlpower.errors import InputError
from nlpower.paired import (
    PairedPowerResult,
    compare,
    observed_power,
    power_curve,
    retrospective_power,
    sample_size,
    t_power,
)

REF = json.loads((REFERENCE / "paired_reference.json").read_text())
SM_ALT = {"two-sided": "two-sided", "greater": "larger", "less": "smaller"}


@pytest.mark.parametrize("n, mean, sd, alt", [(10, 0.5, 1.0, "two-sided"), (34, 0.5, 1.0, "greater"),
                                              (200, -0.1, 0.6, "less"), (50, -0.3, 1.0, "two-sided")])
def test_t_power_matches_statsmodels(n, mean, sd, alt):
    sm = TTestPower().power(effect_size=mean / sd, nobs=n, alpha=0.05, alternative=SM_ALT[alt])
    if alt == "two-sided":
        # statsmodels counts both tails; nlpower only sign-correct rejections: subtract the
        # wrong-sign tail P(T' < -c) (or P(T' > c) for a negative effect).
        c = stats.t.isf(0.025, n - 1)
        ncp = abs(mean) / sd * math.sqrt(n)
        sm -= stats.nct.cdf(-c, n - 1, ncp)
    assert t_power(n, mean, sd, alternative=alt) == pytest.approx(sm, rel=1e-9)


def test_sample_size_matches_r_power_t_test():
    # R power.t.test(type = "paired"): n is the real root; the sample size is its ceiling.
    for case in REF["power_t_test"]:
        if "n" in case and "power" in case and isinstance(case.get("n"), float) \
                and case["n"] != int(case["n"]):
            alt = case["alternative"]
            res = sample_size(case["delta"], case["sd"], target_power=case["power"],
                              alpha=case["sig.level"], alternative=alt)
            assert res.n == math.ceil(case["n"]), case
            assert res.power >= case["power"]
            assert t_power(res.n - 1, case["delta"], case["sd"], alpha=case["sig.level"],
                           alternative=alt) < case["power"]
    fixed = REF["power_t_test"][2]             # power.t.test(n = 30, delta = .1, sd = .25, strict = FALSE)
    assert t_power(30, 0.1, 0.25) == pytest.approx(fixed["power"], rel=1e-6)


def test_sample_size_matches_statsmodels_solve_power():
    for d, power, alt in [(0.5, 0.8, "two-sided"), (0.2, 0.9, "greater"), (0.8, 0.95, "two-sided")]:
        n = TTestPower().solve_power(effect_size=d, power=power, alpha=0.05,
                                     alternative=SM_ALT[alt])
        assert sample_size(d, 1.0, target_power=power, alternative=alt).n == math.ceil(n)


def test_sample_size_summary_and_errors():
    res = sample_size(0.02, 0.1)                 # d = 0.2 -> 199 units (statsmodels: 198.15)
    assert res.n == 199 and "199 evaluation units" in res.summary()
    assert res.to_frame()["n"].iloc[0] == 199
    with pytest.raises(InputError, match="mean=-0.1 cannot be detected with alternative='greater'"):
        sample_size(-0.1, 1.0, alternative="greater")
    with pytest.raises(InputError, match="sd must be > 0.0; got 0.0"):
        sample_size(0.1, 0.0)
    with pytest.raises(InputError, match="more than max_n=100 units are needed"):
        sample_size(0.01, 1.0, max_n=100)


def test_power_curve_is_exact_and_increasing():
    curve = power_curve([5, 10, 20, 40], 0.5, 1.0)
    assert np.all(np.diff(curve.power) > 0)
    assert curve.to_frame()["n_sims"].eq(0).all()
    assert all(r.ci.low == r.ci.high == r.power for r in curve.results)
    assert curve.power[2] == pytest.approx(t_power(20, 0.5, 1.0))


@pytest.mark.parametrize("test", ["t", "wilcoxon", "sign"])
def test_monte_carlo_power_matches_exact_t_power(test):
    # Normal differences: the simulated t-test power estimates the exact power (within 4
    # Monte Carlo SEs); Wilcoxon and sign tests have less power than t (ARE 0.955, 0.637).
    d = np.random.default_rng(0).normal(size=50)
    n_sims = 2000
    curve = retrospective_power(d, sizes=[20, 40], test=test, mean=0.4, sd=1.0, n_sims=n_sims,
                                rng=1)
    exact = np.array([t_power(20, 0.4, 1.0), t_power(40, 0.4, 1.0)])
    se = np.sqrt(exact * (1 - exact) / n_sims)
    if test == "t":
        assert np.all(np.abs(curve.power - exact) < 4 * se)
    else:
        assert np.all(curve.power < exact + 4 * se)
        assert np.all(curve.power > 0.5 * exact)
    assert curve.results[0].n_sims == n_sims
    assert curve.results[0].ci.low < curve.results[0].power < curve.results[0].ci.high


def test_bootstrap_power_reproducible_and_seeded():
    d = np.random.default_rng(3).normal(0.3, 1.0, 60)
    one = retrospective_power(d, sizes=[30, 60], method="bootstrap", n_sims=300, rng=5)
    two = retrospective_power(d, sizes=[30, 60], method="bootstrap", n_sims=300, rng=5)
    other = retrospective_power(d, sizes=[30, 60], method="bootstrap", n_sims=300, rng=6)
    assert np.array_equal(one.power, two.power)
    assert not np.array_equal(one.power, other.power)
    assert one.observed_effect and "transformation of the p-value" in one.summary()
    assert one.effect == pytest.approx(d.mean())


def test_bootstrap_power_of_a_null_sample_stays_near_alpha_over_two():
    # Resampling a sample centred exactly at 0: sign-correct rejections happen with prob
    # <= alpha/2 (two-sided), up to Monte Carlo error and the discreteness of the bootstrap.
    d = np.random.default_rng(4).normal(0, 1, 80)
    d = d - d.mean()
    curve = retrospective_power(d, sizes=[80], method="bootstrap", n_sims=2000, rng=1)
    assert curve.power[0] <= 0.025 + 4 * np.sqrt(0.025 * 0.975 / 2000)


def test_type_s_and_type_m_from_simulation():
    # Small effect, small n: significant estimates exaggerate (Type-M > 1) and some have the
    # wrong sign; compare with the exact Type-S of the t test.
    d = np.random.default_rng(0).normal(size=10)
    curve = retrospective_power(d, sizes=[10], mean=0.05, sd=1.0, n_sims=4000, rng=2)
    r = curve.results[0]
    assert r.type_m > 3
    assert 0 < r.type_s < 0.5
    exact = power_curve([10], 0.05, 1.0).results[0].type_s
    sig = r.n_sims * (r.power) / (1 - r.type_s)                 # significant replicates
    assert abs(r.type_s - exact) < 4 * np.sqrt(exact * (1 - exact) / sig)


def test_record_round_trip():
    curve = retrospective_power(np.random.default_rng(1).normal(0.2, 1, 40), sizes=[20],
                                n_sims=100, rng=3)
    r = curve.results[0]
    rec = r.to_record()
    assert json.loads(json.dumps(rec)) == rec
    back = PairedPowerResult.from_record(rec)
    assert back.power == r.power and back.seed == r.seed and back.ci.low == r.ci.low


def test_observed_power_is_a_transformation_of_the_p_value():
    # Two samples with the same n and the same t statistic (hence p) have the same observed
    # power whatever their scale; at p = alpha it is about one half.
    gen = np.random.default_rng(5)
    d = gen.normal(0.2, 1.0, 40)
    scaled = 7.0 * d + 0.0
    r1, r2 = compare(d, np.zeros(40), test="t"), compare(scaled, np.zeros(40), test="t")
    assert r1.pvalue == pytest.approx(r2.pvalue) and r1.observed_power == pytest.approx(
        r2.observed_power)
    n = 40
    t_crit = stats.t.isf(0.025, n - 1)
    mean_at_alpha = t_crit / math.sqrt(n)                    # sd = 1: t = t_crit, p = 0.05
    assert observed_power(n, mean_at_alpha, 1.0) == pytest.approx(0.5, abs=0.02)
    assert "transformation of the p-value" in r1.summary()


def test_retrospective_power_from_a_compare_result_uses_its_settings():
    gen = np.random.default_rng(6)
    b = gen.uniform(0, 1, 90)
    a = b + gen.exponential(0.05, 90)
    res = compare(a, b, test="bootstrap_percentile", alternative="greater", alpha=0.01,
                  n_resamples=500, rng=1)
    curve = res.power_curve(sizes=[30], n_sims=200, rng=2)
    assert (curve.test, curve.alpha, curve.alternative) == ("sign", 0.01, "greater")
    assert "closed-form counterpart" in curve.note


@pytest.mark.parametrize("kwargs, match", [
    ({"sizes": [1, 5]}, r"sizes must be a non-empty list of integers >= 2"),
    ({"sizes": [2.5]}, r"sizes must be a non-empty list of integers >= 2"),
    ({"method": "jackknife"}, "method must be one of 'normal', 'bootstrap'; got 'jackknife'"),
    ({"test": "bootstrap_t"}, "test must be one of 't', 'wilcoxon', 'sign'; got 'bootstrap_t'"),
    ({"method": "bootstrap", "mean": 0.1}, "mean= and sd= apply to method='normal'"),
    ({"n_sims": 0}, "n_sims must be >= 1; got 0"),
])
def test_retrospective_power_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        retrospective_power(np.arange(10.0), **kwargs)


def test_retrospective_power_needs_spread():
    with pytest.raises(InputError, match="sd of the differences is 0; pass sd= explicitly"):
        retrospective_power(np.ones(10), sizes=[5])
