"""The profiled deviance (nlpower.mixed.native.deviance, .block1) against brute force.

The blocked Cholesky is checked against a brute-force dense computation of the
same formulas (Bates et al. 2015, eq. 34 and 41), the two Schur-complement
strategies against each other, and the fitted quantities against their
closed-form GLS expressions at the fitted theta.  Agreement with pinned lme4
fits lives in ``tests/lmm/test_lme4_agreement.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from lmm_specs import SPEC_IDS, SPECS, crossed_spec, dense_deviance
from nlpower.lmm.native import NativeModel


@pytest.mark.parametrize("make", SPECS, ids=SPEC_IDS)
@pytest.mark.parametrize("REML", [False, True])
def test_blocked_deviance_equals_dense_formula(make, REML):
    model = NativeModel(make())
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = model.layout.start + rng.uniform(0.05, 1.5, model.layout.size) * model.layout.diag \
            + rng.normal(0, .3, model.layout.size) * ~model.layout.diag
        assert model.deviance(theta, REML=REML) == pytest.approx(
            dense_deviance(model, theta, REML), rel=1e-10, abs=1e-8)


@pytest.mark.parametrize("make", SPECS, ids=SPEC_IDS)
def test_dense_and_sparse_schur_strategies_agree(make):
    spec = make()
    md, ms = NativeModel(spec, mode="dense"), NativeModel(spec, mode="sparse")
    assert md.blocks.use_dense and not ms.blocks.use_dense
    rng = np.random.default_rng(3)
    for _ in range(3):
        theta = np.abs(rng.normal(0.7, .4, md.layout.size))
        assert md.deviance(theta) == pytest.approx(ms.deviance(theta), rel=1e-11)
    # a new response updates the y-dependent parts of both (same function of theta;
    # the optimiser may stop at slightly different points of a flat optimum)
    y2 = spec.y[::-1].copy()
    for m in (md, ms):
        m.refit_core(y2)
    for _ in range(2):
        theta = np.abs(rng.normal(0.7, .4, md.layout.size))
        assert md.deviance(theta) == pytest.approx(ms.deviance(theta), rel=1e-11)
    cd, cs = md.refit_core(y2), ms.refit_core(y2)
    assert cd.deviance == pytest.approx(cs.deviance, abs=1e-5)
    np.testing.assert_allclose(cd.beta, cs.beta, rtol=1e-4, atol=1e-6)
    # conditional modes at the same theta
    theta = np.abs(rng.normal(0.7, .4, md.layout.size))
    for a, b in zip(md.ev.modes(md.ev.factor(theta)), ms.ev.modes(ms.ev.factor(theta)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10)


def _gls_pieces(model: NativeModel, fit):
    spec, lay = model.spec, model.layout
    blocks = []
    for t, vt in zip(lay.terms, fit.var_terms, strict=True):
        Zfull = np.zeros((spec.n, t.n_levels * t.q))
        for c in range(t.q):
            Zfull[np.arange(spec.n), t.codes * t.q + c] = t.Z[:, c]
        blocks.append((Zfull, np.kron(np.eye(t.n_levels), vt.cov)))
    V = fit.sigma ** 2 * np.eye(spec.n)
    for Zf, G in blocks:
        V += Zf @ G @ Zf.T
    return V, blocks


@pytest.mark.parametrize("REML", [False, True])
def test_fixed_effects_and_modes_equal_gls_at_fitted_theta(REML):
    spec = crossed_spec()
    model = NativeModel(spec)
    fit = model.fit(REML=REML)
    V, blocks = _gls_pieces(model, fit)
    X, y = spec.X, spec.y
    Vi = np.linalg.inv(V)
    cov = np.linalg.inv(X.T @ Vi @ X)
    beta = cov @ X.T @ Vi @ y
    np.testing.assert_allclose(fit.fixef.to_numpy(), beta, rtol=1e-8)
    np.testing.assert_allclose(fit.vcov.to_numpy(), cov, rtol=1e-6, atol=1e-12)
    # BLUPs: b = G Z' V^{-1} (y - X beta), per term; compare the worker intercepts
    resid = Vi @ (y - X @ beta)
    worker_int = blocks[[t.group == "worker" and t.cnames == ("(Intercept)",)
                         for t in model.layout.terms].index(True)]
    b = worker_int[1] @ worker_int[0].T @ resid
    np.testing.assert_allclose(fit.ranef()["worker"]["(Intercept)"].to_numpy(), b, rtol=1e-6,
                               atol=1e-9)
    # conditional residuals: y - X beta - Z b = sigma^2 V^{-1} (y - X beta)
    np.testing.assert_allclose(fit.residuals, fit.sigma ** 2 * resid, rtol=1e-6, atol=1e-9)


def test_sigma_matches_criterion_definition():
    model = NativeModel(crossed_spec())
    for REML in (False, True):
        core = model.refit_core(model.spec.y, REML=REML)
        f = model.ev.factor(core.theta)
        n, p = model.spec.n, model.spec.p
        assert core.sigma ** 2 == pytest.approx(f.r2 / (n - p if REML else n), rel=1e-12)
        assert core.deviance == pytest.approx(model.deviance(core.theta, REML=REML), rel=1e-12)
