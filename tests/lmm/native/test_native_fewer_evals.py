"""Fewer optimiser calls: the start's criterion reused, the scaled start's first trust region."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import model as native_model
from nlpower.lmm.native.optimize import DEFAULT_CONTROL, bobyqa, optimize_theta


def _valley(x: np.ndarray) -> float:
    """A curved valley (Rosenbrock-like, minimum at (1, 1, 0.5))."""
    return float(10 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2 + 3 * (x[2] - 0.5) ** 2)


class _Counted:
    def __init__(self, fn):
        self.fn, self.points = fn, []

    def __call__(self, x):
        self.points.append(np.array(x, dtype=float))
        return self.fn(x)


@pytest.mark.parametrize("x0", [np.array([0.3, 0.6, 1.2]), np.array([2.0, 0.1, 0.0])])
def test_bobyqa_with_the_starts_value_takes_the_same_path_one_evaluation_shorter(x0):
    lower = np.array([0.0, 0.0, -np.inf])
    ctl = dict(DEFAULT_CONTROL)
    plain, known = _Counted(_valley), _Counted(_valley)
    a = bobyqa(plain, x0, lower, ctl)
    b = bobyqa(known, x0, lower, ctl, f0=_valley(x0))
    assert np.array_equal(a.theta, b.theta) and a.fval == b.fval
    assert (a.message, a.converged) == (b.message, b.converged)
    assert np.array_equal(plain.points[0], x0)            # BOBYQA's first point is its start
    assert len(known.points) == len(plain.points) - 1 == b.n_evals == a.n_evals - 1
    for p, q in zip(plain.points[1:], known.points, strict=True):
        assert np.array_equal(p, q)


def test_a_wrong_start_value_is_not_used_for_another_point():
    """``f0`` belongs to ``x0`` only: a start clipped to the bound is evaluated afresh."""
    lower = np.array([0.0, 0.0, -np.inf])
    x0 = np.array([-0.5, 0.6, 1.2])                        # below the bound: clipped to 0
    seen = _Counted(_valley)
    res = bobyqa(seen, x0, lower, dict(DEFAULT_CONTROL), f0=-1e9)
    assert res.fval > -1e9 and res.fval == pytest.approx(0.0, abs=1e-6)
    assert res.n_evals == len(seen.points)


def _nested(seed: int) -> pd.DataFrame:
    """sys20 in small: item:system nested in items, crowd workers, a dense rest of >= 500."""
    rng = np.random.default_rng(seed)
    n_items, n_sys, n_workers = 500, 2, 60
    item = np.repeat(np.arange(n_items), n_sys * 2)
    system = np.tile(np.repeat(np.arange(n_sys), 2), n_items)
    worker = rng.integers(0, n_workers, item.size)
    y = (0.3 * system + rng.normal(0, 0.5, n_items)[item]
         + rng.normal(0, 0.3, (n_items, n_sys))[item, system]
         + rng.normal(0, 0.4, n_workers)[worker] + rng.normal(0, 1.0, item.size))
    return pd.DataFrame({"rating": y, "item": [f"i{k}" for k in item],
                         "system": [f"s{k}" for k in system],
                         "worker": [f"w{k}" for k in worker]})


@pytest.fixture(scope="module")
def nested() -> NativeModel:
    spec = model_frame("rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)",
                       _nested(3), contrasts={"system": "sum"})
    model = NativeModel(spec)
    assert model.blocks.N2 >= native_model.COSTLY_N2
    assert model.layout.size <= native_model.SCALED_START_MAX_K
    return model


def test_scaled_start_gets_a_first_trust_region_of_its_own_scale(nested):
    nested._set_y(nested.spec.y)
    x0, f0, step, n = nested._scaled_start(False)
    start = nested.layout.start
    # the moment start counts item's variance again in item:system's: the scaled start wins
    assert step != native_model.MOMENT_STEP and n == 1 + len(native_model.START_SCALES)
    c = x0[0] / start[0]
    assert c in native_model.START_SCALES and np.allclose(x0, c * start)
    assert f0 == nested.deviance(x0)
    assert step == pytest.approx(native_model.SCALED_STEP * np.max(np.abs(x0)))


def test_scaled_start_radius_reaches_the_optimum_of_nlopts_default(nested, monkeypatch):
    fit = nested.fit(REML=False)
    monkeypatch.setattr(native_model, "SCALED_STEP", 0.0)        # NLopt's default radius
    ref = nested.fit(REML=False)
    assert fit.deviance <= ref.deviance + 1e-8
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-6)
    np.testing.assert_allclose(fit.theta, ref.theta, atol=1e-4)
    assert fit.optinfo["checkconv"]["code"] == ref.optinfo["checkconv"]["code"]
    assert fit.converged == ref.converged


def test_a_fit_evaluates_its_start_once(nested):
    """The start's criterion (from the start stage) is not computed again by BOBYQA."""
    model = NativeModel(nested.spec)
    seen: list[np.ndarray] = []
    ev = model.ev

    class Recording:
        def __call__(self, th, *a, **k):
            seen.append(np.array(th, dtype=float))
            return ev(th, *a, **k)

        def __getattr__(self, name):
            return getattr(ev, name)

    model.ev = Recording()
    fit = model.fit(REML=False)
    # the moment start, the scaled starts, then BOBYQA's points: none of them twice
    # (BOBYQA's first point is the chosen start, already evaluated in the start stage)
    keys = [p.tobytes() for p in seen]
    assert all(keys.count(k) == 1 for k in keys[: len(native_model.START_SCALES) + 2])
    assert fit.optinfo["stages"]["bobyqa"]["evaluations"] > 0


def test_descent_path_does_not_evaluate_its_start_again():
    """With many parameters the descent starts from lme4's start without a second evaluation."""
    rng = np.random.default_rng(4)
    w, i = rng.integers(0, 20, 600), rng.integers(0, 40, 600)
    s = rng.integers(0, 3, 600)
    y = rng.normal(0, 1, 600) + rng.normal(0, 0.5, 40)[i] + 0.2 * s
    df = pd.DataFrame({"rating": y, "worker": [f"w{k}" for k in w],
                       "item": [f"i{k}" for k in i], "system": [f"s{k}" for k in s]})
    model = NativeModel(model_frame("rating ~ system + (system || worker) + (system || item)",
                                    df, contrasts={"system": "sum"}))
    assert model.layout.size >= native_model.ANALYTIC_MIN_K
    model._set_y(model.spec.y)
    x0 = model.layout.start.copy()
    f0 = model.ev(x0, False)
    calls = [0]

    def fn(th):
        calls[0] += 1
        return model.ev(th, False)

    kw = dict(terms=model._term_slices, fg=lambda th: model.value_and_gradient(th, False),
              descent_first=True)
    a = optimize_theta(fn, x0, model.layout.lower, None, **kw)
    n_plain = calls[0]
    calls[0] = 0
    b = optimize_theta(fn, x0, model.layout.lower, None, f0=f0, **kw)
    assert np.array_equal(a.theta, b.theta) and a.fval == b.fval
    assert calls[0] == n_plain - 1 and b.n_evals == a.n_evals - 1
