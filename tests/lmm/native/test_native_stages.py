"""The optimiser's stages (issue 24): gradient path, moment start, per-stage counts on the fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import model as native_model
from nlpower.lmm.native.model import moment_start
from nlpower.lmm.native.optimize import optimize_theta
from nlpower.lmm.native.ridge import _reduced_model, exact_ridges
from nlpower.mixed.native._blas import single_threaded

FORMULA4 = "rating ~ system + (system || item) + (system || worker)"


@pytest.fixture(scope="module")
def sparse4() -> NativeModel:
    """A sparse 4-system crowd study: (system || g) terms, 22 theta (the descent path)."""
    design = CrossedDesign(40, 30, 4, workers_per_item=4)
    df = simulate(design, presets.dataset("hashimoto-reddit").params, rng=11)
    model = NativeModel(model_frame(FORMULA4, df, contrasts={"system": "sum"}))
    assert model.layout.size >= native_model.ANALYTIC_MIN_K
    return model


def _corr_slopes(seed: int) -> NativeModel:
    df = simulate(CrossedDesign(12, 40), presets.high_variance(0.1), rng=seed)
    return NativeModel(model_frame("rating ~ x + (1 + x | worker) + (1 + x | item)", df))


def _starts(model: NativeModel, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    lay = model.layout
    out = [lay.start.copy()]
    for _ in range(n):
        th = np.where(lay.diag, rng.uniform(0.2, 1.5, lay.size), rng.normal(0, 0.3, lay.size))
        out.append(th)
    return out


@pytest.mark.parametrize("which", ["sparse4", "corr_slopes_1", "corr_slopes_2"])
def test_gradient_path_reaches_the_bobyqa_optimum_from_several_starts(which, sparse4):
    model = sparse4 if which == "sparse4" else _corr_slopes(int(which[-1]))
    model._set_y(model.spec.y)
    fn = lambda th: model.ev(th, False)                          # noqa: E731
    fg = lambda th: model.value_and_gradient(th, False)          # noqa: E731
    rng = np.random.default_rng(7)
    kw = dict(terms=model._term_slices, fg=fg, descent_first=True)
    for x0 in _starts(model, rng, 3):
        with single_threaded(True):          # as NativeModel.fit (small BLAS calls)
            new = optimize_theta(fn, x0, model.layout.lower, None, gradient_path=True, **kw)
            old = optimize_theta(fn, x0, model.layout.lower, None, gradient_path=False, **kw)
        assert new.fval <= old.fval + 1e-6
        assert "bobyqa" in [s[0] for s in old.stages]
        # the same optimum: the gradient path must not stop short of it either
        assert new.fval == pytest.approx(old.fval, abs=1e-5)


def test_gradient_path_needs_fewer_calls_and_names_its_optimiser(sparse4):
    fit = sparse4.fit(REML=False, checkconv="ignore")
    stages = fit.optinfo["stages"]
    assert "lbfgsb" in stages and "descent" in stages
    if "bobyqa" not in stages:
        assert fit.optinfo["optimizer"].startswith("scipy L-BFGS-B")
        assert "no BOBYQA" in fit.optinfo["nlopt_message"]
    with single_threaded(True):
        old = optimize_theta(lambda th: sparse4.ev(th, False), sparse4.layout.start.copy(),
                             sparse4.layout.lower, None, terms=sparse4._term_slices,
                             fg=lambda th: sparse4.value_and_gradient(th, False),
                             descent_first=True, gradient_path=False)
    calls_old = sum(s[1] + s[2] for s in old.stages)
    calls_new = sum(d["evaluations"] + d["gradients"] for k, d in stages.items()
                    if k not in ("start", "checkconv"))
    assert calls_new < calls_old


class _CountingEvaluator:
    """Delegates to a DevianceEvaluator and counts its ``__call__``s (deviance evaluations)."""

    def __init__(self, ev):
        self._ev = ev
        self.calls = 0

    def __call__(self, *a, **k):
        self.calls += 1
        return self._ev(*a, **k)

    def __getattr__(self, name):
        return getattr(self._ev, name)


def _count_calls(model: NativeModel) -> tuple[_CountingEvaluator, list[int]]:
    ev = _CountingEvaluator(model.ev)
    model.ev = ev
    grads = [0]
    vg = model.value_and_gradient

    def counted(*a, **k):
        grads[0] += 1
        return vg(*a, **k)

    model.value_and_gradient = counted
    return ev, grads


@pytest.mark.parametrize("which", ["sparse4", "corr_slopes_3"])
def test_stage_counts_are_the_calls_made(which, sparse4):
    model = NativeModel(sparse4.spec) if which == "sparse4" else _corr_slopes(3)
    counters = [_count_calls(model)]
    if exact_ridges(model):     # the check runs on the model without the (f || g) ridges
        counters.append(_count_calls(_reduced_model(model)))
    fit = model.fit(REML=False)
    stages = fit.optinfo["stages"]
    assert list(stages)[0] == "start" and list(stages)[-1] == "checkconv"
    assert sum(d["evaluations"] for d in stages.values()) == sum(ev.calls for ev, _ in counters)
    grads = sum(g[0] for _, g in counters)
    if model._analytic:
        assert sum(d["gradients"] for d in stages.values()) == grads > 0
    else:        # finite-difference gradients: their evaluations are counted as evaluations
        assert grads == 0
    assert all(d["seconds"] >= 0 for d in stages.values())


@pytest.fixture(scope="module")
def costly() -> NativeModel:
    """Two large crossed factors: a dense rest of >= COSTLY_N2 columns, 2 theta."""
    df = simulate(CrossedDesign(520, 600, workers_per_item=2), presets.high_variance(0.1),
                  rng=5)
    model = NativeModel(model_frame("rating ~ x + (1 | worker) + (1 | item)", df))
    assert model.blocks.N2 >= native_model.COSTLY_N2
    return model


def test_moment_start_is_closer_and_reaches_the_same_optimum(costly):
    lay = costly.layout
    xm = moment_start(costly.spec.X, costly.spec.y, lay)
    costly._set_y(costly.spec.y)
    assert costly.deviance(xm) < costly.deviance(lay.start)
    fit = costly.fit(REML=False, checkconv="ignore")
    assert fit.optinfo["stages"]["start"]["evaluations"] == 2       # moment and lme4's start
    ref = costly.fit(REML=False, start=lay.start, checkconv="ignore")   # BOBYQA from lme4's
    assert fit.deviance <= ref.deviance + 1e-6
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-5)
    np.testing.assert_allclose(fit.theta, ref.theta, atol=2e-3)


def test_moment_start_recovers_one_way_components():
    """One grouping factor with many levels: the moment start is near the ML estimate."""
    rng = np.random.default_rng(9)
    g = np.repeat(np.arange(300), 8)
    x = rng.normal(size=g.size)
    y = 1.0 + 0.3 * x + rng.normal(0, 0.6, 300)[g] + rng.normal(0, 1.0, g.size)
    df = pd.DataFrame({"y": y, "x": x, "g": [f"g{k}" for k in g]})
    model = NativeModel(model_frame("y ~ x + (1 | g)", df))
    fit = model.fit(REML=False, checkconv="ignore")
    xm = moment_start(model.spec.X, model.spec.y, model.layout)
    assert xm[0] == pytest.approx(fit.theta[0], rel=0.1)


def _bowl(x: np.ndarray) -> tuple[float, np.ndarray, int]:
    A = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    d = x - np.array([0.7, 0.3, -0.2])
    return float(0.5 * d @ A @ d), A @ d, 1


@pytest.mark.parametrize("offset, steps", [(1e-5, 0), (1e-2, 1)])
def test_newton_takes_no_first_step_below_bobyqas_ftol(offset, steps):
    """Predicted gain ~1e-10 (below 1e-8): the point stays, k gradient calls, no k + 1-th."""
    from nlpower.lmm.native.optimize import NEWTON_SKIP_GAIN, newton

    x = np.array([0.7, 0.3, -0.2]) + offset
    f, g, _ = _bowl(x)
    done, x2, f2, n, derivs = newton(_bowl, x, f, g, np.array([0.0, 0.0, -np.inf]))
    assert done
    if steps == 0:
        assert f < NEWTON_SKIP_GAIN                   # a quadratic: f is the predicted gain
        assert np.array_equal(x2, x) and f2 == f and n == 3
        assert np.array_equal(derivs[0], x) and np.array_equal(derivs[2], x)
    else:               # a Hessian, the step; a second Hessian and (null) step as before
        assert f2 < 1e-12 and n == 3 + 1 + 3 + 1


def test_bobyqa_takes_over_where_the_gradient_path_stalls(sparse4, monkeypatch):
    """A projected gradient above GRADIENT_GTOL after L-BFGS-B (here: any): BOBYQA runs."""
    from nlpower.lmm.native import optimize

    ref = sparse4.fit(REML=False, checkconv="ignore")
    monkeypatch.setattr(optimize, "GRADIENT_GTOL", 0.0)
    fit = sparse4.fit(REML=False, checkconv="ignore")
    assert "bobyqa" in fit.optinfo["stages"] and fit.optinfo["optimizer"] == "nlopt LN_BOBYQA"
    assert fit.optinfo["nlopt_message"].startswith("NLOPT")
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-5)
