"""The native engine (nlpower.lmm.native): algebra, optimiser, diagnostics, errors.

Agreement with pinned lme4 fits lives in ``test_lme4_agreement.py``; here the
blocked Cholesky is checked against a brute-force dense computation of the
same formulas (Bates et al. 2015, eq. 34 and 41), the two Schur-complement
strategies against each other, and the fitted quantities against their
closed-form GLS expressions at the fitted theta.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import (
    ConvergenceWarning,
    FitError,
    InputError,
    SingularFitWarning,
)
from nlpower.lmm import lmer
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native.blocks import lme4_term_order, make_unique
from nlpower.lmm.structure import ModelSpec, ReTerm


def _term(group: str, codes: np.ndarray, Z: np.ndarray, cnames: tuple[str, ...]) -> ReTerm:
    m = int(codes.max()) + 1
    return ReTerm(group, codes.astype(np.intp), tuple(f"{group}{i}" for i in range(m)),
                  np.asarray(Z, float).reshape(len(codes), -1), cnames)


def crossed_spec(n_w: int = 6, n_i: int = 15, seed: int = 1, corr: bool = False) -> ModelSpec:
    """Paired crossed design, y ~ x + (1+x||worker) + (1+x||item) (or correlated item slopes)."""
    rng = np.random.default_rng(seed)
    w, i, s = np.meshgrid(np.arange(n_w), np.arange(n_i), [-1.0, 1.0], indexing="ij")
    w, i, x = w.ravel(), i.ravel(), s.ravel()
    n = x.size
    y = (0.5 + 0.2 * x + rng.normal(0, .4, n_w)[w] + rng.normal(0, .2, n_w)[w] * x
         + rng.normal(0, .5, n_i)[i] + rng.normal(0, .3, n_i)[i] * x + rng.normal(0, .6, n))
    X = np.column_stack([np.ones(n), x])
    one = np.ones(n)
    if corr:
        terms = (_term("worker", w, one, ("(Intercept)",)), _term("worker", w, x, ("x",)),
                 _term("item", i, np.column_stack([one, x]), ("(Intercept)", "x")))
    else:
        terms = (_term("worker", w, one, ("(Intercept)",)), _term("worker", w, x, ("x",)),
                 _term("item", i, one, ("(Intercept)",)), _term("item", i, x, ("x",)))
    return ModelSpec("y ~ x + (1 + x || worker) + (1 + x || item)", "y", y, X,
                     ("(Intercept)", "x"), terms)


def nested_spec(seed: int = 2, item_slopes: bool = False) -> ModelSpec:
    """Items nested in 3 systems, (system || worker) + (1 | item) [or (system || item)]."""
    rng = np.random.default_rng(seed)
    n_items, n_w = 30, 8
    sys_of_item = np.arange(n_items) % 3
    rows = [(wk, it) for it in range(n_items) for wk in rng.choice(n_w, 3, replace=False)]
    w = np.array([r[0] for r in rows])
    it = np.array([r[1] for r in rows])
    sy = sys_of_item[it]
    ind = np.eye(3)[sy]
    n = w.size
    X = np.column_stack([np.ones(n), ind[:, 0] - ind[:, 2], ind[:, 1] - ind[:, 2]])
    y = X @ [0.5, 0.1, -0.05] + rng.normal(0, .3, n_items)[it] + rng.normal(0, .2, n_w)[w] + rng.normal(0, .4, n)
    one = np.ones(n)
    names = ("systemA", "systemB", "systemC")
    terms = (_term("worker", w, one, ("(Intercept)",)), _term("worker", w, ind, names),
             _term("item", it, one, ("(Intercept)",)))
    if item_slopes:     # each item has only 2 of its 4 columns non-zero ("patterns")
        terms = (*terms, _term("item", it, ind, names))
    return ModelSpec("y ~ system + (system || worker) + (1 | item)", "y", y, X,
                     ("(Intercept)", "system1", "system2"), terms)


def dense_deviance(model: NativeModel, theta: np.ndarray, REML: bool) -> float:
    """Brute force: full Z, Lambda, dense Cholesky of Lambda'Z'Z Lambda + I, PLS solve."""
    spec, lay = model.spec, model.layout
    Zs, Ls = [], []
    for t, off in zip(lay.terms, lay.term_offsets, strict=True):
        lam = np.zeros((t.q, t.q))
        k = off
        for j in range(t.q):
            for i in range(j, t.q):
                lam[i, j] = theta[k]
                k += 1
        Zfull = np.zeros((spec.n, t.n_levels * t.q))
        for c in range(t.q):
            Zfull[np.arange(spec.n), t.codes * t.q + c] = t.Z[:, c]
        Zs.append(Zfull)
        Ls.append(np.kron(np.eye(t.n_levels), lam))
    Z = np.hstack(Zs)
    q = Z.shape[1]
    Lam = np.zeros((q, q))
    o = 0
    for L in Ls:
        Lam[o:o + L.shape[0], o:o + L.shape[0]] = L
        o += L.shape[0]
    ZL = Z @ Lam
    X, y = spec.X, spec.y
    n, p = X.shape
    # penalised least squares on the augmented system
    A = np.block([[ZL.T @ ZL + np.eye(q), ZL.T @ X], [X.T @ ZL, X.T @ X]])
    rhs = np.concatenate([ZL.T @ y, X.T @ y])
    sol = np.linalg.solve(A, rhs)
    u, beta = sol[:q], sol[q:]
    r2 = float(np.sum((y - ZL @ u - X @ beta) ** 2) + u @ u)
    ldL2 = np.linalg.slogdet(ZL.T @ ZL + np.eye(q))[1]
    if not REML:
        return ldL2 + n * (1 + math.log(2 * math.pi * r2 / n))
    LX = np.linalg.cholesky(A)[q:, q:]
    ldRX2 = 2 * np.sum(np.log(np.diag(LX)))
    return ldL2 + ldRX2 + (n - p) * (1 + math.log(2 * math.pi * r2 / (n - p)))


SPECS = [crossed_spec, nested_spec, lambda: crossed_spec(corr=True),
         lambda: nested_spec(item_slopes=True)]
SPEC_IDS = ["crossed", "nested", "correlated", "nested-patterns"]


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


def test_active_column_patterns_are_used_for_nested_items():
    model = NativeModel(nested_spec(item_slopes=True))
    assert model.blocks.b1.group == "item"
    pats = model.blocks.patterns
    assert pats is not None and len(pats) == 3          # one pattern per system
    assert all(cols.size == 2 for _, cols, _, _ in pats)
    assert NativeModel(crossed_spec()).blocks.patterns is None


def test_sigma_matches_criterion_definition():
    model = NativeModel(crossed_spec())
    for REML in (False, True):
        core = model.refit_core(model.spec.y, REML=REML)
        f = model.ev.factor(core.theta)
        n, p = model.spec.n, model.spec.p
        assert core.sigma ** 2 == pytest.approx(f.r2 / (n - p if REML else n), rel=1e-12)
        assert core.deviance == pytest.approx(model.deviance(core.theta, REML=REML), rel=1e-12)


def test_optimum_is_a_local_minimum():
    model = NativeModel(crossed_spec())
    core = model.refit_core(model.spec.y)
    rng = np.random.default_rng(5)
    for _ in range(20):
        th = np.maximum(core.theta + rng.normal(0, 1e-2, core.theta.size), 0)
        assert model.deviance(th) >= core.deviance - 1e-6


def test_refit_core_equals_fresh_model_and_warm_start():
    spec = crossed_spec()
    model = NativeModel(spec)
    y2 = spec.y + np.random.default_rng(9).normal(0, .5, spec.n)
    core = model.refit_core(y2)
    fresh = NativeModel(spec.with_response(y2)).fit()
    assert core.deviance == pytest.approx(fresh.deviance, abs=1e-6)
    np.testing.assert_allclose(core.beta, fresh.fixef.to_numpy(), rtol=1e-5)
    warm = model.refit_core(y2, start=core.theta)
    assert warm.deviance <= core.deviance + 1e-6
    assert warm.n_evals < core.n_evals
    # the original response is untouched by refits
    again = model.fit()
    assert again.nobs == spec.n and np.array_equal(model.blocks.y, spec.y)


def test_refit_core_never_warns():
    spec = crossed_spec()
    model = NativeModel(spec)
    rng = np.random.default_rng(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            model.refit_core(rng.normal(size=spec.n))   # pure noise: singular fits


def test_theta_order_and_names_follow_lme4():
    model = NativeModel(crossed_spec())
    # lme4 sorts terms by levels with rev(order(nl)): item (15 levels) first, ties reversed
    assert model.theta_names == ("item.x", "item.(Intercept)", "worker.x", "worker.(Intercept)")
    fit = model.fit()
    assert list(fit.varcorr()["grp"]) == ["item", "item.1", "worker", "worker.1", "Residual"]
    assert lme4_term_order([10, 10, 500, 500]) == [3, 2, 1, 0]
    assert lme4_term_order([5, 5, 3]) == [0, 1, 2]
    assert make_unique(["g", "g", "h", "g"]) == ["g", "g.1", "h", "g.2"]
    # correlated model: theta is the column-major lower triangle
    mc = NativeModel(crossed_spec(corr=True))
    assert mc.theta_names[:3] == ("item.(Intercept)", "item.x.(Intercept)", "item.x")
    assert list(mc.lower[:3]) == [0.0, -np.inf, 0.0]


def test_singular_flag_and_lmer_warning(monkeypatch):
    # identical group means: the ML estimate of the group variance is exactly 0
    base = np.array([1.0, 2.0, 4.0, 7.0])
    y = np.concatenate([np.random.default_rng(k).permutation(base) for k in range(6)])
    g = np.repeat(np.arange(6), 4)
    spec = ModelSpec("y ~ 1 + (1 | g)", "y", y, np.ones((24, 1)), ("(Intercept)",),
                     (_term("g", g, np.ones(24), ("(Intercept)",)),))
    core = NativeModel(spec).refit_core(y)
    assert core.singular and core.theta[0] < 1e-4
    import nlpower.lmm.frame as frame
    monkeypatch.setattr(frame, "model_frame", lambda formula, data, contrasts=None: spec)
    with pytest.warns(SingularFitWarning, match="singular"):
        fit = lmer("y ~ 1 + (1 | g)", pd.DataFrame({"y": y, "g": g}), REML=False)
    assert fit.singular


def test_convergence_failure_is_reported_and_warned(monkeypatch):
    spec = crossed_spec()
    core = NativeModel(spec).refit_core(spec.y, control={"maxeval": 3})
    assert not core.converged and "maxeval" in core.message
    import nlpower.lmm.frame as frame
    monkeypatch.setattr(frame, "model_frame", lambda formula, data, contrasts=None: spec)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        lmer(spec.formula, pd.DataFrame({"y": spec.y}), control={"maxeval": 3})


def test_lmer_end_to_end_with_formula():
    spec = crossed_spec()
    t_w = spec.re_terms[0]
    t_i = spec.re_terms[2]
    df = pd.DataFrame({"y": spec.y, "x": spec.X[:, 1],
                       "worker": np.array(t_w.levels)[t_w.codes],
                       "item": np.array(t_i.levels)[t_i.codes]})
    fit = lmer("y ~ x + (1 + x || worker) + (1 + x || item)", df, REML=False)
    direct = NativeModel(spec).fit()
    assert fit.deviance == pytest.approx(direct.deviance, abs=1e-6)
    assert fit.engine == "native" and not fit.REML


def test_model_without_fixed_effects():
    # y ~ 0 + (1 | g): REML and ML coincide (p = 0); checked against lme4 1.1-31 by hand
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(8), 5)
    y = rng.normal(size=40) + rng.normal(size=8)[g]
    spec = ModelSpec("y ~ 0 + (1 | g)", "y", y, np.zeros((40, 0)), (),
                     (_term("g", g, np.ones(40), ("(Intercept)",)),))
    model = NativeModel(spec)
    ml, reml = model.fit(REML=False), model.fit(REML=True)
    assert ml.fixef.size == 0 and ml.deviance == pytest.approx(reml.deviance, rel=1e-10)
    assert ml.deviance == pytest.approx(dense_deviance(model, ml.theta, False), rel=1e-10)
    assert "(no fixed effects)" in ml.summary()


# ---------------------------------------------------------------- errors
def test_error_nan_in_response():
    spec = crossed_spec()
    y = spec.y.copy()
    y[3] = np.nan
    with pytest.raises(InputError, match=r"missing or infinite value.*rows 3"):
        NativeModel(spec).refit_core(y)
    with pytest.raises(InputError, match="missing or infinite"):
        NativeModel(spec.with_response(y))


def test_error_inf_in_X():
    spec = crossed_spec()
    X = spec.X.copy()
    X[5, 1] = np.inf
    bad = ModelSpec(spec.formula, "y", spec.y, X, spec.fixef_names, spec.re_terms)
    with pytest.raises(InputError, match=r"X \(the fixed-effects model matrix\).*rows 5"):
        NativeModel(bad)


def test_error_nan_in_random_effects_columns():
    spec = crossed_spec()
    t = spec.re_terms[1]
    Z = t.Z.copy()
    Z[0, 0] = np.nan
    bad = ModelSpec(spec.formula, "y", spec.y, spec.X, spec.fixef_names,
                    (spec.re_terms[0], ReTerm(t.group, t.codes, t.levels, Z, t.cnames),
                     *spec.re_terms[2:]))
    with pytest.raises(InputError, match=r"random-effects columns of \(x \| worker\)"):
        NativeModel(bad)


def test_error_constant_response():
    spec = crossed_spec()
    with pytest.raises(InputError, match="constant"):
        NativeModel(spec).refit_core(np.full(spec.n, 3.0))


def test_error_wrong_response_length():
    spec = crossed_spec()
    with pytest.raises(InputError, match=rf"length {spec.n}"):
        NativeModel(spec).refit_core(np.ones(4))


def test_error_no_random_terms():
    spec = crossed_spec()
    bad = ModelSpec("y ~ x", "y", spec.y, spec.X, spec.fixef_names, ())
    with pytest.raises(InputError, match="no random-effects terms"):
        NativeModel(bad)


def test_error_too_few_observations():
    g = np.array([0, 1])
    spec = ModelSpec("y ~ a + b + (1|g)", "y", np.array([1.0, 2.0]), np.eye(2), ("a", "b"),
                     (_term("g", g, np.ones(2), ("(Intercept)",)),))
    with pytest.raises(InputError, match="need more observations"):
        NativeModel(spec)


def test_error_bad_start_and_theta_and_control_and_mode():
    model = NativeModel(crossed_spec())
    with pytest.raises(InputError, match="start must be 4 finite theta values"):
        model.refit_core(model.spec.y, start=[1.0, 2.0])
    with pytest.raises(InputError, match="theta must have 4 values"):
        model.deviance([1.0])
    with pytest.raises(InputError, match="unknown setting"):
        model.refit_core(model.spec.y, control={"tol": 1})
    with pytest.raises(InputError, match="mode must be one of"):
        NativeModel(crossed_spec(), mode="fast")


def test_fit_error_when_deviance_not_finite_at_start():
    spec = crossed_spec()
    X = np.column_stack([spec.X, spec.X[:, 1]])          # aliased column -> R_X singular
    bad = ModelSpec(spec.formula, "y", spec.y, X, ("(Intercept)", "x", "x2"), spec.re_terms)
    with pytest.raises(FitError, match="not finite at the starting theta"):
        NativeModel(bad).refit_core(spec.y)


def test_lmer_argument_errors():
    df = pd.DataFrame({"y": [1.0, 2.0]})
    with pytest.raises(InputError, match="engine must be one of 'native', 'lme4'"):
        lmer("y ~ 1 + (1|g)", df, engine="julia")
    with pytest.raises(InputError, match="REML must be True or False"):
        lmer("y ~ 1 + (1|g)", df, REML="yes")  # type: ignore[arg-type]
