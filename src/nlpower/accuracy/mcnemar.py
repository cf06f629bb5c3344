"""McNemar's test, vectorised: p-values and rejection regions for every test variant.

With ``b`` items only the new model gets right, ``c`` items only the old one
gets right and ``d = b + c`` discordant items, every variant's two-sided
p-value depends on ``m = min(b, c)`` and ``d`` and grows with ``m``:

* ``"exact"``: the exact conditional (binomial) test, ``min(1, 2 F(m; d, 1/2))``
  -- statsmodels' ``mcnemar(table)`` default, what Card et al.'s notebook ran;
* ``"mid-p"``: ``2 [F(m; d, 1/2) - f(m; d, 1/2) / 2]`` (Fagerland, Lydersen &
  Laake 2013);
* ``"chi2"``: ``(b - c)^2 / d`` against chi-square(1);
* ``"chi2-cc"``: ``(|b - c| - 1)^2 / d`` (Edwards' continuity correction);
* ``"exact-unconditional"``: Suissa & Shuster's (1991) exact unconditional
  test, which also needs the number of items ``n`` (the concordant ones too):
  :mod:`nlpower.accuracy.unconditional`.

A tie ``b == c`` has p-value 1 in every variant (statsmodels' ``chi2-cc``
gives ``chi2.sf(1/d)`` there, which matters only for alpha above 0.3).
So for each ``d`` the test rejects exactly when ``m <= c_d``;
:func:`rejection_thresholds` finds ``c_d`` for all ``d`` at once (vectorised
bisection on the p-value itself, so thresholds and p-values never disagree).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._choices import McNemarTest, check_choice
from .._validation import check_int
from ..errors import InputError
from .unconditional import unconditional_pvalue, unconditional_thresholds

__all__ = ["McNemarResult", "mcnemar", "mcnemar_pvalue", "rejection_thresholds"]


def mcnemar_pvalue(b: Any, c: Any, test: McNemarTest = "exact", *,
                   n: int | None = None) -> np.ndarray:
    """Two-sided McNemar p-values for discordant counts ``b`` (only new right) and ``c``.

    Vectorised over arrays of counts.  Matches ``statsmodels.stats.contingency_tables.mcnemar``
    (``exact=True``; ``exact=False, correction=False``; ``exact=False, correction=True``)
    except at ties, where every variant here gives 1.  ``test="exact-unconditional"``
    needs ``n``, the number of paired items.

    Examples
    --------
    >>> float(mcnemar_pvalue(10, 2))   # 2 * P(Binom(12, 1/2) <= 2)
    0.03857421875
    """
    b = np.asarray(b, dtype=float)
    c = np.asarray(c, dtype=float)
    for name, v in (("b", b), ("c", c)):
        if not np.all(np.isfinite(v) & (v >= 0)):
            raise InputError(f"{name} must hold counts >= 0 (finite numbers); got {v.tolist()!r}.")
    if test == "exact-unconditional":
        if n is None:
            raise InputError("test='exact-unconditional' needs n, the number of paired items "
                             "(concordant ones included): pass n=....")
        flat = [unconditional_pvalue(int(x), int(y), int(n))
                for x, y in zip(b.ravel(), c.ravel(), strict=True)]
        return np.asarray(flat, dtype=float).reshape(b.shape)
    return _pvalue(np.minimum(b, c), b + c, test)


def _pvalue(m: np.ndarray, d: np.ndarray, test: str) -> np.ndarray:
    """p-value from the smaller discordant count ``m`` and the number discordant ``d``."""
    m = np.asarray(m, dtype=float)
    d = np.asarray(d, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if test == "exact":
            p = 2.0 * stats.binom.cdf(m, d, 0.5)
        elif test == "mid-p":
            p = 2.0 * (stats.binom.cdf(m, d, 0.5) - 0.5 * stats.binom.pmf(m, d, 0.5))
        elif test == "chi2":
            p = stats.chi2.sf((d - 2.0 * m) ** 2 / d, 1)
        elif test == "chi2-cc":
            p = stats.chi2.sf(np.maximum(d - 2.0 * m - 1.0, 0.0) ** 2 / d, 1)
        else:  # pragma: no cover - validated at the boundary
            raise ValueError(test)
    p = np.where((d > 0) & (2.0 * m < d), p, 1.0)
    return np.minimum(p, 1.0)


def rejection_thresholds(d_max: int, test: McNemarTest = "exact", alpha: float = 0.05, *,
                         n: int | None = None) -> np.ndarray:
    """``c_d`` for ``d = 0..d_max``: the test rejects iff ``min(b, c) <= c_d`` (-1: never).

    Read-only array, cached per (test, alpha, size bucket).  The exact unconditional
    test's thresholds depend on the number of items ``n`` as well (pass ``n=``).
    """
    if test == "exact-unconditional":
        if n is None:
            raise InputError("test='exact-unconditional' needs n=<number of paired items>.")
        return unconditional_thresholds(int(n), float(alpha), d_max)
    size = 1 << max(int(d_max), 1).bit_length()      # bucket: reuse across nearby n
    return _thresholds(test, float(alpha), size)[: d_max + 1]


@lru_cache(maxsize=32)
def _thresholds(test: str, alpha: float, size: int) -> np.ndarray:
    return thresholds_at(np.arange(size + 1), test, alpha)


def thresholds_at(d: np.ndarray, test: str, alpha: float) -> np.ndarray:
    """``c_d`` for the given numbers discordant only (a window of a huge n: no 0..d_max array)."""
    d = np.asarray(d, dtype=np.int64)
    lo = np.full(d.shape, -1, dtype=np.int64)           # p(-1) is "0": always <= alpha
    hi = np.maximum((d - 1) // 2, -1)                   # largest m with m < d/2
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi + 1) // 2
        ok = _pvalue(mid, d, test) <= alpha
        lo = np.where(active & ok, mid, lo)
        hi = np.where(active & ~ok, mid - 1, hi)
    lo.setflags(write=False)
    return lo


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on an observed table (``statistic`` as statsmodels reports it)."""

    statistic: float
    pvalue: float
    only_new: int
    only_old: int
    test: str

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"only_new": self.only_new, "only_old": self.only_old,
                              "statistic": self.statistic, "pvalue": self.pvalue,
                              "test": self.test}])

    def summary(self) -> str:
        return (f"McNemar test ({self.test}): {self.only_new} items only the new model gets right, "
                f"{self.only_old} only the old; statistic {self.statistic:.4g}, "
                f"p-value {self.pvalue:.4g}")

    def __repr__(self) -> str:
        return (f"McNemarResult(statistic={self.statistic:.4g}, pvalue={self.pvalue:.4g}, "
                f"test={self.test!r})")


def mcnemar(only_new: int, only_old: int, *, test: McNemarTest = "exact",
            n: int | None = None) -> McNemarResult:
    """McNemar's test of the discordant counts (only new right, only old right).

    ``statistic`` is ``min(b, c)`` for the binomial variants, the chi-square
    statistic for ``"chi2"``/``"chi2-cc"``, as in statsmodels, and Suissa &
    Shuster's ``Z = (b - c) / sqrt(b + c)`` for ``"exact-unconditional"``, which
    also needs ``n``, all paired items.

    Examples
    --------
    >>> mcnemar(30, 15).pvalue < 0.05
    True
    >>> round(mcnemar(1, 7, test="exact-unconditional", n=21).pvalue, 3)
    0.035
    """
    b = check_int("only_new", only_new, min=0)
    c = check_int("only_old", only_old, min=0)
    test = check_choice("test", test, McNemarTest)
    d = b + c
    if test == "exact-unconditional":
        if n is None:
            raise InputError("test='exact-unconditional' is unconditional on the concordant "
                             "items: pass n=<all paired items>.")
        n = check_int("n", n, min=d)
        statistic = 0.0 if d == 0 else (b - c) / d ** 0.5
        return McNemarResult(statistic, unconditional_pvalue(b, c, n), b, c, test)
    if test in ("exact", "mid-p"):
        statistic = float(min(b, c))
    elif d == 0:
        statistic = 0.0
    else:
        corr = 1.0 if test == "chi2-cc" else 0.0
        statistic = max(abs(b - c) - corr, 0.0) ** 2 / d
    return McNemarResult(statistic, float(mcnemar_pvalue(b, c, test)), b, c, test)
