"""Satterthwaite denominator degrees of freedom for fixed-effect contrasts.

lmerTest's method (Kuznetsova, Brockhoff & Christensen 2017, JSS 82(13),
section 3.2; ``lmerTest:::devfun_vp``, ``get_covbeta``, ``contest1D``):
the variance parameters are ``varpar = (theta, sigma)``;
``V(varpar) = sigma^2 (R_X'R_X)^{-1}(theta)`` is the covariance of
``beta-hat``; ``A = 2 H^{-1}`` where ``H`` is the Hessian of the deviance
(ML fit) or REML criterion (REML fit) at fixed ``(theta, sigma)`` with
``beta`` profiled out; for a contrast ``L``

    df = 2 (L'VL)^2 / (g' A g),   g_k = L' (dV/d varpar_k) L.

Derivatives are numerical with Richardson extrapolation (4 levels, step
halved each time), as numDeriv's ``hessian``/``jacobian`` that lmerTest
uses, with first step ``1e-4 * max(|x|, 1)`` (numDeriv: ``1e-4 |x|``, which
is noise-dominated for small parameters) -- checked against lmerTest 3.1-3.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

EIGEN_TOL = 1e-8   # lmerTest's tol for the eigenvalues of the Hessian


def _steps(x: np.ndarray, d: float = 1e-3) -> np.ndarray:
    # numDeriv uses |d x| (+ eps near 0); a floor of d keeps the first step
    # far enough above rounding noise for elements like a small correlation
    # parameter (|x| ~ 0.01 gives numDeriv steps ~1e-6 and noisy curvatures).
    return d * np.maximum(np.abs(x), 1.0)


def _richardson(a: np.ndarray, r: int, v: float) -> np.ndarray:
    """Richardson extrapolation over the last axis (step halved each level)."""
    a = a.copy()
    for m in range(1, r):
        f = v ** (2 * m)
        a = (a[..., 1:] * f - a[..., :-1]) / (f - 1.0)
    return a[..., 0]


def hessian(f: Callable[[np.ndarray], float], x: np.ndarray, *, r: int = 4,
            v: float = 2.0) -> np.ndarray:
    """numDeriv-style Hessian (``genD`` with Richardson extrapolation)."""
    x = np.asarray(x, dtype=float)
    k = x.size
    f0 = f(x)
    h0 = _steps(x)
    H = np.zeros((k, k))
    diag = np.zeros((k, r))
    for i in range(k):
        h = h0.copy()
        for m in range(r):
            e = np.zeros(k)
            e[i] = h[i]
            diag[i, m] = (f(x + e) - 2.0 * f0 + f(x - e)) / (h[i] ** 2)
            h = h / v
    for i in range(k):
        H[i, i] = _richardson(diag[i], r, v)
    for i in range(k):
        for j in range(i):
            h = h0.copy()
            a = np.zeros(r)
            for m in range(r):
                e = np.zeros(k)
                e[i] = h[i]
                e[j] = h[j]
                a[m] = ((f(x + e) - 2.0 * f0 + f(x - e)
                         - H[i, i] * h[i] ** 2 - H[j, j] * h[j] ** 2)
                        / (2.0 * h[i] * h[j]))
                h = h / v
            H[i, j] = H[j, i] = _richardson(a, r, v)
    return H


def jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, *, r: int = 4,
             v: float = 2.0) -> np.ndarray:
    """numDeriv-style Jacobian of an array-valued ``f``: shape ``(k, *f(x).shape)``."""
    x = np.asarray(x, dtype=float)
    k = x.size
    h0 = _steps(x)
    out = []
    for i in range(k):
        h = h0[i]
        vals = []
        for _ in range(r):
            e = np.zeros(k)
            e[i] = h
            vals.append((f(x + e) - f(x - e)) / (2.0 * h))
            h = h / v
        arr = np.stack(vals, axis=-1)
        out.append(_richardson(arr, r, v))
    return np.stack(out)


@dataclass(frozen=True, eq=False)
class SatterthwaiteState:
    """``V``, its Jacobian and ``A = 2 H^{-1}`` at one fit, for any contrast."""

    vcov: np.ndarray          # (p, p)
    jac: np.ndarray           # (k, p, p)
    A: np.ndarray             # (k, k)

    def df(self, L: np.ndarray) -> float:
        L = np.asarray(L, dtype=float)
        var = float(L @ self.vcov @ L)
        g = np.einsum("i,kij,j->k", L, self.jac, L)
        den = float(g @ self.A @ g)
        if not den > 0.0:
            return math.inf
        return 2.0 * var * var / den


def satterthwaite_state(dev_vp: Callable[[np.ndarray], float],
                        cov_vp: Callable[[np.ndarray], np.ndarray],
                        varpar: np.ndarray) -> SatterthwaiteState:
    """Compute the pieces from the deviance and ``Var(beta)`` as functions of varpar."""
    H = hessian(dev_vp, varpar)
    # lmerTest (as_lmerModLT): invert H on its eigenvalues > tol only, so a
    # boundary (singular) fit with a flat direction still gets finite df
    evals, evecs = np.linalg.eigh((H + H.T) / 2.0)
    pos = evals > EIGEN_TOL
    A = 2.0 * (evecs[:, pos] / evals[pos]) @ evecs[:, pos].T
    jac = jacobian(cov_vp, varpar)
    return SatterthwaiteState(vcov=cov_vp(varpar), jac=jac, A=A)
