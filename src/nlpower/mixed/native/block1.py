"""Block 1 of the blocked Cholesky: the largest grouping factor, level by level.

Block 1 of ``Lambda'Z'Z Lambda + I`` is block diagonal: one ``q1 x q1``
matrix ``B_l = Lambda1' A_l Lambda1 + I`` per level ``l`` (``A_l = Z1_l'Z1_l``).
Its factor is computed as a batch of small Cholesky factors (closed form for
``q1 <= 2``), or -- when each level uses only some columns (items nested in
systems: the "active column patterns" of :class:`~.blocks.Blocks`) -- through
the push-through identity on the active columns only.  The Schur complement
of the rest of the matrix is formed from these in :mod:`.deviance`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from .blocks import Blocks, GroupBlock, Pattern

__all__ = ["block1_factor", "block1_factor_inv", "block1_reduced", "grouped_W", "grouped_products",
           "scalar_patterns", "tri_inv",
           "tri_solve"]


def tri_solve(L: np.ndarray, b: np.ndarray, trans: int) -> np.ndarray:
    """Solve ``L x = b`` (trans=0) or ``L' x = b`` (trans=1), ``L`` lower triangular."""
    if L.shape[0] == 0:                      # no fixed effects: nothing to solve
        return np.zeros_like(b, dtype=float)
    x, info = lapack.dtrtrs(L, b, lower=1, trans=trans)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular solve failed (info={info})")
    return np.asarray(x)


def tri_inv(L: np.ndarray) -> np.ndarray:
    """Inverses of a stack of lower-triangular matrices ``(n, q, q)`` by forward substitution.

    Row ``i`` of ``X = L^{-1}``: ``X[i, :i] = -L[i, :i] X[:i, :i] / L[i, i]``,
    ``X[i, i] = 1 / L[i, i]`` -- ``q`` batched products; 2-3x faster than
    ``numpy.linalg.inv`` (a general LU per matrix) for the small ``q`` here.
    """
    q = L.shape[-1]
    X = np.zeros_like(L)
    d = 1.0 / np.diagonal(L, axis1=-2, axis2=-1)
    X[..., 0, 0] = d[..., 0]
    for i in range(1, q):
        X[..., i, :i] = -np.matmul(L[..., i:i + 1, :i], X[..., :i, :i])[..., 0, :] * d[..., i:i + 1]
        X[..., i, i] = d[..., i]
    return X


def block1_factor(b: Blocks, theta: np.ndarray, A: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Block 1: ``L1`` (m1, q1, q1), ``K_l = Lambda1 L1_l^{-T}`` and ``log|L1|^2``.

    ``A``: the ``Z1'Z1`` blocks to factor (default: every level's, ``b.A11``)."""
    r = block1_factor_inv(b, theta, A)
    return None if r is None else r[:3]


def block1_factor_inv(b: Blocks, theta: np.ndarray, A: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray | None] | None:
    """As :func:`block1_factor`, and ``L1^{-1}`` where it was formed (``q1 >= 3``: by
    :func:`tri_inv`, or LAPACK's ``dtrtri`` for a single matrix; else ``None``)."""
    b1 = b.b1
    lam1 = b1.lam(theta)
    q1 = b1.q
    A = b.A11 if A is None else A
    if q1 == 1:
        l1 = lam1[0, 0]
        d2 = l1 * l1 * A[:, 0, 0] + 1.0
        d = np.sqrt(d2)
        return d.reshape(-1, 1, 1), (l1 / d).reshape(-1, 1, 1), float(np.sum(np.log(d2))), None
    if b1.diagonal:
        dl = np.diag(lam1)
        B = A * (dl[:, None] * dl[None, :])
    else:
        B = lam1.T @ A @ lam1
    if q1 == 2:
        b00 = B[:, 0, 0] + 1.0
        l00 = np.sqrt(b00)
        l10 = B[:, 1, 0] / l00
        s11 = B[:, 1, 1] + 1.0 - l10 * l10
        if not np.all(s11 > 0):
            return None
        l11 = np.sqrt(s11)
        L1 = np.zeros_like(B)
        L1[:, 0, 0] = l00
        L1[:, 1, 0] = l10
        L1[:, 1, 1] = l11
        LiT = np.zeros_like(B)                     # L^{-T}
        LiT[:, 0, 0] = 1.0 / l00
        LiT[:, 0, 1] = -l10 / (l00 * l11)
        LiT[:, 1, 1] = 1.0 / l11
        ld = 2.0 * float(np.sum(np.log(l00 * l11)))
        Li = None
    elif B.shape[0] == 1:                          # one matrix (one group): direct LAPACK calls
        B1 = B[0]
        B1.flat[:: q1 + 1] += 1.0
        L, info = lapack.dpotrf(B1, lower=1, clean=1)
        if info != 0:
            return None
        Lin, info = lapack.dtrtri(L, lower=1)
        if info != 0:
            return None
        L1, Li = L[None], Lin[None]
        ld = 2.0 * sum(map(math.log, L.diagonal().tolist()))
        LiT = np.swapaxes(Li, 1, 2)
    else:
        idx = np.arange(q1)
        B[:, idx, idx] += 1.0
        try:
            L1 = np.linalg.cholesky(B)
        except np.linalg.LinAlgError:
            return None
        ld = 2.0 * float(np.sum(np.log(np.diagonal(L1, axis1=1, axis2=2))))
        Li = tri_inv(L1)
        LiT = np.swapaxes(Li, 1, 2)
    if b1.diagonal:
        K = np.diag(lam1)[None, :, None] * LiT
    else:
        K = lam1 @ LiT
    return L1, K, ld, Li

def scalar_patterns(patterns: Sequence[Pattern] | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Where every pattern has one active column: per level (in pattern order) that column,
    ``A_l``, the flat position of ``W_l[c, c]`` and the split points between patterns, for
    :func:`block1_reduced`'s one-pass form; else ``None``."""
    if not patterns or any(p.cols.size != 1 for p in patterns):
        return None
    return (np.concatenate([np.full(p.levels.size, p.cols[0]) for p in patterns]),
            np.concatenate([p.A[:, 0, 0] for p in patterns]),
            np.concatenate([p.flat for p in patterns]),
            np.cumsum([p.levels.size for p in patterns])[:-1])


def block1_reduced(b1: GroupBlock, patterns: Sequence[Pattern], theta: np.ndarray,
                   scalar: tuple[np.ndarray, ...] | None = None
                   ) -> tuple[np.ndarray, list[np.ndarray], float] | None:
    """Block 1 through each level's active columns ``P`` only.

    With ``Q = (Lambda1 Lambda1')[P, P]`` the push-through identity gives
    ``W[P, P] = Lambda1 B^{-1} Lambda1'[P, P] = Q (I + A_PP Q)^{-1}`` and the
    determinant lemma ``|B| = |I + A_PP Q|``: ``k x k`` work per level
    (``k = |P|``) instead of ``q1 x q1``.  Returns ``W`` (m1, q1, q1), the
    per-pattern ``W[P, P]`` (m_g, k, k) and ``log|L1|^2``.  ``scalar``
    (:func:`scalar_patterns`): every level has one active column, all levels in one pass.
    """
    lam1 = b1.lam(theta)
    LL = lam1 @ lam1.T
    q1 = b1.q
    Wf = np.zeros(b1.m * q1 * q1)
    if scalar is not None:
        cols, a, flat, split = scalar
        q = LL.diagonal()[cols]
        t = 1.0 + a * q
        w = q / t
        Wf[flat] = w
        return (Wf.reshape(b1.m, q1, q1), [x.reshape(-1, 1, 1) for x in np.split(w, split)],
                float(np.sum(np.log(t))))
    Wg: list[np.ndarray] = []
    ld = 0.0
    for _lev, cols, A, flat in patterns:
        Q = LL[np.ix_(cols, cols)]
        k = cols.size
        if k == 1:
            t = 1.0 + A[:, 0, 0] * Q[0, 0]
            ld += float(np.sum(np.log(t)))
            w = (Q[0, 0] / t).reshape(-1, 1, 1)
            Wf[flat] = w.ravel()
            Wg.append(w)
            continue
        T = A @ Q
        T[:, np.arange(k), np.arange(k)] += 1.0
        if k == 2:
            det = T[:, 0, 0] * T[:, 1, 1] - T[:, 0, 1] * T[:, 1, 0]
            if not np.all(det > 0):
                return None
            Ti = np.empty_like(T)
            Ti[:, 0, 0] = T[:, 1, 1] / det
            Ti[:, 1, 1] = T[:, 0, 0] / det
            Ti[:, 0, 1] = -T[:, 0, 1] / det
            Ti[:, 1, 0] = -T[:, 1, 0] / det
            ld += float(np.sum(np.log(det)))
        else:
            sign, logdet = np.linalg.slogdet(T)
            if not np.all(sign > 0):
                return None
            ld += float(np.sum(logdet))
            Ti = np.linalg.inv(T)
        w = Q @ Ti
        Wf[flat] = w.ravel()
        Wg.append(w)
    return Wf.reshape(b1.m, q1, q1), Wg, ld


def grouped_W(b1: GroupBlock, uq: np.ndarray, cnt: np.ndarray,
              diag2_ij: tuple[int, int] | None, theta: np.ndarray
              ) -> tuple[np.ndarray | list[float], float] | None:
    """``vec(W_g)``, ``W_g = Lambda1 B_g^{-1} Lambda1'``, per group of equal ``Z1'Z1``
    (``uq``: the distinct ``(G, q1, q1)`` blocks, ``cnt``: levels per group), and
    ``log|L1|^2``; ``None`` when a ``B_g`` is not positive definite.  ``diag2_ij``: theta
    indices of a diagonal 2 x 2 ``Lambda1`` (closed form)."""
    q1 = b1.q
    if q1 == 1:
        lam = float(theta[b1.theta_idx[0]])
        d2 = (lam * lam) * uq[:, 0, 0] + 1.0
        return (lam * lam) / d2, float(cnt @ np.log(d2))
    if diag2_ij is not None:
        i0, i1 = diag2_ij
        d0, d1 = float(theta[i0]), float(theta[i1])
        if uq.shape[0] == 1:                     # one group: scalar arithmetic
            a00, a10, a11 = float(uq[0, 0, 0]), float(uq[0, 1, 0]), float(uq[0, 1, 1])
            l00 = math.sqrt(d0 * d0 * a00 + 1.0)
            l10 = (d0 * d1) * a10 / l00
            l11 = math.sqrt(d1 * d1 * a11 + 1.0 - l10 * l10)
            k00, k01, k11 = d0 / l00, -(d0 * l10) / (l00 * l11), d1 / l11
            w01 = k01 * k11
            return ([k00 * k00 + k01 * k01, w01, w01, k11 * k11],
                    2.0 * float(cnt[0]) * math.log(l00 * l11))
        l00v = np.sqrt(d0 * d0 * uq[:, 0, 0] + 1.0)
        l10v = (d0 * d1) * uq[:, 1, 0] / l00v
        l11v = np.sqrt(d1 * d1 * uq[:, 1, 1] + 1.0 - l10v * l10v)
        k01v = -(d0 * l10v) / (l00v * l11v)
        k11v = d1 / l11v
        W = np.empty((uq.shape[0], 4))
        W[:, 0] = (d0 / l00v) ** 2 + k01v * k01v
        W[:, 1] = k01v * k11v
        W[:, 2] = W[:, 1]
        W[:, 3] = k11v * k11v
        return W.ravel(), 2.0 * float(cnt @ np.log(l00v * l11v))
    lam1 = b1.lam(theta)
    if uq.shape[0] == 1:                         # one group: direct LAPACK calls
        B1 = lam1.T @ uq[0] @ lam1
        B1.flat[:: q1 + 1] += 1.0
        L, info = lapack.dpotrf(B1, lower=1, clean=1)
        if info != 0:
            return None
        X, info = lapack.dtrtrs(L, lam1.T, lower=1, trans=0)   # L^{-1} Lambda1'
        if info != 0:
            return None
        ldg = 2.0 * sum(map(math.log, L.diagonal().tolist()))
        return (X.T @ X).ravel(), float(cnt[0]) * ldg
    B = lam1.T @ uq @ lam1
    idx = np.arange(q1)
    B[:, idx, idx] += 1.0
    try:
        L = np.linalg.cholesky(B)
    except np.linalg.LinAlgError:
        return None
    ld = 2.0 * float(cnt @ np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1))
    W = lam1 @ np.linalg.inv(B) @ lam1.T
    return W.ravel(), ld


def grouped_products(b: Blocks, inv: np.ndarray, sel: list[np.ndarray]
                     ) -> tuple[np.ndarray, list[Any]]:
    """``P_g^{ab} = sum_{l in g} C_l[:, a] C_l[:, b]'`` per group ``g`` of block-1 levels
    (``inv``: each level's group, ``sel``: each group's levels), as ``(N2, N2, G, q1, q1)``.

    Per group ``Y[(i, a), l] = C_l[i, a]`` (one column per level) gives every
    ``P_g^{ab}`` in one product ``Y Y'``: dense where that costs fewer than 10x
    the sparse flops, else sparse and scattered.  Also returns the ``Y``s (their
    ``y`` rows are what a new response changes).
    """
    m1, q1, N2 = b.b1.m, b.b1.q, b.N2
    G = len(sel)
    P4 = np.zeros((N2, N2, G, q1, q1))
    pos = np.empty(m1, dtype=np.intp)
    for g in range(G):
        pos[sel[g]] = np.arange(sel[g].size)
    rows, cols = (b.pair_row[:, None] * q1 + np.arange(q1)).ravel(), np.repeat(pos[b.pair_lev], q1)
    nnz = np.bincount(b.pair_lev, minlength=m1).astype(float) * q1
    dense = float(N2 * q1) ** 2 * m1 <= 10.0 * float(nnz @ nnz)
    Ys: list[Any] = []
    for g in range(G):
        keep = np.repeat(inv[b.pair_lev] == g, q1)
        Y: Any = sp.csr_matrix((b.C.ravel()[keep], (rows[keep], cols[keep])),
                               shape=(N2 * q1, sel[g].size))
        if dense:
            Y = Y.toarray()
            P4[:, :, g] = (Y @ Y.T).reshape(N2, q1, N2, q1).transpose(0, 2, 1, 3)
        else:                                # scattered: a strided copy of zeros is slow
            YY = (Y @ Y.T).tocoo()
            (i, a), (k, c) = np.divmod(YY.row, q1), np.divmod(YY.col, q1)
            P4.reshape(-1)[(((i * N2 + k) * G + g) * q1 + a) * q1 + c] = YY.data
        Ys.append(Y)
    return P4, Ys


class GroupedLower:
    """The grouped Schur products ``P`` (``(N2^2, K)``) on the rest's block-lower entries only.

    ``dpotrf`` reads the lower triangle of ``M = A_rr - P w`` and the scaling
    ``Lambda_r' M Lambda_r`` maps each block of ``M`` between two units (a rest
    level's ``q`` columns; each ``X`` column and ``y`` alone) to the same block,
    so only the entries ``(i, k)`` with ``unit(i) >= unit(k)`` are needed: the
    mat-vec runs over about half of the rows (``da2``: 0.84 -> 0.45 ms of a
    1.9 ms evaluation) and the other entries stay 0.  Each entry is the same
    dot product as over all rows.  The ``y`` row (the last ``N2`` kept entries)
    changes with the response: :meth:`update_y`.
    """

    def __init__(self, b: Blocks, P: np.ndarray) -> None:
        N2 = b.N2
        unit = np.arange(N2)
        for blk, off in b.rest:
            cols = np.arange(off, off + blk.m * blk.q)
            unit[cols] = off + (cols - off) // blk.q * blk.q
        i, k = np.divmod(np.arange(N2 * N2), N2)
        self.idx = np.flatnonzero(unit[i] >= unit[k])
        self.N2 = N2
        self.P = np.ascontiguousarray(P[self.idx])
        self.arr = b.Arr.reshape(-1)[self.idx]

    def update_y(self, b: Blocks, P: np.ndarray) -> None:
        """The ``y`` row's entries (all kept: ``y`` is the last unit) from ``Arr`` and ``P``."""
        N2 = self.N2
        self.P[-N2:] = P[(N2 - 1) * N2:]
        self.arr[-N2:] = b.Arr[-1, :]

    def matrix(self, w: np.ndarray) -> np.ndarray:
        """``A_rr - P w`` on the kept entries, 0 elsewhere, ``(N2, N2)`` in C order."""
        M = np.zeros(self.N2 * self.N2)
        M[self.idx] = self.arr - self.P @ w
        return M.reshape(self.N2, self.N2)


# -- the rest's Schur complement from block 1's factors (dense strategy) ------------------
def schur_diag2(Arr: np.ndarray, diag2: tuple[np.ndarray, ...], d0: float, d1: float
                ) -> tuple[np.ndarray, float]:
    """``(M, log|L1|^2)`` for ``q1 = 2`` and a diagonal ``Lambda1 = diag(d0, d1)`` (e.g.
    ``(1 + x || item)``), everything elementwise: ``diag2`` holds ``Z1'Z1``'s entries
    ``a00, a10, a11`` per level, ``C``'s two columns and a work array for ``G``."""
    a00, a10, a11, c0, c1, G = diag2
    l00 = np.sqrt(d0 * d0 * a00 + 1.0)
    l10 = (d0 * d1) * a10 / l00
    # Schur complement of a PSD matrix + I: >= 1, so the sqrt is safe
    l11 = np.sqrt(d1 * d1 * a11 + 1.0 - l10 * l10)
    ld1 = 2.0 * float(np.sum(np.log(l00 * l11)))
    k00 = d0 / l00
    k01 = -(d0 * l10) / (l00 * l11)
    k11 = d1 / l11
    np.multiply(c0, k00, out=G[:, :, 0])
    np.multiply(c0, k01, out=G[:, :, 1])
    G[:, :, 1] += c1 * k11
    G2 = G.reshape(Arr.shape[0], -1)
    return Arr - G2 @ G2.T, ld1


def level_products(C: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``G[:, l] = C[:, l] X_l`` for every level ``l`` (``C``: ``(N2, m, k)``, ``X``:
    ``(m, k, k)``), elementwise for ``k <= 2`` (numpy runs a batch of small products
    matrix by matrix)."""
    k = C.shape[2]
    if k == 1:
        return C * X[None, :, 0, :]
    if k == 2:
        G = np.empty_like(C)
        c0, c1 = C[:, :, 0], C[:, :, 1]
        G[:, :, 0] = c0 * X[None, :, 0, 0] + c1 * X[None, :, 1, 0]
        G[:, :, 1] = c0 * X[None, :, 0, 1] + c1 * X[None, :, 1, 1]
        return G
    return np.einsum("nli,lij->nlj", C, X)


def schur_patterns(Arr: np.ndarray, Cgs: list[np.ndarray], Wg: list[np.ndarray]) -> np.ndarray:
    """``M = Arr - sum_P (C_P W_PP) C_P'`` per pattern, on its active columns only."""
    N2 = Arr.shape[0]
    M = Arr.copy()
    for Cg, w in zip(Cgs, Wg, strict=True):
        M -= level_products(Cg, w).reshape(N2, -1) @ Cg.reshape(N2, -1).T
    return M


def schur_dense(Arr: np.ndarray, Cd: np.ndarray, K: np.ndarray) -> np.ndarray:
    """``M = Arr - G G'`` with ``G_l = C_l K_l`` per level (``Cd``: ``(N2, m1, q1)``)."""
    G2 = level_products(Cd, K).reshape(Arr.shape[0], -1)
    return Arr - G2 @ G2.T
