"""Kenward-Roger small-sample inference for fixed effects (pbkrtest semantics).

Kenward & Roger (1997, Biometrics 53, 983-997), as implemented by R's
pbkrtest (``vcovAdj``, ``KRmodcomp``, ``Lb_ddf``; Halekoh & Hoejsgaard 2014,
JSS 59(9)) and used by ``lmerTest``'s ``ddf = "Kenward-Roger"``:

* the marginal covariance ``Sigma = sum_r s_r G_r + sigma^2 I`` is linear in
  the variance parameters ``s_r`` (each term's variances and covariances,
  the residual variance last); ``G_r = Z_a Z_b' + Z_b Z_a'`` (``Z_a Z_a'`` on
  the diagonal) for columns ``a, b`` of a term, expanded by its levels;
* ``Phi = (X' Sigma^-1 X)^-1``, ``P_r = X' Sigma^-1 G_r Sigma^-1 X``,
  ``Q_rs = X' Sigma^-1 G_r Sigma^-1 G_s Sigma^-1 X``;
* ``W = 2 IE2^-1`` with ``IE2_rs = tr(Pt G_r Pt G_s)``, ``Pt`` the REML
  projection ``Sigma^-1 - Sigma^-1 X Phi X' Sigma^-1`` (the inverse expected
  REML information of ``s``);
* adjusted covariance ``Phi_A = Phi + 2 Phi U Phi``,
  ``U = sum_rs W_rs (Q_rs - P_r Phi P_s)`` (no second-derivative term: Sigma
  is linear in ``s``);
* for a contrast ``L`` (``q`` rows): ``A1, A2, B, g, c1..c3, rho`` as in
  pbkrtest's ``.KR_adjust``; denominator df ``m = 4 + (q+2)/(q rho - 1)``,
  F scaling ``m (1 - A2/q) / (m - 2)``, ``F = scaling * Wald / q`` with the
  Wald statistic on ``Phi_A``.  For one row (a t test) the df is
  ``Lb_ddf``'s and ``t = L beta / sqrt(L Phi_A L')``, as lmerTest's
  ``contest1D(ddf = "Kenward-Roger")``.

Dense ``n x n`` algebra: meant for the small designs where the test matters
(a few workers; ``n`` up to a few thousand).  Evaluated at a REML fit (as
pbkrtest requires).  Checked against pbkrtest / lmerTest 3.1-3 in
``tests/lmm/test_kenward_roger.py`` (reference: ``tests/reference/kenward_roger.R``).

In balanced designs (sleepstudy, a fully crossed worker x item x system
design) ``Phi_A = Phi`` and the KR df equals the Satterthwaite df (pbkrtest
gives 17.000 and 6.4229 on the two reference cases, lmerTest's Satterthwaite the same),
so KR cannot correct the Satterthwaite test's excess Type I error there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla

from .. import _dist as stats
from ..errors import InputError
from .structure import ModelSpec


@dataclass(frozen=True, eq=False)
class KRState:
    """What the KR tests need at one REML fit: ``Phi``, ``Phi_A``, ``P_r`` and ``W``."""

    beta: np.ndarray
    Phi: np.ndarray
    PhiA: np.ndarray
    P: tuple[np.ndarray, ...]
    W: np.ndarray

    def _a12(self, Theta: np.ndarray) -> tuple[float, float]:
        U = [Theta @ self.Phi @ Pr @ self.Phi for Pr in self.P]
        tr = np.array([np.trace(u) for u in U])
        A1 = float(tr @ self.W @ tr)
        k = len(U)
        A2 = 0.0
        for i in range(k):
            for j in range(k):
                A2 += self.W[i, j] * float(np.sum(U[i] * U[j].T))
        return A1, A2

    def ddf_scaling(self, L: Any) -> tuple[float, float]:
        """KR denominator df and F scaling for the contrast rows ``L`` (pbkrtest ``.KR_adjust``)."""
        Lm = np.atleast_2d(np.asarray(L, dtype=float))
        q = int(np.linalg.matrix_rank(Lm))
        Theta = Lm.T @ np.linalg.solve(Lm @ self.Phi @ Lm.T, Lm)
        A1, A2 = self._a12(Theta)
        B = (A1 + 6.0 * A2) / (2.0 * q)
        g = ((q + 1) * A1 - (q + 4) * A2) / ((q + 2) * A2)
        den = 3.0 * q + 2.0 * (1.0 - g)
        c1, c2, c3 = g / den, (q - g) / den, (q + 2 - g) / den
        V0 = 1.0 + c1 * B
        V1 = 1.0 - c2 * B
        V2 = 1.0 - c3 * B
        if abs(V0) < 1e-10:
            V0 = 0.0
        x, y = 1.0 - A2 / q, V1
        ratio = 1.0 if abs(x) < 1e-14 and abs(y) < 1e-14 else x / y
        rho = (1.0 / q) * ratio**2 * V0 / V2
        df2 = 4.0 + (q + 2) / (q * rho - 1.0)
        scaling = 1.0 if abs(df2 - 2.0) < 1e-2 else df2 * (1.0 - A2 / q) / (df2 - 2.0)
        return float(df2), float(scaling)

    def t_test(self, L: Any) -> tuple[float, float, float, float]:
        """``(estimate, se, df, p)`` of ``L beta`` (one row), as lmerTest's ``contest1D``."""
        Lv = np.asarray(L, dtype=float).ravel()
        est = float(Lv @ self.beta)
        se = math.sqrt(float(Lv @ self.PhiA @ Lv))
        df, _ = self.ddf_scaling(Lv)
        p = float(2.0 * stats.t.sf(abs(est / se), df))
        return est, se, df, p

    def f_test(self, L: Any) -> tuple[float, float, float, float]:
        """``(F, ddf, scaling, p)`` of ``L beta = 0``, as pbkrtest's ``KRmodcomp``."""
        Lm = np.atleast_2d(np.asarray(L, dtype=float))
        q = int(np.linalg.matrix_rank(Lm))
        df2, scaling = self.ddf_scaling(Lm)
        d = Lm @ self.beta
        wald = float(d @ np.linalg.solve(Lm @ self.PhiA @ Lm.T, d))
        F = scaling * wald / q
        return F, df2, scaling, float(stats.f.sf(F, q, df2))


def _expanded(codes: np.ndarray, z: np.ndarray, m: int) -> np.ndarray:
    n = codes.size
    out = np.zeros((n, m))
    out[np.arange(n), codes] = z
    return out


def covariance_basis(spec: ModelSpec) -> list[tuple[np.ndarray, np.ndarray]]:
    """``G_r = A_r B_r'`` factors per variance parameter (pbkrtest's order within a term:
    column-major lower triangle), residual excluded.  ``||`` terms are separate terms."""
    out = []
    for t in spec.re_terms:
        m = len(t.levels)
        Zt = np.asarray(t.Z, dtype=float)
        cols = [_expanded(t.codes, Zt[:, a], m) for a in range(Zt.shape[1])]
        q = len(cols)
        for j in range(q):
            for i in range(j, q):
                if i == j:
                    out.append((cols[i], cols[i]))
                else:
                    out.append((np.hstack([cols[i], cols[j]]), np.hstack([cols[j], cols[i]])))
    return out


def kr_state(spec: ModelSpec, beta: Any, term_covs: list[np.ndarray], sigma: float,
             basis: list[tuple[np.ndarray, np.ndarray]] | None = None) -> KRState:
    """KR quantities at a REML fit.

    Parameters
    ----------
    spec : ModelSpec
        The model structure (``spec.re_terms`` in formula order).
    beta : fixed effects of the REML fit.
    term_covs : list of (q, q) arrays
        Each term's covariance (``sigma^2 Lambda Lambda'``), in ``spec.re_terms`` order.
    sigma : residual SD of the REML fit.
    basis : optional
        :func:`covariance_basis` of ``spec`` (precomputed once per structure).
    """
    if len(term_covs) != len(spec.re_terms):
        raise InputError(f"term_covs must have one matrix per random-effects term "
                         f"({len(spec.re_terms)}); got {len(term_covs)}.")
    basis = covariance_basis(spec) if basis is None else basis
    X = np.asarray(spec.X, dtype=float)
    n = X.shape[0]
    s = []
    for C in term_covs:
        C = np.atleast_2d(np.asarray(C, dtype=float))
        q = C.shape[0]
        for j in range(q):
            for i in range(j, q):
                s.append(C[i, j])
    Sigma = sigma**2 * np.eye(n)
    for sr, (A, B) in zip(s, basis, strict=True):
        Sigma += sr * (A @ B.T)
    cf = sla.cho_factor(Sigma, lower=True)
    SiX = sla.cho_solve(cf, X)
    Phi = np.linalg.inv(X.T @ SiX)
    Pt = sla.cho_solve(cf, np.eye(n)) - SiX @ Phi @ SiX.T
    # residual parameter: G = I, A = B = I
    fac: list[tuple[np.ndarray, np.ndarray]] = list(basis) + [(np.eye(n), np.eye(n))]
    k = len(fac)
    XA = [SiX.T @ A for A, _ in fac]                 # X' Sigma^-1 A_r
    BX = [B.T @ SiX for _, B in fac]                 # B_r' Sigma^-1 X
    P = tuple(XA[r] @ BX[r] for r in range(k))
    SiA = [sla.cho_solve(cf, A) for A, _ in fac]     # Sigma^-1 A_r
    PtA = [Pt @ A for A, _ in fac]
    IE2 = np.empty((k, k))
    U = np.zeros_like(Phi)
    for r in range(k):
        Br = fac[r][1]
        for c in range(r, k):
            Bc = fac[c][1]
            IE2[r, c] = IE2[c, r] = float(np.sum((Br.T @ PtA[c]) * (Bc.T @ PtA[r]).T))
    ev = np.linalg.eigvalsh(IE2)
    W = 2.0 * (np.linalg.inv(IE2) if np.min(np.abs(ev)) > 1e-10 else np.linalg.pinv(IE2))
    for r in range(k):
        for c in range(k):
            Q = XA[r] @ (fac[r][1].T @ SiA[c]) @ BX[c]
            U += W[r, c] * (Q - P[r] @ Phi @ P[c])
    PhiA = Phi + 2.0 * Phi @ U @ Phi
    PhiA = 0.5 * (PhiA + PhiA.T)
    return KRState(np.asarray(beta, dtype=float), Phi, PhiA, P, W)


__all__ = ["KRState", "covariance_basis", "kr_state"]
