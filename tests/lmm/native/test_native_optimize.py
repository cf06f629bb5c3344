"""The optimiser stage (nlpower.lmm.native.optimize): optimum, convergence and boundary diagnostics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower.lmm
from lmm_specs import _term, crossed_spec
from nlpower.errors import (
    ConvergenceWarning,
    FitError,
    SingularFitWarning,
)
from nlpower.lmm import lmer
from nlpower.lmm.native import NativeModel
from nlpower.lmm.structure import ModelSpec


def test_optimum_is_a_local_minimum():
    model = NativeModel(crossed_spec())
    core = model.refit_core(model.spec.y)
    rng = np.random.default_rng(5)
    for _ in range(20):
        th = np.maximum(core.theta + rng.normal(0, 1e-2, core.theta.size), 0)
        assert model.deviance(th) >= core.deviance - 1e-6


def test_singular_flag_and_lmer_warning(monkeypatch):
    # identical group means: the ML estimate of the group variance is exactly 0
    base = np.array([1.0, 2.0, 4.0, 7.0])
    y = np.concatenate([np.random.default_rng(k).permutation(base) for k in range(6)])
    g = np.repeat(np.arange(6), 4)
    spec = ModelSpec("y ~ 1 + (1 | g)", "y", y, np.ones((24, 1)), ("(Intercept)",),
                     (_term("g", g, np.ones(24), ("(Intercept)",)),))
    core = NativeModel(spec).refit_core(y)
    assert core.singular and core.theta[0] < 1e-4
    # lmer builds the structure with nlpower.lmm.model_frame: hand it this one
    monkeypatch.setattr(nlpower.lmm, "model_frame", lambda formula, data, contrasts=None: spec)
    with pytest.warns(SingularFitWarning, match="singular"):
        fit = lmer("y ~ 1 + (1 | g)", pd.DataFrame({"y": y, "g": g}), REML=False)
    assert fit.singular


def test_convergence_failure_is_reported_and_warned(monkeypatch):
    spec = crossed_spec()
    core = NativeModel(spec).refit_core(spec.y, control={"maxeval": 3})
    assert not core.converged and "maxeval" in core.message
    # lmer builds the structure with nlpower.lmm.model_frame: hand it this one
    monkeypatch.setattr(nlpower.lmm, "model_frame", lambda formula, data, contrasts=None: spec)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        lmer(spec.formula, pd.DataFrame({"y": spec.y}), control={"maxeval": 3})


def test_fit_error_when_deviance_not_finite_at_start():
    spec = crossed_spec()
    X = np.column_stack([spec.X, spec.X[:, 1]])          # aliased column -> R_X singular
    bad = ModelSpec(spec.formula, "y", spec.y, X, ("(Intercept)", "x", "x2"), spec.re_terms)
    with pytest.raises(FitError, match="not finite at the starting theta"):
        NativeModel(bad).refit_core(spec.y)


def _bowl(x: np.ndarray) -> tuple[float, np.ndarray, int]:
    """f = (x - c)' A (x - c) / 2 + a small cubic; minimum near c = (0.7, 0.3, -0.2)."""
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    d = x - np.array([0.7, 0.3, -0.2])
    return float(0.5 * d @ A @ d + 0.1 * d[0] ** 3), A @ d + np.array([0.3 * d[0] ** 2, 0, 0]), 1


def test_newton_finishes_an_interior_optimum_and_hands_over_its_hessian():
    from nlpower.lmm.native.optimize import newton

    lower = np.array([0.0, 0.0, -np.inf])
    x = np.array([0.71, 0.29, -0.19])
    f, g, _ = _bowl(x)
    done, x2, f2, n, derivs = newton(_bowl, x, f, g, lower)
    assert done and f2 < f and n >= 4                # k gradients for the Hessian + the step
    assert np.max(np.abs(_bowl(x2)[1])) < 1e-6
    # handed to the convergence check: the gradient at the final point, a nearby Hessian
    x_g, g_final, x_h, H = derivs
    assert np.array_equal(x_g, x2) and np.array_equal(g_final, _bowl(x2)[1])
    assert np.array_equal(H, H.T) and np.max(np.abs(x_h - x2)) < 0.05
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    np.testing.assert_allclose(H, A, atol=0.02)      # + the cubic's 0.6 d0, |d0| <= 0.01


@pytest.mark.parametrize("x, why", [
    (np.array([0.0, 0.29, -0.19]), "on a bound"),
    (np.array([3.0, 3.0, 3.0]), "far from the optimum (predicted gain above NEWTON_MAX_GAIN)"),
])
def test_newton_declines_where_the_polish_is_needed(x, why):
    from nlpower.lmm.native.optimize import newton

    lower = np.array([0.0, 0.0, -np.inf])
    f, g, _ = _bowl(x)
    done, x2, *_ = newton(_bowl, x, f, g, lower)
    assert not done and np.array_equal(x2, x), why


def test_saddle_is_not_given_a_newton_step():
    from nlpower.lmm.native.optimize import newton

    def saddle(x):
        return float(x[0] ** 2 - x[1] ** 2), np.array([2 * x[0], -2 * x[1]]), 1

    x = np.array([0.5, 0.5])
    done, *_ = newton(saddle, x, saddle(x)[0], saddle(x)[1], np.array([-np.inf, -np.inf]))
    assert not done


def _lower_theta(L):
    """``theta`` of one term: the column-major lower triangle of ``L``."""
    q = L.shape[0]
    return np.array([L[i, j] for j in range(q) for i in range(j, q)])


def test_unfold_restarts_behind_a_zero_pivot_with_a_loaded_column():
    from nlpower.lmm.native.optimize import unfold

    # pivot 0 at 0, the later rows still load on column 0: the restart runs
    L = np.array([[0.0, 0.0, 0.0], [0.4, 0.5, 0.0], [0.3, 0.2, 0.6]])
    start = unfold(_lower_theta(L), ((0, 3),), 0.05)
    assert start is not None and start[0] > 0
    # a middle zero pivot whose column is loaded below it: also restarted
    L2 = np.array([[0.5, 0.0, 0.0], [0.2, 0.0, 0.0], [0.1, 0.3, 0.4]])
    assert unfold(_lower_theta(L2), ((0, 3),), 0.05) is not None


def test_unfold_skips_zero_trailing_columns():
    from nlpower.lmm.native.optimize import unfold

    # the last pivot at 0 (its row loads on the earlier columns) and the last two
    # columns at 0: the parametrisation is open there, no restart
    L = np.array([[0.5, 0.0, 0.0], [0.2, 0.4, 0.0], [0.3, 0.1, 0.0]])
    assert unfold(_lower_theta(L), ((0, 3),), 0.05) is None
    L2 = np.array([[0.5, 0.0, 0.0], [0.2, 0.0, 0.0], [0.3, 0.0, 0.0]])
    assert unfold(_lower_theta(L2), ((0, 3),), 0.05) is None


def test_zero_trailing_columns_are_reachable_and_loaded_ones_are_not():
    """The reason for the skip: near ``L L'`` with zero trailing columns every
    covariance has a Cholesky factor near ``L``; behind a zero pivot with a loaded
    column some have not (the restart's case)."""
    rng = np.random.default_rng(3)
    trailing = np.array([[0.5, 0.0, 0.0], [0.2, 0.4, 0.0], [0.3, 0.1, 0.0]])
    for eps in (1e-4, 1e-6, 1e-8):
        A = rng.standard_normal((3, 3))
        S = trailing @ trailing.T + eps * (A @ A.T)
        assert np.max(np.abs(np.linalg.cholesky(S) - trailing)) < 10 * np.sqrt(eps)
    loaded = np.array([[0.5, 0.0, 0.0], [0.2, 0.0, 0.0], [0.1, 0.3, 0.4]])
    # a covariance 1e-8 from L L' whose factor moves column 1 by O(1): row 2 no
    # longer loads on it (0 instead of 0.3)
    d = np.zeros((3, 3))
    d[1, 1] = 1e-8
    Lp = np.linalg.cholesky(loaded @ loaded.T + d)
    assert np.max(np.abs(Lp - loaded)) > 0.1
