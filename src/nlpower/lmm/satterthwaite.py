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
uses, with first step ``1e-3 * max(|x|, 1)`` (numDeriv: ``d |x|``, which is
noise-dominated for small parameters): the Richardson rules of
:mod:`nlpower.mixed.fdiff` -- checked against lmerTest 3.1-3.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..mixed.fdiff import richardson_hessian, richardson_jacobian

EIGEN_TOL = 1e-8   # lmerTest's tol for the eigenvalues of the Hessian


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
    H = richardson_hessian(dev_vp, varpar)
    # lmerTest (as_lmerModLT): invert H on its eigenvalues > tol only, so a
    # boundary (singular) fit with a flat direction still gets finite df
    evals, evecs = np.linalg.eigh((H + H.T) / 2.0)
    pos = evals > EIGEN_TOL
    A = 2.0 * (evecs[:, pos] / evals[pos]) @ evecs[:, pos].T
    jac = richardson_jacobian(cov_vp, varpar)
    return SatterthwaiteState(vcov=cov_vp(varpar), jac=jac, A=A)
