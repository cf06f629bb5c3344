"""Block 1's gradient from cross-products on a small dense rest (nlpower.lmm.native.gradient).

Where block 1's ``C = W'Z1`` is dense (``DenseSchur``) and every level uses all its
columns (no patterns: raters x questions, fully or nearly crossed), the gradient takes
block 1's part by :mod:`nlpower.lmm.native.active` -- ``F = (I + A P)^{-1}`` per group
of equal ``Z1'Z1``, ``H_l = X_l'X_l`` with ``X = T Lambda_r' C`` -- and the residual
sums from cross-products (``Z1'res = F c``, ``W'res = Arr [-z, 1] - C b1``), with no
residual of length ``n`` and no ``Lambda1^{-1}``.  References: central differences of
the criterion, and the level-by-level path of the same gradient (reached by switching
this one off).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from native_fd import central_gradient

from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import gradient as grad_mod
from nlpower.lmm.native.active import grouped_c_products
from nlpower.lmm.native.gradient import theta_gradient

PAPER = "rating ~ system + (system || worker) + (system || item)"


def _raters(partial: bool, seed: int = 11) -> pd.DataFrame:
    """3 systems, 5 raters, 36 questions; every rater rates every (question, system) cell
    (one group of equal ``Z1'Z1``), or 3-5 of the 5 raters per cell (several groups)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(36):
        for s in range(3):
            k = int(rng.integers(3, 6)) if partial else 5
            rows += [(q, s, int(r)) for r in rng.choice(5, size=k, replace=False)]
    q, s, r = np.array(rows).T
    y = (0.2 * s + 0.5 * rng.normal(size=5)[r] + 0.3 * rng.normal(size=(5, 3))[r, s]
         + 0.8 * rng.normal(size=36)[q] + 0.4 * rng.normal(size=(36, 3))[q, s]
         + rng.normal(size=q.size))
    return pd.DataFrame({"rating": 50.0 + 10.0 * y, "system": np.array(["A", "B", "C"])[s],
                         "worker": [f"r{v}" for v in r], "item": [f"q{v:02d}" for v in q]})


def _model(partial: bool) -> NativeModel:
    return NativeModel(model_frame(PAPER, _raters(partial), contrasts={"system": "sum"}))


def _theta(model: NativeModel, seed: int) -> np.ndarray:
    lay = model.layout
    rng = np.random.default_rng(seed)
    return np.where(lay.diag, rng.uniform(0.3, 1.3, lay.size), rng.normal(0.0, 0.3, lay.size))


def _path(model: NativeModel, th: np.ndarray, REML: bool) -> str:
    b = model.ev.b
    return grad_mod._inverse_path(model.ev, model.ev.factor(th), b.nre2 + (b.p if REML else 0))


@pytest.mark.parametrize("partial", [False, True])
@pytest.mark.parametrize("REML", [False, True])
def test_dense_active_matches_differences_and_level_path(partial, REML, monkeypatch):
    model = _model(partial)
    groups = grad_mod._active_plan(model.ev).cnt.size
    assert (groups > 1) if partial else (groups == 1)
    for seed in (1, 2):
        th = _theta(model, seed)
        assert _path(model, th, REML) == "dense_active"
        g, exact = theta_gradient(model.ev, model.ev.factor(th), REML)
        assert exact.all()
        fd = central_gradient(model, th, REML)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-4 * max(1.0, np.abs(fd).max()))
        with monkeypatch.context() as mp:      # the level-by-level path of the same gradient
            mp.setattr(grad_mod, "_dense_active_pays", lambda ev: False)
            assert _path(model, th, REML) == "dense"
            g_lev, _ = theta_gradient(model.ev, model.ev.factor(th), REML)
        np.testing.assert_allclose(g, g_lev, rtol=1e-9, atol=1e-9 * np.abs(g_lev).max())


def test_dense_active_zero_pivot_of_block1_is_exact(monkeypatch):
    """The last pivot of block 1's 3 x 3 system term at 0: the level-by-level formula needs
    ``Lambda1^{-1}`` and flags the term (the model then factors a second time); this path
    is exact in one factorisation and matches the one-sided difference at the bound."""
    model = _model(True)
    th = _theta(model, 3)
    b1 = model.ev.b.b1
    assert b1.term_q[0] == 3                                   # (0 + system | item) first
    where = dict(zip(b1.lam_idx.tolist(), b1.theta_idx.tolist(), strict=True))
    j = where[2 * b1.q + 2]                                    # its last pivot, Lambda1[2, 2]
    th[j] = 0.0
    g, exact = theta_gradient(model.ev, model.ev.factor(th), False)
    assert exact.all()
    _, n_evals = model.value_and_gradient(th)[1:]
    assert n_evals == 1
    with monkeypatch.context() as mp:
        mp.setattr(grad_mod, "_dense_active_pays", lambda ev: False)
        assert not theta_gradient(model.ev, model.ev.factor(th), False)[1].all()
    h = 1e-6
    e = np.zeros(th.size)
    e[j] = h
    d0, d1, d2 = (model.deviance(th + k * e) for k in (0, 1, 2))
    one_sided = (-3.0 * d0 + 4.0 * d1 - d2) / (2.0 * h)        # second order at the bound
    assert g[j] == pytest.approx(one_sided, rel=1e-4, abs=1e-4)
    fd = central_gradient(model, np.where(np.arange(th.size) == j, h, th), False)   # the others, centrally
    others = np.arange(th.size) != j
    np.testing.assert_allclose(g[others], fd[others], rtol=1e-4,
                               atol=1e-3 * max(1.0, np.abs(fd).max()))


def test_dense_active_residual_sums_from_cross_products():
    """The residual's block sums the path takes from cross-products equal those of the
    residual itself (``Z'(y - X beta - Z b)``) to rounding."""
    model = _model(True)
    ev = model.ev
    b = ev.b
    th = _theta(model, 4)
    f = ev.factor(th)
    beta = ev.beta(f)
    modes = ev.modes(f)
    fitted = b.W.toarray()[:, b.nre2:] @ beta
    for blk, bm in zip([b.b1] + [blk for blk, _ in b.rest], modes, strict=True):
        fitted = fitted + np.einsum("ic,ic->i", blk.Z, bm[blk.codes])
    res = b.y - fitted
    v = ev.solve_v(f)
    z = v.copy()
    lams = [blk.lam(th) for blk, _ in b.rest]
    for (blk, off), lam in zip(b.rest, lams, strict=True):
        s = slice(off, off + blk.m * blk.q)
        z[s] = (v[s].reshape(blk.m, blk.q) @ lam.T).ravel()
    _, R1, _, wres = grad_mod._dense_active(ev, f, z, b.nre2, lams)
    b1 = b.b1
    zres1 = np.zeros((b1.m, b1.q))
    np.add.at(zres1, b1.codes, b1.Z * res[:, None])
    u1 = modes[0] @ np.linalg.inv(b1.lam(th)).T                # spherical: b = Lambda u
    np.testing.assert_allclose(R1, zres1.T @ u1, rtol=1e-9, atol=1e-9 * np.abs(R1).max())
    for blk, off in b.rest:
        zr = np.zeros((blk.m, blk.q))
        np.add.at(zr, blk.codes, blk.Z * res[:, None])
        got = wres[off:off + blk.m * blk.q].reshape(blk.m, blk.q)
        np.testing.assert_allclose(got, zr, rtol=1e-9, atol=1e-9 * np.abs(zr).max())


@pytest.mark.parametrize("partial", [False, True])
def test_dense_active_products_of_c_and_x_agree(partial):
    """Block 1's sums of ``H_l`` through the groups' products of ``C`` (few groups, a small
    rest) and through ``X = T Lambda_r' C`` (forced here) agree to rounding."""
    model = _model(partial)
    ev = model.ev
    th = _theta(model, 5)
    for REML in (False, True):
        Nr = ev.b.nre2 + (ev.b.p if REML else 0)
        f = ev.factor(th)
        g, _ = theta_gradient(ev, f, REML)
        P4, Ca = ev.__dict__["_dense_active_c"][Nr]
        used = P4 is not None
        assert used == (not partial)          # one group: the products; many: X
        # the other way: X where the products were used, the products where X was
        ev.__dict__["_dense_active_c"][Nr] = (None if used else grouped_c_products(
            grad_mod._active_plan(ev), ev.b.schur.Cd, Nr), Ca)
        g_other, _ = theta_gradient(ev, f, REML)
        np.testing.assert_allclose(g, g_other, rtol=1e-9, atol=1e-9 * np.abs(g).max())
        del ev.__dict__["_dense_active_c"][Nr]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_level_products_and_the_schur_builders(k):
    """``level_products`` is ``C[:, l] X_l`` per level; the patterns' Schur complement with
    ``W_l = K_l K_l'`` equals the dense one with ``K_l`` (both through it)."""
    from nlpower.mixed.native.block1 import level_products, schur_dense, schur_patterns

    rng = np.random.default_rng(k)
    N2, m = 9, 7
    C = rng.normal(size=(N2, m, k))
    K = rng.normal(size=(m, k, k))
    G = level_products(C, K)
    ref = np.stack([C[:, lev] @ K[lev] for lev in range(m)], axis=1)
    np.testing.assert_allclose(G, ref, rtol=1e-13, atol=1e-13)
    A = rng.normal(size=(N2, N2))
    Arr = A @ A.T
    W = K @ np.swapaxes(K, 1, 2)
    np.testing.assert_allclose(schur_patterns(Arr, [C], [W]), schur_dense(Arr, C, K),
                               rtol=1e-12, atol=1e-12 * np.abs(Arr).max())
