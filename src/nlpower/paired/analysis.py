"""Data analysis before testing (NLPStatTest, Zhu et al. 2020, sec. 3.1).

Summaries of A, B and A - B; the skewness rule of thumb (Bulmer 1979) for
the central tendency: ``|gamma| < 0.5`` roughly symmetric (mean), else
slightly (< 1) or highly skewed (median); Shapiro-Wilk on A - B only when it
is not skewed; and a recommended list of tests with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._choices import Center

__all__ = ["DataAnalysisResult", "Recommendation", "analyze_units", "describe", "sample_skewness",
           "skew_label"]

SKEW_SYMMETRIC = 0.5
SKEW_HIGH = 1.0


@dataclass(frozen=True)
class Recommendation:
    """The tests NLPStatTest's rules recommend, best first, and why.

    ``tests[0]`` is what :func:`nlpower.paired.compare` runs with ``test=None``.
    """

    tests: tuple[str, ...]
    center: Center
    reason: str

    def __str__(self) -> str:
        return f"{', '.join(self.tests)} ({self.center}): {self.reason}"


def skew_label(gamma: float) -> str:
    """Bulmer's (1979) reading of a skewness ``gamma``."""
    g = abs(gamma)
    if not np.isfinite(g) or g < SKEW_SYMMETRIC:
        return "roughly symmetric"
    return "slightly skewed" if g < SKEW_HIGH else "highly skewed"


def sample_skewness(x: np.ndarray) -> float:
    """Sample skewness g1 (``scipy.stats.skew``, biased, as NLPStatTest); 0 for constant data."""
    x = np.asarray(x, dtype=float)
    if x.size < 3:
        return float("nan")
    if np.ptp(x) <= 1e-12 * max(1.0, float(np.max(np.abs(x)))):
        return 0.0
    return float(stats.skew(x))


def describe(values: dict[str, np.ndarray]) -> pd.DataFrame:
    """Summary statistics, one row per named sample (NLPStatTest's first table)."""
    rows = []
    for name, x in values.items():
        q1, med, q3 = np.percentile(x, [25, 50, 75])
        rows.append({
            "sample": name, "n": x.size, "mean": float(np.mean(x)), "median": float(med),
            "sd": float(np.std(x, ddof=1)) if x.size > 1 else np.nan,
            "min": float(np.min(x)), "q1": float(q1), "q3": float(q3), "max": float(np.max(x)),
            "skewness": sample_skewness(x),
        })
    return pd.DataFrame(rows)


def _recommend(skewed: bool, normal: bool | None, gamma: float, shapiro_p: float | None,
               normality_alpha: float) -> Recommendation:
    if skewed:
        return Recommendation(
            ("sign", "bootstrap_percentile"), "median",
            f"A - B is {skew_label(gamma)} (|skewness| = {abs(gamma):.3g} >= {SKEW_SYMMETRIC}), so "
            "the median is the central tendency; the sign test and the percentile bootstrap of "
            "the median assume no symmetry (the Wilcoxon and sign-flip tests do)")
    if normal:
        return Recommendation(
            ("t", "bootstrap_t", "permutation", "wilcoxon"), "mean",
            f"A - B is roughly symmetric (|skewness| = {abs(gamma):.3g} < {SKEW_SYMMETRIC}) and "
            f"Shapiro-Wilk does not reject normality (p = {shapiro_p:.3g} >= {normality_alpha:g}): "
            "the paired t test is valid and the most powerful")
    return Recommendation(
        ("wilcoxon", "permutation", "bootstrap_t"), "mean",
        f"A - B is roughly symmetric (|skewness| = {abs(gamma):.3g} < {SKEW_SYMMETRIC}) but "
        + (f"Shapiro-Wilk rejects normality (p = {shapiro_p:.3g} < {normality_alpha:g})"
           if shapiro_p is not None else "Shapiro-Wilk was not run (constant differences or "
              "fewer than 3 units)")
        + ": tests that need symmetry but not normality")


@dataclass(frozen=True)
class DataAnalysisResult:
    """Data analysis of paired EU scores (NLPStatTest step 1).

    Attributes
    ----------
    summary_table : pandas.DataFrame
        n, mean, median, sd, min, quartiles, max and skewness of A, B, A - B.
    skewness : float
        Sample skewness ``g1`` of A - B (``scipy.stats.skew``, biased, as NLPStatTest).
    skew : str
        "roughly symmetric", "slightly skewed" or "highly skewed".
    center : {"mean", "median"}
        The central tendency the rule picks.
    shapiro_statistic, shapiro_pvalue : float or None
        Shapiro-Wilk on A - B, run only when it is not skewed (and n >= 3).
    normal : bool or None
        ``shapiro_pvalue >= normality_alpha`` (None when not run).
    normality_alpha : float
        alpha_1 of NLPStatTest's Figure 1.
    recommendation : Recommendation
    """

    summary_table: pd.DataFrame
    skewness: float
    skew: str
    center: Center
    shapiro_statistic: float | None
    shapiro_pvalue: float | None
    normal: bool | None
    normality_alpha: float
    recommendation: Recommendation

    def __repr__(self) -> str:
        return (f"DataAnalysisResult(skewness={self.skewness:.3g}, center={self.center!r}, "
                f"normal={self.normal}, recommended={self.recommendation.tests[0]!r})")

    def to_frame(self) -> pd.DataFrame:
        return self.summary_table.copy()

    @property
    def constant(self) -> bool:
        """True when A - B does not vary (within rounding): its skewness is undefined."""
        row = self.summary_table.iloc[-1]
        lo, hi = float(row["min"]), float(row["max"])
        return not hi - lo > 1e-12 * max(1.0, abs(lo), abs(hi))

    def summary(self) -> str:
        lines = [self.summary_table.to_string(index=False, float_format=lambda v: f"{v:.4g}"), "",
                 ("skewness of A - B: undefined (the differences are constant)"
                  f" -> test the {self.center}" if self.constant else
                  f"skewness of A - B: {self.skewness:.4g} ({self.skew}) -> test the {self.center}")]
        if self.shapiro_pvalue is None:
            lines.append("Shapiro-Wilk: not run (" + ("skewed data are not normal"
                         if self.skew != "roughly symmetric"
                         else "constant differences or fewer than 3 units") + ")")
        else:
            lines.append(f"Shapiro-Wilk: W = {self.shapiro_statistic:.4g}, p = "
                         f"{self.shapiro_pvalue:.4g} -> "
                         + ("normality not rejected (not a proof of normality)" if self.normal
                            else "normality rejected")
                         + f" at alpha_1 = {self.normality_alpha:g}")
        lines.append(f"recommended tests: {', '.join(self.recommendation.tests)}")
        lines.append(f"  because {self.recommendation.reason}")
        return "\n".join(lines)


def analyze_units(a: np.ndarray, b: np.ndarray, *, normality_alpha: float = 0.05,
                  names: tuple[str, str] = ("A", "B")) -> DataAnalysisResult:
    """Data analysis of validated EU scores (see :func:`nlpower.paired.analyze`)."""
    d = a - b
    table = describe({names[0]: a, names[1]: b, f"{names[0]} - {names[1]}": d})
    gamma = sample_skewness(d)
    if not np.isfinite(gamma):          # fewer than 3 units: no skew to speak of
        gamma = 0.0
    skewed = abs(gamma) >= SKEW_SYMMETRIC
    w_stat: Any = None
    p_norm: Any = None
    normal = None
    if not skewed and d.size >= 3 and np.ptp(d) > 1e-12 * max(1.0, float(np.max(np.abs(d)))):
        sw = stats.shapiro(d)
        w_stat, p_norm = float(sw.statistic), float(sw.pvalue)
        normal = p_norm >= normality_alpha
    rec = _recommend(skewed, normal, gamma, p_norm, normality_alpha)
    return DataAnalysisResult(
        summary_table=table, skewness=gamma, skew=skew_label(gamma), center=rec.center,
        shapiro_statistic=w_stat, shapiro_pvalue=p_norm, normal=normal,
        normality_alpha=normality_alpha, recommendation=rec)
