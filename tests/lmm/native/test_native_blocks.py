"""Stage 2 of a native fit (nlpower.lmm.native.blocks): lme4's term order, theta layout, blocks."""

from __future__ import annotations

import numpy as np

from lmm_specs import crossed_spec, nested_spec
from nlpower.lmm.layout import lme4_term_order, make_unique
from nlpower.lmm.native import NativeModel


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


def test_active_column_patterns_are_used_for_nested_items():
    model = NativeModel(nested_spec(item_slopes=True))
    assert model.blocks.b1.group == "item"
    pats = model.blocks.patterns
    assert pats is not None and len(pats) == 3          # one pattern per system
    assert all(cols.size == 2 for _, cols, _, _ in pats)
    assert NativeModel(crossed_spec()).blocks.patterns is None


def test_schur_strategy_is_one_small_object():
    # issue 18 item 5: the strategy's arrays live on DenseSchur / SparseSchur, not as a dozen
    # optional fields of Blocks narrowed by asserts
    from dataclasses import fields

    from nlpower.lmm.native.blocks import Blocks, DenseSchur, Pattern, SparseSchur

    names = {f.name for f in fields(Blocks)}
    assert not names & {"Cd", "Cg", "V", "V_p1", "V_a", "V_p2", "V_b", "V_ypos", "S_lo", "S_up",
                        "S_off"}
    dense = NativeModel(crossed_spec(), mode="dense").blocks
    sparse = NativeModel(crossed_spec(), mode="sparse").blocks
    assert isinstance(dense.schur, DenseSchur) and dense.use_dense
    assert isinstance(sparse.schur, SparseSchur) and not sparse.use_dense
    nested = NativeModel(nested_spec(item_slopes=True), mode="dense").blocks
    assert nested.patterns is not None and all(isinstance(p, Pattern) for p in nested.patterns)
    assert isinstance(nested.schur, DenseSchur) and len(nested.schur.Cg) == len(nested.patterns)
