"""Prediction-powered inference for i.i.d. labels (PPI and PPI++ means).

The estimator of a mean from ``n`` labelled points (human label ``y``, judge
score ``f``) and ``N`` unlabelled points (judge score only) is

    theta_hat = lambda * mean(f_unlabelled) + mean(y - lambda * f_labelled)

(Angelopoulos et al. 2023, PPI: ``lambda = 1``; PPI++, Angelopoulos, Duchi &
Zrnic 2024: ``lambda`` tuned to minimise the variance).  Its variance is
``lambda^2 Var(f) / N + Var(y - lambda f) / n``; the tuned value is
``Cov(y, f) / ((1 + n / N) Var(f))``, clipped to [0, 1].  The sample moments
follow ``ppi-python`` 0.2.3 (``ppi_mean_ci``: covariance and standard
deviations with divisor ``n``, the judge variance pooled over both sets with
divisor ``n + N - 1``) so that the two give the same numbers; checked in
``tests/judge/test_iid.py`` against pinned ``ppi-python`` output.

A difference between two systems rated on the same items is the mean of the
per-item differences, so it is :func:`ppi_mean` of the differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._choices import Alternative, check_choice
from .._validation import check_probability, check_real
from ..errors import InputError


@dataclass(frozen=True)
class MeanEstimate:
    """A point estimate with its standard error, interval and test.

    Attributes
    ----------
    estimate, se : float
        Point estimate and its standard error.
    ci_low, ci_high : float
        Confidence interval at ``confidence_level`` (one-sided intervals have
        an infinite end).
    statistic, pvalue : float
        Test of ``estimate == null`` (z, or t with ``df`` degrees of freedom).
    df : float
        Degrees of freedom of the reference t distribution (``inf``: normal).
    lam : float
        The power-tuning parameter used (1: plain PPI, 0: labels only).
    method : str
        Which estimator (``"ppi++"``, ``"ppi"``, ``"human"``, ``"judge"``).
    """

    estimate: float
    se: float
    ci_low: float
    ci_high: float
    statistic: float
    pvalue: float
    df: float
    lam: float
    method: str
    null: float = 0.0
    confidence_level: float = 0.95
    alternative: str = "two-sided"

    def __repr__(self) -> str:
        return (f"MeanEstimate({self.method}: {self.estimate:.4g}, se={self.se:.3g}, "
                f"CI=[{self.ci_low:.4g}, {self.ci_high:.4g}], p={self.pvalue:.3g})")

    def to_frame(self) -> pd.DataFrame:
        """One row with every field."""
        return pd.DataFrame([{k: getattr(self, k) for k in self.__dataclass_fields__}])

    def summary(self) -> str:
        """A one-line text summary."""
        return repr(self)


def interval_test(estimate: float, se: float, *, df: float = math.inf, null: float = 0.0,
                  confidence_level: float = 0.95, alternative: str = "two-sided",
                  lam: float = math.nan, method: str = "") -> MeanEstimate:
    """Wald interval and test for an estimate with a standard error (z when ``df`` is inf)."""
    dist: Any = stats.norm if math.isinf(df) else stats.t(df)
    se_ = max(se, 1e-16)
    stat = (estimate - null) / se_
    a = 1.0 - confidence_level
    if alternative == "two-sided":
        q = dist.ppf(1 - a / 2)
        low, high = estimate - q * se, estimate + q * se
        p = 2 * dist.sf(abs(stat))
    elif alternative == "greater":
        low, high = estimate - dist.ppf(1 - a) * se, math.inf
        p = dist.sf(stat)
    else:
        low, high = -math.inf, estimate + dist.ppf(1 - a) * se
        p = dist.cdf(stat)
    return MeanEstimate(float(estimate), float(se), float(low), float(high), float(stat),
                        float(p), float(df), float(lam), method, float(null),
                        float(confidence_level), alternative)


def _vector(name: str, value: Any, *, min_size: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a 1-d array of numbers; could not read it ({exc}).") from None
    if arr.size < min_size:
        raise InputError(f"{name} needs at least {min_size} values; got {arr.size}.")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} has {int(np.sum(~np.isfinite(arr)))} missing or infinite "
                         "values; drop those points first.")
    return arr


def tuned_lambda(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray, *,
                 clip: bool = True) -> float:
    """PPI++'s variance-minimising ``lambda`` for a mean (``ppi-python``'s moments).

    ``Cov(y, f) / ((1 + n / N) Var(f))`` with the covariance over the
    labelled points (divisor ``n``) and the judge variance over all points.
    """
    n, big_n = y.size, f_unlabelled.size
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    var = float(np.var(np.concatenate([f, f_unlabelled]), ddof=1))
    lam = cov / ((1 + n / big_n) * var) if var > 0 else 0.0
    return float(np.clip(lam, 0.0, 1.0)) if clip else lam


def ppi_mean(y: Any, f: Any, f_unlabelled: Any, *, lam: float | None = None, null: float = 0.0,
             confidence_level: float = 0.95, alternative: Alternative = "two-sided",
             clip: bool = True) -> MeanEstimate:
    """Prediction-powered estimate of a mean from i.i.d. labelled and unlabelled points.

    Parameters
    ----------
    y : array_like
        Human labels on the ``n`` labelled points.
    f : array_like
        Judge scores on the same ``n`` points.
    f_unlabelled : array_like
        Judge scores on the ``N`` points without a human label.
    lam : float, optional
        ``1``: PPI; ``0``: the labels alone; ``None`` (default): PPI++'s tuned value.
    null : float, default 0
        Value of the mean under the null hypothesis.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
    clip : bool, default True
        Clip the tuned ``lambda`` to [0, 1] (as ``ppi-python``'s intervals do).

    Returns
    -------
    MeanEstimate
        z interval and test (normal approximation, as in ``ppi-python``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(size=1100)
    >>> judge = truth + rng.normal(scale=0.5, size=1100)
    >>> est = ppi_mean(truth[:100], judge[:100], judge[100:])
    >>> 0 < est.lam < 1 and est.ci_low < est.estimate < est.ci_high
    True
    """
    y_ = _vector("y", y, min_size=2)
    f_ = _vector("f", f, min_size=2)
    fu = _vector("f_unlabelled", f_unlabelled, min_size=2)
    if y_.size != f_.size:
        raise InputError(f"y and f must have the same length (one judge score per labelled point); "
                         f"got {y_.size} and {f_.size}.")
    check_real("null", null)
    check_probability("confidence_level", confidence_level)
    check_choice("alternative", alternative, ("two-sided", "greater", "less"))
    if lam is None:
        lam_ = tuned_lambda(y_, f_, fu, clip=clip)
        method = "ppi++"
    else:
        lam_ = check_real("lam", lam)
        method = "ppi" if lam_ == 1 else "ppi(lambda fixed)"
    est = lam_ * fu.mean() + np.mean(y_ - lam_ * f_)
    se = math.sqrt(np.var(lam_ * fu) / fu.size + np.var(y_ - lam_ * f_) / y_.size)
    return interval_test(float(est), se, null=null, confidence_level=confidence_level,
                         alternative=alternative, lam=lam_, method=method)
