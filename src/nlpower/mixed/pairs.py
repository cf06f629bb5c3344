"""The pair strategy of the blocked factorisation: ``M`` of a crossed design through observation pairs.

A strategy of :func:`nlpower.mixed.blocked.factor` (the rule:
:func:`pair_plan`), with the interface of
:class:`~nlpower.mixed.blocked.BlockedFactor` (``logdet``, ``solve``,
``selected``).  Block 1 (the grouping factor with most random effects,
e.g. items) is eliminated level by level, as in the blocked
factorisation; what differs is how the Schur complement of the rest (e.g.
workers) is formed and how the selected elements of ``M^{-1}`` are read.

*Compression.*  An observation's row of ``Z_b`` in a rest block ``b``
takes one of a few values (``(system || worker)``: one per system), the
*patterns* ``Zpat_b`` (``P_b x q_b``).  With ``E`` the indicator of each
observation's (level, pattern) cell -- the *cells* of ``b``, ``Dc`` of them
over all rest blocks -- the rest's part of ``A = Z Lambda`` is ``A_2 = E T``
with ``T`` block diagonal, ``T_b = Zpat_b Lambda_b`` repeated over the
levels (read from ``Z Lambda`` at one observation of each pattern).  Then::

    S = M22 - M21 G^{-1} M12 = I + T' C T,
    C = E' (W - W K W) E,       K_ij = a1_i' G_l^{-1} a1_j  (i, j in level l of block 1)

so ``C`` (``Dc x Dc``) is a scatter of one number per *pair of observations
sharing a first-block level* (``sum_l n_l^2`` of them: about 20 per
observation for a crowd file whose items have 20 ratings), not a product of
``q1 x q2`` blocks.  With the thin SVD ``T_b = U_b D_b Y_b'`` (``R = U D``)
``S = I + Y (R' C R) Y'`` and, ``Y`` having orthonormal columns,
``log det S = log det Sc``, ``S^{-1} = I - Y Y' + Y Sc^{-1} Y'`` for the
small dense ``Sc = I + R' C R`` (one Cholesky, ``sum_b L_b min(P_b, q_b)``
square).

*Selected inverse.*  With ``f_i = sum_j c_ij e_j``, ``c_ij = delta_ij - w_j
K_ij`` (the cells of observation ``i``'s level-mates), ``Phi = Sc^{-1} R'``
and ``Sigma = R Phi`` (read at the pairs only, from the same gathers of ``Phi``)::

    (M^{-1} a_i)_2 = Y Phi f_i
    (M^{-1} a_i)_1 = G_l^{-1} (a1_i - sum_j w_j a1_j e_j' Sigma f_i)

again sums over the pairs.  Used when every rest block has at most as many
patterns as columns (factor codings; a continuous slope in a rest block
keeps the blocked factorisation) and when the blockwise dense Schur
complement would cost more (:data:`PAIR_MIN_WORK`, :data:`PAIR_WORK_PER_PAIR`:
few ratings per first-block level, a large rest); ``X``, when it joins
(GLMM PIRLS updating ``beta`` with the modes), is eliminated after ``M``
(:class:`~nlpower.mixed.blocked.FixedLast`).
Checked against dense algebra in ``tests/mixed/test_pairs.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg import lapack

if TYPE_CHECKING:
    from .blocked import BlockedLayout, ThetaProducts

__all__ = ["PAIR_MIN_WORK", "PAIR_WORK_PER_PAIR", "PairFactor", "PairPlan", "PairTheta",
           "pair_plan"]

#: ``n1 qr^2`` (the dense Schur complement's multiply-adds) from which observation pairs
#: factor ``M`` (measured per clmm gradient evaluation: 10 x 100 scalar terms, dense 2x
#: faster; 200 x 1,000 scalar, dense 1.3x faster at 4e7; 4 systems, 100 x 500, pairs 6x
#: faster at 6e8)
PAIR_MIN_WORK = 5e7
#: ... and from which that work exceeds this many times the pairs' own scatter (``sum_l n_l^2``
#: pairs times the rest blocks squared), which grows with the ratings per first-block level
#: (measured per glmer fit, crowd files of 20 ratings per item, binomial: scalar terms 300 x
#: 1,000, ratio 214, dense 2.1x faster; 450 x 1,500, 482, even; 600 x 2,000, 857, pairs 1.27x
#: faster; the paper's 4-system model 60 x 200, 1,075, pairs 2.1x faster)
PAIR_WORK_PER_PAIR = 500.0
#: largest number of rest cells (the dense C is Dc x Dc) and of observation pairs
_MAX_CELLS = 6000
_MAX_PAIRS = 30_000_000


@dataclass(frozen=True, eq=False)
class PairTheta:
    """What the pair strategy needs of one ``theta``: ``T`` per rest block and ``A``'s parts.

    ``T1``: block 1's patterns times ``Lambda_1`` (``None`` when block 1 does
    not compress); ``Rs``, ``Ys``: ``R_b = U_b D_b`` and ``Y_b`` of the thin
    SVD of ``T_b``; ``A1``, ``A2`` (CSR) and their transposes: ``Z Lambda``'s
    block-1 and rest columns.
    """

    T1: np.ndarray | None
    Rs: list[np.ndarray]
    Ys: list[np.ndarray]
    A1: Any
    A2: Any
    A1T: Any
    A2T: Any


class PairPlan:
    """The fixed part: pairs of observations per first-block level, cells of the rest.

    ``designs``: each block's ``Z`` (``(n, q_b)``, block 1 first); ``pats``,
    ``pid``: each rest block's patterns and each observation's pattern.
    """

    def __init__(self, lay: BlockedLayout, designs: Sequence[np.ndarray],
                 pats: list[np.ndarray], pid: list[np.ndarray]):
        self.q1, self.L1 = lay.q1, lay.m1
        self.Q1, self.Q2 = lay.n1, lay.qr
        self.Ls, self.qs = list(lay.ms[1:]), list(lay.qs[1:])
        n = lay.n
        codes1 = lay.codes1
        order = np.argsort(codes1, kind="stable")
        counts = np.bincount(codes1, minlength=self.L1)
        starts = np.concatenate([[0], np.cumsum(counts)])
        # ordered pairs (i, j), i and j in the same level (diagonal included)
        rep = np.repeat(counts, counts)                      # per member: its level's size
        first = np.repeat(starts[:-1], counts)               # per member: its level's start
        I_s = np.repeat(np.arange(n), rep)                   # sorted position of i
        off = np.arange(I_s.size) - np.repeat(np.cumsum(rep) - rep, rep)
        J_s = np.repeat(first, rep) + off
        self.pi = order[I_s]
        self.pj = order[J_s]
        # the pairs come grouped by i (in level order): reduceat over seg sums over j
        self.seg = np.concatenate([[0], np.cumsum(rep)[:-1]]).astype(np.intp)
        self.order = order
        # first-block patterns: K_ij = Kc[l, p_i, p_j] when block 1 compresses too
        u1, first1, inv1 = np.unique(designs[0], axis=0, return_index=True, return_inverse=True)
        self.rep1: np.ndarray | None = None
        if u1.shape[0] <= self.q1:
            P1 = u1.shape[0]
            p1 = inv1.ravel().astype(np.intp)
            self.rep1 = first1                               # one observation per pattern
            self.kidx = (codes1[self.pi] * P1 + p1[self.pi]) * P1 + p1[self.pj]
        self._rest(lay, pats, pid)

    def _rest(self, lay: BlockedLayout, pats: list[np.ndarray], pid: list[np.ndarray]) -> None:
        """Cells of each rest block: level * P_b + pattern, offset by the blocks before."""
        n = lay.n
        self.pats = pats                                     # (P_b, q_b) per rest block
        # one observation of each pattern, and each rest block's slots in Z Lambda's rows
        self.reps = [np.unique(p, return_index=True)[1] for p in pid]
        slot = np.cumsum([lay.q1] + self.qs)
        self.slot_of = [slice(int(a), int(b)) for a, b in zip(slot[:-1], slot[1:], strict=True)]
        cells, self.cell_off = [], []
        Dc = 0
        for k, codes in enumerate(lay.codes[1:]):
            P = pats[k].shape[0]
            self.cell_off.append(Dc)
            cells.append(Dc + codes * P + pid[k])
            Dc += self.Ls[k] * P
        self.Dc = Dc
        self.cells = cells
        self.E = sp.csr_matrix((np.ones(n * len(cells)),
                                np.column_stack(cells).ravel(),
                                np.arange(0, n * len(cells) + 1, len(cells))), shape=(n, Dc))
        # r_b = min(P_b, q_b) columns of the compressed rest per level
        self.r = [min(p.shape) for p in pats]
        self.r_off = np.cumsum([0] + [L * r for L, r in zip(self.Ls, self.r, strict=True)])
        self.Nr = int(self.r_off[-1])
        self.tgt_pairs = np.concatenate([ci[self.pi] * Dc + cj[self.pj]
                                         for ci in cells for cj in cells])
        self.tgt_diag = np.concatenate([ci * Dc + cj for ci in cells for cj in cells])
        self.n_pairs = self.pi.size
        self.same = (self.pi == self.pj).astype(float)       # delta_ij of c_ij
        self.pid_i = [p[self.pi] for p in pid]              # i's pattern in each rest block
        # flat positions in Phi (Nr x Dc) of (rows of i's level in rest block k, cell of j)
        self.phi_idx = [[((self.r_off[k] + codes[self.pi] * self.r[k]) * Dc + cj[self.pj])[None, :]
                         + (np.arange(self.r[k]) * Dc)[:, None]
                         for cj in cells] for k, codes in enumerate(lay.codes[1:])]
        self.cols1, self.colsr = lay.cols1, lay.colsr

    def at_theta(self, zl: np.ndarray) -> PairTheta:
        """The per-``theta`` part from ``Z Lambda`` per slot ``zl`` (``(n, s)``, block 1 first)."""
        Rs, Ys = [], []
        for rep, sl in zip(self.reps, self.slot_of, strict=True):
            U, s, Vt = np.linalg.svd(zl[rep, sl], full_matrices=False)   # T_b = Zpat_b Lambda_b
            Rs.append(U * s)
            Ys.append(Vt.T)
        n, q1 = zl.shape[0], self.q1
        A1 = sp.csr_matrix((np.ascontiguousarray(zl[:, :q1]).ravel(), self.cols1.ravel(),
                            np.arange(0, n * q1 + 1, q1)), shape=(n, self.Q1))
        sr = self.colsr.shape[1]
        A2 = sp.csr_matrix((np.ascontiguousarray(zl[:, q1:]).ravel(), self.colsr.ravel(),
                            np.arange(0, n * sr + 1, sr)), shape=(n, self.Q2))
        T1 = None if self.rep1 is None else zl[self.rep1, :q1]
        return PairTheta(T1, Rs, Ys, A1, A2, A1.T.tocsr(), A2.T.tocsr())


def pair_plan(lay: BlockedLayout, designs: Sequence[np.ndarray] | None,
              use: bool | None = None) -> PairPlan | None:
    """The rule: the plan when pairs pay, else ``None`` (the blocked factorisation).

    Pairs need the blocks' ``designs`` (``Z``), at least two blocks, every
    rest block compressing (at most as many patterns as columns) and a
    problem of bounded size (``X``, if any, is eliminated after); by
    default (``use=None``) also a dense Schur complement's work ``n1 qr^2``
    above :data:`PAIR_MIN_WORK` and above :data:`PAIR_WORK_PER_PAIR` times
    the pairs' scatter (``sum_l n_l^2`` times the rest blocks squared).
    ``use=True``: wherever they apply; ``False``: never.
    """
    if use is False or designs is None or len(designs) < 2:
        return None
    work = lay.n1 * float(lay.qr) ** 2
    n_pairs = int(np.sum(np.bincount(lay.codes1).astype(float) ** 2))
    scatter = float(n_pairs) * (len(designs) - 1) ** 2
    if use is None and (work <= PAIR_MIN_WORK or work <= PAIR_WORK_PER_PAIR * scatter):
        return None
    pats, pid = [], []
    for Z in designs[1:]:
        u, inv = np.unique(Z, axis=0, return_inverse=True)
        if u.shape[0] > Z.shape[1]:
            return None
        pats.append(u)
        pid.append(inv.ravel().astype(np.intp))
    Dc = sum(L * p.shape[0] for L, p in zip(lay.ms[1:], pats, strict=True))
    if Dc > _MAX_CELLS or scatter > _MAX_PAIRS:
        return None
    return PairPlan(lay, designs, pats, pid)


def _right(M: np.ndarray, mats: list[np.ndarray], src: list[int], dst: list[int],
           Ls: list[int]) -> np.ndarray:
    """``M @ blockdiag(kron(I_L_b, mats_b))`` (``mats_b``: ``src_b x dst_b``)."""
    if len(mats) == 1 and M.shape[1] == Ls[0] * src[0]:
        return (M.reshape(-1, src[0]) @ mats[0]).reshape(M.shape[0], -1)
    out, c = [], 0
    for Mb, s_, L in zip(mats, src, Ls, strict=True):
        blk = np.ascontiguousarray(M[:, c:c + L * s_])
        out.append((blk.reshape(-1, s_) @ Mb).reshape(M.shape[0], -1))
        c += L * s_
    return np.hstack(out)


def _left(M: np.ndarray, mats: list[np.ndarray], src: list[int], Ls: list[int]) -> np.ndarray:
    """``blockdiag(kron(I_L_b, mats_b)) @ M`` (``mats_b``: ``dst_b x src_b``; row slices)."""
    out, c = [], 0
    for Mb, s_, L in zip(mats, src, Ls, strict=True):
        blk = M[c:c + L * s_].reshape(L, s_, M.shape[1])
        out.append(np.matmul(Mb, blk).reshape(-1, M.shape[1]))
        c += L * s_
    return out[0] if len(out) == 1 else np.vstack(out)


class PairFactor:
    """The factor of ``M`` through observation pairs (the module docstring).

    The interface of :class:`~nlpower.mixed.blocked.BlockedFactor`:
    ``logdet`` (``log |L|^2``), :meth:`solve` and :meth:`selected`.
    """

    #: no ``X`` in this factor (:class:`~nlpower.mixed.blocked.FixedLast` adds it)
    Lx = None

    def __init__(self, lay: BlockedLayout, tp: ThetaProducts, w: np.ndarray):
        plan, pt = lay.pairs, tp.pairs
        assert plan is not None and pt is not None
        self.plan, self.w = plan, w
        q1 = plan.q1
        self.q1, self.L1, self.Q1, self.Q2 = q1, plan.L1, plan.Q1, plan.Q2
        G = lay.block1_matrices(tp, w)
        C1 = np.linalg.cholesky(G)
        self.logdet = float(2.0 * np.sum(np.log(np.diagonal(C1, axis1=1, axis2=2))))
        self.Ginv_blocks = np.linalg.inv(G)
        self.codes1 = lay.codes1
        a1 = tp.zl[:, :q1]
        self.a1 = a1
        self.Ga = np.einsum("ijk,ik->ij", self.Ginv_blocks[self.codes1], a1)     # G_l^{-1} a1_i
        pi, pj = plan.pi, plan.pj
        if pt.T1 is not None:                                              # a1_i' G^{-1} a1_j
            Kc = np.einsum("pi,lij,qj->lpq", pt.T1, self.Ginv_blocks, pt.T1)
            self.K = np.take(Kc.ravel(), plan.kidx)
        else:
            self.K = np.einsum("ij,ij->j", np.take(a1.T, pi, axis=1), np.take(self.Ga.T, pj, axis=1))
        nb = len(plan.cells)
        wI, wJ = np.take(w, pi), np.take(w, pj)
        self.wJ = wJ
        wij = wI * wJ * self.K
        Dc = plan.Dc
        C = np.bincount(plan.tgt_diag, weights=np.tile(w, nb * nb), minlength=Dc * Dc)
        C -= np.bincount(plan.tgt_pairs, weights=np.tile(wij, nb * nb), minlength=Dc * Dc)
        C = C.reshape(Dc, Dc)
        self.Rs, self.Ys = pt.Rs, pt.Ys
        Ps = [p.shape[0] for p in plan.pats]
        Sc = _left(_right(C, self.Rs, Ps, plan.r, plan.Ls), [R.T for R in self.Rs], Ps, plan.Ls)
        Sc[np.diag_indices_from(Sc)] += 1.0                                # I + R' C R
        self.chol = sla.cholesky(Sc, lower=True, check_finite=False)
        self.logdet += float(2.0 * np.sum(np.log(np.diag(self.chol))))
        self.A1, self.A2, self.A1T, self.A2T = pt.A1, pt.A2, pt.A1T, pt.A2T

    # -- Y and Y' on the rest's (level, column) coordinates -------------------------------
    def _Yt(self, x2: np.ndarray) -> np.ndarray:
        """``Y' x2`` (``x2``: ``(Q2, m)``) -> ``(Nr, m)``."""
        out, c = [], 0
        for L, q, Y in zip(self.plan.Ls, self.plan.qs, self.Ys, strict=True):
            xb = x2[c:c + L * q].reshape(L, q, -1)
            out.append(np.einsum("qr,lqm->lrm", Y, xb).reshape(L * Y.shape[1], -1))
            c += L * q
        return np.concatenate(out)

    def _Y(self, z: np.ndarray) -> np.ndarray:
        """``Y z`` (``z``: ``(Nr, m)``) -> ``(Q2, m)``."""
        out, c = [], 0
        for L, q, Y in zip(self.plan.Ls, self.plan.qs, self.Ys, strict=True):
            r = Y.shape[1]
            zb = z[c:c + L * r].reshape(L, r, -1)
            out.append(np.einsum("qr,lrm->lqm", Y, zb).reshape(L * q, -1))
            c += L * r
        return np.concatenate(out)

    def solve_S(self, x2: np.ndarray) -> np.ndarray:
        """``S^{-1} x2`` for ``x2`` of shape ``(Q2, m)``."""
        yt = self._Yt(x2)
        z = sla.cho_solve((self.chol, True), yt, check_finite=False) - yt
        return x2 + self._Y(z)

    def _solve1(self, r1: np.ndarray) -> np.ndarray:
        rr = r1.reshape(self.L1, self.q1, -1)
        return np.einsum("lij,ljk->lik", self.Ginv_blocks, rr).reshape(r1.shape)

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``M^{-1} r`` (``r``: block 1, then the rest; a vector or an ``(q, m)`` matrix)."""
        vec = r.ndim == 1
        R = r[:, None] if vec else r
        wc = self.w[:, None]
        x1p = self._solve1(R[:self.Q1])
        rhs2 = R[self.Q1:] - self.A2T @ (wc * (self.A1 @ x1p))
        x2 = self.solve_S(rhs2)
        x1 = x1p - self._solve1(self.A1T @ (wc * (self.A2 @ x2)))
        out = np.concatenate([x1, x2])
        return out[:, 0] if vec else out

    # -- selected inverse ------------------------------------------------------------------
    def selected(self, zl: np.ndarray | None = None) -> np.ndarray:
        """``g_i``: ``M^{-1} (Z Lambda)_i'`` at observation ``i``'s own columns (``(n, s)``).

        As :meth:`~nlpower.mixed.blocked.BlockedFactor.selected` (``zl``, the
        factor's own ``Z Lambda``, is accepted for the common interface).
        """
        plan = self.plan
        n, pi, pj = self.a1.shape[0], plan.pi, plan.pj
        Ps = [p.shape[0] for p in plan.pats]
        # Sc^{-1} from its Cholesky factor (dpotri), then Phi = Sc^{-1} R'
        inv, info = lapack.dpotri(self.chol, lower=1)
        if info != 0:
            inv = sla.cho_solve((self.chol, True), np.eye(plan.Nr), check_finite=False)
        else:                    # the upper triangle is 0 (sla.cholesky cleans it)
            np.add(inv, inv.T, out=inv)          # numpy buffers the overlapping transpose
            inv[np.diag_indices_from(inv)] *= 0.5
        Phi = _right(inv, [R.T for R in self.Rs], plan.r, Ps, plan.Ls)               # (Nr, Dc)
        Pf = Phi.ravel()
        c = plan.same - self.wJ * self.K                                    # c_ij
        seg, order = plan.seg, plan.order
        # z_i = sum_j c_ij Phi[(b, lev_b(i)), cells(j)] per rest block (the rows of i's
        # level, summed over j's cells); sigma_ij = e_i' Sigma e_j = sum_b R_b[p_b(i)] . zc_b
        sig = np.zeros(pi.size)
        zs = []
        for k in range(len(plan.Ls)):
            zc = np.take(Pf, plan.phi_idx[k][0])                           # (r, pairs)
            for idx in plan.phi_idx[k][1:]:
                zc += np.take(Pf, idx)
            sig += np.einsum("ap,ap->p", np.take(self.Rs[k].T, plan.pid_i[k], axis=1), zc)
            z = np.empty((plan.r[k], n))
            z[:, order] = np.add.reduceat(c * zc, seg, axis=1)
            zs.append(z.T @ self.Ys[k].T)
        # v1: G^{-1} (a1_i - sum_j c_ij Q_j),  Q_i = sum_j w_j a1_j sigma_ij (sigma symmetric)
        a1J = np.take(self.a1.T, pj, axis=1)                               # (q1, pairs)
        Q = np.empty((self.q1, n))
        Q[:, order] = np.add.reduceat((self.wJ * sig) * a1J, seg, axis=1)
        out = np.empty((self.q1, n))
        out[:, order] = np.add.reduceat(c * np.take(Q, pj, axis=1), seg, axis=1)
        v1 = self.Ga - np.einsum("ijk,ki->ij", self.Ginv_blocks[self.codes1], out)
        return np.concatenate([v1, *zs], axis=1)
