"""Efficacy and futility boundaries from spending functions, and stage-wise probabilities.

Efficacy boundaries spend alpha (:mod:`.spending`) under the null, ignoring
any futility boundary (futility is *non-binding*: stopping for futility is
allowed, not required, and Type I stays at most alpha either way).  Futility
boundaries are given on the z scale or spend beta under the drift that gives
the design its power, with the last futility boundary equal to the last
efficacy one (rpact's ``typeBetaSpending`` with ``bindingFutility = FALSE``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

from .recursion import Density, start
from .spending import spend

__all__ = ["StageProbabilities", "beta_spending_futility", "efficacy_bounds", "stage_probabilities"]

_Z_MAX = 38.0


def _solve(f, lo: float, hi: float) -> float:
    return float(optimize.brentq(f, lo, hi, xtol=1e-13, rtol=1e-14, maxiter=500))


def efficacy_bounds(t: np.ndarray, alpha: float, sided: int, kind: str,
                    gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """Efficacy boundaries (z) and the cumulative alpha spent at each look."""
    sides = 2.0 if sided == 2 else 1.0
    cum = sides * spend(kind, t, alpha / sides, gamma)     # two-sided: alpha/2 on each side
    if t[-1] >= 1.0:
        cum[-1] = alpha
    dens, bounds, prev = start(), [], 0.0
    for k, tk in enumerate(t):
        target = cum[k] - prev
        if target <= 0:
            c = math.inf
        else:
            c = _solve(lambda c, d=dens, tk=tk, target=target: sides * d.exit_up(tk, 0.0, c) - target,
                       -_Z_MAX if sided == 1 else 0.0, _Z_MAX)
        bounds.append(c)
        prev = cum[k]
        dens = dens.advance(tk, 0.0, -c if sided == 2 else -math.inf, c)
    return np.array(bounds), cum


def _futility_given_drift(t: np.ndarray, upper: np.ndarray, beta_cum: np.ndarray,
                          eta: float) -> tuple[np.ndarray, Density]:
    dens, lower = start(), []
    for k in range(len(t) - 1):
        target = beta_cum[k] - (beta_cum[k - 1] if k else 0.0)
        if target <= 0:
            lk = -math.inf
        else:
            f = lambda lk, d=dens, tk=t[k], g=target: d.exit_down(tk, eta, lk) - g  # noqa: E731
            lk = _solve(f, -_Z_MAX, _Z_MAX) if f(_Z_MAX) > 0 else _Z_MAX
        lk = min(lk, upper[k])
        lower.append(lk)
        dens = dens.advance(t[k], eta, lk, upper[k])
    return np.array(lower), dens


def beta_spending_futility(t: np.ndarray, upper: np.ndarray, beta: float, kind: str,
                           gamma: float) -> tuple[np.ndarray, float]:
    """Futility boundaries (z, last = last efficacy) spending beta, and the drift they imply."""
    beta_cum = spend(kind, t, beta, gamma)

    def gap(eta: float) -> float:
        lower, dens = _futility_given_drift(t, upper, beta_cum, eta)
        return dens.exit_down(t[-1], eta, upper[-1]) - (beta - beta_cum[-2])

    eta = _solve(gap, 0.0, 2 * _Z_MAX)
    lower, _ = _futility_given_drift(t, upper, beta_cum, eta)
    return np.append(lower, upper[-1]), eta


@dataclass(frozen=True)
class StageProbabilities:
    """Probabilities of stopping at each look under one drift."""

    efficacy: np.ndarray      # reject the null on the upper side (the drift's sign when > 0)
    wrong_sign: np.ndarray    # reject on the lower side (two-sided designs only)
    futility: np.ndarray      # stop for futility (at the last look: do not reject)
    drift: float

    @property
    def stop(self) -> np.ndarray:
        return self.efficacy + self.wrong_sign + self.futility

    @property
    def reject(self) -> float:
        """Probability of rejecting on either side."""
        return float(self.efficacy.sum() + self.wrong_sign.sum())


def stage_probabilities(t: np.ndarray, upper: np.ndarray, lower: np.ndarray | None, sided: int,
                        eta: float) -> StageProbabilities:
    """Stopping probabilities when the futility boundaries ``lower`` (z) are followed.

    With ``lower=None`` only efficacy stops the study (two-sided: either side).
    The last look stops either way: what does not reject is counted as futility.
    """
    k_max = len(t)
    low = np.full(k_max, -math.inf) if lower is None else np.asarray(lower, float)
    if sided == 2:
        low = -upper
    dens = start()
    eff, wrong, fut = np.zeros(k_max), np.zeros(k_max), np.zeros(k_max)
    for k, tk in enumerate(t):
        eff[k] = dens.exit_up(tk, eta, upper[k])
        down = dens.exit_down(tk, eta, low[k])
        if sided == 2:
            wrong[k], down = down, 0.0
        if k == k_max - 1:
            fut[k] = max(float(dens.mass.sum()) - eff[k] - wrong[k], 0.0)
        else:
            fut[k] = down
            dens = dens.advance(tk, eta, low[k], upper[k])
    return StageProbabilities(eff, wrong, fut, eta)


def fixed_drift(alpha: float, beta: float, sided: int) -> float:
    """Drift of a single-look test with power ``1 - beta`` (``z_{alpha/sided} + z_beta``)."""
    return float(stats.norm.isf(alpha / sided) + stats.norm.isf(beta))
