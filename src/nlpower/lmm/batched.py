"""Many LMM fits on one structure at once: models with a single scalar random term.

A power study refits one model to thousands of simulated responses.  When
the random part is one term with one column -- ``(1 | g)``, ``(0 + x | g)``,
``(1 | a:b)`` -- ``Lambda = theta I`` and ``Z'Z`` is diagonal, so lme4's
profiled deviance is a function of a few sufficient statistics per group
and ``theta`` (Bates et al. 2015, JSS 67(1), section 3).  With ``z`` the
term's column, ``D_g = sum_g z^2``, ``S_g = sum_g z x`` (the rows of group
``g``) and ``w_g = theta^2 / (1 + theta^2 D_g)``:

* ``R_X'R_X = A(theta) = X'X - sum_g w_g S_g S_g'``;
* ``beta = A^{-1} (X'y - sum_g w_g (z'y)_g S_g)``;
* penalised RSS ``r^2 = y'y - sum_g w_g (z'y)_g^2 - b'beta``;
* ``log|L_Z|^2 = sum_g log(1 + theta^2 D_g)``,

and the ML deviance and REML criterion are lme4's formulas of these.  Every
replicate's ``theta`` is found at once: a grid around the start (the truth)
brackets the minimum, golden-section search narrows the bracket and
parabolic steps polish ``theta`` (to ~1e-9).  The Satterthwaite df use
the Richardson rules of :mod:`nlpower.mixed.fdiff` over the rows of
replicates (as :mod:`nlpower.lmm.satterthwaite` at one fit), the
Kenward-Roger covariance and df the closed forms of pbkrtest's quantities
for this covariance (``Sigma_g = sigma^2 (I + theta^2 z z')``: every
``X' Sigma^-1 G Sigma^-1 ... X`` is a sum over groups of ``S_g S_g'``
times a power of ``e_g = 1 / (1 + theta^2 D_g)``).

These are the numbers the native engine's ``refit`` and the power layer's
per-replicate tests give (to the optimiser's tolerance):
``tests/lmm/test_batched.py`` compares them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..mixed.fdiff import richardson_hessian, richardson_jacobian
from .satterthwaite import EIGEN_TOL
from .structure import ModelSpec

__all__ = ["BatchFits", "ScalarLmm"]

#: the grid brackets theta in theta0 * 2^k, k = GRID_LO..GRID_HI (and 0)
GRID_LO, GRID_HI = -12, 6
#: golden-section steps (the bracket shrinks to 0.618^GOLDEN_ITER ~ 1e-6 of its width) and
#: parabolic steps from central differences after them (theta to ~1e-9)
GOLDEN_ITER = 28
POLISH_ITER = 2
SINGULAR_TOL = 1e-4          # lme4's isSingular
_INVPHI = (math.sqrt(5.0) - 1.0) / 2.0


@dataclass(frozen=True)
class BatchFits:
    """The fits of ``R`` responses (arrays over replicates).

    ``ok`` is False where the fit has no finite optimum inside the search
    range (a constant response, ``theta`` beyond the grid): such a replicate
    is for the one-at-a-time refit.
    """

    theta: np.ndarray          # (R,)
    beta: np.ndarray           # (R, p)
    sigma: np.ndarray          # (R,)
    vcov: np.ndarray           # (R, p, p)
    deviance: np.ndarray       # (R,)
    REML: bool
    ok: np.ndarray             # (R,) bool

    @property
    def singular(self) -> np.ndarray:
        return self.theta < SINGULAR_TOL


@dataclass(frozen=True)
class _Suff:
    yy: np.ndarray       # (R,)
    Xy: np.ndarray       # (R, p)
    Zy: np.ndarray       # (R, G)


class ScalarLmm:
    """One structure with a single scalar random term, fitted to many responses.

    Examples
    --------
    >>> import pandas as pd
    >>> from nlpower.lmm.frame import model_frame
    >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    >>> spec = model_frame("Reaction ~ Days + (1 | Subject)", d)
    >>> fits = ScalarLmm(spec).fit(spec.y[None, :], REML=True)
    >>> round(float(fits.theta[0] * fits.sigma[0]), 2), round(float(fits.sigma[0]), 2)  # lme4
    (37.12, 30.99)
    """

    def __init__(self, spec: ModelSpec):
        if not self.supports(spec):
            raise ValueError("ScalarLmm needs exactly one random-effects term with one column.")
        t = spec.re_terms[0]
        X = np.asarray(spec.X, dtype=float)
        self.n, self.p = X.shape
        z = np.asarray(t.Z, dtype=float)[:, 0]
        codes = np.asarray(t.codes, dtype=np.intp)
        G = int(t.n_levels)
        self.X = X
        self.Zt = sp.csr_matrix((z, (codes, np.arange(self.n))), shape=(G, self.n))
        self.D = np.bincount(codes, weights=z * z, minlength=G)
        self.S = np.asarray(self.Zt @ X)                                 # (G, p)
        self.SS = np.einsum("gi,gj->gij", self.S, self.S).reshape(G, -1)
        self.XtX = X.T @ X

    @staticmethod
    def supports(spec: ModelSpec) -> bool:
        """One random-effects term with one column (``(1 | g)``, ``(0 + x | g)``)."""
        return len(spec.re_terms) == 1 and spec.re_terms[0].q == 1

    # -- the profiled deviance --------------------------------------------------------
    def stats(self, Y: np.ndarray) -> _Suff:
        Y = np.asarray(Y, dtype=float)
        return _Suff(np.einsum("ri,ri->r", Y, Y), Y @ self.X,
                     np.asarray(self.Zt @ Y.T).T)

    def _A(self, w: np.ndarray) -> np.ndarray:
        return self.XtX[None] - (w @ self.SS).reshape(-1, self.p, self.p)

    def _profile(self, th: np.ndarray, s: _Suff
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(r^2, beta, A, log|L_Z|^2)`` at ``theta`` per replicate."""
        t2 = (th * th)[:, None]
        w = t2 / (1.0 + t2 * self.D)
        A = self._A(w)
        b = s.Xy - (w * s.Zy) @ self.S
        beta = np.linalg.solve(A, b[:, :, None])[:, :, 0]
        r2 = s.yy - np.einsum("rg,rg->r", w, s.Zy * s.Zy) - np.einsum("rj,rj->r", b, beta)
        return r2, beta, A, np.log1p(t2 * self.D).sum(axis=1)

    def deviance(self, th: np.ndarray, s: _Suff, REML: bool) -> np.ndarray:
        """lme4's profiled ML deviance (or REML criterion) at ``theta`` per replicate."""
        r2, _, A, ldL = self._profile(th, s)
        n, p = self.n, self.p
        with np.errstate(invalid="ignore", divide="ignore"):
            if REML:
                sign, ldA = np.linalg.slogdet(A)
                dev = ldL + ldA + (n - p) * (1.0 + np.log(2.0 * math.pi * r2 / (n - p)))
                return np.where((sign > 0) & (r2 > 0), dev, np.inf)
            dev = ldL + n * (1.0 + np.log(2.0 * math.pi * r2 / n))
        return np.where(r2 > 0, dev, np.inf)

    # -- the fit ------------------------------------------------------------------------
    def fit(self, Y: np.ndarray, *, REML: bool, theta0: float | None = None) -> BatchFits:
        """Fit every row of ``Y`` (lme4's optimum of the profiled criterion over ``theta >= 0``)."""
        s = self.stats(Y)
        R = s.yy.shape[0]
        t0 = float(theta0) if theta0 is not None and theta0 > 0 else 1.0
        grid = np.concatenate([[0.0], t0 * 2.0 ** np.arange(GRID_LO, GRID_HI + 1)])
        m = grid.size
        sg = _Suff(np.repeat(s.yy, m), np.repeat(s.Xy, m, axis=0), np.repeat(s.Zy, m, axis=0))
        dev = self.deviance(np.tile(grid, R), sg, REML).reshape(R, m)
        j = np.argmin(dev, axis=1)
        ok = np.isfinite(dev[np.arange(R), j]) & (j < m - 1)
        lo, hi = grid[np.maximum(j - 1, 0)], grid[np.minimum(j + 1, m - 1)]
        th, f = self._golden(lo, hi, s, REML)
        # the bracket's ends are candidates too (theta = 0 is lme4's boundary)
        for cand in (lo, grid[j]):
            fc = self.deviance(cand, s, REML)
            th, f = np.where(fc < f, cand, th), np.minimum(fc, f)
        th = self._polish(th, f, lo, hi, t0, s, REML)
        r2, beta, A, ldL = self._profile(th, s)
        sigma2 = r2 / (self.n - self.p if REML else self.n)
        with np.errstate(invalid="ignore"):
            vcov = sigma2[:, None, None] * np.linalg.inv(A)
        devf = self.deviance(th, s, REML)
        # a residual at rounding level: a constant (or exactly fitted) response has no fit
        ok &= np.isfinite(devf) & (r2 > 1e-10 * s.yy)
        return BatchFits(th, beta, np.sqrt(np.maximum(sigma2, 0.0)), vcov, devf, REML, ok)

    def _golden(self, lo: np.ndarray, hi: np.ndarray, s: _Suff, REML: bool
                ) -> tuple[np.ndarray, np.ndarray]:
        a, b = lo.astype(float).copy(), hi.astype(float).copy()
        c = b - _INVPHI * (b - a)
        d = a + _INVPHI * (b - a)
        fc, fd = self.deviance(c, s, REML), self.deviance(d, s, REML)
        for _ in range(GOLDEN_ITER):
            left = fc < fd                      # the minimum is in [a, d]
            b = np.where(left, d, b)
            a = np.where(left, a, c)
            new = np.where(left, b - _INVPHI * (b - a), a + _INVPHI * (b - a))
            fn = self.deviance(new, s, REML)
            c, d, fc, fd = (np.where(left, new, d), np.where(left, c, new),
                            np.where(left, fn, fd), np.where(left, fc, fn))
        return np.where(fc < fd, c, d), np.minimum(fc, fd)

    def _polish(self, th: np.ndarray, f: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                t0: float, s: _Suff, REML: bool) -> np.ndarray:
        """Parabolic steps through central differences (kept where the criterion falls)."""
        for _ in range(POLISH_ITER):
            h = 1e-4 * np.maximum(th, 1e-3 * t0)
            fp, fm = self.deviance(th + h, s, REML), self.deviance(th - h, s, REML)
            curv = fp - 2.0 * f + fm
            with np.errstate(invalid="ignore", divide="ignore"):
                new = th - h * (fp - fm) / (2.0 * curv)
            new = np.clip(np.where(curv > 0, new, th), lo, hi)
            fn = self.deviance(new, s, REML)
            better = fn < f
            th, f = np.where(better, new, th), np.where(better, fn, f)
        return th

    # -- Satterthwaite ------------------------------------------------------------------
    def _dev_vp(self, vp: np.ndarray, s: _Suff, REML: bool) -> np.ndarray:
        """lmerTest's ``devfun_vp``: the criterion at ``(theta, sigma)``, ``beta`` profiled."""
        r2, _, A, ldL = self._profile(vp[:, 0], s)
        s2 = vp[:, 1] ** 2
        dev = ldL + r2 / s2 + self.n * np.log(2.0 * math.pi * s2)
        if REML:
            dev = dev + np.linalg.slogdet(A)[1] - self.p * np.log(2.0 * math.pi * s2)
        return dev

    def _cov_vp(self, vp: np.ndarray) -> np.ndarray:
        t2 = (vp[:, 0] ** 2)[:, None]
        A = self._A(t2 / (1.0 + t2 * self.D))
        return (vp[:, 1] ** 2)[:, None, None] * np.linalg.inv(A)

    def satterthwaite_df(self, fits: BatchFits, Y: np.ndarray, L: np.ndarray) -> np.ndarray:
        """lmerTest's Satterthwaite df of ``L beta`` per replicate (:mod:`.satterthwaite`).

        ``L``: one contrast (df of shape ``(R,)``) or one per row (``(R, k)``).
        """
        s = self.stats(Y)
        vp = np.column_stack([fits.theta, fits.sigma])
        H = richardson_hessian(lambda x: self._dev_vp(x, s, fits.REML), vp)
        lam, V = np.linalg.eigh(0.5 * (H + np.swapaxes(H, 1, 2)))
        inv = np.where(lam > EIGEN_TOL, 1.0 / np.where(lam > EIGEN_TOL, lam, 1.0), 0.0)
        Acov = 2.0 * np.einsum("rik,rk,rjk->rij", V, inv, V)
        jac = richardson_jacobian(self._cov_vp, vp)                  # (R, k, p, p)
        Lm = np.atleast_2d(np.asarray(L, dtype=float))
        var = np.einsum("ci,rij,cj->rc", Lm, fits.vcov, Lm)
        g = np.einsum("ci,rkij,cj->rck", Lm, jac, Lm)
        den = np.einsum("rck,rkl,rcl->rc", g, Acov, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            df = np.where(den > 0.0, 2.0 * var * var / den, np.inf)
        return df[:, 0] if np.ndim(L) == 1 else df

    # -- Kenward-Roger ------------------------------------------------------------------
    def kenward_roger(self, fits: BatchFits, L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """pbkrtest's adjusted standard error and df of ``L beta`` at REML fits, per replicate."""
        p = self.p
        s2 = (fits.sigma ** 2)[:, None, None]
        t2 = (fits.theta ** 2)[:, None]
        e = 1.0 / (1.0 + t2 * self.D)                           # (R, G)
        w = t2 * e

        def gsum(f: np.ndarray) -> np.ndarray:                  # sum_g f_g S_g S_g'
            return (f @ self.SS).reshape(-1, p, p)

        XtX = self.XtX[None]
        Phi = s2 * np.linalg.inv(XtX - gsum(w))
        P = [gsum(e * e) / s2**2, (XtX - gsum(w * (1.0 + e))) / s2**2]
        Q = [[gsum(e**3 * self.D) / s2**3, gsum(e**3) / s2**3], [None, None]]
        Q[1][0] = Q[0][1]
        Q[1][1] = (XtX - gsum(w * (1.0 + e + e * e))) / s2**3
        s4 = s2[:, 0, 0] ** 2
        T = np.empty((e.shape[0], 2, 2))
        T[:, 0, 0] = ((e * self.D) ** 2).sum(axis=1) / s4
        T[:, 0, 1] = T[:, 1, 0] = (e * e * self.D).sum(axis=1) / s4
        T[:, 1, 1] = (self.n - (1.0 - e * e).sum(axis=1)) / s4
        IE2 = np.empty_like(T)
        tr = lambda M: np.einsum("rii->r", M)  # noqa: E731
        for r in range(2):
            for c in range(2):
                IE2[:, r, c] = (T[:, r, c] - tr(Phi @ Q[r][c]) - tr(Phi @ Q[c][r])
                                + tr(Phi @ P[r] @ Phi @ P[c]))
        W = 2.0 * _inv_or_pinv(IE2)
        U = np.zeros_like(Phi)
        for r in range(2):
            for c in range(2):
                U += W[:, r, c, None, None] * (Q[r][c] - P[r] @ Phi @ P[c])
        PhiA = Phi + 2.0 * Phi @ U @ Phi
        PhiA = 0.5 * (PhiA + np.swapaxes(PhiA, 1, 2))
        L = np.asarray(L, dtype=float)
        se = np.sqrt(np.einsum("i,rij,j->r", L, PhiA, L))
        return se, _kr_df1(Phi, P, W, L)


def _inv_or_pinv(M: np.ndarray) -> np.ndarray:
    """``inv`` per matrix, ``pinv`` where an eigenvalue is ~0 (as :func:`kr_state`)."""
    small = np.min(np.abs(np.linalg.eigvalsh(M)), axis=1) <= 1e-10
    out = np.linalg.inv(np.where(small[:, None, None], np.eye(M.shape[1]), M))
    if small.any():
        out[small] = np.linalg.pinv(M[small])
    return out


def _kr_df1(Phi: np.ndarray, P: list[np.ndarray], W: np.ndarray, L: np.ndarray) -> np.ndarray:
    """pbkrtest's ``.KR_adjust`` denominator df for one contrast row (q = 1), per replicate."""
    LPL = np.einsum("i,rij,j->r", L, Phi, L)
    Theta = np.outer(L, L)[None] / LPL[:, None, None]
    Us = [Theta @ Phi @ Pr @ Phi for Pr in P]
    trs = np.stack([np.einsum("rii->r", u) for u in Us], axis=1)
    A1 = np.einsum("rk,rkl,rl->r", trs, W, trs)
    A2 = sum(W[:, i, j] * np.einsum("rab,rba->r", Us[i], Us[j])
             for i in range(2) for j in range(2))
    q = 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        B = (A1 + 6.0 * A2) / (2.0 * q)
        g = ((q + 1) * A1 - (q + 4) * A2) / ((q + 2) * A2)
        den = 3.0 * q + 2.0 * (1.0 - g)
        c1, c2, c3 = g / den, (q - g) / den, (q + 2 - g) / den
        V0 = 1.0 + c1 * B
        V0 = np.where(np.abs(V0) < 1e-10, 0.0, V0)
        V1, V2 = 1.0 - c2 * B, 1.0 - c3 * B
        x = 1.0 - A2 / q
        ratio = np.where((np.abs(x) < 1e-14) & (np.abs(V1) < 1e-14), 1.0, x / V1)
        rho = (1.0 / q) * ratio**2 * V0 / V2
        return np.asarray(4.0 + (q + 2) / (q * rho - 1.0))
