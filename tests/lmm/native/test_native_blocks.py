"""Stage 2 of a native fit (nlpower.mixed.native.blocks): lme4's term order, theta layout, blocks."""

from __future__ import annotations

import numpy as np

from lmm_specs import crossed_spec, nested_spec
from nlpower.lmm.native import NativeModel
from nlpower.mixed.layout import lme4_term_order, make_unique


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

    from nlpower.mixed.native.blocks import Blocks, DenseSchur, Pattern, SparseSchur

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


def test_level_products_are_the_structural_lower_triangle_of_each_level():
    """Products of structural nonzeros only: the old (pairs x q1^2) expansion, filtered."""
    from nlpower.mixed.native.blocks import _level_products

    rng = np.random.default_rng(5)
    n_pairs, q1, m1 = 60, 4, 7
    pair_lev = rng.integers(0, m1, n_pairs)            # pairs in CSR order: rows ascending
    structural = rng.random((n_pairs, q1)) < 0.4
    got = set(zip(*(a.tolist() for a in _level_products(pair_lev, structural)), strict=True))
    want = set()
    for p1 in range(n_pairs):
        for p2 in range(p1 + 1):                     # same level, row(p2) <= row(p1)
            if pair_lev[p1] != pair_lev[p2]:
                continue
            for a in range(q1):
                for b in range(q1):
                    if structural[p1, a] and structural[p2, b]:
                        want.add((p1, a, p2, b))
    assert got == want
    assert len(got) == sum(1 for _ in _level_products(pair_lev, structural)[0])   # no repeats


def test_a_structure_over_the_memory_limit_is_refused_with_a_smaller_model(monkeypatch):
    import pytest

    import nlpower.mixed.native.memory as memory
    from nlpower import CrossedDesign, presets, simulate
    from nlpower.errors import InputError
    from nlpower.lmm.frame import model_frame

    df = simulate(CrossedDesign(12, 30, 4, workers_per_item=4),
                  presets.dataset("hashimoto-reddit").params, rng=3)
    spec = model_frame("rating ~ system + (system || worker) + (system || item)", df,
                       contrasts={"system": "sum"})
    NativeModel(spec)                                               # fits under the default limit
    monkeypatch.setattr(memory, "MEMORY_LIMIT", 1000)
    with pytest.raises(InputError, match=r"needs an estimated .* GB of memory") as err:
        NativeModel(spec)
    msg = str(err.value)
    assert "(0 + system | item) by (1 | item:system)" in msg
    assert "(0 + system | worker) by (1 | worker:system)" in msg
    assert "raise nlpower.mixed.native.memory.MEMORY_LIMIT" in msg
