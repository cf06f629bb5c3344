"""The pair strategy of the stacked factorisation: scalar terms, many responses at once.

:mod:`.blocked_batch` eliminates the rest blocks (every block but the
largest, block 0) through the Schur complement ``S = Rr - C D0^{-1} C'``;
formed densely, ``C D0^{-1} C'`` costs ``qr^2 m0`` per response and holds
an ``(R, qr, m0)`` array.  With scalar terms, column ``l`` of ``C`` (block
0's level ``l``) is non-zero only at the rest columns of the observations
in level ``l``, so (as :mod:`.pairs` does for one response)::

    (C D0^{-1} C')_{jk} = sum over pairs (i, i') sharing a block-0 level l:
        t0^2 t_b t_c  w_i w_i' z0_i z0_i' z_b,i z_c,i' / D0_l   at (j, k) = (col_b(i), col_c(i'))

one number per *pair of observations sharing a block-0 level* (``sum_l
n_l^2`` of them) and per response, scattered by a sparse product fixed by
the design.  ``S`` stays a dense ``(R, qr, qr)`` stack (small: the rest).
The selected inverse reads the same pairs: with ``P = S^{-1} C D0^{-1}``
(never formed), observation ``i``'s entry of block 0 x block ``b`` is
``-P[col_b(i), l(i)] = -sum_c sum_{i' in l(i)} S^{-1}[col_b(i), col_c(i')]
a_c,i'`` (``a_c,i' = t0 t_c w_i' z0_i' z_c,i' / D0_l``), and block 0's
diagonal ``1 / D0_l + sum_{i in l} sum_b a_b,i P[col_b(i), l]``.

The rule is the single fit's (:func:`nlpower.mixed.pairs.pair_plan`, decided
once for the model's layout): the batch of power replicates factors the way
one fit of the same design does.  Checked against dense algebra in
``tests/mixed/test_pairs_batch.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg import lapack

if TYPE_CHECKING:
    from .blocked_batch import BatchedLayout

__all__ = ["PairBatch", "PairBatchedFactor", "cholesky_rows"]

#: responses whose pair values are formed together (bounds the ``(rows, pairs)`` temporaries)
PAIR_VALUES = 1 << 24
#: unordered pairs scattered into the Schur complement together
SCATTER_PAIRS = 1 << 14


class PairBatch:
    """The fixed part: the pairs of observations sharing a block-0 level, and their targets.

    ``pi``, ``pj``: each ordered pair's observations (the diagonal
    included), grouped by ``i``; ``tgt[b, c]``: each pair's flat position in
    ``S`` for rest blocks ``b, c``; ``runs[b, c]``: the unordered pairs
    ``hi <= hj`` sorted by target, in runs, each with a CSR matrix that
    scatters their values times ``z0_i z0_i' z_b,i z_c,i'`` (half for a pair
    with itself) onto the run's range of targets (one triangle's worth); ``to_obs`` sums pair values over ``i'`` (``(n,
    pairs)``), ``to_lev`` observations' over block 0's levels.
    """

    def __init__(self, lay: BatchedLayout):
        n, m0, qr = lay.n, lay.m0, lay.qr
        codes0 = lay.codes[0]
        order = np.argsort(codes0, kind="stable")
        counts = np.bincount(codes0, minlength=m0)
        starts = np.concatenate([[0], np.cumsum(counts)])
        rep = np.repeat(counts, counts)                     # per member: its level's size
        first = np.repeat(starts[:-1], counts)
        I_s = np.repeat(np.arange(n), rep)
        off = np.arange(I_s.size) - np.repeat(np.cumsum(rep) - rep, rep)
        self.pi = order[I_s]
        self.pj = order[np.repeat(first, rep) + off]
        self.n_pairs = int(self.pi.size)
        rest = range(1, lay.nb)
        self.tgt = {(b, c): (lay.cols[b][self.pi] - m0) * qr + (lay.cols[c][self.pj] - m0)
                    for b in rest for c in rest}
        # the Schur complement is symmetric: scatter each unordered pair once (a pair with
        # itself at half weight) into T, then C D0^{-1} C' = T + T'
        half = self.pi <= self.pj
        self.hi, self.hj = self.pi[half], self.pj[half]
        self.hlev = codes0[self.hi]
        z0 = lay.z[0]
        zz0 = z0[self.hi] * z0[self.hj] * np.where(self.hi == self.hj, 0.5, 1.0)
        # per (b, c): the unordered pairs sorted by target, in runs of SCATTER_PAIRS, each run
        # scattered by a CSR matrix onto its own range of targets (small buffers, reused)
        self.runs: dict[tuple[int, int], list[tuple[int, int, np.ndarray, np.ndarray,
                                                    np.ndarray, sp.csr_matrix]]] = {}
        for b in rest:
            for c in rest:
                t = self.tgt[b, c][half]
                o = np.argsort(t, kind="stable")
                t, hi, hj = t[o], self.hi[o], self.hj[o]
                vals = (zz0 * lay.z[b][self.hi] * lay.z[c][self.hj])[o]
                runs = []
                for lo in range(0, t.size, SCATTER_PAIRS):
                    k = slice(lo, lo + SCATTER_PAIRS)
                    t0, t1 = int(t[k][0]), int(t[k][-1]) + 1
                    nk = t[k].size
                    runs.append((t0, t1, hi[k], hj[k], codes0[hi[k]], sp.csr_matrix(
                        (vals[k], (t[k] - t0, np.arange(nk))), shape=(t1 - t0, nk))))
                self.runs[b, c] = runs
        self.to_obs = sp.csr_matrix((np.ones(self.n_pairs), (self.pi, np.arange(self.n_pairs))),
                                    shape=(n, self.n_pairs))
        #: sums over the observations of each block-0 level (``(m0, n)``)
        self.to_lev = sp.csr_matrix((np.ones(n), (codes0, np.arange(n))), shape=(m0, n))

    def chunks(self, R: int) -> list[slice]:
        """Row slices of at most :data:`PAIR_VALUES` pair values each."""
        step = max(1, PAIR_VALUES // max(self.n_pairs, 1))
        return [slice(lo, min(lo + step, R)) for lo in range(0, R, step)]

    def schur_part(self, lay: BatchedLayout, lam: np.ndarray, w: np.ndarray, D0: np.ndarray
                   ) -> np.ndarray:
        """``C D0^{-1} C'`` per response: ``(R, qr, qr)``.

        Computed response-minor (``(pairs, R)``: each gather reads whole rows).
        """
        R, qr = w.shape[0], lay.qr
        wT, dT = np.ascontiguousarray(w.T), np.ascontiguousarray((1.0 / D0).T)
        outT = np.zeros((qr * qr, R))
        t0sq = lam[:, 0] ** 2
        for (b, c), runs in self.runs.items():
            coef = (t0sq * lam[:, b] * lam[:, c])[None, :]
            for t0, t1, hi, hj, hlev, S in runs:
                u = wT[hi]
                u *= wT[hj]
                u *= dT[hlev]
                u *= coef
                outT[t0:t1] += S @ u
        T = outT.T.reshape(R, qr, qr)
        return T + np.swapaxes(T, 1, 2)


def cholesky_rows(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The lower Cholesky factor of each ``S[r]`` and ``log |S[r]|``; an identity and ``nan``
    for a row that is not positive definite (rounding: its fit fails and is refitted)."""
    try:
        L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        L = np.empty_like(S)
        for r in range(S.shape[0]):
            try:
                L[r] = np.linalg.cholesky(S[r])
            except np.linalg.LinAlgError:
                L[r] = np.eye(S.shape[1])
                L[r, 0, 0] = np.nan
    with np.errstate(invalid="ignore"):
        ld = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
    L[np.isnan(ld), 0, 0] = 1.0
    return L, ld


@dataclass(eq=False)
class PairBatchedFactor:
    """The factors of ``M`` for ``R`` responses (rows), the rest's Schur complement from pairs.

    The interface of :class:`~nlpower.mixed.blocked_batch.BatchedFactor`
    (``logdet``, :meth:`solve`, :meth:`selected`, :meth:`rows`, :meth:`put`);
    ``L``: the Cholesky factors of the Schur complements ``S`` (solves
    through them; ``S^{-1}`` is formed only for the selected inverse).
    ``C`` is never held: its products are read from the scales ``lam`` and
    weights ``w`` each row was factored with.
    """

    layout: BatchedLayout
    D0: np.ndarray
    L: np.ndarray
    logdet: np.ndarray
    lam: np.ndarray
    w: np.ndarray

    def rows(self, idx: Any) -> PairBatchedFactor:
        """The rows ``idx`` (indices or a mask), copied."""
        return PairBatchedFactor(self.layout, self.D0[idx], self.L[idx], self.logdet[idx],
                                 self.lam[idx], self.w[idx])

    def put(self, idx: Any, src: Any) -> None:
        """Rows ``idx`` of this stack set to ``src``'s rows."""
        self.D0[idx], self.L[idx], self.logdet[idx] = src.D0, src.L, src.logdet
        self.lam[idx], self.w[idx] = src.lam, src.w

    def _sinv(self) -> np.ndarray:
        """``S^{-1}`` per row from its Cholesky factor (LAPACK's ``dpotri``)."""
        out = np.empty_like(self.L)
        for r, Lr in enumerate(self.L):
            inv, info = lapack.dpotri(Lr, lower=1)
            if info != 0:
                inv = sla.cho_solve((Lr, True), np.eye(Lr.shape[0]), check_finite=False)
            else:                          # the lower triangle: mirror it
                inv = np.tril(inv) + np.tril(inv, -1).T
            out[r] = inv
        return out

    def _c(self, y0: np.ndarray) -> np.ndarray:
        """``C y0`` per response (``y0``: ``(R, m0, k)``) -> ``(R, qr, k)``."""
        lay = self.layout
        R, k = y0.shape[0], y0.shape[2]
        v = (self.w * lay.z[0])[:, :, None] * np.take_along_axis(
            y0, np.broadcast_to(lay.codes[0][None, :, None], (R, lay.n, k)), axis=1)
        vt = np.ascontiguousarray(v.transpose(1, 0, 2)).reshape(lay.n, R * k)
        out = np.empty((R, lay.qr, k))
        for b in range(1, lay.nb):
            sb = slice(lay.offs[b] - lay.m0, lay.offs[b + 1] - lay.m0)
            Gb = lay.Gall[lay.offs[b]:lay.offs[b + 1]]
            out[:, sb] = (Gb @ vt).reshape(lay.m[b], R, k).transpose(1, 0, 2) \
                * (self.lam[:, 0] * self.lam[:, b])[:, None, None]
        return out

    def _ct(self, x1: np.ndarray) -> np.ndarray:
        """``C' x1`` per response (``x1``: ``(R, qr, k)``) -> ``(R, m0, k)``."""
        lay = self.layout
        R, k = x1.shape[0], x1.shape[2]
        v = np.zeros((R, lay.n, k))
        for b in range(1, lay.nb):
            rows = lay.cols[b] - lay.m0
            v += (x1[:, rows, :] * lay.z[b][None, :, None]) * self.lam[:, b, None, None]
        v *= self.w[:, :, None]
        vt = np.ascontiguousarray(v.transpose(1, 0, 2)).reshape(lay.n, R * k)
        G0 = lay.Gall[:lay.m0]
        return (G0 @ vt).reshape(lay.m0, R, k).transpose(1, 0, 2) \
            * self.lam[:, 0, None, None]

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``M^{-1} rhs`` per response (``rhs``: ``(R, q)`` or ``(R, q, c)``)."""
        vec = rhs.ndim == 2
        r = rhs[:, :, None] if vec else rhs
        m0 = self.layout.m0
        r0, r1 = r[:, :m0], r[:, m0:]
        D0 = self.D0[:, :, None]
        y0 = r0 / D0
        x1 = sla.cho_solve((self.L, True), r1 - self._c(y0), check_finite=False)
        x = np.concatenate([(r0 - self._ct(x1)) / D0, x1], axis=1)
        return x[:, :, 0] if vec else x

    def _entries(self) -> list[list[np.ndarray]]:
        """``E[a][b]``: the entry of ``M^{-1}`` at each observation's columns of blocks ``a, b``."""
        lay = self.layout
        pb = lay.pair_batch
        assert pb is not None
        R, nb, qr, m0 = self.D0.shape[0], lay.nb, lay.qr, lay.m0
        SfT = np.ascontiguousarray(self._sinv().reshape(R, qr * qr).T)     # (qr^2, R)
        # a_c,i = t0 t_c w_i z0_i z_c,i / D0_l(i): C D0^{-1}'s entry of observation i
        base = (self.w * lay.z[0] / np.take(self.D0, lay.codes[0], axis=1) * self.lam[:, :1]).T
        aT = {c: np.ascontiguousarray(base * (lay.z[c][:, None] * self.lam[None, :, c]))
              for c in range(1, nb)}                                       # (n, R)
        PT = {b: np.zeros((lay.n, R)) for b in range(1, nb)}               # P[col_b(i), l(i)]
        for sl in pb.chunks(R):
            whole = sl.stop - sl.start == R
            Sc = SfT if whole else np.ascontiguousarray(SfT[:, sl])
            for (b, c), tgt in pb.tgt.items():
                ac = aT[c] if whole else np.ascontiguousarray(aT[c][:, sl])
                vals = Sc[tgt]
                vals *= ac[pb.pj]
                PT[b][:, sl] += pb.to_obs @ vals
        totT = sum(aT[b] * PT[b] for b in range(1, nb))
        inv00 = 1.0 / self.D0 + (pb.to_lev @ totT).T
        E: list[list[np.ndarray]] = [[np.empty(0)] * nb for _ in range(nb)]
        E[0][0] = np.take(inv00, lay.codes[0], axis=1)
        rows = [lay.cols[b] - m0 for b in range(1, nb)]
        for b in range(1, nb):
            E[0][b] = E[b][0] = -np.ascontiguousarray(PT[b].T)
            for c in range(b, nb):
                E[b][c] = E[c][b] = np.ascontiguousarray(SfT[rows[b - 1] * qr + rows[c - 1]].T)
        return E

    def selected(self, lam: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The selected inverse, reduced (:meth:`~nlpower.mixed.blocked_batch.BatchedFactor.selected`)."""
        return selected_terms(self.layout, self._entries(), lam, w)


def selected_terms(lay: BatchedLayout, E: list[list[np.ndarray]], lam: np.ndarray,
                   w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(s, h)`` of :meth:`BatchedFactor.selected` from the entries ``E[a][b]`` of ``M^{-1}``
    at each observation's columns of blocks ``a, b`` (a layout with a rest)."""
    R, nb = lam.shape[0], lay.nb
    t = [lam[:, b, None] for b in range(nb)]
    s = np.empty((R, nb))
    h = np.zeros_like(w)
    if all(lay.ones):
        # z = 1: (Z Lambda)_i is lam per row; no per-observation products of lam
        tmp = np.empty_like(w)
        dots = {}
        for a in range(nb):
            for b in range(a, nb):
                dots[a, b] = dots[b, a] = np.einsum("rn,rn->r", w, E[a][b])
                coef = t[a] * t[b] * (1.0 if a == b else 2.0)
                h += np.multiply(E[a][b], coef, out=tmp)
        for a in range(nb):
            s[:, a] = sum(t[b][:, 0] * dots[a, b] for b in range(nb))
        return s, h
    zl = [t[b] * lay.z[b] for b in range(nb)]
    for a in range(nb):
        ga = sum(E[a][b] * zl[b] for b in range(nb))
        s[:, a] = (w * ga) @ lay.z[a]
        h += zl[a] * ga
    return s, h
