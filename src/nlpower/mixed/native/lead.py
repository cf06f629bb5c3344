"""The rest's first block eliminated level by level when its levels are uncoupled.

After block 1 is eliminated, the rest (:mod:`.deviance`: blocks 2..k, ``X``,
``y``) is factored densely.  When the levels of the rest's first block are
*pairwise uncoupled* in that Schur complement ``M`` -- no observation and no
level of block 1 links two of them, as for segments when block 1 is
``segment:system`` (``(1 | item) + (1 | item:system)``: each item:system
level belongs to one item) -- the leading ``nl x nl`` part of ``M`` is block
diagonal (``q x q`` blocks ``D_l``) and its elimination needs no dense
algebra: per level the factor ``L_l`` of ``D_l``, then

    beta = B L^{-T}      (the rows after the lead, B = M[nl:, :nl])
    K    = C - beta beta' (C = M[nl:, nl:]; one rank-nl update)

and one ``dpotrf`` of ``K`` (the *core*: the other blocks, ``X``, ``y``).
This is the same Cholesky factor, in the same column order, as ``dpotrf`` of
all of ``M`` (the lead's columns come first there too); only the zeros are
skipped -- MixedModels.jl keeps such a block ``Diagonal`` in the same way.
The cost falls from ``N2^3 / 3`` to ``r^2 nl + r^3 / 3`` (``r = N2 - nl``): a
1,202-column rest with 1,000 uncoupled segments, 28 -> ~3 ms.

Where the Schur complement is formed from precomputed products of whole
rows (the grouped levels of :mod:`.deviance`), only the lead's diagonal
blocks and the rows after it are formed (:attr:`LeadPlan.sel`): the lead's
off-diagonal entries are zero and never computed, and of the rows after it
only the entries where ``A_rr`` or a group's products are nonzero
(:meth:`LeadPlan.entries`).  The gradient then needs the inverse's lead blocks
and its rows after the lead only (:func:`lead_grouped_blocks`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas, lapack

from .blocks import Blocks

__all__ = ["LEAD_MIN_COLUMNS", "LeadEntries", "LeadFactor", "LeadPlan", "lead_factor", "lead_inverse",
           "lead_grouped_blocks", "lead_inverse_rows", "lead_log_dets", "lead_plan",
           "lead_solve_v"]

# a lead of fewer columns keeps the dense path (a guard, not a measured break-even: a few
# skipped zeros do not pay for the extra numpy calls of the elimination)
LEAD_MIN_COLUMNS = 64


@dataclass(frozen=True, eq=False)
class LeadPlan:
    """The lead block: ``m`` uncoupled levels of ``q`` columns (the rest's first ``nl``)."""

    m: int
    q: int
    N2: int
    sel: np.ndarray       # flat positions (C order) of the lead's diagonal blocks, then of
                          # rows nl..N2-1 of M: all that the elimination reads
    blk_i: np.ndarray     # (m, q, q) row and column of each lead block entry
    blk_k: np.ndarray
    sel_i: np.ndarray     # row and column of each entry of sel
    sel_k: np.ndarray
    sel_diag: np.ndarray  # the entries of sel on the random-effects diagonal (+ I)
    nre2: int = 0         # random-effects columns of the rest (lead and core)

    @property
    def nl(self) -> int:
        return self.m * self.q

    def entries(self, A: np.ndarray, P: np.ndarray, version: int) -> LeadEntries:
        """The entries :meth:`parts` computes from ``A - P w`` (``A``, ``P``: ``A_rr`` and
        the grouped products at ``sel``): the lead's blocks, then only the nonzeros of
        ``A`` or ``P`` in the rows after the lead (the others are 0 at every ``theta``;
        ``sys20``: 45,000 of 243,000)."""
        nd, nl, N2 = self.m * self.q * self.q, self.nl, self.N2
        # |P| summed over the groups (one GEMV; np.any along a short axis is ~10x slower)
        kept = (A[nd:] != 0.0) | (np.abs(P[nd:]) @ np.ones(P.shape[1]) != 0.0)
        kept[nl: nl + (self.nre2 - nl) * (N2 + 1): N2 + 1] = True     # the core RE diagonal
        nz = nd + np.flatnonzero(kept)
        keep = np.concatenate([np.arange(nd), nz])
        return LeadEntries(A=A[keep], P=np.ascontiguousarray(P[keep]), pos=nz - nd,
                           ri=self.sel_i[nz], ci=self.sel_k[nz], version=version,
                           rows=np.zeros((N2 - nl) * N2))

    def parts(self, vals: np.ndarray, ent: LeadEntries, dv: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
        """``(D, rows)`` for :func:`lead_factor` from ``vals``, the values of ``M`` at the
        entries ``ent`` before the scaling by the diagonal ``Lambda_r`` (``dv``) and the
        ``+ I``; every other entry of the rows after the lead is 0.  ``rows`` is the
        entries' work array, overwritten by the next call (:func:`lead_factor` only reads
        it)."""
        m, q, N2, nl = self.m, self.q, self.N2, self.nl
        nd = m * q * q
        bi, bk = self.sel_i[:nd], self.sel_k[:nd]
        D = vals[:nd] * dv[bi] * dv[bk]
        D[bi == bk] += 1.0                      # the lead's diagonal: random effects
        D = D.reshape(m, q, q)
        if q > 1:                        # lower triangles gathered into both halves
            D = np.tril(D) + np.swapaxes(np.tril(D, -1), 1, 2)
        rows = ent.rows                  # its other entries are 0 from the start
        rows[ent.pos] = vals[nd:] * dv[ent.ri] * dv[ent.ci]
        nre_core = self.nre2 - nl
        rows[nl: nl + nre_core * (N2 + 1): N2 + 1] += 1.0     # core RE diagonal (in pos)
        return D, rows.reshape(-1, N2)


@dataclass(frozen=True, eq=False)
class LeadEntries:
    """The entries of ``M`` a grouped lead evaluation computes (:meth:`LeadPlan.entries`)."""

    A: np.ndarray         # A_rr at the lead's blocks, then at the nonzero rows' entries
    P: np.ndarray         # the grouped products there, (entries, G)
    pos: np.ndarray       # flat positions of the rows' entries in M[nl:] (C order)
    ri: np.ndarray        # their row and column in M
    ci: np.ndarray
    version: int          # the response (Blocks.version) they belong to
    rows: np.ndarray      # work array for M[nl:] (zero outside pos)


@dataclass(eq=False)
class LeadFactor:
    """The lead's part of the factor: ``L_l`` per level and ``beta = B L^{-T}``."""

    Ld: np.ndarray        # (m, q, q) lower factors of the lead's diagonal blocks
    beta: np.ndarray      # (r, nl) rows of the factor after the lead, lead columns

    def log_det2(self) -> float:
        """``2 sum log diag(L_l)`` over all levels."""
        return 2.0 * float(np.log(np.diagonal(self.Ld, axis1=1, axis2=2)).sum())

    def dense(self, Lk: np.ndarray) -> np.ndarray:
        """The whole rest's lower factor ``[[L_lead, 0], [beta, Lk]]``."""
        m, q = self.Ld.shape[0], self.Ld.shape[1]
        nl = m * q
        N2 = nl + Lk.shape[0]
        L = np.zeros((N2, N2))
        idx = np.arange(m)[:, None] * q + np.arange(q)[None, :]
        L[idx[:, :, None], idx[:, None, :]] = self.Ld
        L[nl:, :nl] = self.beta
        L[nl:, nl:] = Lk
        return L

    def solve_lead_t(self, x: np.ndarray) -> np.ndarray:
        """``L_lead^{-T} x`` for ``x`` of ``nl`` entries (per level ``L_l' v_l = x_l``)."""
        m, q = self.Ld.shape[0], self.Ld.shape[1]
        if q == 1:
            return x / self.Ld[:, 0, 0]
        return np.linalg.solve(np.swapaxes(self.Ld, 1, 2), x.reshape(m, q, 1)).reshape(-1)

    def gamma(self, rows: int) -> np.ndarray:
        """``beta[:rows] L_lead^{-1}`` (``rows x nl``), for the inverse's lead blocks."""
        m, q = self.Ld.shape[0], self.Ld.shape[1]
        if q == 1:
            return self.beta[:rows] / self.Ld[:, 0, 0]
        Li = np.linalg.inv(self.Ld)                                  # (m, q, q)
        bt = self.beta[:rows].reshape(rows, m, q)
        return np.einsum("rma,mab->rmb", bt, Li).reshape(rows, m * q)


def _uncoupled(b: Blocks, m: int, q: int) -> bool:
    """Whether no observation and no block-1 level couples two levels of the first rest block."""
    nl = m * q
    lev = np.arange(nl) // q
    # every nonzero of W'W's leading block inside the diagonal blocks (counted, no indices)
    blk = (np.arange(m)[:, None, None] * q + np.arange(q)[:, None]) * b.N2 \
        + np.arange(m)[:, None, None] * q + np.arange(q)
    if np.count_nonzero(b.Arr[:nl, :nl]) != np.count_nonzero(b.Arr.reshape(-1)[blk]):
        return False
    inside = b.pair_row < nl
    pl, pr = b.pair_lev[inside], lev[b.pair_row[inside]]
    if pl.size == 0:
        return True
    # per block-1 level, at most one lead level among its pairs: each level's last one
    # written, then every pair compared with it
    last = np.empty(b.b1.m, dtype=pr.dtype)
    last[pl] = pr
    return bool(np.all(last[pl] == pr))


def lead_plan(b: Blocks) -> LeadPlan | None:
    """The lead plan of the rest, or ``None`` when its first block's levels are coupled."""
    if not b.rest:
        return None
    blk, off = b.rest[0]
    m, q, N2 = blk.m, blk.q, b.N2
    if off != 0 or m * q < LEAD_MIN_COLUMNS or not _uncoupled(b, m, q):
        return None
    nl = m * q
    base = np.arange(m)[:, None, None] * q
    bi = np.broadcast_to(base + np.arange(q)[None, :, None], (m, q, q))
    bk = np.broadcast_to(base + np.arange(q)[None, None, :], (m, q, q))
    diag = (np.maximum(bi, bk) * N2 + np.minimum(bi, bk)).ravel()     # lower triangle
    sel = np.concatenate([diag, np.arange(nl * N2, N2 * N2)])
    si, sk = np.divmod(sel, N2)
    return LeadPlan(m=m, q=q, N2=N2, sel=sel, blk_i=bi.copy(), blk_k=bk.copy(), sel_i=si,
                    sel_k=sk, sel_diag=np.flatnonzero((si == sk) & (si < b.nre2)), nre2=b.nre2)


def lead_factor(plan: LeadPlan, D: np.ndarray, rows: np.ndarray
                ) -> tuple[LeadFactor, np.ndarray, int] | None:
    """Eliminate the lead: ``D`` its ``(m, q, q)`` diagonal blocks (symmetric), ``rows``
    ``M[nl:, :]`` (``r x N2``; only the lower triangle of its ``[:, nl:]`` part is read).

    Returns the lead factor, ``K``'s lower factor ``Lk`` (``r x r``) and LAPACK's
    ``info`` (0: positive definite), or ``None`` when a lead block is not.
    """
    nl, q = plan.nl, plan.q
    if q == 1:
        d = D[:, 0, 0]
        if not np.all(d > 0.0):
            return None
        ld = np.sqrt(d)
        Ld = ld.reshape(-1, 1, 1)
        beta = rows[:, :nl] / ld
    else:
        try:
            Ld = np.linalg.cholesky(D)
        except np.linalg.LinAlgError:
            return None
        r = rows.shape[0]
        Lti = np.swapaxes(np.linalg.inv(Ld), 1, 2)                     # L_l^{-T}
        beta = np.einsum("rma,mab->rmb", rows[:, :nl].reshape(r, plan.m, q), Lti
                         ).reshape(r, nl)
    # K = C - beta beta' on the lower triangle (Fortran order for BLAS/LAPACK in place);
    # beta' is Fortran-ordered, so syrk(trans) reads it without a copy (sys20: 1.6 -> 1.4 ms)
    C = np.asfortranarray(rows[:, nl:])
    K = blas.dsyrk(-1.0, beta.T, beta=1.0, c=C, lower=1, overwrite_c=1, trans=1)
    Lk, info = lapack.dpotrf(K, lower=1, clean=1, overwrite_a=1)
    return LeadFactor(Ld=Ld, beta=beta), Lk, int(info)


def lead_log_dets(lf: LeadFactor, Lk: np.ndarray, nre_core: int) -> tuple[float, float, float]:
    """``(log|L_re|^2, log|R_X|^2, r)`` from the lead and core factors (``nre_core``:
    random-effects columns of the core)."""
    dg = Lk.diagonal()
    lg = np.log(dg[:-1])
    return (lf.log_det2() + 2.0 * float(lg[:nre_core].sum()),
            2.0 * float(lg[nre_core:].sum()), float(dg[-1]))


def lead_solve_v(lf: LeadFactor, Lk: np.ndarray,
                 trsolve: Callable[[np.ndarray, np.ndarray, int], np.ndarray]) -> np.ndarray:
    """``L[:-1, :-1]' v = L[-1, :-1]`` with ``L = [[L_lead, 0], [beta, Lk]]``
    (``trsolve(L, b, 1)``: ``L^{-T} b`` for a lower-triangular ``L``)."""
    v2 = trsolve(Lk[:-1, :-1], Lk[-1, :-1], 1)
    v1 = lf.solve_lead_t(lf.beta[-1] - lf.beta[:-1].T @ v2)
    return np.concatenate([v1, v2])


def lead_inverse_rows(lf: LeadFactor, Lk: np.ndarray, Nr: int) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of the rest's leading ``Nr x Nr`` block: the lead's diagonal blocks
    ``(m, q, q)`` and the rows after the lead, ``(Nr - nl, Nr)`` (see :func:`lead_inverse`)."""
    m, q = lf.Ld.shape[0], lf.Ld.shape[1]
    nl = m * q
    rc = Nr - nl
    rows = np.zeros((rc, Nr))
    Li = np.linalg.inv(lf.Ld) if q > 1 else 1.0 / lf.Ld
    Dinv = np.swapaxes(Li, 1, 2) @ Li                                  # (m, q, q)
    if rc > 0:
        Ki, info = lapack.dpotri(Lk[:rc, :rc], lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"inverse from the Cholesky factor failed (info={info})")
        Ki = np.tril(Ki) + np.tril(Ki, -1).T
        g = lf.gamma(rc)                                              # (rc, nl)
        S21 = -(Ki @ g)
        rows[:, nl:] = Ki
        rows[:, :nl] = S21
        # gamma_l' Kinv gamma_l = -gamma_l' S21_l per level
        Dinv = Dinv - np.einsum("rma,rmb->mab", g.reshape(rc, m, q), S21.reshape(rc, m, q))
    return Dinv, rows


def lead_inverse(lf: LeadFactor, Lk: np.ndarray, Nr: int) -> np.ndarray:
    """The inverse of the rest's leading ``Nr x Nr`` block on the structure of ``M``.

    With ``gamma = beta L_lead^{-1}`` and ``Kinv`` the inverse of the core's
    leading block: ``S^{-1}_22 = Kinv``, ``S^{-1}_21 = -Kinv gamma``, and the
    lead's diagonal blocks ``D_l^{-1} + gamma_l' Kinv gamma_l``.  The lead's
    off-diagonal blocks (zero in ``M``, so never read by the gradient) are
    left at 0.  Full symmetric matrix.
    """
    m, q = lf.Ld.shape[0], lf.Ld.shape[1]
    nl = m * q
    Dinv, rows = lead_inverse_rows(lf, Lk, Nr)
    out = np.zeros((Nr, Nr))
    if Nr > nl:
        out[nl:, :] = rows
        out[:nl, nl:] = rows[:, :nl].T
    idx = np.arange(m)[:, None] * q + np.arange(q)[None, :]
    out[idx[:, :, None], idx[:, None, :]] = Dinv
    return out


def lead_grouped_blocks(plan: LeadPlan, lf: LeadFactor, Lk: np.ndarray, Nr: int,
                        dv: np.ndarray, Psel: np.ndarray, b: Blocks, theta: np.ndarray,
                        uq: np.ndarray, cnt: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """The gradient's diagonal-block sums of the inverse, for a scalar block 1 whose
    levels are grouped by equal ``Z1'Z1`` (``uq``: each group's, ``cnt``: its levels).

    Block 1's part needs ``Q_g = sum_{l in g} C_l' P C_l = <P, P_g>`` with ``P =
    Lambda_r S^{-1} Lambda_r`` and ``P_g`` the group's products, read at the lead plan's
    entries (``Psel``: ``P_g`` at ``sel``): the lead's diagonal blocks once, the core's
    rows against the lead's columns twice (their transposes are not in ``sel``), the
    core against itself once (both triangles are).  ``P_g`` is zero between two lead
    levels (they are uncoupled), so nothing else is needed: no dense ``S^{-1}`` and no
    per-level products.  Returns ``(D1, [sum of the diagonal blocks per rest block])``.
    """
    N2, nl, nd = plan.N2, plan.nl, plan.m * plan.q * plan.q
    Dinv, rows = lead_inverse_rows(lf, Lk, Nr)
    pd = Dinv.reshape(-1) * dv[plan.sel_i[:nd]] * dv[plan.sel_k[:nd]]
    Pm = np.zeros((N2 - nl, N2))
    Pm[:Nr - nl, :Nr] = rows * dv[nl:Nr, None] * dv[None, :Nr]
    Pm[:, :nl] *= 2.0
    Q = pd @ Psel[:nd] + Pm.reshape(-1) @ Psel[nd:]                   # (G,)
    lam2 = float(theta[b.b1.theta_idx[0]]) ** 2
    Binv = 1.0 / (lam2 * uq.reshape(-1) + 1.0)
    D1 = np.array([[float(cnt @ Binv + (Binv * Binv * lam2) @ Q)]])
    rest = [Dinv.sum(axis=0)]
    for blk, off in b.rest[1:]:
        idx = off - nl + np.arange(blk.m * blk.q).reshape(blk.m, blk.q)
        rest.append(rows[:, nl:][idx[:, :, None], idx[:, None, :]].sum(axis=0))
    return D1, rest
