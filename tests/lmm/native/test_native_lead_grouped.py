"""The grouped lead path (``(1 | item) + (1 | item:system)`` with grouped block-1 levels).

Three pieces of :mod:`nlpower.mixed.native.lead` and :mod:`.blocks` checked
against the general code they stand in for: the gradient's inverse-block sums
from the grouped products at the lead's entries (against the sparse Schur
products ``V' p``), the evaluation's kept entries (against every entry of the
lead plan, bit for bit), and the sparse Schur products built on first use
(never on this path; when built after a new response, equal to those of a
model made with that response).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower.mixed.native.grouped as dev
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native.gradient import _inverse_blocks_sparse, theta_gradient
from nlpower.mixed.native.block1 import grouped_W
from nlpower.mixed.native.deviance import DevianceEvaluator

NESTED = "rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"


def _data(seed: int = 11, reverse: bool = False) -> pd.DataFrame:
    """90 items x 4 systems, each cell rated by 1-2 of 25 workers."""
    rng = np.random.default_rng(seed)
    ni, k, nw = 90, 4, 25
    cells = np.arange(ni * k)
    cell = np.sort(np.concatenate([cells, rng.choice(cells, 70, replace=False)]))
    i, s = cell // k, cell % k
    w = rng.integers(0, nw, cell.size)
    y = (0.3 * s + rng.normal(0, .6, ni)[i] + rng.normal(0, .5, ni * k)[cell]
         + rng.normal(0, .4, nw)[w] + rng.normal(size=cell.size))
    return pd.DataFrame({"worker": [f"w{v:02d}" for v in w], "item": [f"i{v:03d}" for v in i],
                         "system": [f"s{v}" for v in s], "rating": y[::-1] if reverse else y})


def _model(reverse: bool = False) -> NativeModel:
    """Sparse Schur strategy, grouped levels without the folded scaling: the grouped lead."""
    spec = model_frame(NESTED, _data(reverse=reverse), contrasts={"system": "sum"})
    saved, dev._Q_MAX_COLS = dev._Q_MAX_COLS, 0
    try:
        model = NativeModel(spec, mode="sparse")
        model.ev = DevianceEvaluator(model.blocks, peel=False)
    finally:
        dev._Q_MAX_COLS = saved
    assert model.ev._lead_grouped and model.blocks.b1.q == 1
    return model


THETAS = [np.array([0.4, 0.5, 0.3]), np.array([1.0, 1.0, 1.0]), np.array([0.05, 1.7, 0.9])]


@pytest.mark.parametrize("REML", [False, True])
def test_inverse_blocks_equal_the_sparse_products(REML):
    model = _model()
    ev, b = model.ev, model.blocks
    Nr = b.nre2 + (b.p if REML else 0)
    for theta in THETAS:
        f = ev.factor(theta)
        D1, rest = ev.grouped_inverse_blocks(f, Nr)
        D1s, rest_s = _inverse_blocks_sparse(ev, b.schur, f, ev._L1(f), Nr)
        np.testing.assert_allclose(D1, D1s, rtol=1e-11)
        assert len(rest) == len(rest_s) == len(b.rest)
        for a, c in zip(rest, rest_s, strict=True):
            np.testing.assert_allclose(a, c, rtol=1e-11)


def test_kept_entries_give_every_entry_of_the_plan_bit_for_bit():
    model = _model()
    ev, b = model.ev, model.blocks
    plan = ev.lead
    for theta in THETAS:
        ev.factor(theta)
        ent = ev._lead_ent
        Wv = np.asarray(grouped_W(b.b1, ev._grp[0], ev._grp[1], None, theta)[0])
        dv = np.append(theta, 1.0)[ev._scale_idx]
        D, rows = plan.parts(ent.A - ent.P @ Wv, ent, dv)
        # every entry of the plan, scaled and + I the long way
        full = (b.Arr.reshape(-1)[plan.sel] - ev._grp[2][plan.sel] @ Wv) \
            * dv[plan.sel_i] * dv[plan.sel_k]
        full[plan.sel_diag] += 1.0
        nd = plan.m * plan.q * plan.q
        assert ent.A.size < plan.sel.size             # the zeros are skipped
        assert np.array_equal(D.reshape(-1), full[:nd])
        assert np.array_equal(rows, full[nd:].reshape(-1, b.N2))


def test_sparse_products_are_built_on_first_use():
    model = _model()
    b = model.blocks
    b._schur = None          # as if built for this evaluator alone (NativeModel's own, with a
                             # peeling plan on this small file, read them)
    for theta in THETAS:
        f = model.ev.factor(theta)
        theta_gradient(model.ev, f, False)
    assert b._schur is None                           # this path never reads them
    y2 = model_frame(NESTED, _data(reverse=True), contrasts={"system": "sum"}).y
    model._set_y(np.asarray(y2, dtype=float))
    V = b.schur.V                                     # built now, from the new response
    fresh = _model(reverse=True).blocks.schur.V
    w = np.random.default_rng(3).normal(size=V.shape[1])
    np.testing.assert_allclose(V @ w, fresh @ w, rtol=1e-12, atol=1e-12)
    # a dense strategy is there from the start
    dense = NativeModel(model_frame(NESTED, _data(), contrasts={"system": "sum"}), mode="dense")
    assert dense.blocks._schur is not None and dense.blocks.use_dense
