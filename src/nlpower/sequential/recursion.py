"""Crossing probabilities of a group-sequential test by numerical integration.

The canonical joint distribution (Jennison & Turnbull 2000, ch. 3): the
B-value ``W_k = Z_k sqrt(t_k)`` at information fractions ``t_1 < ... < t_K``
is a Brownian motion with drift ``eta`` (``eta = theta sqrt(I_max)``), so its
increments are independent ``N(eta (t_k - t_{k-1}), t_k - t_{k-1})``.  The
sub-density of ``W_k`` on the continuation region is propagated look by look
(ch. 19's recursion) with Simpson's rule on a grid fine against the
increment's SD, and each look's exit probabilities are integrals of normal
tails against it.  Grids are truncated 8.5 SDs from the mean, where the
normal tail is below 1e-17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Density", "start"]

_SD_RANGE = 8.5
_POINTS_PER_SD = 32
_CHUNK = 512


def _simpson(lo: float, hi: float, n_per_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Points and Simpson weights on [lo, hi] (an odd number of points)."""
    m = max(int(math.ceil((hi - lo) * n_per_sd / 2)), 1)
    x = np.linspace(lo, hi, 2 * m + 1)
    h = (hi - lo) / (2 * m)
    w = np.full(2 * m + 1, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    return x, w * h / 3


@dataclass(frozen=True)
class Density:
    """Sub-density of ``W`` at fraction ``t`` on the continuation region, as point masses.

    ``mass`` is the density times the Simpson weight at each point ``w``; its
    sum is the probability of not having stopped so far.
    """

    t: float
    w: np.ndarray
    mass: np.ndarray

    def _z(self, bound: float, t: float, eta: float) -> np.ndarray:
        delta = t - self.t
        return (bound * math.sqrt(t) - self.w - eta * delta) / math.sqrt(delta)

    def exit_up(self, t: float, eta: float, upper: float) -> float:
        """P(continue so far and ``Z(t) >= upper``)."""
        return float(np.dot(self.mass, stats.norm.sf(self._z(upper, t, eta))))

    def exit_down(self, t: float, eta: float, lower: float) -> float:
        """P(continue so far and ``Z(t) <= lower``)."""
        if lower == -math.inf:
            return 0.0
        return float(np.dot(self.mass, stats.norm.cdf(self._z(lower, t, eta))))

    def advance(self, t: float, eta: float, lower: float, upper: float) -> Density:
        """The sub-density at ``t`` of paths that continue at ``t`` (``lower < Z(t) < upper``)."""
        delta = t - self.t
        sd = math.sqrt(delta)
        mean, spread = eta * t, _SD_RANGE * math.sqrt(t)
        lo = max(lower * math.sqrt(t), mean - spread) if lower > -math.inf else mean - spread
        hi = min(upper * math.sqrt(t), mean + spread) if upper < math.inf else mean + spread
        if hi <= lo:
            return Density(t, np.zeros(1), np.zeros(1))
        v, weights = _simpson(lo, hi, _POINTS_PER_SD / sd)
        dens = np.empty(v.size)
        for s in range(0, v.size, _CHUNK):
            z = (v[s:s + _CHUNK, None] - self.w[None, :] - eta * delta) / sd
            dens[s:s + _CHUNK] = np.exp(-0.5 * z * z) @ self.mass
        dens /= sd * math.sqrt(2 * math.pi)
        return Density(t, v, dens * weights)


def start() -> Density:
    """``W(0) = 0`` with probability 1."""
    return Density(0.0, np.zeros(1), np.ones(1))
