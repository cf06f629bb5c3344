"""Analytic tier: closed forms, information method, agreement with simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import DesignError, InputError
from nlpower.params import LMMParams
from nlpower.powersim import analytic_power, power
from nlpower.powersim.analytic import balanced_moments, information_moments, power_from_moments


def test_balanced_variance_closed_form():
    p = presets.high_variance(0.1)  # sd: 0.01, 0.11, 0.04, 0.14, sigma 0.26
    var, df = balanced_moments(CrossedDesign(3, 50), p)
    lam = 0.26**2 + 2 * 50 * 0.11**2 + 2 * 3 * 0.14**2
    assert var == pytest.approx(lam / (2 * 3 * 50))
    lws, lis, le = 0.26**2 + 100 * 0.11**2, 0.26**2 + 6 * 0.14**2, 0.26**2
    assert df == pytest.approx(lam**2 / (lws**2 / 2 + lis**2 / 49 + le**2 / (2 * 2 * 49)))


@pytest.mark.parametrize("w,i", [(3, 20), (6, 15)])
def test_information_method_matches_balanced_variance(w, i):
    p = presets.low_variance(0.1)
    var_b, df_b = balanced_moments(CrossedDesign(w, i), p)
    var_i, df_i = information_moments(CrossedDesign(w, i), p)
    assert var_i == pytest.approx(var_b, rel=1e-10)
    # the ML information also counts the system stratum (one more dimension): about df + 1
    assert df_i == pytest.approx(df_b + 1.0, abs=0.01)


def test_information_method_against_dense_formulas():
    # brute-force V, Var(beta) and the Fisher information on a small incomplete design
    d = CrossedDesign(5, 6, workers_per_item=2)
    p = presets.high_variance(0.1)
    a = d.arrays()
    x = np.array([-1.0, 1.0])[a.system]
    n = a.n_ratings
    Zw, Zi = np.eye(5)[a.worker], np.eye(6)[a.item]
    mats = [np.eye(n), Zw @ Zw.T, (Zw * x[:, None]) @ (Zw * x[:, None]).T, Zi @ Zi.T,
            (Zi * x[:, None]) @ (Zi * x[:, None]).T]
    v = [0.26**2, 0.01**2, 0.11**2, 0.04**2, 0.14**2]
    V = sum(vk * m for vk, m in zip(v, mats, strict=True))
    Vi = np.linalg.inv(V)
    X = np.column_stack([np.ones(n), x])
    C = np.linalg.inv(X.T @ Vi @ X)
    info = np.array([[0.5 * np.trace(Vi @ a_ @ Vi @ b_) for b_ in mats] for a_ in mats])
    g = np.array([(C @ X.T @ Vi @ m @ Vi @ X @ C)[1, 1] for m in mats])
    df = 2 * C[1, 1] ** 2 / (g @ np.linalg.solve(info, g))
    var_i, df_i = information_moments(d, p)
    assert var_i == pytest.approx(C[1, 1], rel=1e-9)
    assert df_i == pytest.approx(df, rel=1e-8)


def test_power_from_moments_rules():
    # two-sided z with the normal approximation: Phi(ncp - 1.96)
    pw = power_from_moments(0.1, 0.04, math.inf, alpha=0.05, test="lrt", alternative="two-sided")
    assert pw == pytest.approx(0.7054, abs=1e-3)
    # sign-correct only: "less" for a positive effect never counts
    assert power_from_moments(0.1, 0.04, 10, alpha=0.05, test="z", alternative="less") == 0.0
    # size at effect 0
    assert power_from_moments(0.0, 0.04, 10, alpha=0.05, test="satterthwaite",
                              alternative="two-sided") == pytest.approx(0.05)
    # the z rule with a t-distributed statistic: size above alpha for small df
    assert power_from_moments(0.0, 0.04, 3, alpha=0.05, test="z", alternative="two-sided") > 0.1
    assert power_from_moments(0.0, 0.04, 3, alpha=0.05, test="z", alternative="two-sided",
                              normal=True) == pytest.approx(0.05)


@pytest.mark.parametrize(
    "scenario,w,i,effect,test",
    [
        (presets.low_variance, 10, 50, 0.05, "satterthwaite"),
        (presets.high_variance, 10, 100, 0.05, "satterthwaite"),
        (presets.low_variance, 10, 100, 0.05, "z"),
    ],
)
def test_analytic_agrees_with_simulation_on_balanced_designs(scenario, w, i, effect, test):
    # tolerance: 3 binomial SEs of the simulated power plus 0.02 for the approximation
    # (the noncentral t ignores the estimation bias of the variance components; the size
    # excess of the tests at 10 workers, measured at 0.005-0.015, bounds that effect)
    p = scenario(effect)
    d = CrossedDesign(w, i)
    a = analytic_power(d, p, test=test)
    s = power(d, p, n_sims=2500, rng=77, test=test, keep_replicates=False)
    assert abs(s.power - a.power) < 3 * s.se + 0.02


def test_half_coding_same_power():
    d = CrossedDesign(5, 40)
    p = presets.high_variance(0.1)
    a, b = analytic_power(d, p), analytic_power(d, p.to_coding("half"))
    assert a.power == pytest.approx(b.power) and b.se == pytest.approx(2 * a.se)
    c = analytic_power(d, p.to_coding("half"), method="information")
    assert c.se == pytest.approx(b.se, rel=1e-9)


def test_analytic_result_outputs():
    a = analytic_power(CrossedDesign(10, 100), presets.high_variance(0.1))
    assert a.method == "balanced" and "Analytic power" in a.summary()
    assert a.to_frame()["power"].iloc[0] == a.power and repr(a).startswith("AnalyticPowerResult(")


def test_analytic_errors():
    p = presets.high_variance(0.1)
    with pytest.raises(DesignError, match="method='information'"):
        analytic_power(CrossedDesign(6, 10, workers_per_item=3), p, method="balanced")
    with pytest.raises(InputError, match="method must be one of"):
        analytic_power(CrossedDesign(6, 10), p, method="exact")
    with pytest.raises(InputError, match="alpha"):
        analytic_power(CrossedDesign(6, 10), p, alpha=2)


def _dense_reference(design, params):
    """Var and df by dense matrices from the model's own random-effect columns."""
    from nlpower.powersim.models import build_model, true_sds

    dm = build_model(design, params)
    spec = dm.spec
    n = spec.n
    mats, vals = [np.eye(n)], [params.sigma**2]
    for t in spec.re_terms:
        sds = true_sds(design, params, t.group, tuple(t.cnames))
        ind = np.eye(t.n_levels)[t.codes]
        cols = [ind * t.Z[:, [c]] for c in range(t.q)]
        for a in range(t.q):
            for b in range(a, t.q):
                if sds[a] > 0 and sds[b] > 0:
                    m = cols[a] @ cols[b].T
                    mats.append(m if a == b else m + m.T)
                    vals.append(sds[a] ** 2 if a == b else 0.0)
    V = sum(v * m for v, m in zip(vals, mats, strict=True))
    Vi = np.linalg.inv(V)
    X = spec.X
    C = np.linalg.inv(X.T @ Vi @ X)
    j = dm.effect_index
    info = np.array([[0.5 * np.trace(Vi @ a_ @ Vi @ b_) for b_ in mats] for a_ in mats])
    g = np.array([(C @ X.T @ Vi @ m @ Vi @ X @ C)[j, j] for m in mats])
    return C[j, j], 2 * C[j, j] ** 2 / (g @ np.linalg.solve(info, g))


def test_information_method_nested_and_three_systems_against_dense():
    from nlpower.params import MultiSystemParams

    p = presets.high_variance(0.1)
    d = CrossedDesign(4, 8, items="nested")
    var, df = information_moments(d, p)
    rv, rdf = _dense_reference(d, p)
    assert var == pytest.approx(rv, rel=1e-9) and df == pytest.approx(rdf, rel=1e-8)
    m = MultiSystemParams(beta0=0.5, effects=(0.1, 0.0), sd_worker=0.05,
                          sd_worker_systems=(0.05, 0.08, 0.03), sd_item=0.04,
                          sd_item_systems=(0.1, 0.12, 0.09), sigma=0.2)
    d3 = CrossedDesign(4, 5, systems=3)
    var, df = information_moments(d3, m)
    rv, rdf = _dense_reference(d3, m)
    assert var == pytest.approx(rv, rel=1e-9) and df == pytest.approx(rdf, rel=1e-8)


@pytest.mark.parametrize("design,params", [
    # treatment coding: each item's intercept and slope share a block of the Schur part
    (CrossedDesign(7, 12, workers_per_item=3),
     LMMParams(beta0=0.5, effect=0.1, sd_worker=0.05, sd_worker_slope=0.04, sd_item=0.06,
               sd_item_slope=0.13, sigma=0.2, coding="treatment")),
    # a zero variance: its column leaves the model, the rest of the term stays
    (CrossedDesign(6, 10, workers_per_item=4),
     LMMParams(beta0=0.5, effect=0.1, sd_worker=0.05, sd_worker_slope=0.1, sd_item=0.04,
               sd_item_slope=0.0, sigma=0.2)),
    # more workers than items: the Schur block is the workers'
    (CrossedDesign(9, 4), presets.high_variance(0.1)),
    # one grouping factor left (no low-rank part)
    (CrossedDesign(5, 8, workers_per_item=2),
     LMMParams(beta0=0.5, effect=0.1, sd_worker=0.0, sd_worker_slope=0.0, sd_item=0.04,
               sd_item_slope=0.1, sigma=0.2)),
])
def test_information_method_unbalanced_against_dense(design, params):
    var, df = information_moments(design, params)
    rv, rdf = _dense_reference(design, params)
    assert var == pytest.approx(rv, rel=1e-9) and df == pytest.approx(rdf, rel=1e-8)
