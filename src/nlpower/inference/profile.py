"""Profile-likelihood intervals of a Gaussian fit (the numerics of ``confint(method="profile")``).

Variance parameters live on lme4's scale ``vp = (SDs and correlations per
term in theta order, sigma)``; ``vp -> (theta, sigma)`` is the Cholesky
factor of each term's correlation matrix scaled by the SDs over sigma.  The
deviance at ``(theta, sigma)`` with ``beta`` profiled out is assembled from
the engine's blocked factor (``log|L|^2``, the penalised residual sum of
squares and, for REML, ``log|R_X|^2``), exactly as for the Satterthwaite df.
For one parameter fixed at ``v`` the others are minimised (L-BFGS-B with
bounds: SDs >= 0, correlations in [-1, 1], sigma > 0); the interval ends are
the roots of ``zeta(v) = -/+ z`` (Brent), or the parameter's bound when the
profile does not reach ``z`` before it (lme4 reports the bound too).

A fixed effect ``beta_j`` is profiled by refitting (ML) the model without
column ``j`` to ``y - x_j b`` on one prepared structure.

A GLMM is profiled as lme4 profiles it: every parameter -- the variance
parameters on the SD/correlation scale and the fixed effects -- on the joint
Laplace (or adaptive Gauss-Hermite) deviance of ``(theta, beta)``, the
others minimised.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from .. import _dist

__all__ = ["profile_intervals"]

#: the inner minimisations start at the optimum's other parameters; a deviance change of
#: 1e-9 moves zeta near 1.96 by ~2.5e-10
_TIGHT = {"ftol": 1e-13, "gtol": 1e-9, "maxiter": 2000}


def _vp_to_theta(vp: np.ndarray, qs: list[int]) -> tuple[np.ndarray, float] | None:
    sigma = float(vp[-1])
    if sigma <= 0.0:
        return None
    theta: list[float] = []
    k = 0
    for q in qs:
        n = q * (q + 1) // 2
        block = vp[k:k + n]
        k += n
        sd = np.zeros(q)
        C = np.eye(q)
        idx = 0
        for j in range(q):
            for i in range(j, q):
                if i == j:
                    sd[i] = block[idx]
                else:
                    C[i, j] = C[j, i] = block[idx]
                idx += 1
        if np.any(sd < 0):
            return None
        try:
            R = np.linalg.cholesky(C + 1e-14 * np.eye(q)) if q > 1 else np.ones((1, 1))
        except np.linalg.LinAlgError:
            return None
        L = (sd / sigma)[:, None] * R
        theta += [float(L[i, j]) for j in range(q) for i in range(j, q)]
    return np.array(theta), sigma


class _Deviance:
    """``vp -> deviance`` (ML or REML) of the native Gaussian structure at its own response."""

    def __init__(self, model: Any, REML: bool, qs: list[int]):
        self.model, self.REML, self.qs = model, REML, qs
        model._set_y(model.spec.y)

    def __call__(self, vp: np.ndarray) -> float:
        ts = _vp_to_theta(vp, self.qs)
        if ts is None:
            return math.inf
        theta, sigma = ts
        f = self.model.ev.factor(theta)
        if not f.ok:
            return math.inf
        s2 = sigma * sigma
        n, p = self.model.blocks.n, self.model.blocks.p
        dev = f.ldL2 + f.r2 / s2 + n * math.log(2.0 * math.pi * s2)
        if self.REML:
            dev += f.ldRX2 - p * math.log(2.0 * math.pi * s2)
        return float(dev)


def _bounds(terms: pd.Series) -> list[tuple[float | None, float | None]]:
    out: list[tuple[float | None, float | None]] = []
    for t in terms:
        if str(t).startswith("cor_"):
            out.append((-1.0, 1.0))
        elif t == "sigma":
            out.append((1e-10, None))
        else:
            out.append((0.0, None))
    return out


def _roots(zeta: Any, v_hat: float, z: float, step: float, lo_bound: float | None,
           hi_bound: float | None) -> tuple[float, float]:
    """The two crossings ``zeta(v) = -z`` (below ``v_hat``) and ``+z`` (above)."""
    from scipy.optimize import brentq

    ends = []
    for sign in (-1.0, 1.0):
        bound = lo_bound if sign < 0 else hi_bound
        target = sign * z
        a, h = v_hat, step
        found = False
        for _ in range(60):
            b = a + sign * h
            if bound is not None and (b - bound) * sign >= 0:
                b = float(bound)
                if (zeta(b) - target) * sign < 0:   # the profile never reaches z: the bound
                    ends.append(b)
                    found = True
                    break
            if (zeta(b) - target) * sign >= 0:
                lo_, hi_ = (a, b) if a < b else (b, a)
                ends.append(brentq(lambda v, c=target: zeta(v) - c, lo_, hi_,
                                   xtol=1e-7 * max(1.0, abs(v_hat))))
                found = True
                break
            a, h = b, h * 1.6
        if not found:
            ends.append(math.nan)
    return ends[0], ends[1]


def _var_intervals(fit: Any, model: Any, est: pd.DataFrame, n_var: int, z: float
                   ) -> list[tuple[float, float]]:
    from scipy.optimize import minimize

    qs = [t.q for t in model.layout.terms]
    dev = _Deviance(model, False, qs)    # lme4 profiles the ML deviance, REML fits too
    vp_hat = est["estimate"].to_numpy()[:n_var].astype(float)
    bounds = _bounds(est["term"].iloc[:n_var])
    # the ML optimum on this scale (the fit may be REML): the profile's base
    base = minimize(dev, vp_hat, method="L-BFGS-B", bounds=bounds)
    vp_hat, d_hat = (base.x, float(base.fun)) if base.fun < dev(vp_hat) else (vp_hat, dev(vp_hat))
    out = []
    for k in range(n_var):
        others = [i for i in range(n_var) if i != k]
        start = {"x": vp_hat[others].copy()}

        def zeta(v: float, k: int = k, others: list[int] = others, start: dict = start) -> float:
            def f(x: np.ndarray) -> float:
                full = vp_hat.copy()
                full[others], full[k] = x, v
                return dev(full)
            if not others:
                d = f(np.zeros(0))
            else:
                r = minimize(f, start["x"], method="L-BFGS-B", bounds=[bounds[i] for i in others],
                             options=_TIGHT)
                d = float(r.fun)
            return math.copysign(math.sqrt(max(d - d_hat, 0.0)), v - vp_hat[k])

        lo_b, hi_b = bounds[k]
        step = max(abs(vp_hat[k]) * 0.3, 1e-3) if lo_b != -1.0 else 0.2
        out.append(_roots(zeta, float(vp_hat[k]), z, step, lo_b, hi_b))
    return out


def _fixed_intervals(fit: Any, model: Any, z: float) -> list[tuple[float, float]]:
    from ..lmm.engine import native_gaussian

    spec = model.spec
    full = model.refit(spec.y, REML=False, start=fit.theta)
    d_hat = float(full.deviance)
    se = np.sqrt(np.diag(full.vcov_beta))
    out = []
    for j in range(spec.X.shape[1]):
        keep = [i for i in range(spec.X.shape[1]) if i != j]
        sub = native_gaussian(replace(spec, X=spec.X[:, keep],
                                      fixef_names=tuple(spec.fixef_names[i] for i in keep)))
        xj = spec.X[:, j]
        b_hat = float(full.beta[j])

        def zeta(b: float, sub: Any = sub, xj: np.ndarray = xj, b_hat: float = b_hat) -> float:
            d = float(sub.refit(spec.y - xj * b, REML=False, start=full.theta).deviance)
            return math.copysign(math.sqrt(max(d - d_hat, 0.0)), b - b_hat)

        out.append(_roots(zeta, b_hat, z, float(se[j]), None, None))
    return out


def _glmm_intervals(fit: Any, model: Any, est: pd.DataFrame, z: float
                    ) -> list[tuple[float, float]]:
    """GLMM: every parameter profiled on the joint (variance parameters, beta) deviance."""
    from scipy.optimize import minimize

    qs = [t.q for t in model.layout.terms]
    x_hat = est["estimate"].to_numpy(dtype=float)
    n_var = len(x_hat) - int(model.p)
    bounds = _bounds(est["term"].iloc[:n_var]) + [(None, None)] * int(model.p)

    def dev(x: np.ndarray) -> float:
        ts = _vp_to_theta(np.concatenate([x[:n_var], [1.0]]), qs)
        if ts is None:
            return math.inf
        v = float(model.deviance(ts[0], x[n_var:], nAGQ=fit.nAGQ))
        return v if math.isfinite(v) else math.inf

    d_hat = dev(x_hat)
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    out = []
    for k in range(len(x_hat)):
        others = [i for i in range(len(x_hat)) if i != k]
        start = {"x": x_hat[others].copy()}

        def zeta(v: float, k: int = k, others: list[int] = others, start: dict = start) -> float:
            def f(x: np.ndarray) -> float:
                full = x_hat.copy()
                full[others], full[k] = x, v
                return dev(full)
            r = minimize(f, start["x"], method="L-BFGS-B", bounds=[bounds[i] for i in others],
                         options=_TIGHT)
            return math.copysign(math.sqrt(max(float(r.fun) - d_hat, 0.0)), v - x_hat[k])

        lo_b, hi_b = bounds[k]
        step = (float(se[k - n_var]) if k >= n_var else
                0.2 if lo_b == -1.0 else max(abs(x_hat[k]) * 0.3, 1e-3))
        out.append(_roots(zeta, float(x_hat[k]), z, step, lo_b, hi_b))
    return out


def profile_intervals(fit: Any, model: Any, est: pd.DataFrame, level: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper profile limits of every row of ``est`` (variance parameters, then fixed)."""
    z = float(_dist.norm_ppf(0.5 + level / 2.0))
    if not hasattr(fit, "sigma"):          # a GLMM: the joint deviance of lme4's stage 2
        with np.errstate(invalid="ignore", over="ignore"):
            ends = _glmm_intervals(fit, model, est, z)
        return np.array([e[0] for e in ends]), np.array([e[1] for e in ends])
    p = int(model.spec.X.shape[1])
    n_var = len(est) - p
    try:
        with np.errstate(invalid="ignore", over="ignore"):   # inf deviance off the boundary
            ends = _var_intervals(fit, model, est, n_var, z) + _fixed_intervals(fit, model, z)
    finally:
        model._set_y(model.spec.y)
    return np.array([e[0] for e in ends]), np.array([e[1] for e in ends])
