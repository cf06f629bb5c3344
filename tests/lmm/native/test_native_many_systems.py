"""Set-up pieces of the many-system shapes checked against the code they replace.

The grouped lead's products formed at the lead plan's entries only
(:func:`nlpower.mixed.native.grouped.sel_products`) against the whole grouped
products read there, before and after a new response; the rest's cross-products
(:func:`nlpower.mixed.native.blocks._cross_products`) against one sparse
``W'W``; the sort-based distinct values against ``np.unique``; the degree
limit of the peeled rest and the gathered gradient on a peeled rest against the
dense inverse's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import nlpower.mixed.native.grouped as grouped
from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel, gradient
from nlpower.lmm.native.gradient import theta_gradient
from nlpower.mixed.native.block1 import grouped_products
from nlpower.mixed.native.blocks import _cross_products, sorted_unique
from nlpower.mixed.native.deviance import DevianceEvaluator
from nlpower.mixed.native.rest import PEEL_DEGREE_DIV, PEEL_MAX_DEGREE, peel_max_degree

NESTED = "rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"
THETAS = [np.array([0.4, 0.5, 0.3]), np.array([1.0, 1.0, 1.0]), np.array([0.05, 1.7, 0.9])]


def _data(seed: int, k: int = 4) -> pd.DataFrame:
    """90 items x ``k`` systems, each cell rated by 1-2 of 25 workers."""
    rng = np.random.default_rng(seed)
    ni, nw = 90, 25
    cells = np.arange(ni * k)
    cell = np.sort(np.concatenate([cells, rng.choice(cells, 70, replace=False)]))
    i, s = cell // k, cell % k
    w = rng.integers(0, nw, cell.size)
    y = (0.3 * s + rng.normal(0, .6, ni)[i] + rng.normal(0, .5, ni * k)[cell]
         + rng.normal(0, .4, nw)[w] + rng.normal(size=cell.size))
    return pd.DataFrame({"worker": [f"w{v:02d}" for v in w], "item": [f"i{v:03d}" for v in i],
                         "system": [f"s{v}" for v in s], "rating": y})


def _lead_model(seed: int = 11) -> NativeModel:
    """The grouped lead path (sparse Schur strategy, no folded scaling)."""
    spec = model_frame(NESTED, _data(seed), contrasts={"system": "sum"})
    saved, grouped._Q_MAX_COLS = grouped._Q_MAX_COLS, 0
    try:
        model = NativeModel(spec, mode="sparse")
        model.ev = DevianceEvaluator(model.blocks, peel=False)
    finally:
        grouped._Q_MAX_COLS = saved
    assert model.ev._lead_grouped and grouped.sel_sparse(model.blocks)
    return model


def test_products_at_the_lead_entries_equal_the_whole_products_bit_for_bit():
    model = _lead_model()
    ev, b = model.ev, model.blocks
    lead = ev.lead
    psel, _ = grouped.sel_products(b, ev._grp_inv, ev._grp_sel, lead)
    P4, _ = grouped_products(b, ev._grp_inv, ev._grp_sel)
    whole = P4.reshape(b.N2 * b.N2, -1)[lead.sel]
    assert np.count_nonzero(whole) > 1000
    assert np.array_equal(psel, whole)


def test_lead_evaluations_equal_the_whole_products_path_after_a_new_response():
    sel_path, whole_path = _lead_model(), _lead_model()
    assert whole_path.ev._grp is not None      # built: the evaluator reads the whole products
    y2 = np.asarray(model_frame(NESTED, _data(12), contrasts={"system": "sum"}).y)
    for step in range(2):
        for theta in THETAS:
            a, c = sel_path.ev.factor(theta), whole_path.ev.factor(theta)
            assert (a.ldL2, a.ldRX2, a.r2) == (c.ldL2, c.ldRX2, c.r2)
            ga, _ = theta_gradient(sel_path.ev, a, False)
            gc, _ = theta_gradient(whole_path.ev, c, False)
            assert np.array_equal(ga, gc)
        assert sel_path.ev._grp_obj is None    # the whole products are never built
        if step == 0:
            sel_path._set_y(y2)
            whole_path._set_y(y2)
    np.testing.assert_array_equal(sel_path.ev._lead_products(), whole_path.ev._lead_products())


@pytest.mark.parametrize("integer", [True, False])
def test_cross_products_equal_the_sparse_product(integer):
    rng = np.random.default_rng(4)
    n, nre = 400, 30
    Zre = sp.random(n, nre, density=0.08, random_state=5, format="csc") * 3.7
    X = rng.integers(-1, 2, (n, 6)).astype(float) if integer else rng.normal(size=(n, 6))
    X[:, 0] = 1.0
    W = sp.hstack([Zre, sp.csc_matrix(X)]).tocsc()
    want = np.zeros((W.shape[1] + 1,) * 2)
    want[:-1, :-1] = (W.T @ W).toarray()
    assert np.array_equal(_cross_products(W, X, nre), want)


def test_sorted_unique_equals_np_unique():
    a = np.random.default_rng(2).integers(0, 10**9, 5000)
    a[::7] = a[3]
    assert np.array_equal(sorted_unique(a), np.unique(a))
    assert sorted_unique(np.zeros(0, dtype=np.int64)).size == 0


def test_peel_degree_limit_grows_only_in_large_rests_of_narrow_levels():
    assert peel_max_degree(505, 1) == peel_max_degree(1535, 1) == PEEL_MAX_DEGREE
    assert peel_max_degree(4816, 1) == 4816 // PEEL_DEGREE_DIV > PEEL_MAX_DEGREE
    assert peel_max_degree(3822, 21) == peel_max_degree(4816, 2) == PEEL_MAX_DEGREE


@pytest.mark.parametrize("REML", [False, True])
def test_gathered_gradient_on_a_large_peeled_rest_equals_the_dense_inverse(REML, monkeypatch):
    df = simulate(CrossedDesign(300, 200, 2, workers_per_item=3), presets.high_variance(0.1),
                  rng=5)
    model = NativeModel(model_frame("rating ~ x + (1 | item) + (1 | worker)", df), mode="sparse")
    ev = model.ev
    assert ev.peel is not None
    # as in a rest too large for the old size rule: the gathered blocks still fit
    monkeypatch.setattr(gradient, "_GATHER_MAX", 0)
    dense = DevianceEvaluator(model.blocks, grouped=ev._grouped_ok, peel=False)
    for theta in (np.array([0.7, 0.4]), np.array([0.2, 1.1])):
        f = ev.factor(theta)
        Nr = model.blocks.nre2 + (model.blocks.p if REML else 0)
        assert gradient._inverse_path(ev, f, Nr) == "gather"
        g, _ = theta_gradient(ev, f, REML)
        gd, _ = theta_gradient(dense, dense.factor(theta), REML)
        np.testing.assert_allclose(g, gd, rtol=1e-9, atol=1e-8)


def test_long_arrow_string_columns_factor_as_pandas_does():
    pytest.importorskip("pyarrow")
    from nlpower.lmm.columns import factor_of

    rng = np.random.default_rng(8)
    words = np.array(["b", "a", "B", "é", "a1", "A", "z:z", "10", "9"], dtype=object)
    raw = words[rng.integers(0, words.size, 5000)]
    halves = [pd.Series(raw[:2500], dtype="string[pyarrow]"),
              pd.Series(raw[2500:], dtype="string[pyarrow]")]
    col = pd.concat(halves, ignore_index=True)          # a chunked arrow array
    codes, uniques = pd.factorize(raw, sort=True)
    f = factor_of(col.array, "w")
    assert f.levels == tuple(uniques) and np.array_equal(f.codes, codes)
    with_na = pd.Series(np.append(raw, None), dtype="string[pyarrow]")
    g = factor_of(with_na.array, "w")                   # missing: pandas' own path
    assert g.levels == tuple(uniques) and g.codes[-1] == -1
