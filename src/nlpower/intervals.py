"""Intervals shared by every power result: Monte Carlo proportions and exact values.

A power estimate always carries its uncertainty (STYLE 4): a simulated power
is a binomial proportion with a Wilson interval; an exact (enumerated or
closed-form) power has a zero-width interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["ConfidenceInterval", "mc_se", "wilson_ci"]


#: Normal quantiles of the usual levels, bit for bit ``scipy.special.ndtri`` (= ``norm.ppf``),
#: so an interval at 95% imports no scipy (the first call of a fast function stays fast).
_Z = {0.975: 1.959963984540054}


def _z_quantile(q: float) -> float:
    if q in _Z:
        return _Z[q]
    from scipy import special  # other levels: scipy.special, imported on first use

    return float(special.ndtri(q))


def wilson_ci(k: int, n: int, confidence_level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials (scipy's ``method='wilson'``)."""
    if n <= 0:
        return (math.nan, math.nan)
    z = _z_quantile(0.5 + confidence_level / 2.0)
    p = k / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # the interval always contains p (rounding could leave it just outside at k = 0 or n)
    return (min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half)))


@dataclass(frozen=True)
class ConfidenceInterval:
    """A (low, high) interval, like scipy's ``ConfidenceInterval``."""

    low: float
    high: float

    def __iter__(self) -> Any:
        return iter((self.low, self.high))

    def __repr__(self) -> str:
        return f"ConfidenceInterval(low={self.low:.4g}, high={self.high:.4g})"



def mc_se(p: float, n: int) -> float:
    """Monte Carlo standard error ``sqrt(p (1 - p) / n)`` of a proportion (NaN when n = 0)."""
    if n <= 0 or not math.isfinite(p):
        return math.nan
    return math.sqrt(p * (1.0 - p) / n)
