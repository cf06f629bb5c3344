"""Random-effects structure of a cumulative link mixed model.

Terms of a :class:`~nlpower.lmm.structure.ModelSpec` that share a grouping
factor are amalgamated into one *block* (lme4's amalgamation; ``(x || g)``
becomes one block with a block-diagonal relative factor).  The spherical
random effects ``u`` of block ``b`` are an ``(L_b, q_b)`` array, ``b = u
Lambda_b'``; the linear predictor's random part is ``eta_i = sum_b
(Z_b[i] Lambda_b) . u_b[level_b(i)]``.

``theta`` holds, per term, the lower triangle of its Cholesky factor
column by column (lme4's order); diagonal elements are bounded below by 0.
On the latent scale the random effects are in units of the latent
distribution (logistic: SD ``pi / sqrt(3)``), so ``theta`` *is* the SD.

The negative Hessian of the penalised log-likelihood in ``u``, ``H = A' W A
+ I`` with ``A = Z Lambda``, is factored blockwise: the block with the most
random effects (block-diagonal, ``q x q`` per level) is eliminated first
and the Schur complement of the others is dense -- the crossed
worker x item structure of the LMM engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ..lmm.structure import ReTerm

__all__ = ["Block", "HFactor", "ReStructure"]

#: the coupling block H12 (Q1 x Q2) is held dense up to this many entries (32 MB)
_DENSE_LIMIT = 4_000_000


@dataclass(frozen=True, eq=False)
class Block:
    """Terms sharing one grouping factor."""

    group: str
    codes: np.ndarray
    levels: tuple[str, ...]
    Z: np.ndarray                       # (n, q)
    terms: tuple[int, ...]              # indices into the structure's terms
    cols: tuple[slice, ...]             # each term's columns within the block

    @property
    def L(self) -> int:
        return len(self.levels)

    @property
    def q(self) -> int:
        return self.Z.shape[1]


class ReStructure:
    """Blocks, ``theta`` layout and the products with ``A = Z Lambda``."""

    def __init__(self, terms: tuple[ReTerm, ...]):
        self.terms = terms
        groups: dict[str, list[int]] = {}
        for k, t in enumerate(terms):
            groups.setdefault(t.group, []).append(k)
        blocks = []
        for g, idx in groups.items():
            Z = np.column_stack([terms[k].Z for k in idx]).astype(float)
            cols, start = [], 0
            for k in idx:
                cols.append(slice(start, start + terms[k].q))
                start += terms[k].q
            t0 = terms[idx[0]]
            blocks.append(Block(g, np.asarray(t0.codes, dtype=np.intp), t0.levels, Z,
                                tuple(idx), tuple(cols)))
        # the block with the most random effects first: it is eliminated blockwise
        blocks.sort(key=lambda b: -b.L * b.q)
        self.blocks = tuple(blocks)
        self.n = terms[0].Z.shape[0] if terms else 0
        sizes = [t.q * (t.q + 1) // 2 for t in terms]
        self.theta_slices = tuple(slice(sum(sizes[:k]), sum(sizes[:k + 1])) for k in range(len(terms)))
        self.n_theta = sum(sizes)
        lower: list[float] = []
        for t in terms:
            lower.extend(0.0 if i == j else -np.inf for j in range(t.q) for i in range(j, t.q))
        self.lower = np.array(lower, dtype=float)
        # each theta element's (block, row, column) in its block's Lambda
        self.theta_index: list[tuple[int, int, int]] = [(0, 0, 0)] * self.n_theta
        for bi, blk in enumerate(blocks):
            for k, c in zip(blk.terms, blk.cols, strict=True):
                pos = self.theta_slices[k].start
                for j in range(terms[k].q):
                    for i in range(j, terms[k].q):
                        self.theta_index[pos] = (bi, c.start + i, c.start + j)
                        pos += 1
        self.offsets = np.cumsum([0] + [b.L * b.q for b in self.blocks])
        self.n_u = int(self.offsets[-1])
        self._ZL: list[np.ndarray] = [b.Z.copy() for b in self.blocks]

    # -- theta -----------------------------------------------------------------------
    def term_factor(self, k: int, theta: np.ndarray) -> np.ndarray:
        """Lower-triangular ``Lambda`` of term ``k``."""
        q = self.terms[k].q
        L = np.zeros((q, q))
        rows, cols = [], []
        for j in range(q):
            for i in range(j, q):
                rows.append(i)
                cols.append(j)
        L[rows, cols] = theta[self.theta_slices[k]]
        return L

    def block_factor(self, b: int, theta: np.ndarray) -> np.ndarray:
        blk = self.blocks[b]
        Lam = np.zeros((blk.q, blk.q))
        for k, c in zip(blk.terms, blk.cols, strict=True):
            Lam[c, c] = self.term_factor(k, theta)
        return Lam

    def set_theta(self, theta: np.ndarray) -> None:
        """Compute ``Z_b Lambda_b`` for every block."""
        self._ZL = [b.Z @ self.block_factor(i, theta) for i, b in enumerate(self.blocks)]

    def start_theta(self, sd: float = 1.0) -> np.ndarray:
        return np.where(self.lower == 0.0, sd, 0.0)

    # -- products --------------------------------------------------------------------
    def split(self, u: np.ndarray) -> list[np.ndarray]:
        return [u[self.offsets[i]:self.offsets[i + 1]].reshape(b.L, b.q)
                for i, b in enumerate(self.blocks)]

    def eta(self, u: np.ndarray) -> np.ndarray:
        """``A u``."""
        out = np.zeros(self.n)
        for b, ZL, ub in zip(self.blocks, self._ZL, self.split(u), strict=True):
            if b.q == 1:
                out += ZL[:, 0] * ub[b.codes, 0]
            else:
                out += np.einsum("ij,ij->i", ZL, ub[b.codes])
        return out

    def At(self, v: np.ndarray) -> np.ndarray:
        """``A' v``."""
        parts = []
        for b, ZL in zip(self.blocks, self._ZL, strict=True):
            m = np.empty((b.L, b.q))
            for j in range(b.q):
                m[:, j] = np.bincount(b.codes, weights=ZL[:, j] * v, minlength=b.L)
            parts.append(m.ravel())
        return np.concatenate(parts) if parts else np.zeros(0)

    def factor(self, w: np.ndarray) -> HFactor:
        """Factor ``H = A' diag(w) A + I``."""
        return HFactor(self, w)


def _diag_blocks(codes: np.ndarray, ZL: np.ndarray, w: np.ndarray, L: int) -> np.ndarray:
    q = ZL.shape[1]
    G = np.empty((L, q, q))
    for j in range(q):
        for k in range(j + 1):
            v = np.bincount(codes, weights=w * ZL[:, j] * ZL[:, k], minlength=L)
            G[:, j, k] = v
            G[:, k, j] = v
    G[:, np.arange(q), np.arange(q)] += 1.0
    return G


class HFactor:
    """Blockwise Cholesky of ``H = A' W A + I``: ``logdet`` and ``solve``."""

    def __init__(self, rs: ReStructure, w: np.ndarray):
        b1 = rs.blocks[0]
        ZL1 = rs._ZL[0]
        G = _diag_blocks(b1.codes, ZL1, w, b1.L)
        self.q1 = b1.q
        self.G1inv: sp.csr_matrix | None = None
        if b1.q == 1:
            g = G[:, 0, 0]
            self.logdet = float(np.sum(np.log(g)))
            self.g1_diag = g
            self.Ginv_blocks = (1.0 / g)[:, None, None]
        else:
            C = np.linalg.cholesky(G)
            self.logdet = float(2.0 * np.sum(np.log(np.diagonal(C, axis1=1, axis2=2))))
            Ginv = np.linalg.inv(G)
            self.Ginv_blocks = Ginv
            self.G1inv = sp.bsr_matrix((Ginv, np.arange(b1.L), np.arange(b1.L + 1)),
                                       shape=(b1.L * b1.q, b1.L * b1.q)).tocsr()
            self.g1_diag = np.empty(0)
        self.Q1 = b1.L * b1.q
        self.Q2 = rs.n_u - self.Q1
        self.chol2: np.ndarray | None = None
        self.dense = True
        if self.Q2 == 0:
            return
        Q2 = self.Q2
        off = rs.offsets - self.Q1
        H22flat = np.zeros(Q2 * Q2)
        rows12, cols12, vals12 = [], [], []
        rest = range(1, len(rs.blocks))
        for c in rest:
            bc, ZLc = rs.blocks[c], rs._ZL[c]
            for k in range(bc.q):
                colc = off[c] + bc.codes * bc.q + k
                wz = w * ZLc[:, k]
                for j in range(b1.q):
                    rows12.append(b1.codes * b1.q + j)
                    cols12.append(colc)
                    vals12.append(wz * ZL1[:, j])
                for d in rest:
                    bd, ZLd = rs.blocks[d], rs._ZL[d]
                    for m in range(bd.q):
                        rowd = off[d] + bd.codes * bd.q + m
                        H22flat += np.bincount(rowd * Q2 + colc, weights=wz * ZLd[:, m],
                                           minlength=Q2 * Q2)
        H22 = H22flat.reshape(Q2, Q2)
        H22[np.diag_indices(Q2)] += 1.0
        rows = np.concatenate(rows12)
        cols = np.concatenate(cols12)
        vals = np.concatenate(vals12)
        if self.Q1 * Q2 <= _DENSE_LIMIT:
            # dense Schur complement: a few BLAS calls beat sparse products at crowd sizes
            H12d = np.bincount(rows * Q2 + cols, weights=vals,
                               minlength=self.Q1 * Q2).reshape(self.Q1, Q2)
            if self.G1inv is None:
                Md = H12d / self.g1_diag[:, None]
            else:
                L1 = b1.L
                Md = np.einsum("lij,ljk->lik", self.Ginv_blocks,
                               H12d.reshape(L1, b1.q, Q2)).reshape(self.Q1, Q2)
            S = H22 - H12d.T @ Md
            self.H12: Any = H12d
            self.M: Any = Md
            self.dense = True
        else:
            H12 = sp.csr_matrix((vals, (rows, cols)), shape=(self.Q1, Q2))
            M = (sp.diags(1.0 / self.g1_diag) @ H12 if self.G1inv is None
                 else self.G1inv @ H12)
            S = H22 - (H12.T @ M).toarray()
            self.H12 = H12
            self.M = M
            self.dense = False
        self.chol2 = sla.cholesky(S, lower=True, check_finite=False)
        self.logdet += float(2.0 * np.sum(np.log(np.diag(self.chol2))))

    def _solve1(self, r1: np.ndarray) -> np.ndarray:
        if self.G1inv is None:
            return r1 / self.g1_diag
        return np.asarray(self.G1inv @ r1)

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``H^{-1} r``."""
        r1 = r[:self.Q1]
        if self.chol2 is None:
            return self._solve1(r1)
        r2 = r[self.Q1:]
        x1p = self._solve1(r1)
        x2 = sla.cho_solve((self.chol2, True), r2 - self.H12.T @ x1p, check_finite=False)
        x1 = x1p - self.M @ x2
        return np.concatenate([x1, x2])
