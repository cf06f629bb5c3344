"""The balanced fast path equals the general engine, replicate by replicate."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower import CrossedDesign, LMMParams
from nlpower.lmm.native import NativeModel
from nlpower.powersim import balanced_fit as bf
from nlpower.powersim import fastpath as fp
from nlpower.powersim.models import build_model
from nlpower.simulation import simulate_y

# low-variance scenario of Table 16 (many boundary fits with 4 workers) and a
# larger-variance one (mostly interior fits)
LOW = LMMParams(beta0=0.5, effect=0.05, sd_worker=0.01, sd_worker_slope=0.04, sd_item=0.01,
                sd_item_slope=0.13, sigma=0.16)
HIGH = LMMParams(beta0=0.5, effect=0.1, sd_worker=0.1, sd_worker_slope=0.12, sd_item=0.08,
                 sd_item_slope=0.14, sigma=0.2)


def _replicates(design: CrossedDesign, params: LMMParams, n: int, seed: int):
    y = simulate_y(design.arrays(), params, n, np.random.default_rng(seed))
    w, i = design.n_workers, design.n_items
    return y, fp.stats_from_ratings(y.reshape(n, i, w, 2).transpose(0, 2, 1, 3))


@pytest.mark.parametrize("params,seed", [(LOW, 3), (HIGH, 4)])
@pytest.mark.parametrize("REML", [False, True])
def test_fast_path_equals_native_engine(params, seed, REML):
    design = CrossedDesign(4, 12)
    y, st = _replicates(design, params, 10, seed)
    fit = bf.fit_balanced(st, REML=REML)
    dm = build_model(design, params)
    model = NativeModel(dm.spec.with_response(y[0]))
    L = np.array([0.0, 1.0])
    n_boundary = 0
    for k in range(y.shape[0]):
        core = model.refit_core(y[k], REML=REML, start=dm.theta)
        t_native = core.beta[1] / np.sqrt(core.vcov_beta[1, 1])
        # the fast path finds the global optimum: never a worse criterion than BOBYQA
        assert -1e-8 <= core.deviance - fit.deviance[k] <= 2e-6
        # t to the native optimiser's tolerance (ML: 1e-4 relative; REML criterion is flatter)
        assert t_native == pytest.approx(fit.t[k], rel=1e-4 if not REML else 5e-4)
        assert core.beta[1] == pytest.approx(fit.beta1[k], rel=1e-9, abs=1e-12)
        assert bool(core.singular) == bool(fit.singular[k])
        n_boundary += bool(fit.singular[k])
        df_native = model.satterthwaite_df(core, L)
        assert df_native == pytest.approx(fit.df[k], rel=2e-3)
    if params is LOW:
        assert n_boundary >= 5  # the comparison covers boundary fits


def test_stats_from_ratings_matches_anova_decomposition():
    design = CrossedDesign(3, 5)
    y, st = _replicates(design, HIGH, 2, 11)
    # sums of squares add up to the total around the two fixed effects
    x = np.tile([-1.0, 1.0], 15)
    for k in range(2):
        resid = y[k] - st.beta0[k] - st.beta1[k] * x
        assert st.ss[k].sum() == pytest.approx(np.sum(resid**2), rel=1e-12)
        assert st.beta1[k] == pytest.approx(np.mean(x * y[k]), rel=1e-12)


def test_deviance_equals_dense_likelihood():
    design = CrossedDesign(3, 4)
    y, st = _replicates(design, HIGH, 3, 5)
    fit = bf.fit_balanced(st)
    a = design.arrays()
    x = np.array([-1.0, 1.0])[a.system]
    Zw = np.eye(3)[a.worker]
    Zi = np.eye(4)[a.item]
    X = np.column_stack([np.ones(24), x])
    for k in range(3):
        s2, v0w, v1w, v0i, v1i = fit.variances[k]
        V = (s2 * np.eye(24) + v0w * Zw @ Zw.T + v1w * (Zw * x[:, None]) @ (Zw * x[:, None]).T
             + v0i * Zi @ Zi.T + v1i * (Zi * x[:, None]) @ (Zi * x[:, None]).T)
        Vi = np.linalg.inv(V)
        b = np.linalg.solve(X.T @ Vi @ X, X.T @ Vi @ y[k])
        r = y[k] - X @ b
        dev = 24 * np.log(2 * np.pi) + np.linalg.slogdet(V)[1] + r @ Vi @ r
        assert fit.deviance[k] == pytest.approx(dev, abs=1e-9)
        assert b[1] == pytest.approx(fit.beta1[k], abs=1e-12)
        assert np.sqrt(np.linalg.inv(X.T @ Vi @ X)[1, 1]) == pytest.approx(fit.se[k], rel=1e-9)


def test_draw_stats_moments():
    # SS_k / lambda_k ~ chi2(m_k), beta1 ~ N(beta1, lambda_sys / 2WI): check means within MC error
    w, i, n = 4, 6, 4000
    v = [0.04, 0.01, 0.02, 0.005, 0.01]
    gens = [np.random.default_rng(s) for s in range(n)]
    st = fp.draw_stats(w, i, 0.5, 0.1, v, gens)
    lam = fp.stratum_eigenvalues(w, i, v)
    m = fp.stratum_dims(w, i)
    ratio = st.ss / lam[2:]
    se = np.sqrt(2 * m / n)
    assert np.all(np.abs(ratio.mean(axis=0) - m) < 4 * se)
    sd = np.sqrt(lam[1] / (2 * w * i))
    assert abs(st.beta1.mean() - 0.1) < 4 * sd / np.sqrt(n)
    assert st.beta1.std() == pytest.approx(sd, rel=4 * np.sqrt(1 / (2 * n)))


def test_reml_df_equals_ems_df_at_interior_fits():
    design = CrossedDesign(6, 20)
    _, st = _replicates(design, HIGH, 20, 9)
    fit = bf.fit_balanced(st, REML=True)
    interior = ~fit.singular
    assert interior.sum() >= 5
    np.testing.assert_allclose(fit.df[interior], fit.df_ems[interior], rtol=1e-6)


def test_null_deviance_is_fit_without_effect():
    design = CrossedDesign(4, 6)
    y, st = _replicates(design, HIGH, 4, 2)
    dm = build_model(design, HIGH)
    model0 = NativeModel(dm.null_spec().with_response(y[0]))
    d0 = bf.null_deviance(st)
    for k in range(4):
        core0 = model0.refit_core(y[k], REML=False, start=dm.theta)
        assert -1e-8 <= core0.deviance - d0[k] <= 2e-6


def test_strata_dimensions_add_up():
    info = fp.describe_strata(5, 7, [1, 0, 0, 0, 0])
    assert sum(m for m, _ in info.values()) == 2 * 5 * 7
    assert all(lam == 1.0 for _, lam in info.values())


def test_stats_from_ratings_rejects_bad_shape():
    with pytest.raises(ValueError, match="shape"):
        fp.stats_from_ratings(np.zeros((2, 3, 4, 3)))


def test_fast_path_on_likert_ratings_equals_native_engine():
    design = CrossedDesign(4, 10)
    y = simulate_y(design.arrays(), HIGH, 5, np.random.default_rng(21), likert=5)
    st = fp.stats_from_ratings(y.reshape(5, 10, 4, 2).transpose(0, 2, 1, 3))
    fit = bf.fit_balanced(st)
    dm = build_model(design, HIGH)
    model = NativeModel(dm.spec.with_response(y[0]))
    for k in range(5):
        core = model.refit_core(y[k], REML=False, start=dm.theta)
        assert -1e-8 <= core.deviance - fit.deviance[k] <= 2e-6
        assert core.beta[1] / np.sqrt(core.vcov_beta[1, 1]) == pytest.approx(fit.t[k], rel=1e-4)
