"""The exact unconditional McNemar test (Suissa & Shuster 1991).

Card et al. (2020, App. E.2.1) computed the regression column of Table 9 with
MESS's power for this test.  On ``n`` paired items with ``b`` items only the
new model gets right and ``c`` only the old one, the statistic is

    Z = (b - c) / sqrt(b + c)      (0 when b + c = 0)

and the two-sided p-value is the largest probability, over the nuisance
parameter -- the discordance probability ``psi`` (under H0 both off-diagonal
cells have probability ``psi / 2``) -- of a table at least as extreme:

    p = sup_{psi in [0, 1]} P_psi(|Z| >= |z_obs|)
      = sup_psi sum_d Binom(d; n, psi) P(|2X - d| >= |z_obs| sqrt(d) | X ~ Binom(d, 1/2)).

The tail is a binomial CDF per number of discordant items ``d``, so
``P_psi`` is one matrix-vector product over a grid of ``psi``.  The supremum
is taken on a grid of 1,000 values (as in Fagerland, Lydersen & Laake's
reference code) and refined with a bounded Brent search around the best grid
point, which the tests check against brute-force enumeration of every table.

Because the p-value only grows as ``|z_obs|`` shrinks, the level-``alpha``
test rejects iff ``|Z| >= z_crit(n, alpha)``; :func:`critical_z` finds
``z_crit`` by bisection and :func:`unconditional_thresholds` turns it into the
same ``min(b, c) <= c_d`` form the other McNemar variants use, so power is
exact enumeration as for them (:mod:`nlpower.accuracy.power`).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import optimize, stats

__all__ = ["critical_z", "unconditional_pvalue", "unconditional_thresholds"]

#: Grid of the nuisance parameter before the Brent refinement.
_N_GRID = 1000
#: Binomial weights beyond this many SDs of D ~ Binom(n, psi) are dropped (< 1e-20 mass).
_SDS = 10.0


def _tail_given_d(n: int, z: float) -> np.ndarray:
    """``g[d] = P(|2X - d| >= z sqrt(d))`` for ``X ~ Binom(d, 1/2)``, ``d = 0..n`` (``g[0] = 0``).

    ``|2X - d| >= z sqrt(d)`` iff ``min(X, d - X) <= (d - z sqrt(d)) / 2``; a tiny
    slack keeps tables whose statistic equals ``z`` in the region.
    """
    d = np.arange(n + 1, dtype=float)
    m = np.floor((d - z * np.sqrt(d)) / 2.0 + 1e-9)
    with np.errstate(invalid="ignore"):
        one = stats.binom.cdf(m, d, 0.5)
    # both tails; when 2m >= d every table is in (only possible for z <= 0)
    g = np.where(2.0 * m >= d, 1.0, 2.0 * one)
    g = np.where(m < 0, 0.0, g)
    g[0] = 1.0 if z <= 0 else 0.0
    return np.minimum(g, 1.0)


def _size_at(psi: float, n: int, g: np.ndarray) -> float:
    if psi <= 0.0:
        return float(g[0])
    if psi >= 1.0:
        return float(g[n])
    lo, w = _window(n, psi)
    return float(w @ g[lo:lo + w.size])


def _window(n: int, psi: float) -> tuple[int, np.ndarray]:
    """Binomial(n, psi) weights on ``d`` within ``_SDS`` SDs of the mean: (first d, weights)."""
    sd = math.sqrt(n * psi * (1.0 - psi))
    lo = max(int(n * psi - _SDS * sd) - 1, 0)
    hi = min(int(n * psi + _SDS * sd) + 2, n)
    return lo, stats.binom.pmf(np.arange(lo, hi + 1), n, psi)


@lru_cache(maxsize=8)
def _grid_weights(n: int) -> tuple[np.ndarray, tuple[tuple[int, np.ndarray], ...]]:
    """The nuisance grid and its binomial windows, computed once per ``n``."""
    grid = np.linspace(0.0, 1.0, _N_GRID + 1)
    inner = tuple(_window(n, float(p)) for p in grid[1:-1])
    return grid, inner


def _sup_size(n: int, g: np.ndarray) -> tuple[float, float]:
    """(sup_psi P_psi(reject), argmax psi) for the region with per-d tail ``g``."""
    grid, inner = _grid_weights(n)
    vals = np.empty(grid.size)
    vals[0], vals[-1] = g[0], g[n]
    for i, (lo, w) in enumerate(inner, start=1):
        vals[i] = w @ g[lo:lo + w.size]
    k = int(np.argmax(vals))
    best, arg = float(vals[k]), float(grid[k])
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, _N_GRID)]
    res = optimize.minimize_scalar(lambda p: -_size_at(p, n, g), bounds=(a, b),
                                   method="bounded", options={"xatol": 1e-10})
    if -res.fun > best:
        best, arg = float(-res.fun), float(res.x)
    return min(best, 1.0), arg


def unconditional_pvalue(b: int, c: int, n: int) -> float:
    """Two-sided exact unconditional McNemar p-value (Suissa & Shuster 1991).

    Parameters
    ----------
    b, c : int
        Items only the new model gets right, items only the old one gets right.
    n : int
        All paired items (concordant ones included): the test is unconditional.

    Examples
    --------
    Bentur et al. (2009) via Fagerland, Lydersen & Laake (2013): 1 and 7
    discordant pairs among 21:

    >>> round(unconditional_pvalue(1, 7, 21), 3)   # published: 0.035
    0.035
    """
    d = b + c
    if d == 0 or b == c:
        return 1.0
    z = abs(b - c) / math.sqrt(d)
    return _sup_size(n, _tail_given_d(n, z))[0]


@lru_cache(maxsize=256)
def critical_z(n: int, alpha: float) -> float:
    """Smallest ``z`` with ``sup_psi P_psi(|Z| >= z) <= alpha`` on ``n`` items (inf: never rejects).

    The size is a step function of ``z``; bisection to 1e-10 puts ``z_crit`` just
    above the last table statistic whose region is too large.
    """
    top = math.sqrt(n)                           # the largest |Z| any table reaches
    if _sup_size(n, _tail_given_d(n, top))[0] > alpha:
        return math.inf
    lo, hi = 0.0, top                            # size(lo) > alpha >= size(hi)
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        if _sup_size(n, _tail_given_d(n, mid))[0] <= alpha:
            hi = mid
        else:
            lo = mid
    return hi


def unconditional_thresholds(n: int, alpha: float, d_max: int | None = None) -> np.ndarray:
    """``c_d`` for ``d = 0..d_max``: the level-``alpha`` test on ``n`` items rejects iff
    ``min(b, c) <= c_d`` (-1: never), as :func:`~nlpower.accuracy.mcnemar.rejection_thresholds`.
    """
    d_max = n if d_max is None else min(int(d_max), n)
    z = critical_z(int(n), float(alpha))
    d = np.arange(d_max + 1, dtype=float)
    if math.isinf(z):
        return np.full(d.shape, -1, dtype=np.int64)
    m = np.floor((d - z * np.sqrt(d)) / 2.0 + 1e-9)
    m = np.where(2.0 * m >= d, np.ceil(d / 2.0) - 1.0, m)   # ties (Z = 0) never reject
    out = np.maximum(m, -1.0).astype(np.int64)
    out[0] = -1
    return out
