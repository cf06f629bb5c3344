"""A zero pivot of a multi-column rest term: the gradient without that term's inverse.

``(m I - D_t) L_t^{-1}`` of a rest term is the sum over its levels of the
diagonal blocks of ``S^{-1} Lambda_r' M_u`` (``M_u`` the rest's Schur
complement before the scaling, kept on the factor where such a pivot is
zero), which needs no ``L_t^{-1}``.  References: differences of the criterion
(one-sided at the bound) and, at invertible factors, the inverse formula.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import gradient as grad_mod
from nlpower.lmm.native.gradient import theta_gradient
from nlpower.mixed.native import deviance as dev_mod
from nlpower.mixed.native.deviance import DevianceEvaluator

STEP = 1e-6


def _sim(design: CrossedDesign, params, seed: int) -> pd.DataFrame:
    df = simulate(design, params, rng=seed)
    for c in ("worker", "item", "system"):
        df[c] = df[c].astype(str)
    return df


def _crowd() -> pd.DataFrame:
    return _sim(CrossedDesign(60, 100, 2, workers_per_item=2), presets.high_variance(0.2), 6)


# each with a correlated (factor ||) term in the rest; the path of the rest's inverse
# (``gather``: the peeled rest; the others without peeling, ``dense`` also without the
# gathered inverse)
CASES = {
    "4 systems, dense rest": (
        lambda: _sim(CrossedDesign(30, 12, 4, workers_per_item=5),
                     presets.dataset("hashimoto-reddit").params, 5), "dense"),
    "4 systems, fully crossed, block 1 from cross-products": (
        lambda: _sim(CrossedDesign(6, 30, 4), presets.dataset("hashimoto-reddit").params, 5),
        "dense_active"),
    "sparse crowd, peeled rest": (_crowd, "gather"),
    "sparse crowd, gathered inverse (active block 1)": (_crowd, "gather_dense"),
    "sparse crowd, dense T L21": (_crowd, "dense"),
    "nested items (patterns)": (
        lambda: _sim(CrossedDesign(8, 24, 4, workers_per_item=6, items="nested"),
                     presets.dataset("dathathri-pplm").params, 4), None),
}
FORMULA = "rating ~ system + (system || worker) + (system || item)"


def _model(name: str, mp: pytest.MonkeyPatch) -> NativeModel:
    data, path = CASES[name]
    if path in ("dense", "dense_active"):
        mp.setattr(grad_mod, "_gather_dense_pays", lambda ev, Nr: False)
    if path == "dense":
        mp.setattr(grad_mod, "_dense_active_pays", lambda ev: False)
    spec = model_frame(FORMULA, data(), contrasts={"system": "sum"})
    model = NativeModel(spec)
    model._set_y(spec.y)
    if path in ("dense", "dense_active", "gather_dense"):
        model.ev = DevianceEvaluator(model.blocks, peel=False)
    return model


def _rest_term(model: NativeModel) -> tuple[np.ndarray, list[int]]:
    """theta indices of the rest's multi-column term and of its pivots."""
    blk, _ = next((blk, off) for blk, off in model.ev.b.rest if max(blk.term_q) > 1)
    col = 0
    for qt in blk.term_q:
        if qt > 1:
            where = {int(f): int(t) for f, t in zip(blk.lam_idx, blk.theta_idx, strict=True)}
            idx = np.array([t for f, t in where.items() if col <= f // blk.q < col + qt
                            and col <= f % blk.q < col + qt])
            return idx, [where[c * blk.q + c] for c in range(col, col + qt)]
        col += qt
    raise AssertionError("no multi-column rest term")


def _theta(model: NativeModel, seed: int) -> np.ndarray:
    lay = model.layout
    rng = np.random.default_rng(seed)
    return np.where(lay.diag, rng.uniform(0.3, 1.3, lay.size), rng.normal(0.0, 0.3, lay.size))


def _differences(model: NativeModel, th: np.ndarray, REML: bool, at_bound: list[int]
                 ) -> np.ndarray:
    """Central differences; at a zero pivot the one-sided second-order difference."""
    def f(x: np.ndarray) -> float:
        return model.deviance(x, REML=REML)

    out = np.empty(th.size)
    for j in range(th.size):
        e = np.zeros(th.size)
        if j in at_bound:
            e[j] = 1e-5
            out[j] = (-3.0 * f(th) + 4.0 * f(th + e) - f(th + 2 * e)) / 2e-5
        else:
            e[j] = STEP
            out[j] = (f(th + e) - f(th - e)) / (2 * STEP)
    return out


@pytest.mark.parametrize("REML", [False, True], ids=["ML", "REML"])
@pytest.mark.parametrize("name", list(CASES))
def test_zero_rest_pivot_gradient_is_exact_in_one_call(name, REML, monkeypatch):
    model = _model(name, monkeypatch)
    _, want_path = CASES[name]
    _, pivots = _rest_term(model)
    b = model.ev.b
    Nr = b.nre2 + (b.p if REML else 0)
    for k, which in enumerate((1, -1)):         # an inner and the last pivot at 0
        th = _theta(model, 7 + k)
        j = pivots[which]
        th[j] = 0.0
        f = model.ev.factor(th)
        assert f.Mu is not None                  # the unscaled Schur complement was kept
        if want_path is not None:
            assert grad_mod._inverse_path(model.ev, f, Nr) == want_path
        g, exact = theta_gradient(model.ev, f, REML)
        assert exact.all()
        val, g2, calls = model.value_and_gradient(th, REML)
        assert calls == 1
        np.testing.assert_array_equal(g2, g)
        fd = _differences(model, th, REML, [j])
        scale = max(1.0, float(np.max(np.abs(fd))))
        np.testing.assert_allclose(g, fd, atol=2e-6 * scale, rtol=0)


@pytest.mark.parametrize("REML", [False, True], ids=["ML", "REML"])
@pytest.mark.parametrize("name", list(CASES))
def test_rest_route_equals_the_inverse_formula(name, REML, monkeypatch):
    """At an invertible factor, both formulas for the rest term agree to rounding (the
    threshold raised so that the term takes the route without ``L_t^{-1}``)."""
    model = _model(name, monkeypatch)
    idx, _ = _rest_term(model)
    th = _theta(model, 3)
    f = model.ev.factor(th)
    assert f.Mu is None                          # no zero pivot: nothing kept
    g_inv, _ = theta_gradient(model.ev, f, REML)
    monkeypatch.setattr(dev_mod, "PIVOT_TOL", 10.0)
    monkeypatch.setattr(grad_mod, "_PIVOT_TOL", 10.0)
    f2 = model.ev.factor(th)
    assert f2.Mu is not None
    g_mu, _ = theta_gradient(model.ev, f2, REML)
    np.testing.assert_allclose(g_mu[idx], g_inv[idx], rtol=1e-9,
                               atol=1e-10 * float(np.abs(g_inv).max()))
