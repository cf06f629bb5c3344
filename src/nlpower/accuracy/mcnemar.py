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
Each variant is a rule of :mod:`nlpower.accuracy.rules` (its p-value,
statistic and thresholds); these functions validate and look the rule up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from .._choices import McNemarTest, check_choice
from .._validation import check_int
from ..errors import InputError
from .rules import ConditionalMcNemar, McNemarRule, get_accuracy_test

__all__ = ["McNemarResult", "mcnemar", "mcnemar_pvalue", "rejection_thresholds"]


def _rule(test: Any) -> McNemarRule:
    return cast(McNemarRule, get_accuracy_test(check_choice("test", test, McNemarTest)))


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
    return _rule(test).pvalue(b, c, n=n)


def rejection_thresholds(d_max: int, test: McNemarTest = "exact", alpha: float = 0.05, *,
                         n: int | None = None) -> np.ndarray:
    """``c_d`` for ``d = 0..d_max``: the test rejects iff ``min(b, c) <= c_d`` (-1: never).

    Read-only array, cached per (test, alpha, size bucket).  The exact unconditional
    test's thresholds depend on the number of items ``n`` as well (pass ``n=``).
    """
    return _rule(test).thresholds(d_max, alpha, n=n)


def thresholds_at(d: np.ndarray, test: str, alpha: float) -> np.ndarray:
    """``c_d`` for the given numbers discordant only (a window of a huge n: no 0..d_max array).

    Conditional tests only (their p-value is a function of ``min(b, c)`` and ``d``).
    """
    rule = _rule(test)
    if not isinstance(rule, ConditionalMcNemar):
        raise InputError(f"test={test!r} is not conditional on the number discordant; use "
                         "rejection_thresholds(d_max, test, alpha, n=...).")
    return rule.thresholds_at(d, alpha)


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
    rule = _rule(test)
    if rule.needs_n:
        if n is None:
            raise InputError(f"test={rule.name!r} is unconditional on the concordant "
                             "items: pass n=<all paired items>.")
        n = check_int("n", n, min=b + c)
    pvalue = float(rule.pvalue(np.asarray(float(b)), np.asarray(float(c)), n=n))
    return McNemarResult(rule.statistic(b, c), pvalue, b, c, rule.name)
