"""Profiled deviance of a linear mixed model by blocked Cholesky.

Bates, Maechler, Bolker & Walker (2015, JSS 67(1)), sections 3.1-3.6, with
the block layout of MixedModels.jl (``src/linearmixedmodel.jl``): the
Cholesky factor of

    [ Lambda'Z'Z Lambda + I    Lambda'Z'X   Lambda'Z'y ]
    [ X'Z Lambda               X'X          X'y        ]
    [ y'Z Lambda               y'X          y'y        ]

is computed block by block.  Block 1 is block diagonal (a batched Cholesky
of ``(m1, q1, q1)`` matrices, :mod:`.block1`); the Schur complement of everything else
("the rest", ``N2`` columns: other grouping factors, X, y) is dense and
factored by LAPACK ``dpotrf``.  The last diagonal element of the factor is
``r``, the square root of the penalised residual sum of squares; the X block
is ``R_X'``.

    ML deviance     log|L|^2 + n (1 + log(2 pi r^2 / n))                  (eq. 34)
    REML criterion  log|L|^2 + log|R_X|^2 + (n-p)(1 + log(2 pi r^2/(n-p)))  (eq. 41)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from . import block1
from .block1 import block1_factor_inv, block1_reduced, grouped_W, scalar_patterns, tri_inv
from .blocks import Blocks, GroupBlock, SparseSchur
from .grouped import GroupedLevels
from .lead import (
    LeadEntries,
    LeadFactor,
    lead_factor,
    lead_grouped_blocks,
    lead_inverse,
    lead_log_dets,
    lead_plan,
    lead_solve_v,
)
from .lower import LowerBuild, lower_build
from .rest import PeelDirect, PeelFactor, peel_direct, peel_factor, peel_plan

_LOG2PI = math.log(2.0 * math.pi)
# below this many rest columns the log-determinants are summed in Python floats
_SMALL_N2 = 64
PIVOT_TOL = 1e-10    # a diagonal of a term's factor at or below this: a zero pivot


@dataclass(eq=False)
class Factor:
    """The pieces of the factorisation at one ``theta``."""

    theta: np.ndarray
    ok: bool
    ldL2: float          # log|L_theta|^2
    ldRX2: float         # log|R_X|^2
    r2: float            # penalised residual sum of squares
    L1: np.ndarray | None  # (m1, q1, q1) lower Cholesky factors of block 1 (None: not formed)
    Lrr: np.ndarray      # (N2, N2) lower Cholesky factor of the rest (empty with ``peel``; the
                         # core's with ``lead``)
    peel: PeelFactor | None = None   # the rest factored by peeling (:mod:`.rest`)
    L1inv: np.ndarray | None = None  # (m1, q1, q1) L1^{-1}, formed on request (DevianceEvaluator._L1)
    L1inv_g: np.ndarray | None = None  # L1^{-1} per group of equal Z1'Z1 (grouped levels)
    lead: LeadFactor | None = None   # the uncoupled lead eliminated first (:mod:`.lead`)
    Mu: np.ndarray | None = None     # the rest's Schur complement before the scaling (lower
                                     # triangle), kept where a rest term has a zero pivot


class DevianceEvaluator(GroupedLevels):
    """Deviance evaluations at successive ``theta`` for one structure."""

    def __init__(self, blocks: Blocks, grouped: bool = True, peel: bool = True, lead: bool = True):
        self.b = blocks
        self._grouped_ok = grouped
        b = blocks
        # the rest's sparse periphery peeled off before the dense factor, where that pays
        self.peel = peel_plan(blocks) if peel else None
        # else the rest's first block first, level by level, where its levels are uncoupled
        self.lead = lead_plan(blocks) if self.peel is None and lead else None
        # dpotrf reads only the lower triangle; the upper one is needed only when
        # a non-diagonal Lambda block of the rest mixes rows and columns
        self._need_upper = not all(blk.diagonal for blk, _ in b.rest)
        self._scalar_pat = scalar_patterns(b.patterns)     # one active column per level
        self._diag2: tuple[np.ndarray, ...] | None = None
        # theta indices of Lambda1[0, 0] and Lambda1[1, 1] (flat 0 and 3) when q1 = 2
        # and Lambda1 is diagonal (closed-form 2 x 2 algebra)
        self._diag2_ij: tuple[int, int] | None = None
        if b.b1.q == 2 and b.b1.diagonal:
            where = {int(f): int(t) for f, t in zip(b.b1.lam_idx, b.b1.theta_idx, strict=True)}
            self._diag2_ij = (where[0], where[3])
        if self._diag2_ij is not None and b.patterns is None and b.use_dense:
            A, Cd = b.A11, b.schur.Cd                   # type: ignore[union-attr]
            self._diag2_theta = np.array(self._diag2_ij)
            self._diag2 = (A[:, 0, 0].copy(), A[:, 1, 0].copy(), A[:, 1, 1].copy(),
                           Cd[:, :, 0], Cd[:, :, 1], np.empty_like(Cd))
        self._init_scale()
        # theta indices of the pivots of the rest's multi-column terms (their zero pivots
        # keep the unscaled Schur complement for the gradient: Factor.Mu)
        self._mu_piv = np.array([t for blk, _ in b.rest for t in _term_pivots(blk)],
                                dtype=np.intp)
        self._init_grouped()
        # grouped levels with a lead: only the entries the lead's elimination reads (set lazily)
        self._lead_ent: LeadEntries | None = None
        self._lead_psel: np.ndarray | None = None          # the grouped products at sel
        self._lead_grouped = (self.lead is not None and self._grouped and not self._use_Q
                              and self._scale_idx is not None)
        # peeled rest with sparse Schur products: the work vector without a dense M
        self._direct: PeelDirect | None = None
        if (self.peel is not None and not self._grouped and self._diag2 is None
                and not b.use_dense):
            self._direct = peel_direct(self.peel, b, b.schur.S_lo)  # type: ignore[union-attr]
        # dense rest from sparse Schur products, diagonal Lambda_r: M on its pattern only
        self._lower: LowerBuild | None = None
        if self.peel is None and not self._grouped and self._scale_idx is not None:
            self._lower = lower_build(b, self._scale_idx)
        self.n_evals = 0

    # -- set-up of the fast paths (the grouped levels: :class:`.grouped.GroupedLevels`)
    def _init_scale(self) -> None:
        """Index of the diagonal of ``Lambda_r`` per rest column (all rest blocks diagonal)."""
        b = self.b
        k = int(max((int(blk.theta_idx.max()) for blk in b.blocks), default=-1)) + 1
        self._scale_idx: np.ndarray | None = None
        self._lam_full: np.ndarray | None = None
        if self._need_upper:
            if b.N2 <= _SMALL_N2:
                # small rest with non-diagonal blocks: Lambda_r as one dense matrix,
                # filled from theta by precomputed positions
                pos, th = [], []
                for blk, off in b.rest:
                    r, c = np.divmod(blk.lam_idx, blk.q)
                    base = off + np.arange(blk.m)[:, None] * blk.q
                    pos.append(((base + r[None, :]) * b.N2 + base + c[None, :]).ravel())
                    th.append(np.tile(blk.theta_idx, blk.m))
                self._lam_full = np.eye(b.N2)
                self._lam_pos = np.concatenate(pos)
                self._lam_th = np.concatenate(th)
            return
        idx = np.full(b.N2, k, dtype=np.intp)                          # k -> the value 1.0
        for blk, off in b.rest:
            where = {int(f): int(t) for f, t in zip(blk.lam_idx, blk.theta_idx, strict=True)}
            diag_t = np.array([where[c * blk.q + c] for c in range(blk.q)], dtype=np.intp)
            idx[off:off + blk.m * blk.q] = np.tile(diag_t, blk.m)
        self._scale_idx = idx
        self._theta_ext = np.ones(k + 1)

    # -- the factorisation ---------------------------------------------------
    def factor(self, theta: np.ndarray) -> Factor:
        """Blocked Cholesky at ``theta`` (no copy of the inputs is kept)."""
        self.n_evals += 1
        if self._grouped:
            return self._factor_grouped(theta)
        return self._factor_plain(theta)

    def factor_once(self, theta: np.ndarray) -> Factor:
        """:meth:`factor` for a model factored at this one ``theta`` (the full model of a
        ridge fit, :mod:`.ridge`) without building the grouped products (10-30
        evaluations' worth: 50 ms on the sparse crowd shape, 9 ms on the paired one):
        with block 1's dense products (``DenseSchur``) the plain path, else ``S = E E'``
        with ``E`` (``W'Z1 Lambda1 L1^{-T}``) sparse, one product (3 ms).  The same
        factorisation summed in another order: equal to rounding."""
        b = self.b
        if not (self._grouped and self._grp_obj is None and self.peel is None):
            return self.factor(theta)
        self.n_evals += 1
        if b.use_dense:
            return self._factor_plain(theta)
        r1 = block1_factor_inv(b, theta)
        if r1 is None:
            return self._fail(theta)
        L1, K, ld1, _ = r1
        Ep = np.einsum("pi,pij->pj", b.C, K[b.pair_lev])
        E = sp.csr_matrix((Ep.ravel(), b.indices, b.indptr), shape=(b.N2, b.b1.m * b.b1.q))
        return self._scale_finish(theta, b.Arr - (E @ E.T).toarray(), ld1, L1)

    def _factor_plain(self, theta: np.ndarray) -> Factor:
        """:meth:`factor` without grouped levels."""
        b = self.b
        if self._diag2 is not None:
            M, ld1 = block1.schur_diag2(b.Arr, self._diag2, *theta[self._diag2_theta])
            return self._scale_finish(theta, M, ld1, None)
        L1: np.ndarray | None = None
        if b.patterns is not None:
            rr = block1_reduced(b.b1, b.patterns, theta, self._scalar_pat)
            if rr is None:
                return self._fail(theta)
            Wl, Wg, ld1 = rr
        else:
            r1 = block1_factor_inv(b, theta)
            if r1 is None:
                return self._fail(theta)
            L1, K, ld1, _ = r1
        # Schur complement of the rest: M = Arr - sum_l C_l K_l K_l' C_l'
        schur = b.schur
        if isinstance(schur, SparseSchur):
            Wx = Wl if b.patterns is not None else K @ np.swapaxes(K, 1, 2)
            if self._direct is not None:
                lams = np.stack([blk.lam(theta) for blk, _ in b.rest])
                work = self._direct.work(b, schur.V @ Wx.ravel(), lams)
                return self._finish(theta, None, ld1, L1, work)
            if self._lower is not None:
                te = self._theta_ext
                te[:-1] = theta
                M = self._lower.matrix(b, schur.V @ Wx.ravel(), te)
                return self._finish(theta, M, ld1, L1, clean=False)
            M = self._rest_minus_patterns(schur, Wx)
        elif b.patterns is not None:
            M = block1.schur_patterns(b.Arr, schur.Cg, Wg)
        else:
            M = block1.schur_dense(b.Arr, schur.Cd, K)
        return self._scale_finish(theta, M, ld1, L1)

    def _factor_grouped(self, theta: np.ndarray) -> Factor:
        """:meth:`factor` with block 1's levels grouped by equal ``Z1'Z1`` (``_grp``)."""
        gw = grouped_W(self.b.b1, self._grp_uq, self._grp_cnt, self._diag2_ij, theta)
        if gw is None:
            return self._fail(theta)
        Wv, ld1 = gw
        if self._lead_grouped:                  # only the products the lead reads
            return self._finish_lead_sel(theta, np.asarray(Wv), ld1)
        assert self._grp is not None                        # built here on first use
        if self._grp_version != self.b.version:
            self._grouped_update_y()
        if self._use_Q:
            if self._Q is None:
                self._Q = np.empty((self.b.N2 * self.b.N2, self._q_ncol))
                self._build_Q()
            N2 = self.b.N2
            th = theta.tolist()
            th.append(1.0)
            tv = [th[j] for j in self._q_types]
            wl = [1.0, *(Wv if isinstance(Wv, list) else Wv.tolist())]
            c = [a * bb * w for a in tv for bb in tv for w in wl]
            c.append(1.0)
            # M is symmetric: its transpose is the Fortran-ordered matrix dpotrf wants
            M = (self._Q @ np.array(c)).reshape(N2, N2).T   # type: ignore[union-attr]
            return self._finish(theta, M, ld1, None)
        M = self._grp_lower.matrix(np.asarray(Wv))          # block-lower entries only
        return self._scale_finish(theta, M, ld1, None)

    def _scale_finish(self, theta: np.ndarray, M: np.ndarray, ld1: float,
                      L1: np.ndarray | None) -> Factor:
        """``Lambda_r' M Lambda_r`` (+ I on the random-effects rows), then :meth:`_finish`.

        A zero pivot of a multi-column rest term keeps a copy of ``M`` (``Factor.Mu``)."""
        Mu = None
        if self._mu_piv.size and float(theta[self._mu_piv].min()) <= PIVOT_TOL:
            Mu = M.copy()
        if self._scale_idx is not None:
            te = self._theta_ext
            te[:-1] = theta
            dv = te[self._scale_idx]
            M *= dv
            M *= dv[:, None]
        else:
            M = self._scale_general(M, theta)
        N2 = self.b.N2
        Mc = M if M.flags.c_contiguous else M.T                        # a view either way
        Mc.reshape(-1)[: self.b.nre2 * (N2 + 1): N2 + 1] += 1.0       # the RE diagonal
        f = self._finish(theta, M, ld1, L1)
        f.Mu = Mu
        return f

    def _rest_minus_patterns(self, sparse: SparseSchur, Wl: np.ndarray) -> np.ndarray:
        """``A_rr`` minus the block-1 contribution ``V @ vec(Wl)`` scattered by pattern."""
        vals = sparse.V @ Wl.ravel()
        M = self.b.Arr.copy()
        Mf = M.reshape(-1)
        Mf[sparse.S_lo] -= vals
        if self._need_upper:
            Mf[sparse.S_up] -= vals[sparse.S_off]
        return M

    def _finish_lead_sel(self, theta: np.ndarray, Wv: np.ndarray, ld1: float) -> Factor:
        """The lead plan's entries of ``M`` (grouped levels), scaled by ``Lambda_r``, ``+ I``."""
        assert self.lead is not None and self._scale_idx is not None
        ent = self._lead_ent
        if ent is None or ent.version != self.b.version:
            # Arr and the grouped products on the entries
            ent = self._lead_ent = self.lead.entries(self.b.Arr.reshape(-1)[self.lead.sel],
                                                     self._lead_products(), self.b.version)
        vals = ent.A - ent.P @ Wv
        te = self._theta_ext
        te[:-1] = theta
        D, rows = self.lead.parts(vals, ent, te[self._scale_idx])
        return self._lead_finish(theta, D, rows, ld1, None)

    def _lead_finish(self, theta: np.ndarray, D: np.ndarray, rows: np.ndarray,
                     ld1: float, L1: np.ndarray | None) -> Factor:
        """The lead's diagonal blocks ``D`` and ``rows = M[nl:]`` -> :func:`.lead.lead_factor`."""
        assert self.lead is not None
        out = lead_factor(self.lead, D, rows)
        if out is None or out[2] != 0:
            return self._fail(theta)
        lf, Lk, _ = out
        ldre, ldRX2, r = lead_log_dets(lf, Lk, self.b.nre2 - self.lead.nl)
        return Factor(theta=theta, ok=True, ldL2=ld1 + ldre, ldRX2=ldRX2, r2=r * r,
                      L1=L1, Lrr=Lk, lead=lf)

    def _finish(self, theta: np.ndarray, M: np.ndarray | None, ld1: float,
                L1: np.ndarray | None, work: np.ndarray | None = None, clean: bool = True
                ) -> Factor:
        """Factor the rest ``M`` (overwritten; or the peel plan's ``work``), log-determinants.

        ``clean=False``: ``M``'s upper triangle is zero already (:mod:`.lower`)."""
        nre2 = self.b.nre2
        if self.peel is not None:
            if M is not None and M.flags.f_contiguous:   # the plan reads the lower triangle
                M = M.T                                  # in C order
            pf = peel_factor(self.peel, M, work)
            if pf is None:
                return self._fail(theta)
            fac, ldp = pf
            p = self.b.p
            lg = np.log(fac.Lc.diagonal())
            nc = lg.size - p - 1
            return Factor(theta=theta, ok=True, ldL2=ld1 + ldp + 2.0 * float(lg[:nc].sum()),
                          ldRX2=2.0 * float(lg[nc:-1].sum()), r2=float(fac.Lc[-1, -1]) ** 2,
                          L1=L1, Lrr=np.zeros((0, 0)), peel=fac)
        assert M is not None
        if self.lead is not None:
            # only M[i, k] with i >= k is valid (see the callers): the lower triangles
            ld = self.lead
            D = M[ld.blk_i, ld.blk_k]
            D = np.tril(D) + np.swapaxes(np.tril(D, -1), 1, 2)
            return self._lead_finish(theta, D, M[ld.nl:], ld1, L1)
        if M.flags.f_contiguous:
            Lrr, info = lapack.dpotrf(M, lower=1, clean=int(clean), overwrite_a=1)
        else:
            # C order: factor the transpose (the same symmetric matrix) in place as U'U,
            # U = L' -- no copy into Fortran order
            U, info = lapack.dpotrf(M.T, lower=0, clean=1, overwrite_a=1)
            Lrr = U.T
        if info != 0:
            return self._fail(theta)
        # a successful dpotrf has a positive diagonal: the logs are finite
        if self.b.N2 <= _SMALL_N2:
            dgl = Lrr.diagonal().tolist()
            ld2 = 2.0 * sum(map(math.log, dgl[:nre2]))
            ldRX2 = 2.0 * sum(map(math.log, dgl[nre2:-1]))
            r = dgl[-1]
        else:
            dg = Lrr.diagonal()
            lg = np.log(dg[:-1])
            ld2 = 2.0 * float(lg[:nre2].sum())
            ldRX2 = 2.0 * float(lg[nre2:].sum())
            r = float(dg[-1])
        return Factor(theta=theta, ok=True, ldL2=ld1 + ld2, ldRX2=ldRX2, r2=r * r,
                      L1=L1, Lrr=Lrr)

    def _scale_general(self, M: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """``Lambda_r' M Lambda_r`` for any (non-diagonal) rest blocks; its lower triangle
        is valid where ``M``'s block-lower entries are (:class:`.block1.GroupedLower`).

        Small rests: one dense ``Lambda_r`` (in place).  Else two products with the
        sparse ``Lambda_r'`` (:func:`lambda_rows`: ``X = Lambda_r' M``, then
        ``(Lambda_r' X')'``, Fortran order): ~2x faster than a GEMM per side on the
        ``(m, q, N2)`` views, whose transposes were copied."""
        if self._lam_full is not None:
            Lf = self._lam_full
            Lf.flat[self._lam_pos] = theta[self._lam_th]
            M[:] = Lf.T @ M @ Lf
            return M
        lt = lambda_rows(self, theta, self.b.N2)
        out = (lt @ (lt @ M).T).T
        # the peeling plan reads the lower triangle in C order
        return np.ascontiguousarray(out) if self.peel is not None else out

    def _L1(self, f: Factor, inverse: bool = False) -> np.ndarray:
        """Block 1's factors ``L1`` per level (``inverse``: ``L1^{-1}``), cached on ``f``."""
        if f.L1 is None:
            # levels with equal Z1'Z1 (a group) have equal factors: one per group
            r1 = block1_factor_inv(self.b, f.theta, self._grp_uq if self._grouped else None)
            if r1 is None:
                raise np.linalg.LinAlgError("block 1 is not positive definite")
            if not self._grouped:
                f.L1, f.L1inv = r1[0], r1[3]
            else:
                f.L1 = r1[0][self._grp_inv]
                f.L1inv_g = tri_inv(r1[0]) if r1[3] is None else r1[3]
                f.L1inv = f.L1inv_g[self._grp_inv]
        if inverse and f.L1inv is None:
            f.L1inv = tri_inv(f.L1)
        return f.L1inv if inverse else f.L1  # type: ignore[return-value]

    @property
    def scale_index(self) -> np.ndarray | None:
        """Per rest column, the index into ``(theta, 1.0)`` of its ``Lambda_r`` diagonal (``None``: not diagonal)."""
        return self._scale_idx

    def block1_factor(self, f: Factor) -> np.ndarray:
        """Block 1's lower Cholesky factors ``L1`` per level, ``(m1, q1, q1)``."""
        return self._L1(f)

    def numbers_changed(self) -> None:
        """Re-read the copies of ``b``'s block-1 numbers taken at set-up (one-column patterns,
        the closed-form ``q1 = 2`` arrays) after a caller re-formed ``A11``, ``C`` and the Schur
        products in place (new weights); bump ``Blocks.version`` (the response-keyed caches)."""
        b = self.b
        self._scalar_pat = scalar_patterns(b.patterns)
        if self._diag2 is not None:
            A11, Cd = b.A11, b.schur.Cd                       # type: ignore[union-attr]
            self._diag2 = (A11[:, 0, 0].copy(), A11[:, 1, 0].copy(), A11[:, 1, 1].copy(),
                           Cd[:, :, 0], Cd[:, :, 1], self._diag2[5])
        b.version += 1

    def E(self, f: Factor) -> np.ndarray:
        """``W'Z1 Lambda1 L1^{-T}`` per pair, shape (P, q1) (for the conditional modes)."""
        b = self.b
        lam1 = b.b1.lam(f.theta)
        Li = self._L1(f, inverse=True)
        if f.L1inv_g is not None:                 # one K per group of equal Z1'Z1
            K = lam1 @ np.swapaxes(f.L1inv_g, 1, 2)   # one group: the same sums, no gather
            return (b.C @ K[0] if K.shape[0] == 1
                    else np.einsum("pi,pij->pj", b.C, K[self._grp_pair]))
        K = lam1 @ np.swapaxes(Li, 1, 2)                               # (m1, q1, q1)
        return np.einsum("pi,pij->pj", b.C, K[b.pair_lev])

    def _fail(self, theta: np.ndarray) -> Factor:
        nan = float("nan")
        empty = np.zeros((0, 0))
        return Factor(theta, False, nan, nan, nan, empty, empty)

    # -- criteria --------------------------------------------------------------
    def objective(self, f: Factor, REML: bool) -> float:
        """ML deviance or REML criterion from a factorisation."""
        if not f.ok or not f.r2 > 0.0:
            return math.inf
        n, p = self.b.n, self.b.p
        if REML:
            nmp = n - p
            val = f.ldL2 + f.ldRX2 + nmp * (1.0 + _LOG2PI + math.log(f.r2 / nmp))
        else:
            val = f.ldL2 + n * (1.0 + _LOG2PI + math.log(f.r2 / n))
        return val if math.isfinite(val) else math.inf

    def __call__(self, theta: np.ndarray, REML: bool = False) -> float:
        return self.objective(self.factor(theta), REML)

    def deviance_vp(self, theta: np.ndarray, sigma: float, REML: bool) -> float:
        """Deviance at fixed ``(theta, sigma)``, beta profiled out (lmerTest's ``devfun_vp``)."""
        f = self.factor(theta)
        if not f.ok:
            return math.inf
        s2 = sigma * sigma
        n, p = self.b.n, self.b.p
        dev = f.ldL2 + f.r2 / s2 + n * math.log(2.0 * math.pi * s2)
        if REML:
            dev += f.ldRX2 - p * math.log(2.0 * math.pi * s2)
        return dev

    # -- fixed effects and conditional modes ----------------------------------
    def dense_factor(self, f: Factor) -> tuple[np.ndarray, np.ndarray | None]:
        """The rest's dense lower factor and its column order (``None``: the original).

        A peeled factor is assembled here, in the peeled order ``perm``: the
        random-effects columns permuted, ``X`` and ``y`` last as always.
        """
        if f.peel is not None:
            return f.peel.dense(), f.peel.plan.perm
        if f.lead is not None:
            return f.lead.dense(f.Lrr), None
        return f.Lrr, None

    def _xrows(self, f: Factor) -> tuple[np.ndarray, np.ndarray]:
        """``R_X'`` and the ``y`` row's ``X`` part of the factor (order-independent)."""
        p = self.b.p
        if f.peel is not None:
            Lc = f.peel.Lc
            k = Lc.shape[0] - p - 1
            return Lc[k:k + p, k:k + p], Lc[-1, k:k + p]
        nre2 = self.b.nre2 - (self.lead.nl if f.lead is not None and self.lead else 0)
        return f.Lrr[nre2:nre2 + p, nre2:nre2 + p], f.Lrr[-1, nre2:nre2 + p]

    def beta(self, f: Factor) -> np.ndarray:
        Lxx, lyx = self._xrows(f)
        return block1.tri_solve(Lxx, lyx, trans=1)

    def RXinv(self, f: Factor) -> np.ndarray:
        """``R_X^{-1}`` (upper triangular): ``Var(beta) = sigma^2 R_X^{-1} R_X^{-T}``."""
        Lxx, _ = self._xrows(f)
        return block1.tri_solve(Lxx, np.eye(self.b.p), trans=0).T

    def solve_v(self, f: Factor) -> np.ndarray:
        """Spherical modes of the rest and ``beta``: ``L[:-1, :-1]' v = L[-1, :-1]``."""
        if f.peel is not None:
            return f.peel.solve_v()
        if f.lead is not None:
            return lead_solve_v(f.lead, f.Lrr, lambda L, b_, t: block1.tri_solve(L, b_, trans=t))
        return block1.tri_solve(f.Lrr[:-1, :-1], f.Lrr[-1, :-1], trans=1)

    def rest_inverse(self, f: Factor, Nr: int) -> np.ndarray:
        """Inverse of the rest's leading ``Nr x Nr`` block (lower triangle at least).

        With a lead (:mod:`.lead`) only on the structure of the rest: the entries
        between two different lead levels are 0 (the gradient reads none of them)."""
        if not Nr:
            return np.zeros((0, 0))
        if f.lead is not None:               # on the structure of the rest only
            return lead_inverse(f.lead, f.Lrr, Nr)
        L, perm = self.dense_factor(f)
        Si, info = lapack.dpotri(L[:Nr, :Nr], lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"inverse from the Cholesky factor failed (info={info})")
        if perm is None:
            return np.asarray(Si)
        Si = np.tril(Si) + np.tril(Si, -1).T
        ip = np.empty(Nr, dtype=np.intp)
        ip[perm[:Nr]] = np.arange(Nr)       # the first Nr positions hold the first Nr columns
        return Si[np.ix_(ip, ip)]

    def grouped_inverse_blocks(self, f: Factor, Nr: int
                               ) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """The gradient's inverse-block sums through the grouped products at the lead
        plan's entries (:func:`.lead.lead_grouped_blocks`); ``None`` off that path."""
        if f.lead is None or not self._lead_grouped or self.b.b1.q != 1 or not Nr:
            return None
        assert self.lead is not None
        te = np.append(f.theta, 1.0)
        return lead_grouped_blocks(self.lead, f.lead, f.Lrr, Nr, te[self._scale_idx],
                                   self._lead_products(), self.b, f.theta, self._grp_uq,
                                   self._grp_cnt)

    def modes(self, f: Factor) -> list[np.ndarray]:
        """Conditional modes ``b = Lambda u`` per block, each ``(m, q)`` (block order)."""
        b = self.b
        b1 = b.b1
        N2 = b.N2
        v = self.solve_v(f)
        theta = f.theta
        # z = Lambda_r v on the random-effects rows, beta on the X rows, 0 for y
        z = np.zeros(N2)
        z[:-1] = v
        out_rest = []
        for blk, off in b.rest:
            s = slice(off, off + blk.m * blk.q)
            lam = blk.lam(theta)
            bj = v[s].reshape(blk.m, blk.q) @ lam.T
            z[s] = bj.ravel()
            out_rest.append(bj)
        # t = E_y - E[:-1]' z per level of block 1
        q1 = b1.q
        Es = sp.csr_matrix((self.E(f).ravel(), b.indices, b.indptr), shape=(N2, b1.m * q1))
        t = np.asarray(Es[-1, :].toarray()).ravel() - Es[:-1, :].T @ z[:-1]
        t = t.reshape(b1.m, q1)
        u1 = np.linalg.solve(np.swapaxes(self._L1(f), 1, 2), t[:, :, None])[:, :, 0]
        b1m = u1 @ b1.lam(theta).T
        return [b1m, *out_rest]


def _term_pivots(blk: GroupBlock) -> list[int]:
    """``theta`` indices of the diagonal entries of the block's multi-column terms."""
    where = {int(f): int(t) for f, t in zip(blk.lam_idx, blk.theta_idx, strict=True)}
    out, col = [], 0
    for qt in blk.term_q:
        if qt > 1:
            out += [where[c * blk.q + c] for c in range(col, col + qt)]
        col += qt
    return out


def lambda_t_entries(ev: DevianceEvaluator, n_rows: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(row, column, theta index)`` of each entry of ``Lambda_r'`` on the first ``n_rows``
    rows of the rest, the identity on the ``X`` rows after them (theta index -1: the value 1).
    """
    rows, cols, src = [], [], []
    for blk, off in ev.b.rest:
        r, c = np.divmod(blk.lam_idx, blk.q)                  # Lambda[r, c] = theta[src]
        base = off + blk.q * np.arange(blk.m)[:, None]
        rows.append((base + c[None, :]).ravel())              # Lambda' : (c, r)
        cols.append((base + r[None, :]).ravel())
        src.append(np.tile(blk.theta_idx, blk.m))
    ident = np.arange(ev.b.nre2, n_rows)
    rows.append(ident)
    cols.append(ident)
    src.append(np.full(ident.size, -1))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(src)


def lambda_rows(ev: DevianceEvaluator, theta: np.ndarray, n_rows: int) -> sp.csr_matrix:
    """``Lambda_r'`` on the first ``n_rows`` rows of the rest (identity on the X rows).

    The sparsity structure is built once per ``n_rows`` (cached on ``ev``);
    a call only fills in the values from ``theta``.
    """
    cache = ev.__dict__.setdefault("_lam_rows", {})
    if n_rows not in cache:
        R, C, S = lambda_t_entries(ev, n_rows)
        mat = sp.csr_matrix((np.arange(1.0, R.size + 1.0), (R, C)), shape=(n_rows, n_rows))
        cache[n_rows] = (mat, S[mat.data.astype(np.intp) - 1])
    mat, S = cache[n_rows]
    mat.data = np.where(S >= 0, theta[np.maximum(S, 0)], 1.0)
    return mat
