"""Per-call and set-up work of the native evaluator (nlpower.lmm.native).

* The grouped products of block 1 (levels with equal ``Z1'Z1``) are decided
  at set-up and built by the first grouped evaluation: a model whose response
  changed before then gives what a model that built them at set-up and then
  changed its response gives, bit for bit (and a fresh model's, to rounding).
* ``DevianceEvaluator.factor_once`` (the full model of a ridge fit, factored
  once) does not build them, and its factorisation equals :meth:`factor`'s to
  rounding -- through block 1's dense products (``DenseSchur``) and through the
  sparse ``E E'`` -- in the deviance, REML criterion, fixed effects and modes.
* With one group of equal ``Z1'Z1`` block 1's part of the gradient sums its
  inverse blocks in one product: it equals the ungrouped evaluator's batched
  sum to rounding and a central difference of the deviance to ``O(h^2)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import gradient as grad_mod
from nlpower.lmm.native.gradient import theta_gradient
from nlpower.mixed.native.deviance import DevianceEvaluator

PAPER = "rating ~ system + (system || worker) + (system || item)"


def _crowd(seed: int = 5) -> pd.DataFrame:
    """2 systems, 60 workers, 120 items; each (item, system) cell rated by 1-2 random workers
    (a few distinct Z1'Z1 per item: several groups)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(120):
        for s in (0, 1):
            rows += [(i, s)] * int(rng.integers(1, 3))
    i, s = np.array(rows).T
    w = rng.integers(0, 60, i.size)
    y = (0.3 * np.where(s == 0, -1.0, 1.0) + 0.6 * rng.normal(size=60)[w]
         + 0.4 * rng.normal(size=(60, 2))[w, s] + 0.7 * rng.normal(size=120)[i]
         + 0.3 * rng.normal(size=(120, 2))[i, s] + rng.normal(size=i.size))
    return pd.DataFrame({"rating": y, "system": np.array(["A", "B"])[s],
                         "worker": [f"w{v:02d}" for v in w], "item": [f"i{v:03d}" for v in i]})


def _crossed(seed: int = 7) -> pd.DataFrame:
    """3 systems, 4 raters, 40 questions, fully crossed: one group of equal Z1'Z1."""
    rng = np.random.default_rng(seed)
    q, s, r = (a.ravel() for a in np.meshgrid(np.arange(40), np.arange(3), np.arange(4),
                                               indexing="ij"))
    y = (0.2 * s + 0.5 * rng.normal(size=4)[r] + 0.3 * rng.normal(size=(4, 3))[r, s]
         + 0.8 * rng.normal(size=40)[q] + 0.4 * rng.normal(size=(40, 3))[q, s]
         + rng.normal(size=q.size))
    return pd.DataFrame({"rating": y, "system": np.array(["A", "B", "C"])[s],
                         "worker": [f"r{v}" for v in r], "item": [f"q{v:02d}" for v in q]})


def _spec(df: pd.DataFrame):
    return model_frame(PAPER, df, contrasts={"system": "sum"})


def _theta(model: NativeModel, seed: int = 1) -> np.ndarray:
    return 0.3 + np.random.default_rng(seed).uniform(size=model.layout.size)


@pytest.mark.parametrize("mode", ["dense", "sparse"])
def test_factor_once_equals_factor_without_the_grouped_products(mode):
    model = NativeModel(_spec(_crowd()), mode=mode)
    assert model.blocks.use_dense == (mode == "dense")
    th = _theta(model)
    once = DevianceEvaluator(model.blocks, peel=False)
    assert once._grouped and once._grp_uq.shape[0] > 1       # several groups, decided
    f1 = once.factor_once(th)
    assert once._grp_obj is None                               # ... and never built
    full = DevianceEvaluator(model.blocks, peel=False)
    f2 = full.factor(th)
    assert full._grp_obj is not None
    for REML in (False, True):
        assert once.objective(f1, REML) == pytest.approx(full.objective(f2, REML), rel=1e-12)
    np.testing.assert_allclose(once.beta(f1), full.beta(f2), rtol=1e-9, atol=1e-12)
    for a, b in zip(once.modes(f1), full.modes(f2), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-11)
    # built once read: the next factorisation is the grouped one, bit for bit
    again = once.factor(th)
    assert once._grp_obj is not None
    assert once.objective(again, False) == full.objective(f2, False)


def test_factor_once_on_an_ungrouped_model_is_factor():
    model = NativeModel(_spec(_crowd()), mode="sparse")
    ev = DevianceEvaluator(model.blocks, grouped=False, peel=False)
    th = _theta(model)
    assert ev.objective(ev.factor_once(th), False) == ev.objective(ev.factor(th), False)


def test_grouped_products_built_late_are_the_eager_ones():
    df = _crowd()
    spec = _spec(df)
    lazy, eager = NativeModel(spec), NativeModel(spec)
    assert lazy.ev._grouped and lazy.ev._grp_obj is None     # nothing built at set-up
    th = _theta(lazy, 2)
    eager.deviance(th)                                       # built for the set-up's response
    y2 = spec.y[::-1].copy()
    for m in (lazy, eager):
        m._set_y(y2)
    # built after the change: its y row as the eager model's update gives it, bit for bit
    assert lazy.deviance(th) == eager.deviance(th)
    assert lazy.deviance(th, REML=True) == eager.deviance(th, REML=True)
    np.testing.assert_array_equal(lazy.ev._grp[3], eager.ev._grp[3])
    fresh = NativeModel(model_frame(PAPER, df.assign(rating=y2), contrasts={"system": "sum"}))
    assert lazy.deviance(th) == pytest.approx(fresh.deviance(th), rel=1e-12)


def test_one_group_gradient_sums_in_one_product(monkeypatch):
    # the level-by-level path (models with a dense C and no patterns take _dense_active)
    monkeypatch.setattr(grad_mod, "_dense_active_pays", lambda ev: False)
    model = NativeModel(_spec(_crossed()))
    ev = model.ev
    assert ev._grouped and ev._grp_uq.shape[0] == 1            # every question rated alike
    plain = DevianceEvaluator(model.blocks, grouped=False)
    th = _theta(model, 3)
    for REML in (False, True):
        f = ev.factor(th)
        g, exact = theta_gradient(ev, f, REML)
        assert f.L1inv_g is not None and f.L1inv_g.shape[0] == 1   # the one-product path
        g0, _ = theta_gradient(plain, plain.factor(th), REML)
        assert exact.all()
        np.testing.assert_allclose(g, g0, rtol=1e-9, atol=1e-9 * np.abs(g0).max())
        h = 1e-5
        for j in range(th.size):
            e = np.zeros(th.size)
            e[j] = h
            fd = (model.deviance(th + e, REML=REML) - model.deviance(th - e, REML=REML)) / (2 * h)
            assert g[j] == pytest.approx(fd, rel=1e-5, abs=1e-5)
