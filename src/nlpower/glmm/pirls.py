"""Penalised iteratively reweighted least squares (PIRLS) and the Laplace deviance.

Stage 3 of a native GLMM fit (after the model frame and lme4's ``theta``
layout): for given ``theta`` (and ``beta``, unless it is updated too) find the
conditional mode ``u`` of the spherical random effects, then evaluate lme4's
Laplace deviance there (Bates et al. 2015, sec. 5; lme4 1.1-31 ``glmerLaplace``)::

    d(theta, beta) = -2 log p(y | u) + ||u||^2 + log |L|^2

``L L' = Lambda' Z' W Z Lambda + I``, ``W`` the GLM working weights at the
mode; ``-2 log p(y | u)`` is R's ``family()$aic`` term (the conditional
log-likelihood, not the deviance residuals), so ``-d / 2`` is lme4's
``logLik``.

Linear algebra.  The random-effects columns are ordered as grouping blocks
(terms of one grouping factor amalgamated; the largest block first, as the LMM
engine).  Block 1 stays block diagonal (``m1`` blocks of ``q1 x q1``); the rest
(other blocks, and ``X`` when ``beta`` is updated inside PIRLS) is dense.  The
weighted cross-products change with every PIRLS iteration; all of them are
one ``np.bincount`` over a precomputed table of (observation, slot pair) ->
target positions, the values ``(Z Lambda)_ia (Z Lambda)_ib`` fixed for a
``theta``.  Block 1 is then eliminated by batched ``q1 x q1`` Cholesky
factors and the Schur complement of the rest factored densely.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from ..lmm.family import Family
from ..lmm.native.blocks import GroupBlock
from .response import cond_m2loglik

#: PIRLS stops when the penalised deviance changes by less than this (relative)
PIRLS_TOL = 1e-12
#: ... and the largest change of u (and beta) is below this (relative); with a canonical
#: link PIRLS is Newton's method, so a step of 1e-6 leaves an error of order 1e-12
STEP_TOL = 1e-9
STEP_TOL_CANONICAL = 1e-6
STEP_TOL_STAGE1 = 1e-4
PIRLS_MAXIT = 200
#: C (rest x block 1) is stored sparse when at most this share of its entries can be non-zero
SPARSE_C = 0.1
#: step halvings before PIRLS gives up on a step
MAX_HALVINGS = 30


@dataclass(eq=False)
class Mode:
    """The result of one PIRLS run (``u`` and, when updated, ``beta``)."""

    u: np.ndarray
    beta: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    ldL2: float            # log |L|^2 (random-effects part)
    pdev: float            # unit terms of -2 log p(y | u) + ||u||^2
    deviance: float        # the Laplace deviance
    ok: bool
    iterations: int
    L1: np.ndarray         # (m1, q1, q1) block-1 factors at the mode
    CtT: Any               # (d, m1*q1) C L1^{-T}, dense or sparse
    L2: np.ndarray | None  # (d, d) factor of the dense rest
    w: np.ndarray          # working weights at the mode


class Pirls:
    """PIRLS on a fixed structure; the response, weights and offset set once.

    Parameters
    ----------
    X : (n, p) fixed-effects model matrix.
    blocks : grouping blocks (:func:`nlpower.lmm.native.blocks.group_blocks`), largest first.
    n_theta : length of ``theta``.
    family : Binomial or Poisson.
    y, wt, offset : response (proportions for the binomial), prior weights, offset.
    """

    def __init__(self, X: np.ndarray, blocks: list[GroupBlock], n_theta: int, family: Family,
                 y: np.ndarray, wt: np.ndarray, offset: np.ndarray):
        self.X = X
        self.n, self.p = X.shape
        self.blocks = blocks
        self.n_theta = n_theta
        self.family = family
        self.link = family.link
        # the canonical links' closed forms; any other family or link goes through its methods
        self._kind = family.link.name if family.canonical else "other"   # type: ignore[attr-defined]
        self._step_tol = STEP_TOL if self._kind == "other" else STEP_TOL_CANONICAL
        #: the Laplace approximation's weights at the mode: PIRLS's expected (Fisher) ones, as
        #: lme4, or the observed information, as glmmTMB (differ for non-canonical links only)
        self.observed = False
        self.set_response(y, wt, offset)
        b1 = blocks[0]
        self.m1, self.q1 = b1.m, b1.q
        self.n1 = self.m1 * self.q1
        rest = blocks[1:]
        offs, off = [], 0
        for b in rest:
            offs.append(off)
            off += b.m * b.q
        self.qr = off
        self.q = self.n1 + self.qr
        n = self.n
        # slot columns: for each observation, its random-effects columns (block 1 first)
        cols1 = b1.codes[:, None] * self.q1 + np.arange(self.q1)[None, :]
        colsr = [o + b.codes[:, None] * b.q + np.arange(b.q)[None, :] for o, b in zip(offs, rest, strict=True)]
        self.cols1 = cols1
        self.colsr = np.concatenate(colsr, axis=1) if colsr else np.zeros((n, 0), dtype=np.intp)
        self.slots = np.concatenate([cols1, self.n1 + self.colsr], axis=1)   # (n, s)
        self.s1 = self.q1
        self.sr = self.colsr.shape[1]
        # targets of the Z-Z cross-products: D (m1 q1 q1) | C (qr x n1) | R (qr x qr)
        q1 = self.q1
        code1 = b1.codes[:, None, None]
        tD = code1 * q1 * q1 + np.arange(q1)[None, :, None] * q1 + np.arange(q1)[None, None, :]
        offC = self.m1 * q1 * q1
        posC = (self.colsr[:, :, None] * self.n1 + cols1[:, None, :]).reshape(n, -1)
        # C (rest x block 1) is kept sparse when few of its entries can be non-zero (nested
        # or observation-level block 1, e.g. grouseticks): then C C' costs O(nnz), not qr^2 n1
        self.sparse_c = False
        if q1 == 1 and self.qr > 0:
            uniq, inv = np.unique(posC.ravel(), return_inverse=True)
            if uniq.size < SPARSE_C * self.qr * self.n1:
                self.sparse_c = True
                tmpl = sp.csr_matrix((np.arange(1.0, uniq.size + 1.0),
                                      (uniq // self.n1, uniq % self.n1)), shape=(self.qr, self.n1))
                self._c_inv, self._c_n = inv.ravel(), uniq.size
                self._c_perm = tmpl.data.astype(np.intp) - 1
                self._c_indices, self._c_indptr = tmpl.indices, tmpl.indptr
        if self.sparse_c:
            offR = offC
            parts = [tD.reshape(n, -1)]
        else:
            offR = offC + self.qr * self.n1
            parts = [tD.reshape(n, -1), offC + posC]
        tR = offR + self.colsr[:, :, None] * self.qr + self.colsr[:, None, :]
        self._tzz = np.concatenate([*parts, tR.reshape(n, -1)], axis=1)
        self._nzz = offR + self.qr * self.qr
        # targets of the X-Z cross-products (beta inside PIRLS): Cx (p x n1) | Rx (qr x p)
        p = self.p
        tCx = np.arange(p)[None, :, None] * self.n1 + cols1[:, None, :]
        offRx = p * self.n1
        tRx = offRx + self.colsr[:, :, None] * p + np.arange(p)[None, None, :]
        self._txz = np.concatenate([tCx.reshape(n, -1), tRx.reshape(n, -1)], axis=1)
        self._nxz = offRx + self.qr * p
        self._theta: np.ndarray | None = None

    # -- per response / per theta ------------------------------------------------
    def set_response(self, y: np.ndarray, wt: np.ndarray, offset: np.ndarray) -> None:
        self.y, self.wt, self.offset = y, wt, offset
        # -2 log p(y | mu) minus the sum of the unit terms does not depend on mu: once per response
        mu0 = self.family.mu_start(y, wt)   # type: ignore[attr-defined]
        eta0 = self.link.linkfun(mu0)
        self._const = cond_m2loglik(self.family, y, mu0, wt) - float(np.sum(self.working(eta0)[2]))
        #: -2 log p(y | mu = y), the saturated model (lme4's nAGQ > 1 deviance leaves it out)
        self.saturated = cond_m2loglik(self.family, y, y, wt)
        #: PIRLS takes Newton steps where the family has an observed information (its
        #: expected one, Fisher scoring, converges only linearly with a non-canonical link)
        fam: Any = self.family
        self._newton = self._kind == "other" and fam.observed_weights(y, mu0, eta0, wt) is not None

    def set_family(self, family: Family) -> None:
        """Swap the family for one with the same link (e.g. another negative binomial ``theta``)."""
        self.family = family
        self.set_response(self.y, self.wt, self.offset)

    def set_theta(self, theta: np.ndarray) -> None:
        """``Z Lambda`` per slot and the cross-product multipliers for ``theta``."""
        if self._theta is not None and np.array_equal(theta, self._theta):
            return
        zl = [b.Z @ b.lam(theta) for b in self.blocks]
        zl1 = zl[0]
        zlr = np.concatenate(zl[1:], axis=1) if len(zl) > 1 else np.zeros((self.n, 0))
        self.zl = np.concatenate([zl1, zlr], axis=1)
        n = self.n
        mD = zl1[:, :, None] * zl1[:, None, :]
        mC = (zlr[:, :, None] * zl1[:, None, :]).reshape(n, -1)
        mR = zlr[:, :, None] * zlr[:, None, :]
        if self.sparse_c:
            self._mc = mC
            self._mzz = np.concatenate([mD.reshape(n, -1), mR.reshape(n, -1)], axis=1)
        else:
            self._mzz = np.concatenate([mD.reshape(n, -1), mC, mR.reshape(n, -1)], axis=1)
        self._mxz: np.ndarray | None = None    # X-Z multipliers: built when beta is in PIRLS
        self._zl1, self._zlr = zl1, zlr
        self._theta = theta.copy()

    def _xz_multipliers(self) -> np.ndarray:
        if self._mxz is None:
            n, X = self.n, self.X
            mCx = X[:, :, None] * self._zl1[:, None, :]
            mRx = self._zlr[:, :, None] * X[:, None, :]
            mxz = np.concatenate([mCx.reshape(n, -1), mRx.reshape(n, -1)], axis=1)
            self._mxz = mxz
            return mxz
        return self._mxz

    def _mu_eta(self, eta: np.ndarray, mu: np.ndarray) -> np.ndarray:
        if self._kind == "logit":
            return np.maximum(mu * (1.0 - mu), 1e-300)
        if self._kind == "log":
            return np.maximum(mu, 1e-300)
        return np.maximum(self.link.mu_eta(eta), 1e-300)

    # -- pieces -----------------------------------------------------------------
    def zu(self, u: np.ndarray) -> np.ndarray:
        """``Z Lambda u``."""
        return np.einsum("ij,ij->i", self.zl, u[self.slots])

    def ztv(self, v: np.ndarray) -> np.ndarray:
        """``Lambda' Z' v``."""
        return np.bincount(self.slots.ravel(), (self.zl * v[:, None]).ravel(), minlength=self.q)

    def working(self, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``mu``, the working weights and the unit terms of ``-2 log p(y | mu)`` at ``eta``.

        The unit terms leave out what depends on ``y`` only (binomial
        coefficients, ``log y!``): ``2 wt (log(1 + e^eta) - y eta)`` for the
        logit link, ``2 wt (mu - y eta)`` for the log link, else
        ``-2 wt (y log mu + (1 - y) log(1 - mu))``.
        """
        wt, y = self.wt, self.y
        kind = self._kind
        if kind == "logit":
            e = np.exp(-np.abs(eta))                  # one exp for mu and log(1 + e^eta)
            inv = 1.0 / (1.0 + e)
            mu = np.where(eta >= 0.0, inv, e * inv)
            w = wt * (e * inv * inv)                   # mu (1 - mu)
            unit = 2.0 * wt * (np.maximum(eta, 0.0) + np.log1p(e) - y * eta)
            return mu, np.maximum(w, 1e-300), unit
        if kind == "log":
            mu = np.exp(np.minimum(eta, 700.0))
            return mu, wt * mu, 2.0 * wt * (mu - y * eta)
        fam: Any = self.family
        mu = fam.clip_mu(self.link.linkinv(eta))
        me = self.link.mu_eta(eta)
        w = wt * me * me / fam.variance(mu)          # Fisher's (expected) weights, as lme4
        return mu, np.maximum(w, 1e-300), fam.unit_m2loglik(y, mu, wt)

    def factor(self, w: np.ndarray, with_x: bool) -> tuple[np.ndarray, Any, np.ndarray | None, float]:
        """Factor ``Lambda'Z'WZLambda + I`` (and ``X``) for weights ``w``: ``(L1, CtT, L2, ldL2)``.

        ``L1``: block 1's ``(m1, q1, q1)`` factors; ``CtT = C L1^{-T}`` (``d x n1``,
        dense or sparse) the off-diagonal block; ``L2`` the factor of the rest's
        Schur complement (``None`` without a rest); ``ldL2 = log |L|^2`` of the
        random-effects part.
        """
        vals = np.bincount(self._tzz.ravel(), (self._mzz * w[:, None]).ravel(), minlength=self._nzz)
        m1, q1, n1, qr = self.m1, self.q1, self.n1, self.qr
        offC = m1 * q1 * q1
        D = vals[:offC].reshape(m1, q1, q1)
        R = vals[self._nzz - qr * qr:].reshape(qr, qr)
        CtT: Any
        if q1 == 1:
            d1 = np.sqrt(D[:, 0, 0] + 1.0)
            L1 = d1.reshape(m1, 1, 1)
            ld1 = 2.0 * float(np.sum(np.log(d1)))
            if self.sparse_c:
                cv = np.bincount(self._c_inv, (self._mc * w[:, None]).ravel(), minlength=self._c_n)
                CtT = sp.csr_matrix((cv[self._c_perm] / d1[self._c_indices], self._c_indices,
                                     self._c_indptr), shape=(qr, n1))
            else:
                CtT = vals[offC:offC + qr * n1].reshape(qr, n1) / d1[None, :]
        else:
            L1 = np.linalg.cholesky(D + np.eye(q1)[None, :, :])
            ld1 = 2.0 * float(np.sum(np.log(np.diagonal(L1, axis1=1, axis2=2))))
            Cb = vals[offC:offC + qr * n1].reshape(qr, m1, q1).transpose(1, 2, 0)   # (m1, q1, qr)
            CtT = np.linalg.solve(L1, Cb).reshape(n1, qr).T
        if with_x:
            xv = np.bincount(self._txz.ravel(), (self._xz_multipliers() * w[:, None]).ravel(),
                             minlength=self._nxz)
            p = self.p
            Cx = xv[:p * n1].reshape(p, n1)
            Rx = xv[p * n1:].reshape(qr, p)
            if q1 == 1:
                CtxT = Cx / L1[:, 0, 0][None, :]
            else:
                CtxT = np.linalg.solve(L1, Cx.reshape(p, m1, q1).transpose(1, 2, 0)).reshape(n1, p).T
            CtT = sp.vstack([CtT, sp.csr_matrix(CtxT)], format="csr") if self.sparse_c else \
                np.concatenate([CtT, CtxT], axis=0)
            Xw = self.X * w[:, None]
            S = np.block([[R, Rx], [Rx.T, self.X.T @ Xw]])
        else:
            S = R
        d = S.shape[0]
        if d == 0:
            return L1, CtT, None, ld1
        CC = CtT @ CtT.T
        S = S - (CC.toarray() if self.sparse_c else CC)
        S[np.diag_indices(qr)] += 1.0
        L2, info = lapack.dpotrf(S, lower=1, clean=1, overwrite_a=1)   # no wrapper: small, often
        if info != 0:
            raise np.linalg.LinAlgError(f"the PIRLS system is not positive definite (info {info})")
        ld2 = 2.0 * float(np.sum(np.log(np.diag(L2)[:qr])))
        return L1, CtT, L2, ld1 + ld2

    def solve(self, L1: np.ndarray, CtT: Any, L2: np.ndarray | None, r: np.ndarray) -> np.ndarray:
        """Solve ``M x = r`` with the blocked factor (``r``: block 1, then the dense rest)."""
        n1, m1, q1 = self.n1, self.m1, self.q1
        r1, r2 = r[:n1], r[n1:]
        if q1 == 1:
            y1 = r1 / L1[:, 0, 0]
        else:
            y1 = np.linalg.solve(L1, r1.reshape(m1, q1, 1)).reshape(n1)
        if L2 is None:
            x2 = r2
        else:
            x2 = lapack.dpotrs(L2, r2 - CtT @ y1, lower=1)[0]
        z1 = y1 - CtT.T @ x2 if x2.size else y1
        if q1 == 1:
            x1 = z1 / L1[:, 0, 0]
        else:
            x1 = np.linalg.solve(np.swapaxes(L1, 1, 2), z1.reshape(m1, q1, 1)).reshape(n1)
        return np.concatenate([x1, x2])

    # -- PIRLS ------------------------------------------------------------------
    def run(self, theta: np.ndarray, beta: np.ndarray, u0: np.ndarray | None, *,
            update_beta: bool) -> Mode:
        """The conditional mode at ``theta`` (``beta`` fixed, or updated with ``u``)."""
        self.set_theta(theta)
        # stage 1 (beta in PIRLS) only gives lme4's start: a Newton step of 1e-4 leaves 1e-8
        step_tol = max(self._step_tol, STEP_TOL_STAGE1) if update_beta else self._step_tol
        pd_tol = 1e-9 if update_beta else PIRLS_TOL
        u = np.zeros(self.q) if u0 is None else u0.copy()
        beta = beta.copy()
        fixed = self.X @ beta + self.offset
        eta = fixed + self.zu(u)
        mu, w, unit = self.working(eta)
        pd_old = float(unit.sum()) + float(u @ u)
        ok = math.isfinite(pd_old)
        it = 0
        for it in range(1, PIRLS_MAXIT + 1):  # noqa: B007  (it: reported in the Mode)
            # working response: eta - offset + (y - mu) / mu_eta  (mu_eta = w / (wt * dmu/deta))
            z = eta - self.offset + (self.y - mu) / self._mu_eta(eta, mu)
            wi = w
            if self._newton:         # Newton's step (the observed information): same mode, fewer steps
                wo = self.family.observed_weights(self.y, mu, eta, self.wt)  # type: ignore[attr-defined]
                if np.all(wo > 0):
                    z = eta - self.offset + w * (z - eta + self.offset) / wo
                    wi = wo
            try:
                L1, Ct, L2, _ = self.factor(wi, update_beta)
            except (np.linalg.LinAlgError, ValueError):
                ok = False
                break
            wz = wi * (z if update_beta else z - (fixed - self.offset))
            rhs = self.ztv(wz)
            if update_beta:
                rhs = np.concatenate([rhs, self.X.T @ wz])
            new = self.solve(L1, Ct, L2, rhs)
            cur = np.concatenate([u, beta]) if update_beta else u
            delta = new - cur
            step = 1.0
            for _ in range(MAX_HALVINGS):
                cand = cur + step * delta
                uc = cand[:self.q]
                fx = self.X @ cand[self.q:] + self.offset if update_beta else fixed
                eta_c = fx + self.zu(uc)
                with np.errstate(over="ignore", invalid="ignore"):   # a too-long step: halved
                    mu_c, w_c, unit = self.working(eta_c)
                    pd_c = float(unit.sum()) + float(uc @ uc)
                if math.isfinite(pd_c) and pd_c <= pd_old + 1e-10 * abs(pd_old):
                    break
                step *= 0.5
            else:
                break                    # no decrease: at the mode to rounding
            u = uc
            if update_beta:
                beta = cand[self.q:]
                fixed = fx
            eta, mu, w = eta_c, mu_c, w_c
            # converged in u (and beta), not just in the penalised deviance: log|L| depends on u
            # to first order, and for non-canonical links PIRLS converges only linearly
            moved = step * float(np.max(np.abs(delta))) if delta.size else 0.0
            done = (abs(pd_old - pd_c) < pd_tol * (0.1 + abs(pd_c))
                    and moved < step_tol * (1.0 + float(np.max(np.abs(cand)))))
            pd_old = pd_c
            if done:
                break
        if self.observed and self._kind == "other":
            wo = self.family.observed_weights(self.y, mu, eta, self.wt)   # type: ignore[attr-defined]
            if wo is not None:
                w = np.maximum(wo, 1e-300)
        try:
            L1, Ct, L2, ld = self.factor(w, update_beta)
        except (np.linalg.LinAlgError, ValueError):
            return Mode(u, beta, eta, mu, math.inf, math.inf, math.inf, False, it,
                        np.zeros((0, 1, 1)), np.zeros((0, 0)), None, w)
        dev = pd_old + self._const + ld
        return Mode(u, beta, eta, mu, ld, pd_old, dev if ok else math.inf, ok, it, L1, Ct, L2, w)
