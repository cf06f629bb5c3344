"""``H = A' W A + I`` of a crossed design, factored through pairs of observations.

The first block (the grouping factor with most random effects, e.g. items)
is eliminated level by level, as in the blocked factorisation (:mod:`nlpower.mixed.blocked`); what is
new is how the Schur complement of the rest (e.g. workers) is formed and
how the selected elements of ``H^{-1}`` the gradient needs are read.

*Compression.*  An observation's row of ``Z_b`` in a rest block ``b``
takes one of a few values (``(system || worker)``: one per system), the
*patterns* ``Zpat_b`` (``P_b x q_b``).  With ``E`` the indicator of each
observation's (level, pattern) cell -- the *cells* of ``b``, ``Dc`` of them
over all rest blocks -- the rest's part of ``A`` is ``A_2 = E T`` with ``T``
block diagonal, ``T_b = Zpat_b Lambda_b`` repeated over the levels.  Then::

    S = H22 - H21 G^{-1} H12 = I + T' C T,
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

    (H^{-1} a_i)_2 = Y Phi f_i
    (H^{-1} a_i)_1 = G_l^{-1} (a1_i - sum_j w_j a1_j e_j' Sigma f_i)

again sums over the pairs.  Used when every rest block has at most as many
patterns as columns (factor codings; a continuous slope in a rest block
falls back to the blocked factorisation).  Checked against dense
algebra in ``tests/ordinal/test_crowd_scale.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg import lapack

if TYPE_CHECKING:
    from .structure import ReStructure

__all__ = ["PairFactor", "PairPlan", "pair_plan"]

#: largest number of rest cells (the dense C is Dc x Dc) and of observation pairs
_MAX_CELLS = 6000
_MAX_PAIRS = 30_000_000


class PairPlan:
    """The fixed part: pairs of observations per first-block level, cells of the rest."""

    def __init__(self, rs: ReStructure, pats: list[np.ndarray], pid: list[np.ndarray]):
        b1 = rs.blocks[0]
        self.q1, self.L1 = b1.q, b1.L
        self.Q1 = b1.L * b1.q
        self.Q2 = rs.n_u - self.Q1
        n = rs.n
        order = np.argsort(b1.codes, kind="stable")
        counts = np.bincount(b1.codes, minlength=b1.L)
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
        u1, inv1 = np.unique(b1.Z, axis=0, return_inverse=True)
        self.pat1: np.ndarray | None = None
        if u1.shape[0] <= b1.q:
            P1 = u1.shape[0]
            p1 = inv1.ravel().astype(np.intp)
            self.pat1 = u1
            self.kidx = (b1.codes[self.pi] * P1 + p1[self.pi]) * P1 + p1[self.pj]
        # cells of each rest block: level * P_b + pattern, offset by the blocks before
        self.pats = pats                                     # (P_b, q_b) per rest block
        cells, self.cell_off = [], []
        Dc = 0
        for k, blk in enumerate(rs.blocks[1:]):
            P = pats[k].shape[0]
            self.cell_off.append(Dc)
            cells.append(Dc + blk.codes * P + pid[k])
            Dc += blk.L * P
        self.Dc = Dc
        self.cells = cells
        self.E = sp.csr_matrix((np.ones(n * len(cells)),
                                np.column_stack(cells).ravel(),
                                np.arange(0, n * len(cells) + 1, len(cells))), shape=(n, Dc))
        # r_b = min(P_b, q_b) columns of the compressed rest per level
        self.r = [min(p.shape) for p in pats]
        self.r_off = np.cumsum([0] + [blk.L * r for blk, r in zip(rs.blocks[1:], self.r,
                                                                    strict=True)])
        self.Nr = int(self.r_off[-1])
        self.tgt_pairs = np.concatenate([ci[self.pi] * Dc + cj[self.pj]
                                         for ci in cells for cj in cells])
        self.tgt_diag = np.concatenate([ci * Dc + cj for ci in cells for cj in cells])
        self.n_pairs = self.pi.size
        self.same = (self.pi == self.pj).astype(float)       # delta_ij of c_ij
        self.pid_i = [p[self.pi] for p in pid]              # i's pattern in each rest block
        # flat positions in Phi (Nr x Dc) of (rows of i's level in rest block k, cell of j)
        self.phi_idx = [[((self.r_off[k] + blk.codes[self.pi] * self.r[k]) * Dc + cj[self.pj])[None, :]
                         + (np.arange(self.r[k]) * Dc)[:, None]
                         for cj in cells] for k, blk in enumerate(rs.blocks[1:])]
        self._theta_key: Any = None
        self._A_key: Any = None

    def transforms(self, rs: ReStructure) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """``R_b = U_b D_b`` and ``Y_b`` of ``T_b = Zpat_b Lambda_b`` (cached per ``theta``)."""
        key = rs._lam_version
        if key != self._theta_key:
            Rs, Ys = [], []
            for k, pat in enumerate(self.pats):
                T = pat @ rs._lams[k + 1]
                U, s, Vt = np.linalg.svd(T, full_matrices=False)
                Rs.append(U * s)
                Ys.append(Vt.T)
            self._RY = (Rs, Ys)
            self._theta_key = key
        return self._RY

    def split_A(self, rs: ReStructure) -> tuple[Any, Any, Any, Any]:
        """``A_1``, ``A_2`` and their transposes (CSR; cached per ``theta``)."""
        if rs._lam_version != self._A_key or rs.A is not getattr(self, "_A_of", None):
            Aq = rs.A.tocsc()
            A1, A2 = Aq[:, :self.Q1].tocsr(), Aq[:, self.Q1:].tocsr()
            self._A = (A1, A2, A1.T.tocsr(), A2.T.tocsr())
            self._A_key = rs._lam_version
            self._A_of = rs.A
        return self._A


def pair_plan(rs: ReStructure) -> PairPlan | None:
    """The plan when the rest compresses (few patterns per rest block), else ``None``."""
    if len(rs.blocks) < 2:
        return None
    pats, pid = [], []
    for blk in rs.blocks[1:]:
        u, inv = np.unique(blk.Z, axis=0, return_inverse=True)
        if u.shape[0] > blk.q:
            return None
        pats.append(u)
        pid.append(inv.ravel().astype(np.intp))
    Dc = sum(blk.L * p.shape[0] for blk, p in zip(rs.blocks[1:], pats, strict=True))
    n_pairs = int(np.sum(np.bincount(rs.blocks[0].codes).astype(float) ** 2))
    if Dc > _MAX_CELLS or n_pairs * (len(pats) ** 2) > _MAX_PAIRS:
        return None
    return PairPlan(rs, pats, pid)


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
    """Factor of ``H = A' W A + I`` through observation pairs (see the module docstring).

    What the Laplace likelihood reads of a factor (as
    :class:`~nlpower.mixed.blocked.BlockedFactor`): ``logdet``, ``solve``,
    and the selected inverse (:meth:`selected_rows`).
    """

    dense = False

    def __init__(self, rs: ReStructure, w: np.ndarray, plan: PairPlan):
        self.plan = plan
        self.rs = rs
        self.w = w
        q1, L1 = plan.q1, plan.L1
        self.q1, self.L1, self.Q1, self.Q2 = q1, L1, plan.Q1, plan.Q2
        G = rs.layout.block1_matrices(rs.products, w)
        C1 = np.linalg.cholesky(G)
        self.logdet = float(2.0 * np.sum(np.log(np.diagonal(C1, axis1=1, axis2=2))))
        self.Ginv_blocks = np.linalg.inv(G)
        self.g1_diag = G[:, 0, 0] if q1 == 1 else np.empty(0)
        c1 = rs.blocks[0].codes
        a1 = rs.Avals[:, :q1]
        self.a1 = a1
        self.Ga = np.einsum("ijk,ik->ij", self.Ginv_blocks[c1], a1)       # G_l^{-1} a1_i
        pi, pj = plan.pi, plan.pj
        if plan.pat1 is not None:                                          # a1_i' G^{-1} a1_j
            T1 = plan.pat1 @ rs._lams[0]
            Kc = np.einsum("pi,lij,qj->lpq", T1, self.Ginv_blocks, T1)
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
        Rs, Ys = plan.transforms(rs)
        self.Rs, self.Ys = Rs, Ys
        Ls = [b.L for b in rs.blocks[1:]]
        Ps = [p.shape[0] for p in plan.pats]
        Sc = _left(_right(C, Rs, Ps, plan.r, Ls), [R.T for R in Rs], Ps, Ls)   # R' C R
        Sc[np.diag_indices_from(Sc)] += 1.0
        self.chol = sla.cholesky(Sc, lower=True, check_finite=False)
        self.logdet += float(2.0 * np.sum(np.log(np.diag(self.chol))))
        self.A1, self.A2, self.A1T, self.A2T = plan.split_A(rs)

    # -- Y and Y' on the rest's (level, column) coordinates -------------------------------
    def _Yt(self, x2: np.ndarray) -> np.ndarray:
        """``Y' x2`` (``x2``: ``(Q2, m)``) -> ``(Nr, m)``."""
        out, c = [], 0
        for blk, Y in zip(self.rs.blocks[1:], self.Ys, strict=True):
            xb = x2[c:c + blk.L * blk.q].reshape(blk.L, blk.q, -1)
            out.append(np.einsum("qr,lqm->lrm", Y, xb).reshape(blk.L * Y.shape[1], -1))
            c += blk.L * blk.q
        return np.concatenate(out)

    def _Y(self, z: np.ndarray) -> np.ndarray:
        """``Y z`` (``z``: ``(Nr, m)``) -> ``(Q2, m)``."""
        out, c = [], 0
        for blk, Y in zip(self.rs.blocks[1:], self.Ys, strict=True):
            r = Y.shape[1]
            zb = z[c:c + blk.L * r].reshape(blk.L, r, -1)
            out.append(np.einsum("qr,lrm->lqm", Y, zb).reshape(blk.L * blk.q, -1))
            c += blk.L * r
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
        """``H^{-1} r`` (``r`` a vector or an ``(n_u, m)`` matrix)."""
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
    def selected_rows(self) -> list[np.ndarray]:
        """``v_ib``: ``H^{-1} a_i`` at observation ``i``'s own random effects, per block."""
        plan, rs = self.plan, self.rs
        n, pi, pj = rs.n, plan.pi, plan.pj
        Ls = [b.L for b in rs.blocks[1:]]
        Ps = [p.shape[0] for p in plan.pats]
        # Sc^{-1} from its Cholesky factor (dpotri), then Phi = Sc^{-1} R'
        inv, info = lapack.dpotri(self.chol, lower=1)
        if info != 0:
            inv = sla.cho_solve((self.chol, True), np.eye(plan.Nr), check_finite=False)
        else:                    # the upper triangle is 0 (sla.cholesky cleans it)
            np.add(inv, inv.T, out=inv)          # numpy buffers the overlapping transpose
            inv[np.diag_indices_from(inv)] *= 0.5
        Phi = _right(inv, [R.T for R in self.Rs], plan.r, Ps, Ls)               # (Nr, Dc)
        Pf = Phi.ravel()
        c = plan.same - self.wJ * self.K                                    # c_ij
        seg, order = plan.seg, plan.order
        # z_i = sum_j c_ij Phi[(b, lev_b(i)), cells(j)] per rest block (the rows of i's
        # level, summed over j's cells); sigma_ij = e_i' Sigma e_j = sum_b R_b[p_b(i)] . zc_b
        sig = np.zeros(pi.size)
        zs = []
        for k in range(len(rs.blocks) - 1):
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
        v1 = self.Ga - np.einsum("ijk,ki->ij", self.Ginv_blocks[rs.blocks[0].codes], out)
        return [v1, *zs]
