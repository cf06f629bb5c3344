"""Multiplicity adjustments of a family of two-sided tests, and the studentized range.

``tukey`` needs the distribution of the studentized range of ``k`` means,
which ``scipy.special`` does not provide (``scipy.stats.studentized_range``
exists but costs the ``scipy.stats`` import and is slow): :func:`ptukey_sf`
integrates it numerically -- for ``df = inf``

    P(Q <= q) = k int phi(z) [Phi(z) - Phi(z - q)]^(k-1) dz,

and for finite ``df`` that probability at ``q s`` averaged over ``s``, the
square root of a chi-squared over its df (Gauss-Legendre quadrature on
``log s``).  Agreement with R's ``ptukey`` is tested to 1e-7.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dist

__all__ = ["ADJUST", "adjust_pvalues", "ptukey_sf"]

ADJUST = ("tukey", "holm", "bonferroni", "fdr", "none")

_Z_NODES, _Z_WEIGHTS = np.polynomial.legendre.leggauss(160)
_S_NODES, _S_WEIGHTS = np.polynomial.legendre.leggauss(120)


def _range_cdf_inf(q: np.ndarray, k: int) -> np.ndarray:
    """``P(Q <= q)`` of the range of ``k`` standard normals (vector ``q``)."""
    lo, hi = -8.5, 8.5
    z = 0.5 * (hi - lo) * _Z_NODES + 0.5 * (hi + lo)
    w = 0.5 * (hi - lo) * _Z_WEIGHTS
    phi = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    inner = _dist.norm_cdf(z[None, :]) - _dist.norm_cdf(z[None, :] - q[:, None])
    return np.clip(k * (np.maximum(inner, 0.0) ** (k - 1) * phi * w).sum(axis=1), 0.0, 1.0)


def _range_cdf(q: float, k: int, df: float) -> float:
    if q <= 0.0:
        return 0.0
    if not math.isfinite(df) or df > 5e4:
        return float(_range_cdf_inf(np.array([q]), k)[0])
    # s = sqrt(chi2_df / df): integrate over u = log s between tiny tail quantiles
    s_lo = math.sqrt(float(_dist.chi2_ppf(1e-13, df)) / df)
    s_hi = math.sqrt(float(_dist.chi2_isf(1e-13, df)) / df)
    a, b = math.log(s_lo), math.log(s_hi)
    u = 0.5 * (b - a) * _S_NODES + 0.5 * (b + a)
    w = 0.5 * (b - a) * _S_WEIGHTS
    s = np.exp(u)
    # density of s times ds/du = s
    from scipy.special import gammaln
    logf = (math.log(2.0) + (df / 2.0) * math.log(df / 2.0) - float(gammaln(df / 2.0))
            + df * u - df * s * s / 2.0)
    dens = np.exp(logf)
    return float(np.clip((dens * _range_cdf_inf(q * s, k) * w).sum(), 0.0, 1.0))


def ptukey_sf(q: Any, k: int, df: Any) -> np.ndarray:
    """Upper tail of the studentized range of ``k`` means with ``df`` (``inf``: known sigma).

    R's ``ptukey(q, k, df, lower.tail = FALSE)``; vectorised over ``q`` and ``df``.

    Examples
    --------
    >>> round(float(ptukey_sf(3.5, 3, 20)), 4)
    0.0559
    """
    qa, da = np.broadcast_arrays(np.asarray(q, dtype=float), np.asarray(df, dtype=float))
    out = np.array([1.0 - _range_cdf(float(x), int(k), float(d))
                    for x, d in zip(qa.ravel(), da.ravel(), strict=True)])
    return np.clip(out.reshape(qa.shape), 0.0, 1.0)


def adjust_pvalues(t: np.ndarray, df: np.ndarray, method: str, n_means: int) -> np.ndarray:
    """Adjusted two-sided p-values of the family of tests with statistics ``t`` (emmeans).

    ``tukey``: the studentized range of ``n_means`` means at ``sqrt(2)|t|``;
    ``holm``, ``bonferroni``, ``fdr`` (Benjamini-Hochberg): R's ``p.adjust``
    of the unadjusted p-values; ``none``: those.
    """
    t, df = np.asarray(t, dtype=float), np.asarray(df, dtype=float)
    if method == "tukey":
        return ptukey_sf(math.sqrt(2.0) * np.abs(t), n_means, df)
    p = 2.0 * np.asarray(_dist.t_sf(np.abs(t), df), dtype=float)
    m = p.size
    if method == "none" or m == 0:
        return p
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    order = np.argsort(p, kind="stable")
    ps = p[order]
    if method == "holm":
        adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * ps))
    else:   # fdr: Benjamini-Hochberg
        adj = np.minimum(1.0, np.minimum.accumulate((m / np.arange(m, 0, -1)) * ps[::-1])[::-1])
    out = np.empty(m)
    out[order] = adj
    return out
