"""Analytic power of Likert (clmm) and head-to-head (glmer) designs: limits, sanity, Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import special, stats

import nlpower
from nlpower import CrossedDesign, LMMParams, presets
from nlpower.errors import DesignError, InputError
from nlpower.outcomes import HeadToHeadParams, LikertParams
from nlpower.outcomes.analytic import (
    analytic_outcome_power,
    analytic_outcome_result,
    fixed_information,
    outcome_se,
)
from nlpower.powersim.analytic import information_moments
from nlpower.powersim.models import build_model, true_sds

WEIGHTS = ("shrunk", "mode", "marginal")


# -- (i) zero random-effect variance: the fixed-effects model's Fisher information -------------

@pytest.mark.parametrize("weights", WEIGHTS)
def test_binary_without_random_effects_is_logistic_regression(weights):
    """Var(intercept) = 1/(4a) + 1/(4b): a, b the information of the two position groups."""
    design = CrossedDesign(7, 30)
    p = HeadToHeadParams(effect=0.4, position=0.6, p_draw=0.2)
    lay = design.layout()
    lay = lay[lay["system"] == design.baseline]
    w = lay["worker"].astype("category").cat.codes.to_numpy()
    i = lay["item"].astype("category").cat.codes.to_numpy()
    n_first = int(np.sum((w + i) % 2 == 0))          # B shown first: pos = +1/2
    n_second = w.size - n_first
    mu1, mu2 = special.expit(0.4 + 0.3), special.expit(0.4 - 0.3)
    a = n_first * 0.8 * mu1 * (1 - mu1)
    b = n_second * 0.8 * mu2 * (1 - mu2)
    exact = math.sqrt(1 / (4 * a) + 1 / (4 * b))
    assert outcome_se(design, p, weights=weights) == pytest.approx(exact, rel=1e-10)


def _po_information(tau, beta, xs, counts, link):
    """Proportional-odds Fisher information by central differences of the category probabilities."""
    cdf = stats.norm.cdf if link == "probit" else special.expit

    def probs(phi, x):
        t, b = phi[:-1], phi[-1]
        return np.diff(np.concatenate([[0.0], cdf(t - b * x), [1.0]]))

    phi = np.concatenate([tau, [beta]])
    info = np.zeros((phi.size, phi.size))
    h = 1e-6
    for x, m in zip(xs, counts, strict=True):
        J = np.empty((phi.size, phi.size))        # K - 1 thresholds + beta = K categories
        for a in range(phi.size):
            e = np.zeros(phi.size)
            e[a] = h
            J[a] = (probs(phi + e, x) - probs(phi - e, x)) / (2 * h)
        info += m * (J / probs(phi, x)) @ J.T
    return info


@pytest.mark.parametrize("link", ["probit", "logit"])
@pytest.mark.parametrize("coding", ["sum", "treatment"])
def test_ordinal_without_random_effects_is_proportional_odds(link, coding):
    lp = LikertParams(thresholds=[-1.2, -0.1, 0.5, 1.7], effect=0.3, scale=0.8, link=link,
                      coding=coding)
    design = CrossedDesign(6, 40)
    c = lp.clmm_scale()
    x0, x1 = lp.x_values
    n_each = 6 * 40                                   # ratings per system
    info = _po_information(np.asarray(c["thresholds"]), c["effect"], [x0, x1],
                           [n_each, n_each], link)
    exact = math.sqrt(np.linalg.inv(info)[-1, -1])
    for w in WEIGHTS:
        assert outcome_se(design, lp, weights=w) == pytest.approx(exact, rel=1e-6)


# -- (ii) Gaussian sanity -----------------------------------------------------------------------

@pytest.mark.parametrize("design", [CrossedDesign(8, 30), CrossedDesign(12, 40, workers_per_item=3),
                                    CrossedDesign(6, 20, items="nested")])
def test_gaussian_weights_reproduce_the_gaussian_tier(design):
    """fixed_information with w = 1/sigma^2 is X'V^-1X of powersim.analytic (Woodbury)."""
    params = LMMParams(effect=0.1, sd_worker=0.3, sd_worker_slope=0.2, sd_item=0.25,
                       sd_item_slope=0.15, sigma=0.7, coding="sum")
    dm = build_model(design, params)
    X = np.asarray(dm.spec.X, dtype=float)
    n = X.shape[0]
    cols, g = [], []
    for t in dm.spec.re_terms:
        sds = true_sds(design, params, t.group, tuple(t.cnames))
        for j in range(t.q):
            cols.append(sp.csr_matrix((t.Z[:, j], (np.arange(n), t.codes)), shape=(n, t.n_levels)))
            g.append(np.full(t.n_levels, sds[j] ** 2))
    s2 = params.sigma**2
    info = fixed_information(X.T @ X / s2, X / s2, np.full(n, 1 / s2), sp.hstack(cols).tocsr(),
                             np.concatenate(g))
    var = np.linalg.inv(info)[dm.effect_index, dm.effect_index]
    assert var == pytest.approx(information_moments(design, params)[0], rel=1e-9)


def test_fine_probit_likert_approaches_the_latent_gaussian_model():
    """60 thresholds 0.2 apart: the ordinal information is the latent LMM's (grouping loss < 1%)."""
    lmm = LMMParams(effect=0.2, sd_worker=0.4, sd_worker_slope=0.3, sd_item=0.5, sd_item_slope=0.2,
                    sigma=1.0)
    lp = LikertParams(thresholds=np.linspace(-6, 6, 61), effect=0.2, sd_worker=0.4,
                      sd_worker_slope=0.3, sd_item=0.5, sd_item_slope=0.2, scale=1.0)
    design = CrossedDesign(6, 25)
    se_lmm = math.sqrt(information_moments(design, lmm)[0])
    se = outcome_se(design, lp, weights="mode")
    # Sheppard: coarsening a normal by bins of width h costs ~h^2/12 of the variance
    assert se == pytest.approx(se_lmm, rel=0.01)
    assert se > se_lmm


# -- power and its properties --------------------------------------------------------------------

def test_power_is_the_sign_correct_rejection_probability():
    p = HeadToHeadParams.from_share(0.6, sd_worker=0.5, sd_item=0.5)
    d = CrossedDesign(10, 50)
    z = stats.norm.ppf(0.975)
    nrm = analytic_outcome_power(d, p, reference="normal")
    assert nrm.test == "z" and math.isinf(nrm.df) and nrm.effect == p.effect
    assert nrm.power == pytest.approx(stats.norm.cdf(p.effect / nrm.se - z))
    t = analytic_outcome_power(d, p)
    assert t.se == pytest.approx(nrm.se, rel=1e-12) and 5 < t.df < 100
    # estimated SE (ML, t with df): more rejections than the normal reference, and than
    # the Gaussian tier's noncentral t alone (the ML SE is biased low)
    assert t.power > stats.nct.sf(z, t.df, p.effect / t.se) > nrm.power
    assert analytic_outcome_power(d, p, alternative="less").power == 0.0
    assert analytic_outcome_power(d, p.with_effect(0.0), reference="normal").power == \
        pytest.approx(0.05)
    null = analytic_outcome_power(d, p.with_effect(0.0))     # the size of the t reference
    assert null.power > 2 * stats.t.sf(z, null.df) > 0.05


def test_wald_power_rules():
    from nlpower.outcomes.analytic import _wald_power
    from nlpower.powersim.rules import get_test

    z = get_test("z")
    for alt in ("two-sided", "greater"):
        assert _wald_power(2.2, 1.0, 9.0, alpha=0.05, alternative=alt) == pytest.approx(
            z.power(0.22, 0.1, 9.0, alpha=0.05, alternative=alt))
        assert _wald_power(2.2, 1.0, math.inf, alpha=0.05, alternative=alt) == pytest.approx(
            z.power(0.22, 0.1, math.inf, alpha=0.05, alternative=alt))
    assert _wald_power(0.0, 1.0, 9.0, alpha=0.05, alternative="two-sided") == pytest.approx(
        2 * stats.t.sf(stats.norm.ppf(0.975), 9.0))
    assert _wald_power(-2.0, 0.9, 9.0, alpha=0.05, alternative="greater") == 0.0
    # SE biased low by 10%: the critical value shrinks by 10%
    assert _wald_power(2.0, 0.9, 9.0, alpha=0.05, alternative="two-sided") == pytest.approx(
        stats.nct.sf(0.9 * stats.norm.ppf(0.975), 9.0, 2.0))


def test_satterthwaite_df_and_ml_bias_match_dense_brute_force():
    """df = 2 Var^2 / (grad' I^-1 grad) and Var_ML = Var - grad' I^-1 r, with dense V,
    finite-difference gradient, tr() information and REML's score term r."""
    from nlpower.outcomes.analytic import estimated_variance, satterthwaite_df

    rng = np.random.default_rng(5)
    n, nw, ni = 60, 6, 10
    wk, it = rng.integers(0, nw, n), rng.integers(0, ni, n)
    x = rng.choice([-0.5, 0.5], n)
    X = np.column_stack([np.ones(n), x])
    w = rng.uniform(0.1, 0.25, n)
    Zs = [sp.csr_matrix((np.ones(n), (np.arange(n), wk)), shape=(n, nw)),
          sp.csr_matrix((np.ones(n), (np.arange(n), it)), shape=(n, ni)),
          sp.csr_matrix((x, (np.arange(n), wk)), shape=(n, nw))]
    theta = np.array([0.4, 0.2, 0.3])
    Z = sp.hstack(Zs).tocsr()
    g = np.concatenate([np.full(z.shape[1], t) for z, t in zip(Zs, theta, strict=True)])
    term = np.concatenate([np.full(z.shape[1], k) for k, z in enumerate(Zs)])

    def var_of(th):
        V = np.diag(1 / w) + sum(t * (z @ z.T).toarray() for z, t in zip(Zs, th, strict=True))
        return np.linalg.inv(X.T @ np.linalg.solve(V, X))[0, 0], np.linalg.inv(V)

    var, Vi = var_of(theta)
    h = 1e-6
    grad = np.array([(var_of(theta + h * e)[0] - var_of(theta - h * e)[0]) / (2 * h)
                     for e in np.eye(3)])
    info = np.array([[0.5 * np.trace(Vi @ (a @ a.T).toarray() @ Vi @ (b @ b.T).toarray())
                      for b in Zs] for a in Zs])
    brute = 2 * var**2 / (grad @ np.linalg.solve(info, grad))
    cov = np.linalg.inv(X.T @ Vi @ X)
    r = np.array([0.5 * np.trace(cov @ X.T @ Vi @ (z @ z.T).toarray() @ Vi @ X) for z in Zs])
    var_ml = var - grad @ np.linalg.solve(info, r)
    W = np.diag(w)
    assert satterthwaite_df(X.T @ W @ X, W @ X, w, Z, g, term, 0) == pytest.approx(brute, rel=1e-5)
    v, df, vml = estimated_variance(X.T @ W @ X, W @ X, w, Z, g, term, 0)
    assert v == pytest.approx(var, rel=1e-10) and df == pytest.approx(brute, rel=1e-5)
    assert vml == pytest.approx(var_ml, rel=1e-6) and vml < v


def test_likert_effect_is_on_the_clmm_scale_and_power_grows_with_workers():
    lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    r10 = analytic_outcome_power(CrossedDesign(10, 50), lp)
    r20 = analytic_outcome_power(CrossedDesign(20, 50), lp)
    assert r10.effect == pytest.approx(lp.effect / lp.scale)
    assert r10.coding == lp.coding
    assert r20.se < r10.se and r20.power > r10.power


def test_far_tail_categories_stay_finite():
    """Low-variance preset: item slopes of 5 latent scales move some ratings ~8 SDs past a
    threshold, where 1 - 1 = 0 in floating point; the category probability must come from the
    other tail (this raised a Cholesky error)."""
    lp = LikertParams.from_preset(presets.low_variance(0.1), 5)
    r = analytic_outcome_power(CrossedDesign(5, 50), lp)
    assert 0.5 < r.power < 1.0 and math.isfinite(r.df)
    se = {w: outcome_se(CrossedDesign(5, 50), lp, weights=w) for w in WEIGHTS}
    assert se["shrunk"] == pytest.approx(se["mode"], rel=0.05)


def test_random_effects_cost_information_and_weights_order():
    """Larger SDs give a larger SE; 'shrunk' lies between 'mode' and 'marginal'."""
    d = CrossedDesign(10, 40)
    small = HeadToHeadParams.from_share(0.6, sd_worker=0.3, sd_item=0.3)
    big = HeadToHeadParams.from_share(0.6, sd_worker=1.5, sd_item=1.0)
    assert outcome_se(d, big) > outcome_se(d, small)
    se = {w: outcome_se(d, big, weights=w) for w in WEIGHTS}
    assert se["mode"] < se["shrunk"] < se["marginal"]


def test_power_result_hook_for_the_dispatcher():
    lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    d = CrossedDesign(10, 50)
    r = analytic_outcome_result(d, lp, analysis="clmm", null=True, rng=1)
    ap = analytic_outcome_power(d, lp)
    assert r.method == "analytic" and r.power == pytest.approx(ap.power) and r.n_sims == 0
    assert r.type1 == pytest.approx(analytic_outcome_power(d, lp.with_effect(0.0)).power)
    assert r.type1 > 0.05 and r.effect == pytest.approx(ap.effect)   # t reference: z is liberal
    x0, x1 = lp.x_values
    assert r.mean_difference == pytest.approx(lp.mean_rating01(x1) - lp.mean_rating01(x0))
    assert "analytic" in r.summary()
    h = analytic_outcome_result(d, HeadToHeadParams.from_share(0.6), test="lrt")
    assert h.test == "lrt" and h.type1 is None and h.mean_difference == pytest.approx(0.1)
    with pytest.raises(InputError, match="analysis='clmm'"):
        analytic_outcome_result(d, lp, analysis="lmm")
    with pytest.raises(InputError, match="analysis='glmer'"):
        analytic_outcome_result(d, HeadToHeadParams.from_share(0.6), analysis="clmm")
    assert analytic_outcome_result(d, HeadToHeadParams.from_share(0.6), analysis="lmm").power == \
        pytest.approx(h.power)          # power()'s default analysis, read as glmer
    with pytest.raises(InputError, match="test='z'"):
        analytic_outcome_result(d, lp, test="satterthwaite")


# -- (iii) Monte Carlo agreement -----------------------------------------------------------------

@pytest.mark.slow
def test_headtohead_power_agrees_with_simulated_glmer():
    """Simulated power within 3 MC SE plus 0.05 (the stated approximation allowance)."""
    design = CrossedDesign(10, 40)
    p = HeadToHeadParams.from_share(0.62, sd_worker=0.5, sd_item=0.5)
    n_sims = 300
    sim = nlpower.power(design, p, outcome="preference", analysis="glmer", n_sims=n_sims, rng=3)
    ana = analytic_outcome_power(design, p)
    assert 0.3 < ana.power < 0.8
    mcse = math.sqrt(ana.power * (1 - ana.power) / n_sims)
    assert abs(sim.power - ana.power) < 3 * mcse + 0.05


# -- (iv) bad input ------------------------------------------------------------------------------

def test_bad_input_raises_package_errors():
    lp = LikertParams(thresholds=[-1.0, 1.0], effect=0.2)
    d = CrossedDesign(5, 20)
    with pytest.raises(InputError, match="LikertParams .* or HeadToHeadParams"):
        analytic_outcome_power(d, presets.high_variance(0.1))
    with pytest.raises(InputError, match="alpha"):
        analytic_outcome_power(d, lp, alpha=1.5)
    with pytest.raises(InputError, match="weights"):
        analytic_outcome_power(d, lp, weights="laplace")
    with pytest.raises(InputError, match="alternative"):
        analytic_outcome_power(d, lp, alternative="two_sided")
    with pytest.raises(DesignError, match="CrossedDesign"):
        analytic_outcome_power("10x50", lp)
    with pytest.raises(DesignError, match="two systems"):
        analytic_outcome_power(CrossedDesign(5, 20, systems=3), lp)
    with pytest.raises(DesignError, match="paired"):
        analytic_outcome_power(CrossedDesign(5, 20, items="nested"), HeadToHeadParams(0.2))


def test_power_method_analytic_is_the_outcome_tier():
    """``nlpower.power(..., method="analytic")`` of a Likert or head-to-head design is the
    expected-information tier, and other methods than simulation are refused."""
    import nlpower
    from nlpower import CrossedDesign, presets
    from nlpower.errors import InputError
    from nlpower.outcomes import HeadToHeadParams, LikertParams
    from nlpower.outcomes.analytic import analytic_outcome_power

    d = CrossedDesign(10, 50)
    lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    hp = HeadToHeadParams.from_share(0.6, sd_worker=0.5, sd_item=0.5)
    for outcome, p, kw in (("likert", lp, {"analysis": "clmm"}), ("preference", hp, {})):
        res = nlpower.power(d, p, outcome=outcome, method="analytic", **kw)
        assert res.method == "analytic"
        assert res.power == pytest.approx(analytic_outcome_power(d, p).power, rel=1e-12)
    with pytest.raises(InputError, match="method"):
        nlpower.power(d, lp, outcome="likert", method="balanced")
