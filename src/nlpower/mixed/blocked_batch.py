"""The blocked factorisation of ``M = Lambda'Z'WZ Lambda + I``, stacked over ``R`` responses.

:mod:`.blocked`'s layout for many weight vectors at once (the power
replicates of one design), when every random-effects term is a scalar on
its own grouping factor: ``Lambda`` is then ``lam_b I`` on block ``b``, one
scale per block and response.  Block 0 (the largest) stays diagonal; the
other blocks' ``qr`` levels are eliminated densely, through the
``(R, qr, qr)`` Schur complement ``S = R - C D0^{-1} C'``, so one
factorisation costs ``O(R (n + qr^2 m0))``; where one fit of the design
takes the pair strategy (:func:`nlpower.mixed.pairs.pair_plan`), the batch
does too: ``C D0^{-1} C'`` from pairs of observations, ``O(R sum_l n_l^2)``,
and no ``(R, qr, m0)`` array (:mod:`.pairs_batch`).

Every weighted cross-product of ``Z`` is one sparse-times-dense product of
the ``(R, n)`` weights with scatter matrices fixed by the design
(:class:`BatchedLayout`); the scales enter afterwards, per block pair.  The
factor (:class:`BatchedFactor`) gives ``log |M|``, solves and the selected
inverse (the entries of ``M^{-1}`` at each observation's pairs of columns)
per response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .pairs_batch import PairBatch, PairBatchedFactor, cholesky_rows, selected_terms

__all__ = ["BatchedFactor", "BatchedLayout", "StackedFactor", "selected_terms"]


def _scatter(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, ncol: int) -> sp.csr_matrix:
    """The transposed ``(ncol, n)`` scatter matrix: ``(S @ W.T).T`` sums ``vals * W`` into columns."""
    return sp.csr_matrix((vals, (cols, rows)), shape=(ncol, rows.size))


class BatchedLayout:
    """Scalar terms on distinct grouping factors: where each observation's products land.

    Parameters
    ----------
    codes : each block's level codes (``(n,)`` each), the largest block first.
    z : each block's ``Z`` column (``(n,)`` each; ones for an intercept).
    ms : each block's number of levels.
    pairs : whether the rest's Schur complement is formed from pairs of
        observations (:mod:`.pairs_batch`): the single fit's strategy
        (:func:`nlpower.mixed.pairs.pair_plan`), passed by the caller.

    Examples
    --------
    Two crossed intercepts (3 and 2 levels), scales 0.5 and 2, two responses' weights:

    >>> import numpy as np
    >>> lay = BatchedLayout([np.array([0, 1, 2, 0]), np.array([0, 0, 1, 1])], [np.ones(4)] * 2, [3, 2])
    >>> lam, w = np.array([[0.5, 2.0], [1.0, 1.0]]), np.array([[1.0, 2.0, 1.0, 0.5], np.ones(4)])
    >>> A = np.zeros((4, 5)); A[np.arange(4), lay.cols[0]] = 1.0; A[np.arange(4), lay.cols[1]] = 1.0
    >>> M = [(A * l[lay.colblock]).T @ (wr[:, None] * A * l[lay.colblock]) + np.eye(5)
    ...      for l, wr in zip(lam, w)]
    >>> bool(np.allclose(lay.factor(lam, w).logdet, [np.linalg.slogdet(m)[1] for m in M]))
    True
    """

    def __init__(self, codes: Sequence[np.ndarray], z: Sequence[np.ndarray], ms: Sequence[int],
                 pairs: bool = False):
        self.nb = len(codes)
        self.m = [int(m) for m in ms]
        self.offs = np.concatenate([[0], np.cumsum(self.m)]).astype(np.intp)
        self.q = int(self.offs[-1])
        self.m0 = self.m[0]
        self.qr = self.q - self.m0
        self.codes = [np.asarray(c, dtype=np.intp) for c in codes]
        self.n = int(self.codes[0].shape[0])
        rows = np.arange(self.n)
        #: each observation's column of each block
        self.cols = [self.offs[b] + self.codes[b] for b in range(self.nb)]
        #: the block of each column
        self.colblock = np.repeat(np.arange(self.nb), self.m)
        self.z = [np.asarray(zb, dtype=float) for zb in z]
        self.ones = [bool(np.all(zb == 1.0)) for zb in self.z]
        G = [_scatter(rows, self.codes[b], self.z[b], self.m[b]) for b in range(self.nb)]
        #: ``Z'`` as a ``(q, n)`` scatter matrix
        self.Gall = sp.vstack(G, format="csr")
        # the weighted cross-products of every block pair (a <= b), stacked: entry
        # (level_a, level_b) of pair (a, b) at a flat index
        mats = {(b, b): _scatter(rows, self.codes[b], self.z[b] ** 2, self.m[b])
                for b in range(self.nb)}
        pairs = pairs and self.nb > 1
        # (the pair strategy never forms C, block 0 x the rest: no scatter for it)
        for a in range(1 if pairs else 0, self.nb):
            for b in range(a + 1, self.nb):
                pos = self.codes[b] * self.m[a] + self.codes[a]
                mats[a, b] = _scatter(rows, pos, self.z[a] * self.z[b], self.m[a] * self.m[b])
        self.fpos, start = {}, 0
        for key, mat in mats.items():
            self.fpos[key] = slice(start, start + mat.shape[0])
            start += mat.shape[0]
        self.Fall = sp.vstack(list(mats.values()), format="csr")
        # where observation i's (rest level, block-0 level) entry sits in a flat (qr, m0) array
        self.rc_pos = [(self.cols[b] - self.m0) * self.m0 + self.codes[0] for b in range(1, self.nb)]
        #: the pair strategy's fixed part (``None``: the dense Schur complement)
        self.pair_batch = PairBatch(self) if pairs else None

    # -- products with Z Lambda ----------------------------------------------------------
    def zu(self, lam: np.ndarray, U: np.ndarray) -> np.ndarray:
        """``Z Lambda u`` per response: ``(R, n)`` (``lam``: ``(R, nb)`` scales, ``U``: ``(R, q)``)."""
        B = U * lam[:, self.colblock]
        out = B[:, self.cols[0]] if self.ones[0] else B[:, self.cols[0]] * self.z[0]
        for b in range(1, self.nb):
            out += B[:, self.cols[b]] if self.ones[b] else B[:, self.cols[b]] * self.z[b]
        return out

    def ztv(self, lam: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``Lambda' Z' v`` per response: ``(R, q)``."""
        return (self.Gall @ np.ascontiguousarray(V.T)).T * lam[:, self.colblock]

    # -- the factor ----------------------------------------------------------------------
    def factor(self, lam: np.ndarray, w: np.ndarray) -> StackedFactor:
        """The factor of ``M`` per response for scales ``lam`` ``(R, nb)`` and weights ``w`` ``(R, n)``.

        A response whose Schur complement is not positive definite (rounding)
        gets ``logdet`` from ``slogdet`` (``nan`` when negative) and an identity
        in its place.  With the pair strategy (:attr:`pair_batch`) the Schur
        complement's ``C D0^{-1} C'`` comes from pairs of observations
        (:mod:`.pairs_batch`) and ``C`` is not held.
        """
        R = w.shape[0]
        V = self.Fall @ np.ascontiguousarray(w.T)      # every weighted cross-product of Z

        def part(key: tuple[int, int]) -> np.ndarray:
            return V[self.fpos[key]].T

        t = [lam[:, b] for b in range(self.nb)]
        D0 = 1.0 + t[0][:, None] ** 2 * part((0, 0))
        ld = np.sum(np.log(D0), axis=1)
        qr, m0 = self.qr, self.m0
        if qr == 0:
            return BatchedFactor(self, D0, np.zeros((R, 0, m0)), np.zeros((R, 0, 0)), ld)
        pairs = self.pair_batch is not None
        Cr = None if pairs else np.empty((R, qr, m0))
        Rr = np.zeros((R, qr, qr))
        for b in range(1, self.nb):
            sb = slice(self.offs[b] - m0, self.offs[b + 1] - m0)
            if Cr is not None:
                Cr[:, sb, :] = ((t[0] * t[b])[:, None] * part((0, b))).reshape(R, self.m[b], m0)
            idx = np.arange(self.offs[b], self.offs[b + 1]) - m0
            Rr[:, idx, idx] = 1.0 + t[b][:, None] ** 2 * part((b, b))
            for c in range(b + 1, self.nb):
                sc = slice(self.offs[c] - m0, self.offs[c + 1] - m0)
                blk = ((t[b] * t[c])[:, None] * part((b, c))).reshape(R, self.m[c], self.m[b])
                Rr[:, sc, sb] = blk
                Rr[:, sb, sc] = np.swapaxes(blk, 1, 2)
        if Cr is None:
            assert self.pair_batch is not None
            L, ld2 = cholesky_rows(Rr - self.pair_batch.schur_part(self, lam, w, D0))
            return PairBatchedFactor(self, D0, L, ld + ld2, lam.copy(), w.copy())
        S = Rr - (Cr / D0[:, None, :]) @ np.swapaxes(Cr, 1, 2)
        Sinv, ld2 = _inverse(S)
        return BatchedFactor(self, D0, Cr, Sinv, ld + ld2)

    def empty(self, R: int) -> StackedFactor:
        """``R`` placeholder factors (``M = I``, ``logdet`` infinite) to be filled by rows."""
        if self.pair_batch is not None:
            return PairBatchedFactor(self, np.ones((R, self.m0)),
                                     np.broadcast_to(np.eye(self.qr), (R, self.qr, self.qr)).copy(),
                                     np.full(R, np.inf), np.zeros((R, self.nb)),
                                     np.zeros((R, self.n)))
        return BatchedFactor(self, np.ones((R, self.m0)), np.zeros((R, self.qr, self.m0)),
                             np.zeros((R, self.qr, self.qr)), np.full(R, np.inf))


def _inverse(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``S^{-1}`` and ``log |S|`` per response; an identity and ``nan`` (or ``slogdet``'s value)
    where ``S`` is not positive definite (rounding)."""
    try:                                 # positive definite (always, but for rounding)
        Lc = np.linalg.cholesky(S)
        return np.linalg.inv(S), 2.0 * np.log(np.diagonal(Lc, axis1=1, axis2=2)).sum(axis=1)
    except np.linalg.LinAlgError:
        pass
    sign, lds = np.linalg.slogdet(S)
    with np.errstate(invalid="ignore"):
        ld = np.where(sign > 0, lds, np.nan)
    return np.linalg.inv(np.where((sign > 0)[:, None, None], S, np.eye(S.shape[1])[None])), ld


@dataclass(eq=False)
class BatchedFactor:
    """The factors of ``M`` for ``R`` responses (rows).

    ``D0``: ``(R, m0)`` block 0's diagonal; ``Cr``: ``(R, qr, m0)`` the rest x
    block 0; ``Sinv``: ``(R, qr, qr)`` the inverse of the rest's Schur
    complement; ``logdet``: ``(R,)`` ``log |M|``.  Rows are replaced in place
    by :meth:`put` (the Newton loops keep one stack and update the rows still running).
    """

    layout: BatchedLayout
    D0: np.ndarray
    Cr: np.ndarray
    Sinv: np.ndarray
    logdet: np.ndarray

    def rows(self, idx: Any) -> BatchedFactor:
        """The rows ``idx`` (indices or a mask), copied."""
        return BatchedFactor(self.layout, self.D0[idx], self.Cr[idx], self.Sinv[idx],
                             self.logdet[idx])

    def put(self, idx: Any, src: Any) -> None:
        """Rows ``idx`` of this stack set to ``src``'s rows."""
        self.D0[idx], self.Cr[idx], self.Sinv[idx] = src.D0, src.Cr, src.Sinv
        self.logdet[idx] = src.logdet

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``M^{-1} rhs`` per response (``rhs``: ``(R, q)`` or ``(R, q, c)``)."""
        vec = rhs.ndim == 2
        r = rhs[:, :, None] if vec else rhs
        m0 = self.layout.m0
        r0, r1 = r[:, :m0], r[:, m0:]
        D0 = self.D0[:, :, None]
        if self.layout.qr == 0:
            x = r0 / D0
        else:
            y0 = r0 / D0
            x1 = self.Sinv @ (r1 - self.Cr @ y0)
            x = np.concatenate([(r0 - np.swapaxes(self.Cr, 1, 2) @ x1) / D0, x1], axis=1)
        return x[:, :, 0] if vec else x

    def _entries(self) -> list[list[np.ndarray]]:
        """``E[a][b]``: the entry of ``M^{-1}`` at each observation's columns of blocks ``a, b``."""
        lay = self.layout
        R, nb = self.D0.shape[0], lay.nb
        CD = self.Cr / self.D0[:, None, :]
        P = self.Sinv @ CD                                       # -(rest x block 0) of M^{-1}
        inv00 = 1.0 / self.D0 + np.einsum("raj,raj->rj", CD, P)
        Pf = P.reshape(R, -1)
        Sf = self.Sinv.reshape(R, -1)
        rows = [lay.cols[b] - lay.m0 for b in range(1, nb)]
        E = [[np.empty(0)] * nb for _ in range(nb)]
        E[0][0] = inv00[:, lay.codes[0]]
        for b in range(1, nb):
            E[0][b] = E[b][0] = -Pf[:, lay.rc_pos[b - 1]]
            for c in range(b, nb):
                E[b][c] = E[c][b] = Sf[:, rows[b - 1] * lay.qr + rows[c - 1]]
        return E

    def selected(self, lam: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The selected inverse, reduced: ``(s, h)`` of shapes ``(R, nb)`` and ``(R, n)``.

        ``h_i = (Z Lambda)_i M^{-1} (Z Lambda)_i'`` per observation and, per
        block ``b``, ``s_b = sum_i w_i z_i (M^{-1} (Z Lambda)_i')_b`` (the
        entry at observation ``i``'s column of block ``b``): the trace terms of
        the Laplace gradient.
        """
        lay = self.layout
        R, nb = lam.shape[0], lay.nb
        t = [lam[:, b, None] for b in range(nb)]                # (R, 1) each
        s = np.empty((R, nb))
        if lay.qr == 0:
            A = (1.0 / self.D0)[:, lay.codes[0]]
            if lay.ones[0]:
                s[:, 0] = t[0][:, 0] * np.einsum("rn,rn->r", w, A)
                return s, A * t[0] ** 2
            z0 = lay.z[0]
            s[:, 0] = t[0][:, 0] * ((w * A) @ z0 ** 2)
            return s, A * (t[0] * z0) ** 2
        return selected_terms(lay, self._entries(), lam, w)


#: a stack of factors: the dense Schur complement's or, with the pair strategy, the pairs'
StackedFactor = BatchedFactor | PairBatchedFactor
