"""Items nested in systems: the gradient from cross-products and the check in the identified
parameters (nlpower.lmm.native.active, .gradient, .ridge).

Under ``(system || item)`` with every item rated under one system, each item level has
ratings in one column of ``(0 + system | item)`` only: the gradient takes block 1 on each
level's active column from cross-products (``dense_active`` with ``active_c``), checked
against central differences and the level-by-level path; the covariances between the
columns never enter the likelihood, so the convergence check runs with them held at 0,
where moves in them change nothing and a move in a per-system SD is still a finding.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from native_fd import central_gradient

from nlpower.errors import ConvergenceWarning
from nlpower.lmm import lmer
from nlpower.lmm.checkconv import CheckConvControl
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import gradient as grad_mod
from nlpower.lmm.native import identified as idf
from nlpower.lmm.native import ridge as rd
from nlpower.lmm.native.gradient import theta_gradient
from nlpower.mixed.native.blocks import SparseSchur

PAPER = "rating ~ system + (system || worker) + (system || item)"
CTL = CheckConvControl()


def _nested(seed: int = 1) -> pd.DataFrame:
    """3 systems x 20 items each (nested), 8 workers; each item rated by 7 of the 8."""
    rng = np.random.default_rng(seed)
    rows = [(i, i % 3, w) for i in range(60) for w in range(8) if w != i % 8]
    i, s, w = np.array(rows).T
    y = (0.3 * s + rng.normal(0, 0.8, 8)[w] + rng.normal(0, 0.5, (8, 3))[w, s]
         + rng.normal(0, [0.6, 0.9, 0.7], (60, 3))[i, s] + rng.normal(0, 1.0, i.size))
    return pd.DataFrame({"rating": 3.0 + y, "system": np.array(["A", "B", "C"])[s],
                         "worker": [f"w{v}" for v in w], "item": [f"i{v:02d}" for v in i]})


def _model() -> NativeModel:
    return NativeModel(model_frame(PAPER, _nested(), contrasts={"system": "sum"}))


def _path(model: NativeModel, th: np.ndarray, REML: bool) -> str:
    b = model.ev.b
    return grad_mod._inverse_path(model.ev, model.ev.factor(th), b.nre2 + (b.p if REML else 0))


@pytest.mark.parametrize("REML", [False, True])
def test_nested_gradient_from_cross_products(REML, monkeypatch):
    model = _model()
    assert not grad_mod._active_plan(model.ev).full          # one active column per item
    lay = model.layout
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        th = np.where(lay.diag, rng.uniform(0.3, 1.3, lay.size), rng.normal(0, 0.3, lay.size))
        assert _path(model, th, REML) == "dense_active"
        g, exact = theta_gradient(model.ev, model.ev.factor(th), REML)
        assert exact.all()
        fd = central_gradient(model, th, REML)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-4 * max(1.0, np.abs(fd).max()))
        with monkeypatch.context() as mp:      # the level-by-level path of the same gradient
            mp.setattr(grad_mod, "_dense_active_pays", lambda ev: False)
            mp.setattr(grad_mod, "_gather_dense_pays", lambda ev, Nr: False)
            assert _path(model, th, REML) == "dense"
            g_lev, _ = theta_gradient(model.ev, model.ev.factor(th), REML)
        np.testing.assert_allclose(g, g_lev, rtol=1e-9, atol=1e-9 * np.abs(g_lev).max())


def test_nested_terms_found_only_where_each_level_uses_one_column():
    nested = _model()
    assert [t.group for t in rd._identified(nested).nested] == ["item"]
    crossed = _nested().assign(item=lambda d: "i" + (d.index % 20).astype(str))
    model = NativeModel(model_frame(PAPER, crossed, contrasts={"system": "sum"}))
    assert rd._identified(model).nested == ()


@pytest.mark.parametrize("REML", [False, True])
def test_nested_fit_checked_in_identified_parameters(REML):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit = lmer(PAPER, _nested(), REML=REML, contrasts={"system": "sum"}, engine="native")
    cc = fit.optinfo["checkconv"]
    assert cc["code"] == 0 and cc["messages"] == [] and cc["ok"] and fit.converged
    notes = fit.optsum.notes
    assert sum("nested levels" in n and "item" in n for n in notes) == 1
    assert sum("worker covariance" in n and "nested" not in n for n in notes) == 1


def test_check_ignores_unidentified_moves_and_finds_identified_ones():
    model = _model()
    res, _ = model._optimize(False, None, None)
    assert idf.check_on_ridge(model, res, False, CTL).ok
    names = model.layout.names
    # another covariance between two systems' item effects, their variances kept (a
    # rotation of L's second row): never in the likelihood
    th = res.theta.copy()
    j, d = names.index("item.systemB.systemA"), names.index("item.systemB")
    var = th[j] ** 2 + th[d] ** 2
    th[j] += 0.3 * np.sqrt(var)
    th[d] = np.sqrt(var - th[j] ** 2)
    assert model.ev(th, False) == pytest.approx(res.fval, abs=1e-9)
    moved = idf.check_on_ridge(model, replace(res, theta=th, derivatives=None, gradient=None),
                              False, CTL)
    assert moved is not None and moved.ok and moved.code == 0
    # a per-system item SD 5 % larger: a finding
    off = res.theta.copy()
    off[names.index("item.systemB")] *= 1.05
    chk = idf.check_on_ridge(model, replace(res, theta=off, fval=model.ev(off, False),
                                           derivatives=None, gradient=None), False, CTL)
    assert chk is not None and not chk.ok and chk.code == -1


@pytest.mark.parametrize("REML", [False, True])
def test_newton_step_in_identified_parameters_never_raises_the_deviance(REML):
    model = _model()
    res, _ = model._optimize(REML, None, None)
    chk, res2 = idf.identified_finish(model, res, REML, CTL)
    assert res2.fval <= res.fval
    assert model.ev(res2.theta, REML) == res2.fval
    assert [s[0] for s in res2.stages[-2:]] == ["newton", "checkconv"]
    assert chk.ok


@pytest.mark.parametrize("REML", [False, True])
def test_sparse_schur_takes_the_path_on_a_dense_copy_of_c(REML):
    """A sparse Schur strategy with a small rest (the reduced model of nested items) takes
    the same path on a copy of ``C``; a new response refreshes the copy's response row."""
    spec = model_frame(PAPER, _nested(), contrasts={"system": "sum"})
    dense, sparse = NativeModel(spec), NativeModel(spec, mode="sparse")
    assert isinstance(sparse.ev.b.schur, SparseSchur)
    lay = dense.layout
    th = np.where(lay.diag, 0.8, 0.1)
    y0 = np.asarray(dense.blocks.y, dtype=float)
    for y in (y0, y0[::-1].copy()):
        for m in (dense, sparse):
            m._set_y(y)
        assert _path(sparse, th, REML) == "dense_active"
        g_s, _ = theta_gradient(sparse.ev, sparse.ev.factor(th), REML)
        g_d, _ = theta_gradient(dense.ev, dense.ev.factor(th), REML)
        np.testing.assert_allclose(g_s, g_d, rtol=1e-9, atol=1e-9 * np.abs(g_d).max())
        fd = central_gradient(sparse, th, REML)
        np.testing.assert_allclose(g_s, fd, rtol=1e-5, atol=1e-4 * max(1.0, np.abs(fd).max()))


@pytest.mark.parametrize("formula", [PAPER, "rating ~ system + (system || worker) + "
                                     "(0 + isA + isB + isC || item)"])
def test_a_new_response_reaches_the_active_columns_paths(formula):
    """A refit swaps ``y``: each level's ``Z1'(y - W z)`` on its active columns must use the
    new response (the cached plan's copy of ``C`` is refreshed), on the cross-products path
    (``dense_active``) and on the gathered inverse (``gather_dense``, a rest of 40 workers)."""
    df = _nested()
    if "isA" in formula:                         # 40 workers, each item rated by 7 of them
        df = df.assign(worker="w" + ((df.index * 7) % 40).astype(str))
        for s in "ABC":
            df[f"is{s}"] = (df["system"] == s).astype(float)
    model = NativeModel(model_frame(formula, df, contrasts={"system": "sum"}))
    th = np.where(model.layout.diag, 0.8, 0.1)
    path = _path(model, th, False)
    assert path == ("dense_active" if formula == PAPER else "gather_dense")
    y = np.random.default_rng(2).permutation(np.asarray(model.blocks.y, dtype=float))
    theta_gradient(model.ev, model.ev.factor(th), False)        # the plan, on the first y
    model._set_y(y)
    g, _ = theta_gradient(model.ev, model.ev.factor(th), False)
    fd = central_gradient(model, th, False)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-4 * max(1.0, np.abs(fd).max()))


def test_a_nested_term_without_a_ridge_is_checked_in_its_variances():
    """``(0 + system | item)`` with items nested and no item intercept: no ridge, but the
    covariances between the columns are not identified; the model itself is checked."""
    formula = "rating ~ system + (1 | worker) + (0 + system | item)"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit = lmer(formula, _nested(), REML=False, contrasts={"system": "sum"},
                   engine="native")
    cc = fit.optinfo["checkconv"]
    assert cc["code"] == 0 and cc["messages"] == [] and fit.converged
    notes = fit.optsum.notes
    assert sum(n.startswith("nested levels: each item") for n in notes) == 1
    model = NativeModel(model_frame(formula, _nested(), contrasts={"system": "sum"}))
    assert idf._base_model(model) is model
