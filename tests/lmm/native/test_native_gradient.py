"""The analytic gradient of the profiled deviance (nlpower.lmm.native.gradient) against differences.

Central differences of the criterion itself are the reference; each structure
exercises one code path of the evaluator (block 1 scalar / 2x2 diagonal /
multi-column, dense and sparse Schur complements, nested "patterns", a
correlated term in the rest) for ML and REML.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from native_fd import STEP, central_gradient

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native.gradient import theta_gradient

DATA = Path(__file__).resolve().parents[2] / "reference" / "data"


def _model(formula: str, data: pd.DataFrame, mode: str = "auto", contrasts=None) -> NativeModel:
    spec = model_frame(formula, data, contrasts=contrasts)
    model = NativeModel(spec, mode=mode)
    model._set_y(spec.y)
    return model


def _random_theta(model: NativeModel, rng: np.random.Generator) -> np.ndarray:
    lay = model.layout
    return np.where(lay.diag, rng.uniform(0.2, 1.5, lay.size), rng.normal(0.0, 0.3, lay.size))


def _sim(design: CrossedDesign, params, seed: int) -> pd.DataFrame:
    df = simulate(design, params, rng=seed)
    for c in ("worker", "item", "system"):
        df[c] = df[c].astype(str)
    return df


CASES = {
    "sleepstudy (correlated 2x2 block 1)":
        ("Reaction ~ Days + (Days | Subject)", lambda: pd.read_csv(DATA / "sleepstudy.csv"), None),
    "penicillin (crossed scalars)":
        ("diameter ~ 1 + (1 | plate) + (1 | sample)", lambda: pd.read_csv(DATA / "penicillin.csv"), None),
    "ham (factor || term, 4x4 block)":
        ("Informed.liking ~ Product + Information + (Product || Consumer)",
         lambda: pd.read_csv(DATA / "ham.csv").astype({"Consumer": str, "Product": str,
                                                       "Information": str}),
         {"Product": "sum", "Information": "sum"}),
    "carrots (correlated term + scalar)":
        ("Preference ~ sens2 + (1 + sens2 | Consumer) + (1 | Product)",
         lambda: pd.read_csv(DATA / "carrots.csv").dropna().astype({"Consumer": str,
                                                                   "Product": str}), None),
    "2 systems crossed (2x2 diagonal blocks)":
        ("rating ~ x + (1 + x || worker) + (1 + x || item)",
         lambda: _sim(CrossedDesign(8, 30), presets.high_variance(0.2), 3), None),
    "4 systems nested (patterns)":
        ("rating ~ system + (system || item) + (system || worker)",
         lambda: _sim(CrossedDesign(8, 24, 4, workers_per_item=6, items="nested"),
                      presets.dataset("dathathri-pplm").params, 4), {"system": "sum"}),
    "4 systems sparse (correlated rest)":
        ("rating ~ system + (system || item) + (system || worker)",
         lambda: _sim(CrossedDesign(30, 12, 4, workers_per_item=5),
                      presets.dataset("hashimoto-reddit").params, 5), {"system": "sum"}),
}


@pytest.mark.parametrize("REML", [False, True], ids=["ML", "REML"])
def test_gathered_inverse_on_a_dense_rest(REML, monkeypatch):
    """Sparse crowd, rest not peeled: S^-1 gathered per item equals differences and T L21."""
    import nlpower.lmm.native.gradient as grad
    from nlpower.mixed.native.deviance import DevianceEvaluator

    df = _sim(CrossedDesign(60, 100, 2, workers_per_item=2), presets.high_variance(0.2), 6)
    model = _model("rating ~ system + (system || worker) + (system || item)", df,
                   contrasts={"system": "sum"})
    ev = DevianceEvaluator(model.blocks, peel=False)
    Nr = model.blocks.nre2 + (model.blocks.p if REML else 0)
    assert grad._gather_dense_pays(ev, Nr)                                # the path under test
    th = _random_theta(model, np.random.default_rng(12))
    g, exact = theta_gradient(ev, ev.factor(th), REML)
    assert exact.all()
    fd = np.empty(th.size)
    for j in range(th.size):
        e = np.zeros(th.size)
        e[j] = STEP
        fd[j] = (ev(th + e, REML) - ev(th - e, REML)) / (2 * STEP)
    np.testing.assert_allclose(g, fd, atol=2e-6 * max(1.0, float(np.max(np.abs(fd)))), rtol=0)
    monkeypatch.setattr(grad, "_GATHER_RATIO", 10**9)                    # the T L21 path
    np.testing.assert_allclose(theta_gradient(ev, ev.factor(th), REML)[0], g, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("REML", [False, True], ids=["ML", "REML"])
@pytest.mark.parametrize("name", list(CASES))
def test_gradient_equals_central_differences(name, REML):
    formula, data, contrasts = CASES[name]
    model = _model(formula, data(), contrasts=contrasts)
    rng = np.random.default_rng(11)
    for th in (model.layout.start.copy(), _random_theta(model, rng)):
        g, exact = theta_gradient(model.ev, model.ev.factor(th), REML)
        assert exact.all()
        fd = central_gradient(model, th, REML)
        scale = max(1.0, float(np.max(np.abs(fd))))
        # central differences with step 1e-6: error ~1e-7 relative (rounding and O(h^2))
        np.testing.assert_allclose(g, fd, atol=2e-6 * scale, rtol=0)


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_both_schur_strategies_give_the_same_gradient(mode):
    formula, data, _ = CASES["penicillin (crossed scalars)"]
    df = data()
    th = np.array([1.3, 0.7])
    ref = theta_gradient(*(lambda m: (m.ev, m.ev.factor(th)))(_model(formula, df)), False)[0]
    m = _model(formula, df, mode=mode)
    np.testing.assert_allclose(theta_gradient(m.ev, m.ev.factor(th), False)[0], ref, rtol=1e-9)


def test_scalar_term_at_zero_has_zero_gradient():
    # the criterion is even in a scalar term's theta: the derivative at 0 is exactly 0
    formula, data, _ = CASES["penicillin (crossed scalars)"]
    model = _model(formula, data())
    g, exact = theta_gradient(model.ev, model.ev.factor(np.array([0.0, 0.8])), False)
    assert exact.all() and g[0] == 0.0 and g[1] != 0.0


def test_singular_multicolumn_term_falls_back_to_a_raised_pivot():
    # a zero pivot of a 4x4 term: the formula needs L_t^{-1}; value_and_gradient takes that
    # term's components at the pivot raised to 1e-7 (one-sided derivative at the bound)
    formula, data, contrasts = CASES["ham (factor || term, 4x4 block)"]
    model = _model(formula, data(), contrasts=contrasts)
    rng = np.random.default_rng(2)
    th = _random_theta(model, rng)
    lay = model.layout
    off, q = next((o, t.q) for o, t in zip(lay.term_offsets, lay.terms, strict=True) if t.q > 1)
    pivot = off + q + (q - 1)                      # second diagonal element (column-major)
    assert lay.diag[pivot]
    th[pivot] = 0.0
    _, exact = theta_gradient(model.ev, model.ev.factor(th), False)
    assert not exact[off:off + q * (q + 1) // 2].all()
    _, g, n = model.value_and_gradient(th, REML=False)
    assert n == 2
    fd = np.empty(th.size)
    for j in range(th.size):
        e = np.zeros(th.size)
        e[j] = STEP
        if th[j] == 0.0 and lay.diag[j]:           # one-sided at the bound
            fd[j] = (model.deviance(th + e) - model.deviance(th)) / STEP
        else:
            fd[j] = (model.deviance(th + e) - model.deviance(th - e)) / (2 * STEP)
    scale = max(1.0, float(np.max(np.abs(fd))))
    np.testing.assert_allclose(g, fd, atol=1e-5 * scale, rtol=0)
