"""Intraclass correlations (McGraw & Wong 1996) from a fitted crossed model.

With target (item) variance ``T``, rater (worker) variance ``R`` and residual
variance ``E`` of a two-way random-effects model, the four forms are

    ICC(C,1) = T / (T + E)             ICC(A,1) = T / (T + R + E)
    ICC(C,k) = T / (T + E / k)         ICC(A,k) = T / (T + (R + E) / k)

(consistency ignores the raters' offsets, absolute agreement counts them;
``k`` raters averaged).  On balanced data the REML components are the ANOVA
estimators, so these equal the mean-square formulas of McGraw & Wong and of
Shrout & Fleiss (1979): ICC(A,1) = ICC(2,1), ICC(C,1) = ICC(3,1);
``tests/agreement/test_icc.py`` checks Shrout & Fleiss's Table 2 by hand.

For a :class:`~nlpower.ratings.RatingsFit` (the paper's model with systems)
the forms are given per system: the item and worker variances of system
``s`` are the diagonal of :meth:`RatingsFit.total_cov` (intercept plus that
system's deviation).  For a general fit, the variance rows of the groups
named ``target`` and ``rater`` are summed; a random slope of a +-1 coded
predictor adds its variance as is (``x^2 = 1``), and in the consistency forms
a rater's slope counts as error (a rater x system interaction).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .._validation import check_real
from ..errors import InputError

FORMS = ("ICC(C,1)", "ICC(A,1)", "ICC(C,k)", "ICC(A,k)")


@dataclass(frozen=True)
class ICCResult:
    """McGraw & Wong intraclass correlations, one row per system (or one overall).

    Attributes
    ----------
    table : DataFrame
        Columns ``system, target_var, rater_var, rater_slope_var,
        residual_var, k`` and the four forms.
    """

    table: pd.DataFrame

    def __repr__(self) -> str:
        row = self.table.iloc[0]
        return (f"ICCResult(ICC(A,1)={row['ICC(A,1)']:.3f}, ICC(C,1)={row['ICC(C,1)']:.3f}, "
                f"k={row['k']:.3g}, rows={len(self.table)})")

    def to_frame(self) -> pd.DataFrame:
        """The table (a copy)."""
        return self.table.copy()

    def summary(self) -> str:
        """The four forms per row as text."""
        cols = ["system", *FORMS, "k"]
        return "Intraclass correlations (McGraw & Wong 1996):\n" + self.table[cols].to_string(
            index=False, float_format=lambda v: f"{v:.3f}")


def icc_forms(target: float, rater: float, residual: float, k: float,
              rater_slope: float = 0.0) -> dict[str, float]:
    """The four McGraw & Wong forms from variance components.

    Examples
    --------
    >>> round(icc_forms(1.0, 0.5, 0.5, k=4)["ICC(A,1)"], 3)
    0.5
    """
    err_c = residual + rater_slope
    err_a = residual + rater + rater_slope
    return {"ICC(C,1)": target / (target + err_c), "ICC(A,1)": target / (target + err_a),
            "ICC(C,k)": target / (target + err_c / k), "ICC(A,k)": target / (target + err_a / k)}


def _row(system: str, t: float, r: float, rs: float, e: float, k: float) -> dict[str, Any]:
    return {"system": system, "target_var": t, "rater_var": r, "rater_slope_var": rs,
            "residual_var": e, "k": k, **icc_forms(t, r, e, k, rs)}


def _sum_rows(vc: pd.DataFrame, groups: Sequence[str]) -> tuple[float, float]:
    """(intercept, slope) variance summed over the variance rows of ``groups``."""
    base = vc["grp"].astype(str).str.split(".").str[0]
    rows = vc[base.isin(list(groups)) & vc["var2"].isna()]
    icpt = rows["var1"] == "(Intercept)"
    return float(rows.loc[icpt, "vcov"].sum()), float(rows.loc[~icpt, "vcov"].sum())


def _ratings_fit_icc(fit: Any, k: float | None) -> ICCResult:
    data = fit.data
    if k is None:
        k = float(len(data) / data.groupby(["item", "system"], observed=True).ngroups) \
            if data is not None else 1.0
    item, worker = fit.total_cov("item"), fit.total_cov("worker")
    e = fit.sigma**2
    rows = [_row(s, float(item.loc[s, s]), float(worker.loc[s, s]), 0.0, e, k)
            for s in fit.systems]
    return ICCResult(pd.DataFrame(rows))


def icc(fit: Any, *, target: str | Sequence[str] = ("item", "item:system"),
        rater: str | Sequence[str] = ("worker",), k: float | None = None) -> ICCResult:
    """Intraclass correlations from a fitted crossed model.

    Parameters
    ----------
    fit : RatingsFit or LmmFit
        A :func:`nlpower.fit_ratings` result (ICCs per system) or an
        :func:`nlpower.lmer` fit with target and rater random effects.
    target, rater : str or sequence of str
        Grouping factors whose variances are target (item) and rater
        (worker) variance (``LmmFit`` only).
    k : float, optional
        Raters averaged in the ``k`` forms (default: the mean number of
        ratings per target).

    Returns
    -------
    ICCResult

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> sf = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    >>> long = pd.DataFrame([(f"t{i}", f"j{j}", v) for i, r in enumerate(sf)
    ...                      for j, v in enumerate(r)], columns=["item", "worker", "rating"])
    >>> m = nlpower.lmer("rating ~ 1 + (1 | item) + (1 | worker)", long)
    >>> res = icc(m, target="item")
    >>> [round(float(res.table[f].iloc[0]), 2) for f in ("ICC(A,1)", "ICC(C,1)", "ICC(A,k)", "ICC(C,k)")]
    [0.29, 0.71, 0.62, 0.91]
    """
    if k is not None:
        k = check_real("k", k, min=1.0)
    if hasattr(fit, "total_cov") and hasattr(fit, "systems"):
        return _ratings_fit_icc(fit, k)
    if not hasattr(fit, "varcorr"):
        raise InputError(f"fit must be a RatingsFit or an LmmFit; got {type(fit).__name__}.")
    tgt = [target] if isinstance(target, str) else list(target)
    rat = [rater] if isinstance(rater, str) else list(rater)
    vc = fit.varcorr()
    groups = set(vc["grp"].astype(str).str.split(".").str[0])
    if not groups & set(tgt) or not groups & set(rat):
        raise InputError(f"target {tgt} and rater {rat} must each name a grouping factor of the "
                         f"fit; its groups are {sorted(groups - {'Residual'})}.")
    t0, t1 = _sum_rows(vc, tgt)
    r0, r1 = _sum_rows(vc, rat)
    if k is None:
        first = next(g for g in tgt if g in fit.ngrps)
        k = fit.nobs / fit.ngrps[first]
    return ICCResult(pd.DataFrame([_row("(all)", t0 + t1, r0, r1, fit.sigma**2, float(k))]))
