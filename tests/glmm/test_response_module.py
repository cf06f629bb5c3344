"""The family and link as the GLMM's response module, and fits free of an earlier fit's state.

References: numerical derivatives of the links' definitions; the family's
own log-density (``unit_m2loglik``); refits of the same data on a fresh model.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.glmm import glmer
from nlpower.lmm.family import Binomial, NegativeBinomial, Poisson
from nlpower.lmm.link import get_link

ETA = np.linspace(-6.0, 6.0, 25)


@pytest.mark.parametrize("name", ["logit", "log", "identity"])
def test_cumulant_derivatives_are_the_inverse_link_and_its_slope(name):
    lk = get_link(name)
    b, mu, v = lk.cumulant(ETA)
    h = 1e-5
    bp, bm = lk.cumulant(ETA + h)[0], lk.cumulant(ETA - h)[0]
    np.testing.assert_allclose((bp - bm) / (2 * h), lk.linkinv(ETA), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(mu, lk.linkinv(ETA), rtol=1e-14)
    np.testing.assert_allclose(v, lk.mu_eta(ETA), rtol=1e-12, atol=1e-300)


def test_links_without_a_family_are_refused_a_cumulant():
    with pytest.raises(NotImplementedError):
        get_link("probit").cumulant(ETA)


@pytest.mark.parametrize("name", ["logit", "log", "identity", "probit", "cloglog"])
def test_dlog_mu_eta_is_the_slope_of_log_mu_eta(name):
    lk = get_link(name)
    eta = np.linspace(-3.0, 2.0, 11)
    h = 1e-6
    num = (np.log(lk.mu_eta(eta + h)) - np.log(lk.mu_eta(eta - h))) / (2 * h)
    mu = lk.linkinv(eta)
    got = np.broadcast_to(lk.dlog_mu_eta(mu), eta.shape)
    np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.broadcast_to(lk.dlog_mu_eta(mu, eta), eta.shape), num,
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(lk.mu_eta(eta, mu), lk.mu_eta(eta), rtol=1e-12)


@pytest.mark.parametrize("fam", [Binomial(), Poisson(), Binomial(link="probit"),
                                 NegativeBinomial(theta=2.0)])
def test_working_unit_terms_are_the_log_density_up_to_a_constant(fam):
    rng = np.random.default_rng(3)
    wt = rng.integers(1, 5, ETA.size).astype(float)
    y = (rng.integers(0, 5, ETA.size) / 5.0 if fam.name == "binomial"
         else rng.poisson(2.0, ETA.size).astype(float))
    mu, w, unit = fam.working(y, wt, ETA)
    mu2, _, unit2 = fam.working(y, wt, ETA + 0.3)
    full = fam.unit_m2loglik(y, mu, wt) - fam.unit_m2loglik(y, mu2, wt)
    np.testing.assert_allclose(unit - unit2, full, rtol=1e-9, atol=1e-9)
    me = fam.link.mu_eta(ETA)
    np.testing.assert_allclose(w, np.maximum(wt * me * me / fam.variance(mu), 1e-300), rtol=1e-10)


@pytest.mark.parametrize("fam", [Binomial(), Poisson()])
@pytest.mark.parametrize("unit_wt", [True, False])
def test_working_rows_sum_the_single_response_terms(fam, unit_wt):
    rng = np.random.default_rng(4)
    R, n = 3, 150
    eta = rng.normal(0, 2, (R, n))
    wt = np.ones(n) if unit_wt else rng.integers(1, 4, n).astype(float)
    Y = (rng.random((R, n)) < 0.4).astype(float)
    mu, w, unit = fam.working_rows(Y * wt, wt, eta, unit_wt)
    for r in range(R):
        m1, w1, u1 = fam.working(Y[r], wt, eta[r])
        np.testing.assert_allclose(mu[r], m1, rtol=1e-13)
        np.testing.assert_allclose(w[r], w1, rtol=1e-12)
        assert unit[r] == pytest.approx(u1.sum(), rel=1e-12)


def test_glmm_code_names_no_family_or_link():
    """Families and links are asked, never named: a new one needs no edit in the GLMM engine."""
    src = Path(__file__).resolve().parents[2] / "src" / "nlpower" / "glmm"
    pat = re.compile(r"\.name\s*(==|!=|in\b)|_kind\b|\"(logit|probit|cloglog)\"")
    hits = [f"{p.name}:{i}" for p in sorted(src.glob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if pat.search(line)]
    assert hits == []


def _crossed(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.DataFrame([(f"w{w}", f"i{i}") for w in range(6) for i in range(30)],
                     columns=["worker", "item"])
    d["x"] = rng.normal(size=len(d))
    eta = 0.3 * d["x"] + rng.normal(0, 0.6, 6)[d["worker"].str[1:].astype(int)] \
        + rng.normal(0, 0.8, 30)[d["item"].str[1:].astype(int)]
    d["y"] = rng.binomial(1, 1.0 / (1.0 + np.exp(-eta)))
    return d


def _same(a, b) -> None:
    np.testing.assert_array_equal(np.r_[a.theta, a.beta if hasattr(a, "beta") else a.fixef],
                                  np.r_[b.theta, b.beta if hasattr(b, "beta") else b.fixef])
    assert a.deviance == b.deviance


def test_a_fit_is_the_same_whatever_was_fitted_before_on_the_model():
    formula = "y ~ x + (1 | worker) + (1 | item)"
    first = glmer(formula, _crossed(1), "binomial")
    m = first.model
    other = m.simulate(2, rng=5, params=first)
    truth = {"theta": first.theta, "beta": first.fixef.to_numpy()}
    fresh_refit = glmer(formula, _crossed(1), "binomial").model.refit(other[0], start=truth)
    fresh_cold = glmer(formula, _crossed(1), "binomial").model.refit(other[0])
    m.refit(other[1], start=truth)              # a different response, theta and modes
    m.deviance(first.theta * 1.7, first.fixef.to_numpy())
    _same(m.refit(other[0], start=truth), fresh_refit)
    m.refit(other[1])
    _same(m.refit(other[0]), fresh_cold)
    m.refit(other[1], start=truth)
    _same(m.fit(), first)                       # y=None: the data's response, not the last refit's
    _same(m.fit(start=truth), glmer(formula, _crossed(1), "binomial").model.fit(start=truth))


def test_theta_products_are_a_value_of_theta():
    fit = glmer("y ~ x + (1 | worker) + (1 | item)", _crossed(2), "binomial")
    pir = fit.model.pirls
    a = pir.at(np.array(fit.theta))
    b = pir.at(np.array(fit.theta) * 2.0)
    assert pir.at(np.array(fit.theta)) is not a          # rebuilt after another theta ...
    np.testing.assert_array_equal(pir.at(np.array(fit.theta)).zl, a.zl)   # ... to the same value
    np.testing.assert_array_equal(b.zl, 2.0 * a.zl)
    assert pir.at(np.array(fit.theta) * 2.0) is pir.at(np.array(fit.theta) * 2.0)


def test_batched_refits_use_the_model_s_current_weights():
    from nlpower.glmm.batched import refit_many
    d = pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "data" / "cbpp.csv",
                    dtype={"period": str, "herd": str})
    fit = glmer("prop ~ period + (1 | herd)", d, "binomial", weights="size")
    m = fit.model
    Y = m.simulate(3, rng=2, params=fit)
    refit_many(m, Y, start=fit)                  # the batch is built for the data's weights
    m.refit(Y[0], start=fit, weights=2.0 * d["size"].to_numpy())   # ... which this replaces
    many = refit_many(m, Y, start=fit)
    for core, y in zip(many, Y, strict=True):
        assert "batched" in core.message
        assert core.deviance == pytest.approx(m.refit(y, start=fit).deviance, abs=1e-6)
