"""The Gaussian fitter's strategies as one strategy of the weighted factorisation.

A PIRLS (or cumulative-link Laplace) step factors ``M = Lambda'Z'WZ Lambda
+ I`` (with ``X`` eliminated last when ``beta`` moves with the modes).  The
Gaussian fitter (:mod:`nlpower.lmm.native`) factors the same system for
unit weights with strategies chosen from the design's structure: dense or
sparse Schur products of block 1, active-column patterns, the closed-form
``q1 = 2`` block, the peeled rest, the uncoupled lead, the sparse lower
build.  :class:`NativePlan` runs them on weighted cross-products:

* *once per layout, from the sparsity pattern*: the fitter's set-up
  (:func:`~nlpower.mixed.native.blocks.blocks_from` and its evaluator's
  plans) on rows scaled by fixed random weights -- the fitter reads its
  pattern off the non-zeros of the cross-products, and a sum that cancels at
  unit weights (a centred covariate within a level) need not at a step's
  weights -- plus a table of targets for every weighted product.  Grouped
  levels are off (with weights every level's ``Z1'WZ1`` is its own).
* *per step* (:meth:`NativePlan.factor`): every weighted product re-formed
  (``Z1'WZ1`` per level, ``W'Z1`` per pair of a rest row and a block-1
  level, the rest's ``W'WW`` by one ``bincount``; ``X``'s by matrix
  products; the sparse Schur products ``C[p1, a] C[p2, b]``), then the
  evaluator's own factor at ``theta``.  The response row is a unit vector
  of its own (pivot 1), so the factor is of ``M`` (and ``X``) alone.

:class:`NativeFactor` gives what :class:`~.blocked.BlockedFactor` gives --
``logdet``, ``solve(r)`` for any right-hand side, ``selected(zl)`` -- from
block 1's ``L1``, the coupling ``F = Lambda_r' W'Z1 Lambda1 L1^{-T}``
(sparse, the pairs' pattern) and the rest's dense factor (in the peeled
order when the rest was peeled).  With ``q1 = 1`` the selected inverse is
formed on the pattern of ``F`` only (:func:`_selected_scalar`).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from ..blockedfactor import BlockedFactor
from .blocks import (
    Blocks,
    DenseSchur,
    GroupBlock,
    Pattern,
    SparseSchur,
    blocks_from,
)
from .deviance import DevianceEvaluator, lambda_rows

if TYPE_CHECKING:
    from ..blocked import BlockedLayout

__all__ = ["NativeFactor", "NativePlan"]


class _Table(NamedTuple):
    """Every weighted product ``Z1'WZ1 | W'Z1 | W_re'W W_re`` as ``bincount`` input: each
    entry's target (offset into the three), observation and unweighted product."""

    target: np.ndarray
    obs: np.ndarray
    prod: np.ndarray
    size: int


class NativePlan:
    """The Gaussian fitter's factorisation of ``M`` (and ``X``) for weights that change.

    Parameters
    ----------
    blocks : the grouping blocks (:func:`~nlpower.mixed.native.blocks.group_blocks`'s, the
        largest first: ``Lambda`` from ``theta`` by their ``lam``).
    X : (n, p) fixed-effects matrix (``p = 0``: ``M`` alone).
    layout : the shared layout of the same blocks (its column order and slots).
    mode : the Schur strategy, ``"auto"`` (the fitter's rule), ``"dense"`` or ``"sparse"``.

    Examples
    --------
    >>> import numpy as np
    >>> from nlpower.lmm.frame import model_frame
    >>> from nlpower.mixed.layout import theta_layout
    >>> from nlpower.mixed.native.blocks import group_blocks
    >>> from nlpower.mixed.blocked import BlockedLayout
    >>> import pandas as pd
    >>> g = np.random.default_rng(1)
    >>> d = pd.DataFrame({"w": np.repeat(list("abcdef"), 10), "i": np.tile(list("pqrst"), 12),
    ...                   "y": g.normal(size=60)})
    >>> spec = model_frame("y ~ 1 + (1 | w) + (1 | i)", d)
    >>> blocks = group_blocks(theta_layout(spec.re_terms))
    >>> lay = BlockedLayout([b.codes for b in blocks], [b.q for b in blocks], [b.m for b in blocks], 1)
    >>> plan = NativePlan(blocks, spec.X, lay)
    >>> fac = plan.factor(np.array([0.8, 0.5]), g.uniform(0.1, 0.3, 60), with_x=False)
    >>> fac.solve(np.ones(11)).shape
    (11,)
    """

    def __init__(self, blocks: list[GroupBlock], X: np.ndarray, layout: BlockedLayout[Any],
                 mode: str = "auto"):
        X = np.asarray(X, dtype=float)
        n = X.shape[0]
        self.layout = layout
        # the pattern's part from generic numbers (see the module's note)
        s = np.sqrt(np.random.default_rng(20261129).uniform(0.5, 1.5, n))
        generic = [dataclasses.replace(b, Z=np.asarray(b.Z, dtype=float) * s[:, None])
                   for b in blocks]
        self.b = b = blocks_from(generic, X * s[:, None], s * np.arange(n, dtype=float), mode,
                                 positions=True)
        self.ev = DevianceEvaluator(b, grouped=False)
        q1, Z1 = b.b1.q, np.asarray(blocks[0].Z, dtype=float)
        ent = _rest_entries(b, blocks[1:], X)
        tab = _product_table(b, Z1, ent)
        # X's products with Z1 (its pairs' part of C, contiguous: after the random effects'
        # pairs) in a table of their own, formed only when X is in the system
        self._x0 = b.b1.m * q1 * q1 + int(np.searchsorted(b.pair_row, b.nre2)) * q1
        self._x1 = b.b1.m * q1 * q1 + b.y_pairs.start * q1
        xs = (tab.target >= self._x0) & (tab.target < self._x1)
        self._tab = _Table(tab.target[~xs], tab.obs[~xs], tab.prod[~xs], tab.size)
        self._tabx = _Table(tab.target[xs] - self._x0, tab.obs[xs], tab.prod[xs],
                            self._x1 - self._x0)
        self._x_on = True
        r_obs, r_col, r_val = ent
        self._Wrt = sp.csr_matrix((r_val, (r_col, r_obs)), shape=(b.N2 - 1, n))[:b.nre2]
        self._X = X
        self._sparse: tuple[np.ndarray, np.ndarray] | None = None
        if isinstance(b.schur, SparseSchur):       # which C[p1, a] C[p2, b] each V entry is
            self._sparse = b.schur.positions
        # the dense Schur products' positions of C (N2, m1, q1): one flat scatter
        self._cd = ((b.pair_row.astype(np.int64) * b.b1.m + b.pair_lev)[:, None] * q1
                    + np.arange(q1)[None, :]).ravel()
        # the response row: a unit vector of its own (C's y pairs 0, its pivot 1)
        b.C[b.y_pairs] = 0.0
        b.Arr[-1, :] = 0.0
        b.Arr[:, -1] = 0.0
        b.Arr[-1, -1] = 1.0
        b.y = np.zeros(n)
        # the peeled order's inverse and the layout's slots in it (selected)
        perm = self.ev.peel.perm[:b.N2 - 1] if self.ev.peel is not None else None
        self.perm = perm
        self.layout_p = layout
        if perm is not None:
            ip = np.empty(perm.size, dtype=np.intp)
            ip[perm] = np.arange(perm.size)
            self.layout_p = copy.copy(layout)
            self.layout_p.colsr = ip[layout.colsr]
        self._sel: _ScalarSelection | None = None
        if q1 == 1 and b.nre2 and self.ev.scale_index is not None:
            sel = _ScalarSelection(b, layout, perm)
            self._sel = sel if sel.ok else None

    @property
    def selected_on_pattern(self) -> bool:
        """Whether :meth:`NativeFactor.selected` forms no dense (rest x block 1) block."""
        return self._sel is not None

    # -- per step -----------------------------------------------------------------
    def set_weights(self, w: np.ndarray, with_x: bool = True) -> None:
        """Re-form every weighted cross-product for weights ``w`` (without ``X``: its rows
        are a unit block of their own, which leaves ``M``'s factor as it is)."""
        b, ev = self.b, self.ev
        q1, m1, N2, nre2 = b.b1.q, b.b1.m, b.N2, b.nre2
        tab = self._tab
        v = np.bincount(tab.target, w[tab.obs] * tab.prod, minlength=tab.size)
        if b.p and with_x:
            tx = self._tabx
            v[self._x0:self._x1] = np.bincount(tx.target, w[tx.obs] * tx.prod, minlength=tx.size)
        nA, nC = m1 * q1 * q1, b.y_pairs.start * q1
        b.A11[...] = v[:nA].reshape(m1, q1, q1)
        b.C[: b.y_pairs.start] = v[nA:nA + nC].reshape(-1, q1)
        b.Arr[:nre2, :nre2] = v[nA + nC:].reshape(nre2, nre2)
        X = self._X
        if b.p and with_x:
            Xw = X * w[:, None]
            RX = self._Wrt @ Xw
            b.Arr[:nre2, nre2:N2 - 1] = RX
            b.Arr[nre2:N2 - 1, :nre2] = RX.T
            b.Arr[nre2:N2 - 1, nre2:N2 - 1] = X.T @ Xw
        elif b.p and self._x_on:
            b.Arr[:nre2, nre2:N2 - 1] = 0.0
            b.Arr[nre2:N2 - 1, :nre2] = 0.0
            b.Arr[nre2:N2 - 1, nre2:N2 - 1] = np.eye(b.p)
        self._x_on = with_x
        if b.patterns is not None:
            b.patterns = [Pattern(p.levels, p.cols, b.A11[p.levels][:, p.cols][:, :, p.cols],
                                  p.flat) for p in b.patterns]
        schur = b.schur
        if isinstance(schur, DenseSchur):
            schur.Cd.reshape(-1)[self._cd] = b.C.reshape(-1)
            for Cg, pat in zip(schur.Cg, b.patterns or (), strict=True):
                Cg[...] = schur.Cd[:, pat.levels][:, :, pat.cols]
        else:
            assert self._sparse is not None
            i1, i2 = self._sparse
            Cf = b.C.reshape(-1)
            np.multiply(np.take(Cf, i1), np.take(Cf, i2), out=schur.V.data)
        ev.numbers_changed()

    def factor(self, theta: np.ndarray, w: np.ndarray, with_x: bool) -> NativeFactor:
        """The factor of ``M`` (``with_x``: and ``X``, eliminated last) at ``theta`` for weights ``w``.

        ``numpy.linalg.LinAlgError`` when the system is not positive definite.
        """
        self.set_weights(w, with_x)
        ev, b = self.ev, self.b
        th = np.asarray(theta, dtype=float)
        f = ev.factor(th)
        if not f.ok:
            raise np.linalg.LinAlgError("the weighted system is not positive definite")
        L, _ = ev.dense_factor(f)
        nr = b.N2 - 1 if with_x else b.nre2
        L2 = np.array(L[:nr, :nr]) if nr else None
        L1 = np.array(ev.block1_factor(f))
        F, Fv = self._coupling(ev.E(f), th)
        return NativeFactor(self, L1, F[:nr], L2, float(f.ldL2), Fv)

    def _coupling(self, E: np.ndarray, th: np.ndarray
                  ) -> tuple[sp.csr_matrix, np.ndarray | None]:
        """``F = Lambda_r' E`` without ``y``'s row (rows in the factor's order), and its values
        on the random-effects pairs for the scalar selection (``None`` without it)."""
        b, ev = self.b, self.ev
        N2, n1 = b.N2, b.b1.m * b.b1.q
        npr = b.y_pairs.start                      # the pairs before y's row
        if ev.scale_index is None:                  # a non-diagonal Lambda_r: mix the rows
            Es = sp.csr_matrix((E.ravel(), b.indices, b.indptr), shape=(N2, n1))
            F = (lambda_rows(ev, th, N2 - 1) @ Es[:N2 - 1]).tocsr()
            return (F if self.perm is None else F[self.perm]), None
        scale = np.append(th, 1.0)[ev.scale_index]
        Ev = E[:npr] * scale[b.pair_row[:npr]][:, None]
        F = sp.csr_matrix((Ev.ravel(), b.indices[:npr * b.b1.q], b.indptr[:N2]), shape=(N2 - 1, n1))
        if self.perm is not None:
            F = F[self.perm]
        return F, (Ev[:self._sel.n_re, 0] if self._sel is not None else None)


class NativeFactor:
    """A factor from :class:`NativePlan`: ``logdet``, ``solve`` and ``selected`` as
    :class:`~.blocked.BlockedFactor`'s (same order of the unknowns: block 1, the rest, ``X``).

    ``L1``: block 1's ``(m1, q1, q1)`` factors; ``F``: the coupling ``Lambda_r' W'Z1
    Lambda1 L1^{-T}`` (sparse; rows in the rest's factor order); ``L2``: the rest's lower
    factor (``None`` without a rest); ``logdet``: ``log |L|^2`` of ``M``.
    """

    def __init__(self, plan: NativePlan, L1: np.ndarray, F: sp.csr_matrix,
                 L2: np.ndarray | None, logdet: float, Fv: np.ndarray | None = None):
        self.plan, self.logdet, self._Fv = plan, logdet, Fv
        self._bf = BlockedFactor(plan.layout_p, L1, F, L2, logdet)

    @property
    def Lx(self) -> np.ndarray | None:
        """The Cholesky factor of ``X``'s Schur complement (``None`` without ``X``)."""
        return self._bf.Lx

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``M^{-1} r`` (or the joint system's with ``X``; ``r``: a vector or ``(q, k)``)."""
        perm, n1 = self.plan.perm, self.plan.layout.n1
        if perm is None:
            return self._bf.solve(r)
        idx = np.concatenate([np.arange(n1), n1 + perm[:r.shape[0] - n1]])
        x = self._bf.solve(r[idx])
        out = np.empty_like(x)
        out[idx] = x
        return out

    def selected(self, zl: np.ndarray) -> np.ndarray:
        """``g_i``: ``M^{-1} (Z Lambda)_i'`` at observation ``i``'s own columns (``(n, s)``)."""
        sel = self.plan._sel
        if sel is None or self._Fv is None:
            return self._bf.selected(zl)
        return sel.selected(self._bf, self._Fv, zl)


class _ScalarSelection:
    """The selected inverse for a scalar block 1 on the pattern of ``F`` (fixed per layout).

    With ``S^{-1}`` the inverse of the rest's Schur complement, block 1's
    diagonal is ``(1 + F_l' S^{-1} F_l) / d_l^2`` and the coupling
    ``-(S^{-1} F)_{t l} / d_l``, read at each observation's own (rest column,
    level) pairs -- non-zeros of ``F`` when every observation's slots are
    (checked here, else the dense :meth:`~.blocked.BlockedFactor.selected`).
    Both are then sums over pairs of non-zeros within a level: ``sum_l
    nnz_l^2`` products instead of the dense ``qr^2 n1``.  Needs a diagonal
    ``Lambda_r`` (``F``'s values are the pairs' ``E`` scaled by it).
    """

    def __init__(self, b: Blocks, lay: BlockedLayout[Any], perm: np.ndarray | None):
        m1 = b.b1.m
        n_re = int(np.searchsorted(b.pair_row, b.nre2))    # the random-effects pairs first
        row, lev = b.pair_row[:n_re], b.pair_lev[:n_re]
        key = row.astype(np.int64) * m1 + lev
        okey = lay.colsr.astype(np.int64) * m1 + lay.codes1[:, None]
        k = np.minimum(np.searchsorted(key, okey), max(n_re - 1, 0))
        self.ok = n_re > 0 and bool(np.all(key[k] == okey))
        self.obs_k, self.n_re, self.lev = k, n_re, lev
        rowp = row if perm is None else np.argsort(perm)[row]     # rows in the factor's order
        # every pair (k, k2) of non-zeros within a level, as flat positions in S^{-1}
        order = np.argsort(lev, kind="stable")
        cnt = np.bincount(lev, minlength=m1)[lev[order]]
        within = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        first = np.concatenate([[0], np.cumsum(np.bincount(lev, minlength=m1))[:-1]])
        k1 = np.repeat(order, cnt)
        k2 = order[first[lev[k1]] + within]
        self.k1, self.k2 = k1, k2
        self.flat = rowp[k1].astype(np.int64) * b.nre2 + rowp[k2]

    def selected(self, bf: Any, Fv: np.ndarray, zl: np.ndarray) -> np.ndarray:
        """From the factor ``bf`` (``L1``, ``L2``) and ``F``'s values ``Fv`` on the pairs."""
        lay = bf.layout
        qr = lay.qr
        d1 = bf.L1[:, 0, 0]
        Sinv, info = lapack.dpotri(bf.L2[:qr, :qr], lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"inverse from the Cholesky factor failed (info={info})")
        Sinv = np.tril(Sinv) + np.tril(Sinv, -1).T
        # P = S^{-1} F at F's non-zeros; F_l' S^{-1} F_l per level
        Pv = np.bincount(self.k1, Sinv.reshape(-1)[self.flat] * Fv[self.k2], minlength=self.n_re)
        W2sq = np.bincount(self.lev, Fv * Pv, minlength=lay.m1)
        codes1 = lay.codes1
        dc = d1[codes1]
        zl1, zlr = zl[:, 0], zl[:, 1:]
        Nsel = -Pv[self.obs_k] / dc[:, None]                           # (n, sr)
        colsr = lay.colsr
        Ssel = Sinv[colsr[:, :, None], colsr[:, None, :]]               # (n, sr, sr)
        g1 = (1.0 + W2sq[codes1]) / (dc * dc) * zl1 + np.einsum("nt,nt->n", Nsel, zlr)
        g2 = Nsel * zl1[:, None] + np.einsum("nts,ns->nt", Ssel, zlr)
        return np.concatenate([g1[:, None], g2], axis=1)


def _rest_entries(b: Blocks, rest: list[GroupBlock], X: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(observation, rest column, value)`` of every non-zero of ``W = [Z_2 .. Z_k X]``,
    in :func:`~nlpower.mixed.native.blocks.blocks_from`'s order."""
    n = X.shape[0]
    obs = np.arange(n)
    rows, cols, vals = [], [], []
    for blk, (_, off) in zip(rest, b.rest, strict=True):
        for c in range(blk.q):
            v = np.asarray(blk.Z[:, c], dtype=float)
            nz = v != 0
            rows.append(obs[nz])
            cols.append(off + blk.codes[nz] * blk.q + c)
            vals.append(v[nz])
    for c in range(X.shape[1]):
        v = X[:, c]
        nz = v != 0
        rows.append(obs[nz])
        cols.append(np.full(int(nz.sum()), b.nre2 + c))
        vals.append(v[nz])
    if not rows:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def _product_table(b: Blocks, Z1: np.ndarray,
                   entries: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _Table:
    """The :class:`_Table` of ``b``'s layout with the true numbers: block 1's ``Z1`` and the
    rest's non-zeros (:func:`_rest_entries`)."""
    n, q1, m1, nre2 = b.n, b.b1.q, b.b1.m, b.nre2
    codes1 = b.b1.codes
    ab = np.arange(q1 * q1)
    tA = (codes1[:, None] * (q1 * q1) + ab[None, :]).ravel()
    pA = (Z1[:, ab // q1] * Z1[:, ab % q1]).ravel()
    # W'Z1 per (rest row, block-1 level) pair, in the fitter's pair order (y's pairs last)
    r_obs, r_col, r_val = entries
    n_pairs = b.y_pairs.start
    ukeys = b.pair_row[:n_pairs].astype(np.int64) * m1 + b.pair_lev[:n_pairs]
    inv = np.searchsorted(ukeys, r_col.astype(np.int64) * m1 + codes1[r_obs])
    tC = (inv[:, None] * q1 + np.arange(q1)[None, :]).ravel()
    pC = (r_val[:, None] * Z1[r_obs]).ravel()
    # the rest's random-effects block: every pair of non-zeros within an observation's row
    re = r_col < nre2
    Wr = sp.csr_matrix((r_val[re], (r_obs[re], r_col[re])), shape=(n, nre2))
    Wr.sort_indices()
    cnt = np.diff(Wr.indptr)
    i_obs = np.repeat(np.arange(n), cnt * cnt)
    start = np.repeat(Wr.indptr[:-1], cnt * cnt)
    k = np.arange(i_obs.size) - np.repeat(np.cumsum(cnt * cnt) - cnt * cnt, cnt * cnt)
    kk = np.repeat(cnt, cnt * cnt)
    j1, j2 = start + k // kk, start + k % kk
    tR = Wr.indices[j1].astype(np.int64) * nre2 + Wr.indices[j2]
    pR = Wr.data[j1] * Wr.data[j2]
    nA, nC = m1 * q1 * q1, n_pairs * q1
    return _Table(np.concatenate([tA, nA + tC, nA + nC + tR]),
                  np.concatenate([np.repeat(np.arange(n), q1 * q1), np.repeat(r_obs, q1), i_obs]),
                  np.concatenate([pA, pC, pR]), nA + nC + nre2 * nre2)
