"""The rest's uncoupled first block eliminated first (nlpower.mixed.native.lead).

With ``(1 | item) + (1 | item:system)`` the largest block is ``item:system``;
each of its levels belongs to one item, so after it the items are pairwise
uncoupled and :func:`lead_plan` eliminates them level by level before a
small dense factor.  Checked here against the same evaluator without the
lead (one dense ``dpotrf`` of the whole rest): the deviance and REML
criterion, ``beta``, ``R_X^{-1}``, the modes and the analytic gradient, for a
scalar lead (grouped levels, dense and sparse Schur strategies) and a
two-column one; the inverse on the structure against numpy's inverse; and a
fit reaches the same optimum.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native.gradient import theta_gradient
from nlpower.mixed.native.deviance import DevianceEvaluator
from nlpower.mixed.native.lead import lead_plan

NESTED = "rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"
SLOPE = "rating ~ x + system + (1 + x | item) + (1 | item:system) + (1 | worker)"
CASES = {"q1-auto": (NESTED, "auto"), "q1-grouped": (NESTED, "auto"),
         "q1-dense": (NESTED, "dense"), "q1-sparse": (NESTED, "sparse"),
         "q2-auto": (SLOPE, "auto")}


def _data(seed: int = 7) -> pd.DataFrame:
    """80 items x 3 systems, each cell rated by 1-2 of 30 workers (some twice)."""
    rng = np.random.default_rng(seed)
    ni, k, nw = 80, 3, 30
    cells = np.arange(ni * k)
    cell = np.sort(np.concatenate([cells, rng.choice(cells, 60, replace=False)]))
    i, s = cell // k, cell % k
    w = rng.integers(0, nw, cell.size)
    x = rng.normal(size=cell.size)
    y = (0.3 * s + 0.2 * x + rng.normal(0, .6, ni)[i] + rng.normal(0, .3, ni)[i] * x
         + rng.normal(0, .5, ni * k)[cell] + rng.normal(0, .4, nw)[w] + rng.normal(size=cell.size))
    return pd.DataFrame({"worker": [f"w{v:02d}" for v in w], "item": [f"i{v:03d}" for v in i],
                         "system": [f"s{v}" for v in s], "x": x, "rating": y})


def _model(case: str) -> NativeModel:
    formula, mode = CASES[case]
    model = NativeModel(model_frame(formula, _data(), contrasts={"system": "sum"}), mode=mode)
    model._set_y(model.spec.y)
    if model.ev.peel is not None:          # the peeling plan (:mod:`.rest`) comes first
        model.ev = DevianceEvaluator(model.blocks, grouped=mode == "auto", peel=False)
    if case == "q1-grouped":
        # grouped levels without the folded scaling Q (too large on a real 20-system file):
        # the lead's entries of M are formed alone (LeadPlan.sel)
        import nlpower.mixed.native.grouped as dev
        saved, dev._Q_MAX_COLS = dev._Q_MAX_COLS, 0
        try:
            model.ev = DevianceEvaluator(model.blocks)
        finally:
            dev._Q_MAX_COLS = saved
        assert model.ev._lead_grouped
    return model


def _thetas(model: NativeModel, n: int) -> list[np.ndarray]:
    lay = model.layout
    rng = np.random.default_rng(2)
    return [lay.start * rng.uniform(0.1, 1.5, lay.size) + rng.normal(0, .2, lay.size) * ~lay.diag
            for _ in range(n)]


def test_the_plan_needs_uncoupled_levels():
    model = _model("q1-auto")
    assert model.ev.lead is not None and model.ev.lead.m == 80 and model.ev.lead.q == 1
    q2 = _model("q2-auto").ev.lead
    assert q2 is not None and q2.q == 2
    # items and workers crossed: the items (the rest's first block) are coupled by workers
    crossed = NativeModel(model_frame("rating ~ system + (1 | worker) + (1 | item)", _data(),
                                      contrasts={"system": "sum"}))
    assert lead_plan(crossed.blocks) is None


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("REML", [False, True])
def test_deviance_gradient_and_solutions_equal_the_dense_factor(case, REML):
    model = _model(case)
    ev = model.ev
    dense = DevianceEvaluator(model.blocks, grouped=ev._grouped_ok, peel=False, lead=False)
    assert ev.lead is not None and dense.lead is None
    for theta in _thetas(model, 3):
        fl, fd = ev.factor(theta), dense.factor(theta)
        assert fl.lead is not None and fd.lead is None
        assert ev.objective(fl, REML) == pytest.approx(dense.objective(fd, REML), rel=1e-12)
        assert fl.ldRX2 == pytest.approx(fd.ldRX2, rel=1e-10)
        np.testing.assert_allclose(ev.beta(fl), dense.beta(fd), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ev.RXinv(fl), dense.RXinv(fd), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ev.solve_v(fl), dense.solve_v(fd), rtol=1e-9, atol=1e-11)
        for a, b in zip(ev.modes(fl), dense.modes(fd), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(ev.dense_factor(fl)[0], dense.dense_factor(fd)[0],
                                   rtol=1e-9, atol=1e-11)
        gl, el = theta_gradient(ev, fl, REML)
        gd, ed = theta_gradient(dense, fd, REML)
        assert np.array_equal(el, ed)
        np.testing.assert_allclose(gl, gd, rtol=1e-8, atol=1e-9 * max(1.0, np.abs(gd).max()))


@pytest.mark.parametrize("case", ["q1-auto", "q2-auto"])
def test_inverse_equals_numpy_on_the_structure(case):
    model = _model(case)
    ev, b = model.ev, model.blocks
    dense = DevianceEvaluator(b, grouped=ev._grouped_ok, peel=False, lead=False)
    theta = _thetas(model, 1)[0]
    fl, fd = ev.factor(theta), dense.factor(theta)
    L = dense.dense_factor(fd)[0]
    for Nr in (b.nre2, b.nre2 + b.p):
        S = L[:Nr, :Nr] @ L[:Nr, :Nr].T
        ref = np.linalg.inv(S)
        got = ev.rest_inverse(fl, Nr)
        nl, q = ev.lead.nl, ev.lead.q
        lev = np.arange(Nr) // q
        inside = (lev[:, None] == lev[None, :]) | (np.arange(Nr)[:, None] >= nl) \
            | (np.arange(Nr)[None, :] >= nl)
        np.testing.assert_allclose(got[inside], ref[inside], rtol=1e-8, atol=1e-10)
        assert not np.any(got[~inside])          # between two lead levels: not computed


def test_a_fit_reaches_the_dense_factors_optimum():
    model = _model("q1-auto")
    fit = model.fit(REML=False)
    ref_model = _model("q1-auto")
    ref_model.ev = DevianceEvaluator(ref_model.blocks, lead=False)
    ref = ref_model.fit(REML=False)
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-7)
    np.testing.assert_allclose(fit.theta, ref.theta, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(fit.fixef.to_numpy(), ref.fixef.to_numpy(), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("case", ["q1-auto", "q1-grouped", "q1-sparse"])
def test_a_new_response_updates_the_lead_entries(case):
    model = _model(case)
    ev = model.ev
    dense = DevianceEvaluator(model.blocks, grouped=ev._grouped_ok, peel=False, lead=False)
    theta = _thetas(model, 1)[0]
    before = ev(theta)
    model._set_y(model.spec.y[::-1].copy())       # the y row of every cross-product changes
    after = ev(theta)
    assert after != pytest.approx(before, rel=1e-6)
    assert after == pytest.approx(dense(theta), rel=1e-12)
    np.testing.assert_allclose(ev.beta(ev.factor(theta)), dense.beta(dense.factor(theta)),
                               rtol=1e-9, atol=1e-12)
