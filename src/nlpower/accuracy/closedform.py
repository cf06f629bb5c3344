"""Closed-form power pieces of the accuracy planning tests (Card et al. 2020, App. E).

The normal model behind ``"mcnemar-normal"`` (Connor 1987), ``"lachenbruch"``
(Lachenbruch 1992, biostatUZH's ``sampleSizeMcNemar``) and
``"two-proportion"`` (R's ``power.prop.test``): ``delta_hat ~ N(delta,
var1 / n)``, rejection when ``|delta_hat| > z_{1-alpha/2} sqrt(var0 / n)``.
The test rules of :mod:`nlpower.accuracy.rules` say which variances a test
uses; :mod:`nlpower.accuracy.planning` solves them for delta or n.
"""

from __future__ import annotations

import math

from .. import _dist as stats
from .._choices import LachenbruchBound, LachenbruchFormula

__all__ = ["connor_n", "lachenbruch_discordance", "normal_model", "prop_variances", "z_crit"]


def z_crit(alpha: float) -> float:
    """``z_{1-alpha/2}``, the two-sided normal critical value."""
    return float(stats.norm.isf(alpha / 2.0))


def normal_model(n: float, delta: float, var0: float, var1: float,
                 alpha: float) -> tuple[float, float, float, float]:
    """(power, rejection rate, Type-M, Type-S) when ``delta_hat ~ N(delta, var1 / n)`` and the
    test rejects ``|delta_hat| > z_{1-alpha/2} sqrt(var0 / n)``.

    Power is the sign-correct tail (R's ``power.prop.test`` and Connor's formula);
    Type-M from ``E[X 1(X > t)] = mu Phi((mu - t)/s) + s phi((t - mu)/s)``.
    """
    mu = abs(delta)
    t = z_crit(alpha) * math.sqrt(var0 / n)
    if var1 <= 0.0:
        hit = 1.0 if mu > t else 0.0
        return hit, hit, (1.0 if hit else math.nan), (0.0 if hit else math.nan)
    s = math.sqrt(var1 / n)
    right = float(stats.norm.cdf((mu - t) / s))
    wrong = float(stats.norm.cdf((-t - mu) / s))
    reject = right + wrong
    if reject <= 0.0 or mu == 0.0:
        return right, reject, math.nan, math.nan
    e_right = mu * right + s * float(stats.norm.pdf((t - mu) / s))
    e_wrong = -mu * wrong + s * float(stats.norm.pdf((-t - mu) / s))
    return right, reject, (e_right + e_wrong) / (mu * reject), wrong / reject


def connor_n(delta: float, psi: float, alpha: float, target: float) -> float:
    """Connor's (1987) sample size at discordant share ``psi``."""
    zb = float(stats.norm.ppf(target))
    return (z_crit(alpha) * math.sqrt(psi) + zb * math.sqrt(max(psi - delta * delta, 0.0))) ** 2 \
        / (delta * delta)


def prop_variances(p1: float, p2: float) -> tuple[float, float]:
    """Null (pooled) and alternative variances of the difference of two proportions (x n)."""
    return (p1 + p2) * (2.0 - p1 - p2) / 2.0, p1 * (1.0 - p1) + p2 * (1.0 - p2)


def lachenbruch_discordance(baseline: float, delta: float, bound: LachenbruchBound,
                            formula: LachenbruchFormula = "biostatuzh") -> float:
    """Discordant share psi at Lachenbruch's (1992) lower / mid / upper bound.

    ``formula="connor"``: the exact ends and midpoint.  ``formula="biostatuzh"``:
    as ``sampleSizeMcNemar`` evaluates them -- the both-correct probability
    ``p11`` runs from ``min(a1, a2)`` down to ``a1 + a2 - 1`` in steps of 1e-4
    (R's ``seq``), the upper bound is the grid's last point and the middle its
    median element.  Below ``a1 + a2 = 1`` biostatUZH would let ``p11`` go
    negative; here the grid stops at 0 (the bound the accuracies allow).

    Examples
    --------
    WNLI (SOTA 94.5%) at a gain of 5.418 points, Table 9's Lachenbruch midpoint:

    >>> round(lachenbruch_discordance(0.945, 0.05418, "upper", "connor"), 6)
    0.05582
    >>> round(lachenbruch_discordance(0.945, 0.05418, "upper"), 6)
    0.05578
    """
    a1, a2 = baseline, baseline + delta
    lo = abs(delta)
    hi = min(a2, 1.0 - a1) + min(a1, 1.0 - a2)
    if formula == "connor":
        return {"lower": lo, "upper": hi, "mid": (lo + hi) / 2.0}[bound]
    top = min(a1, a2)
    steps = int(math.floor((top - max(a1 + a2 - 1.0, 0.0)) / 1e-4 + 1e-10))   # K; L = K + 1
    j = {"lower": steps + 1, "upper": 1, "mid": (steps + 2) // 2}[bound]         # 1-based, ascending
    p11 = top - (steps + 1 - j) * 1e-4
    return a1 + a2 - 2.0 * p11
