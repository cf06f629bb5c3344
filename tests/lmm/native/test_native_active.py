"""Block 1's gradient on each level's active columns (nlpower.lmm.native.active).

Items nested in systems with per-system item terms use one of block 1's
columns per item; the gradient is then formed on those columns only, without
``Lambda1^{-1}``.  References: central differences of the criterion, and the
level-by-level path of the same gradient (``_inverse_blocks_dense``, reached by
switching the gathered inverse off).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from native_fd import STEP, central_gradient

from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import gradient as grad_mod
from nlpower.lmm.native.gradient import theta_gradient


def _nested(two_systems_per_item: bool, seed: int = 3) -> pd.DataFrame:
    """3 systems, 90 items nested in them (some under two systems), 40 workers, 3 ratings
    per item and system: each item couples to few workers, so the gathered inverse runs."""
    rng = np.random.default_rng(seed)
    rows = []
    for it in range(90):
        systems = [it % 3]
        if two_systems_per_item and it % 5 == 0:
            systems.append((it + 1) % 3)
        for s in systems:
            for w in rng.choice(40, size=3, replace=False):
                rows.append((f"w{w}", f"i{it}", s))
    df = pd.DataFrame(rows, columns=["worker", "item", "sys"])
    eff_w = rng.normal(0, 0.5, 40)
    eff_i = rng.normal(0, 0.7, (90, 3))
    wi = df["worker"].str[1:].astype(int).to_numpy()
    ii = df["item"].str[1:].astype(int).to_numpy()
    s = df["sys"].to_numpy()
    df["rating"] = 0.3 * s + eff_w[wi] + eff_i[ii, s] + rng.normal(0, 1.0, len(df))
    for k in range(3):
        df[f"is{k}"] = (s == k).astype(float)
    df["system"] = s.astype(str)
    return df


FORMULAS = {
    "diagonal, one active column": (
        "rating ~ system + (system || worker) + (0 + is0 + is1 + is2 || item)", False),
    "diagonal, one or two active columns": (
        "rating ~ system + (system || worker) + (0 + is0 + is1 + is2 || item)", True),
    "correlated, one or two active columns": (
        "rating ~ system + (system || worker) + (0 + is0 + is1 + is2 | item)", True),
}


def _model(formula: str, two: bool) -> NativeModel:
    spec = model_frame(formula, _nested(two), contrasts={"system": "sum"})
    model = NativeModel(spec)
    model._set_y(spec.y)
    return model


def _theta(model: NativeModel, seed: int) -> np.ndarray:
    lay = model.layout
    rng = np.random.default_rng(seed)
    return np.where(lay.diag, rng.uniform(0.3, 1.3, lay.size), rng.normal(0.0, 0.3, lay.size))


@pytest.mark.parametrize("name", list(FORMULAS))
@pytest.mark.parametrize("REML", [False, True])
def test_active_gradient_matches_differences_and_level_path(name, REML, monkeypatch):
    formula, two = FORMULAS[name]
    model = _model(formula, two)
    b = model.ev.b
    assert b.patterns is not None
    if two:                                   # levels with one and with two active columns
        assert sorted({int(p.cols.size) for p in b.patterns}) == [1, 2]
    for seed in (1, 2):
        th = _theta(model, seed)
        f = model.ev.factor(th)
        g, exact = theta_gradient(model.ev, f, REML)
        assert "_active_plan" in model.ev.__dict__      # the active path ran
        assert exact.all()
        fd = central_gradient(model, th, REML)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-4 * max(1.0, np.abs(fd).max()))
        with monkeypatch.context() as mp:      # the level-by-level path of the same gradient
            mp.setattr(grad_mod, "_gather_dense_pays", lambda ev, Nr: False)
            mp.setattr(grad_mod, "_dense_active_pays", lambda ev: False)
            g_lev, _ = theta_gradient(model.ev, model.ev.factor(th), REML)
        np.testing.assert_allclose(g, g_lev, rtol=1e-9, atol=1e-9 * np.abs(g_lev).max())


def test_active_gradient_at_a_zero_block1_column():
    """A block-1 SD at 0: the criterion is even in it, so its gradient is exactly 0, and the
    others are still exact (no Lambda1^{-1} is needed) and match differences."""
    formula, two = FORMULAS["diagonal, one active column"]
    model = _model(formula, two)
    th = _theta(model, 4)
    b1 = model.ev.b.b1
    j = int(b1.theta_idx[0])
    th[j] = 0.0
    g, exact = theta_gradient(model.ev, model.ev.factor(th), False)
    assert exact.all()
    assert g[j] == 0.0
    fd = central_gradient(model, th, False)
    others = np.arange(th.size) != j
    np.testing.assert_allclose(g[others], fd[others], rtol=1e-5,
                               atol=1e-4 * max(1.0, np.abs(fd).max()))


def test_active_correlated_zero_pivot_is_exact():
    """A zero pivot inside a correlated block-1 term: the level-by-level formula needs
    ``Lambda1^{-1}`` and flags the term; the active one does not, and matches the one-sided
    difference at the bound."""
    formula, two = FORMULAS["correlated, one or two active columns"]
    model = _model(formula, two)
    th = _theta(model, 5)
    lay = model.layout
    b1 = model.ev.b.b1
    diag_b1 = [int(t) for t in b1.theta_idx if lay.diag[t]]
    j = diag_b1[-1]                           # the last pivot: nothing below it depends on it
    th[j] = 0.0
    g, exact = theta_gradient(model.ev, model.ev.factor(th), False)
    assert "_active_plan" in model.ev.__dict__
    assert exact.all()
    e = np.zeros(th.size)
    e[j] = STEP
    one_sided = (model.deviance(th + e) - model.deviance(th)) / STEP
    assert g[j] == pytest.approx(one_sided, rel=1e-4, abs=1e-3)
