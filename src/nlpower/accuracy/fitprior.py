"""Refit the paper's priors from a user's own leaderboard or validation results (App. E.2).

Card et al. (2020) fitted two regressions by OLS and printed their coefficients:

* agreement (Eq. 1, Tables 5-6): ``overlap = b0 + b1 min_acc + b2 acc_diff`` over
  pairs of models on one test set (GLUE: 270 pairs of 10 models; SQuAD 2.0: 14);
* the gain of the next SOTA claim (Table 7, Eq. 4 for SQuAD in Table 8):
  ``effect = b0 + b1 previous_best (+ task dummies)``.

:func:`fit_agreement_prior` and :func:`fit_effect_prior` refit them from a
table (a ``pandas.DataFrame`` or a mapping of columns) and return fitted priors
with coefficients, standard errors, R^2 and residual SD.  An
:class:`AgreementPriorFit` can be passed wherever a prior name is accepted
(``power(..., agreement=fit, baseline=...)``, ``mde``, ``sample_size``);
:func:`paper_agreement_prior` gives the paper's own printed fits as the same
type.  Units: the fit predicts in the units of the table (fractions for the
agreement; Table 7 is in percentage points, Table 8 in fractions).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_real
from ..errors import InputError

__all__ = ["AgreementPriorFit", "EffectPriorFit", "fit_agreement_prior", "fit_effect_prior",
           "paper_agreement_prior"]


@dataclass(frozen=True)
class _OLS:
    coef: np.ndarray
    se: np.ndarray
    r2: float
    sigma: float
    n: int


def _ols(x: np.ndarray, y: np.ndarray) -> _OLS:
    n, k = x.shape
    if n <= k:
        raise InputError(f"the table has {n} usable rows for {k} coefficients; an OLS fit needs "
                         "more rows than coefficients -- add rows or drop task dummies.")
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ coef
    sigma2 = float(resid @ resid) / (n - k)
    xtx_inv = np.linalg.pinv(x.T @ x)
    se = np.sqrt(np.maximum(np.diag(xtx_inv) * sigma2, 0.0))
    tss = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(resid @ resid) / tss if tss > 0 else math.nan
    return _OLS(coef, se, r2, math.sqrt(sigma2), n)


def _column(table: Any, name: str, what: str) -> np.ndarray:
    try:
        col = table[name]
    except (KeyError, IndexError, TypeError):
        cols = list(table.columns) if isinstance(table, pd.DataFrame) else list(table)
        raise InputError(f"the table has no column {name!r} for {what}; its columns are "
                         f"{cols}. Pass the column's name, e.g. {what}='...'.") from None
    arr = np.asarray(col, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise InputError(f"column {name!r} ({what}) has missing or non-finite values; drop those "
                         "rows first.")
    return arr


@dataclass(frozen=True)
class AgreementPriorFit:
    """``agreement = const + b_min min_acc + b_diff acc_diff`` (Card et al. 2020, Eq. 1).

    Use it as ``agreement=`` in :func:`nlpower.accuracy.power`, ``mde`` or
    ``power_grid`` (with ``baseline``): it is evaluated at
    ``min_acc = min(baseline, baseline + delta)``, ``acc_diff = |delta|``.
    """

    const: float
    min_acc: float
    acc_diff: float
    se: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    r2: float = math.nan
    residual_sd: float = math.nan
    n: int = 0
    name: str = "fitted"

    def __call__(self, min_acc: Any, acc_diff: Any) -> Any:
        out = (self.const + self.min_acc * np.asarray(min_acc, dtype=float)
               + self.acc_diff * np.asarray(acc_diff, dtype=float))
        return float(out) if np.ndim(out) == 0 else out

    def agreement(self, baseline: float, delta: float) -> float:
        """Agreement of models with accuracies ``baseline`` and ``baseline + delta``."""
        return float(self(min(baseline, baseline + delta), abs(delta)))

    @property
    def coefficients(self) -> tuple[float, float, float]:
        return (self.const, self.min_acc, self.acc_diff)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"coef": self.coefficients, "se": self.se},
                            index=pd.Index(["const", "min_acc", "acc_diff"]))

    def summary(self) -> str:
        head = (f"Agreement prior ({self.name}): overlap = {self.const:.4f} + {self.min_acc:.4f} "
                f"min_acc {'-' if self.acc_diff < 0 else '+'} {abs(self.acc_diff):.4f} acc_diff")
        if self.n:
            head += f"\n  n {self.n} pairs, R^2 {self.r2:.3f}, residual SD {self.residual_sd:.4g}"
        return head

    def __repr__(self) -> str:
        return (f"AgreementPriorFit(const={self.const:.4f}, min_acc={self.min_acc:.4f}, "
                f"acc_diff={self.acc_diff:.4f}, name={self.name!r})")


def paper_agreement_prior(name: str) -> AgreementPriorFit:
    """The paper's printed agreement fit: ``"glue"`` (Table 5) or ``"squad"`` (Table 6).

    Examples
    --------
    >>> round(paper_agreement_prior("glue").agreement(0.8, 0.02), 4)
    0.8704
    """
    table = {
        "glue": ((0.4142, 0.5819, -0.4662), (0.019, 0.021, 0.028), 0.966, 270),
        "squad": ((0.4339, 0.5932, -1.2849), (0.091, 0.101, 0.588), 0.944, 14),
    }
    if name not in table:
        raise InputError(f"name must be 'glue' (Table 5) or 'squad' (Table 6); got {name!r}.")
    coef, se, r2, n = table[name]
    return AgreementPriorFit(*coef, se=se, r2=r2, n=n, name=name)


def fit_agreement_prior(table: Any, *, agreement: str = "agreement",
                        acc_a: str | None = "acc_a", acc_b: str | None = "acc_b",
                        min_acc: str | None = None, acc_diff: str | None = None,
                        name: str = "fitted") -> AgreementPriorFit:
    """OLS fit of Eq. 1 from pairs of models scored on one test set.

    Parameters
    ----------
    table : DataFrame or mapping of columns
        One row per pair of models: their accuracies (``acc_a``, ``acc_b``) or
        directly ``min_acc`` and ``acc_diff``, and the share of items both get
        right or both wrong (``agreement``), all fractions.
    agreement, acc_a, acc_b, min_acc, acc_diff : str
        Column names; give ``min_acc`` and ``acc_diff`` to use them instead of
        the two accuracies.

    Returns
    -------
    AgreementPriorFit

    Examples
    --------
    >>> import numpy as np
    >>> gen = np.random.default_rng(0)
    >>> a, b = gen.uniform(0.8, 0.95, 200), gen.uniform(0.8, 0.95, 200)
    >>> overlap = 0.4142 + 0.5819 * np.minimum(a, b) - 0.4662 * abs(a - b)
    >>> fit = fit_agreement_prior({"acc_a": a, "acc_b": b, "agreement": overlap})
    >>> [round(c, 4) for c in fit.coefficients]
    [0.4142, 0.5819, -0.4662]
    """
    if min_acc is not None or acc_diff is not None:
        if min_acc is None or acc_diff is None:
            raise InputError("give both min_acc= and acc_diff= column names, or neither (then "
                             "acc_a= and acc_b= are used).")
        lo = _column(table, min_acc, "min_acc")
        gap = _column(table, acc_diff, "acc_diff")
    else:
        a = _column(table, acc_a or "acc_a", "acc_a")
        b = _column(table, acc_b or "acc_b", "acc_b")
        lo, gap = np.minimum(a, b), np.abs(a - b)
    y = _column(table, agreement, "agreement")
    x = np.column_stack([np.ones_like(lo), lo, gap])
    fit = _ols(x, y)
    c0, c1, c2 = (float(v) for v in fit.coef)
    s0, s1, s2 = (float(v) for v in fit.se)
    return AgreementPriorFit(c0, c1, c2, se=(s0, s1, s2), r2=fit.r2, residual_sd=fit.sigma,
                             n=fit.n, name=name)


@dataclass(frozen=True)
class EffectPriorFit:
    """``effect = const + slope previous_best (+ task effect)`` (Card et al. 2020, Tables 7-8)."""

    const: float
    slope: float
    tasks: dict[str, float] = field(default_factory=dict)
    reference: str | None = None
    se: dict[str, float] = field(default_factory=dict)
    r2: float = math.nan
    residual_sd: float = math.nan
    n: int = 0

    def predict(self, previous_best: float, task: str | None = None) -> float:
        """Expected gain of the next SOTA claim, in the table's units."""
        previous_best = check_real("previous_best", previous_best)
        if self.tasks or self.reference is not None:
            known = [self.reference, *self.tasks]
            if task not in known:
                raise InputError(f"task must be one of {known} (the fit's tasks); got {task!r}.")
            dummy = 0.0 if task is None or task == self.reference else self.tasks[task]
        elif task is not None:
            raise InputError("this prior was fitted without tasks; drop task=.")
        else:
            dummy = 0.0
        return self.const + self.slope * previous_best + dummy

    def to_frame(self) -> pd.DataFrame:
        names = ["const", "previous_best", *(f"task[{t}]" for t in self.tasks)]
        coefs = [self.const, self.slope, *self.tasks.values()]
        return pd.DataFrame({"coef": coefs, "se": [self.se.get(k, math.nan) for k in names]},
                            index=pd.Index(names))

    def summary(self) -> str:
        lines = [f"Effect prior: effect = {self.const:.4g} {'-' if self.slope < 0 else '+'} "
                 f"{abs(self.slope):.4g} previous_best"
                 + ("" if not self.tasks else f" + task (reference {self.reference})")]
        lines += [f"  task {t}: {v:+.4g}" for t, v in self.tasks.items()]
        if self.n:
            lines.append(f"  n {self.n}, R^2 {self.r2:.3f}, residual SD {self.residual_sd:.4g}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"EffectPriorFit(const={self.const:.4g}, slope={self.slope:.4g}, "
                f"tasks={len(self.tasks)})")


def fit_effect_prior(table: Any, *, effect: str = "effect", previous_best: str = "previous_best",
                     task: str | None = None, reference: str | None = None) -> EffectPriorFit:
    """OLS fit of the next-SOTA gain on the previous best score (and task dummies).

    Parameters
    ----------
    table : DataFrame or mapping of columns
        One row per claimed improvement: the gain (``effect``) and the best
        score before it (``previous_best``), in the units to predict in
        (Table 7: percentage points; Table 8: fractions).
    task : str, optional
        Column of task names: one dummy per task but ``reference`` (default:
        the first name in sorted order -- MNLI-m for GLUE, as in Table 7).

    Examples
    --------
    >>> import numpy as np
    >>> best = np.linspace(80, 97, 30)
    >>> fit = fit_effect_prior({"previous_best": best, "effect": 24.342 - 0.264 * best})
    >>> round(fit.slope, 3), round(fit.predict(91.7), 3)
    (-0.264, 0.133)
    """
    x_best = _column(table, previous_best, "previous_best")
    y = _column(table, effect, "effect")
    cols = [np.ones_like(x_best), x_best]
    names = ["const", "previous_best"]
    levels: list[str] = []
    if task is not None:
        try:
            labels = [str(v) for v in table[task]]
        except (KeyError, TypeError):
            raise InputError(f"the table has no column {task!r} for task=.") from None
        uniq: Sequence[str] = sorted(set(labels))
        if reference is None:
            reference = uniq[0]
        elif reference not in uniq:
            raise InputError(f"reference={reference!r} is not a task in the table ({uniq}).")
        levels = [t for t in uniq if t != reference]
        for t in levels:
            cols.append(np.array([lab == t for lab in labels], dtype=float))
            names.append(f"task[{t}]")
    elif reference is not None:
        raise InputError("reference= needs task=<column of task names>.")
    fit = _ols(np.column_stack(cols), y)
    coef = [float(c) for c in fit.coef]
    return EffectPriorFit(const=coef[0], slope=coef[1],
                          tasks=dict(zip(levels, coef[2:], strict=True)),
                          reference=reference if task is not None else None,
                          se=dict(zip(names, map(float, fit.se), strict=True)), r2=fit.r2,
                          residual_sd=fit.sigma, n=fit.n)
