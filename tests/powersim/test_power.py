"""power(): calibration, detection rule, reproducibility, result invariants, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nlpower
from nlpower import CrossedDesign, LMMParams, presets
from nlpower.errors import DesignError, InputError
from nlpower.params import MultiSystemParams
from nlpower.powersim import PowerResult, power
from nlpower.powersim.replicate import pvalues

HIGH = presets.high_variance


def test_satterthwaite_holds_size_10_workers():
    # effect 0, 10 workers x 50 items, fast path: rejection rate within 3 binomial SEs of alpha
    res = power(CrossedDesign(10, 50), HIGH(0.0), n_sims=4000, rng=2024, keep_replicates=False)
    assert res.method == "balanced" and res.engine is None and res.REML
    se = math.sqrt(0.05 * 0.95 / 4000)
    assert abs(res.type1 - 0.05) < 3 * se
    assert math.isnan(res.power) and math.isnan(res.type_m) and math.isnan(res.type_s)
    assert res.type1 == res.rejection_rate


def test_z_rule_anticonservative_with_3_workers():
    # Card et al.'s rule (t > 1.96 against the normal) with 3 workers rejects a true null far
    # more often than alpha: the lower Wilson bound is above 0.05
    res = power(CrossedDesign(3, 50), HIGH(0.0), n_sims=1000, test="z", rng=5)
    assert res.type1_ci is not None and res.type1_ci.low > 0.05


def test_power_increases_with_effect():
    # common random numbers (same rng) make the comparison sharp
    d = CrossedDesign(5, 40)
    p = [power(d, HIGH(e), n_sims=600, rng=3, test="z").power for e in (0.02, 0.06, 0.12)]
    assert p[0] < p[1] < p[2]


def test_same_seed_same_result_and_prefix_property():
    d = CrossedDesign(4, 30)
    a = power(d, HIGH(0.1), n_sims=300, rng=42)
    b = power(d, HIGH(0.1), n_sims=300, rng=42)
    assert a == b  # every summary field (replicate arrays are compared below)
    np.testing.assert_array_equal(a.replicates.statistic, b.replicates.statistic)
    c = power(d, HIGH(0.1), n_sims=100, rng=42)
    # replicate r uses child r of the run's seed: the first 100 replicates are identical
    np.testing.assert_array_equal(a.replicates.statistic[:100], c.replicates.statistic)
    seq = np.random.SeedSequence(42)
    e = power(d, HIGH(0.1), n_sims=300, rng=seq)
    assert e.power == a.power
    assert a.seed == nlpower._rng.seed_record(np.random.SeedSequence(42))


def test_generator_rng_is_consumed():
    d = CrossedDesign(4, 20)
    g = np.random.default_rng(5)
    a = power(d, HIGH(0.1), n_sims=50, rng=g)
    b = power(d, HIGH(0.1), n_sims=50, rng=g)
    assert not np.array_equal(a.replicates.statistic, b.replicates.statistic)
    c = power(d, HIGH(0.1), n_sims=50, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.replicates.statistic, c.replicates.statistic)


def test_result_invariants():
    res = power(CrossedDesign(3, 30), HIGH(0.05), n_sims=500, rng=9, null=True, test="z")
    assert isinstance(res, PowerResult)
    assert res.ci.low <= res.power <= res.ci.high
    assert 0 <= res.type_s <= 1 and res.type_m >= 1  # significant estimates exaggerate
    assert res.power <= res.rejection_rate
    assert res.n_rejected == round(res.power * res.n_sims)
    assert res.se == pytest.approx(math.sqrt(res.power * (1 - res.power) / 500))
    assert res.type1 is not None and 0 <= res.type1 <= 1
    ci90 = res.proportion_ci(confidence_level=0.9)
    assert ci90.low >= res.ci.low and ci90.high <= res.ci.high
    assert "sum coding" in res.summary() and "Type-M" in res.summary()
    df = res.to_frame()
    assert list(df["power"]) == [res.power] and df["coding"].iloc[0] == "sum"
    assert repr(res).startswith("PowerResult(power=")
    r = res.replicates
    assert r is not None and r.estimate.shape == (500,)
    sig = r.pvalue <= 0.05
    assert res.n_rejected == int(np.sum(sig & (r.estimate > 0)))


def test_type_s_and_m_definitions_on_replicates():
    res = power(CrossedDesign(3, 20), HIGH(0.02), n_sims=800, rng=1, test="z")
    r = res.replicates
    sig = r.pvalue <= 0.05
    assert res.type_s == pytest.approx(np.mean(r.estimate[sig] < 0))
    assert res.type_m == pytest.approx(np.mean(np.abs(r.estimate[sig]) / 0.02))
    assert res.type_s > 0  # a low-powered design gets wrong signs


def test_half_coding_gives_same_power_and_rescaled_estimates():
    d = CrossedDesign(4, 30)
    p = HIGH(0.1)
    a = power(d, p, n_sims=200, rng=8)
    b = power(d, p.to_coding("half"), n_sims=200, rng=8)
    assert a.power == b.power and b.coding == "half"
    np.testing.assert_allclose(b.replicates.estimate, 2 * a.replicates.estimate)
    assert b.mean_difference == a.mean_difference == pytest.approx(0.2)


def test_lrt_and_pvalue_conventions():
    s = np.array([2.5, -2.5])
    two = pvalues(s, np.array([np.inf, np.inf]), "z", "two-sided")
    np.testing.assert_allclose(two, 2 * 0.006209665325776132)
    g = pvalues(s, np.array([5.0, 5.0]), "satterthwaite", "greater")
    assert g[0] < 0.05 < g[1]
    res = power(CrossedDesign(5, 40), HIGH(0.1), n_sims=200, rng=4, test="lrt")
    assert res.REML is False and 0 < res.power < 1


def test_native_engine_on_general_designs():
    p = HIGH(0.15)
    for d in (CrossedDesign(6, 12, workers_per_item=3), CrossedDesign(4, 12, items="nested")):
        res = power(d, p, n_sims=8, rng=1)
        assert res.method == "simulate" and res.engine == "native" and res.n_failed == 0 and res.n_sims == 8
    m = MultiSystemParams(beta0=0.5, effects=(0.1, 0.0), sd_worker=0.05,
                          sd_worker_systems=(0.05, 0.05, 0.05), sd_item=0.05,
                          sd_item_systems=(0.1, 0.1, 0.1), sigma=0.2)
    res = power(CrossedDesign(4, 10, systems=3), m, n_sims=4, rng=2, test="z")
    assert res.method == "simulate" and res.engine == "native" and res.n_failed == 0
    assert any("grand mean" in n for n in res.notes)


def test_native_and_fast_engines_agree_statistically():
    # same design, both engines: powers within MC error of each other
    d = CrossedDesign(4, 10)
    p = HIGH(0.2)
    a = power(d, p, n_sims=60, rng=3, method="simulate", test="z")
    b = power(d, p, n_sims=2000, rng=3, method="balanced", test="z")
    se = math.sqrt(b.power * (1 - b.power) * (1 / 60 + 1 / 2000))
    assert abs(a.power - b.power) < 4 * se


def test_likert_ratings_through_fast_path():
    res = power(CrossedDesign(5, 20), HIGH(0.1), n_sims=100, rng=6, likert=5)
    assert res.method == "balanced" and 0 < res.power < 1


def test_analytic_engine_result():
    res = power(CrossedDesign(10, 100), HIGH(0.1), method="analytic", null=True)
    assert res.method == "analytic" and 0 < res.power < 1 and res.type1 == pytest.approx(0.05)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"test": "wald"}, "test must be one of"),
        ({"test": "satterthwait"}, "Did you mean 'satterthwaite'"),
        ({"alpha": 1.5}, "alpha must be strictly between 0 and 1"),
        ({"alpha": 0.0}, "alpha must be strictly between 0 and 1"),
        ({"n_sims": 0}, "n_sims must be >= 1"),
        ({"n_sims": 2.5}, "n_sims must be an integer"),
        ({"alternative": "bigger"}, "alternative must be one of"),
        ({"engine": "gpu"}, "engine must be one of"),
        ({"likert": 1}, "likert must be None"),
        ({"REML": "yes"}, "REML must be True, False or None"),
        ({"REML": True, "test": "lrt"}, "REML likelihoods"),
    ],
)
def test_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        power(CrossedDesign(3, 10), HIGH(0.1), n_sims=kwargs.pop("n_sims", 5), **kwargs)


def test_fast_engine_refused_where_not_exact():
    with pytest.raises(DesignError, match="method='simulate'"):
        power(CrossedDesign(6, 10, workers_per_item=3), HIGH(0.1), n_sims=5, method="balanced")
    with pytest.raises(DesignError, match="nested"):
        power(CrossedDesign(6, 10, items="nested"), HIGH(0.1), n_sims=5, method="balanced")
    p = LMMParams(effect=0.1, sd_item_slope=0.1, sigma=0.2)
    tp = LMMParams(beta0=0.4, effect=0.2, sd_item_slope=0.1, sigma=0.2, coding="half")
    assert tp.to_coding("sum").effect == pytest.approx(0.1)
    assert power(CrossedDesign(3, 10), p, n_sims=5, rng=1, method="balanced").method == "balanced"


def test_bad_design_and_params_types():
    with pytest.raises(DesignError, match="CrossedDesign"):
        power((3, 10), HIGH(0.1), n_sims=5)
    with pytest.raises(InputError, match="LMMParams or MultiSystemParams"):
        power(CrossedDesign(3, 10), {"effect": 0.1}, n_sims=5)
    with pytest.raises(DesignError, match="two systems"):
        power(CrossedDesign(3, 10, systems=3), HIGH(0.1), n_sims=5)
