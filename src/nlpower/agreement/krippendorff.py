"""Krippendorff's alpha (nominal, ordinal, interval, ratio; missing ratings allowed).

``alpha = 1 - D_o / D_e`` from the coincidence matrix ``o`` of pairable values
(Krippendorff 2011, "Computing Krippendorff's alpha-reliability"): each unit
(an output that several workers rated) with ``m_u >= 2`` values adds, for every
ordered pair of its values ``(c, k)`` from different ratings, ``1 / (m_u - 1)``
to ``o[c, k]``.  With marginals ``n_c`` and ``n = sum n_c``,

    alpha = 1 - (n - 1) * sum o[c, k] d(c, k) / sum_{c, k} n_c (n_k - [c = k]) d(c, k)

with the squared distance ``d``: nominal ``[c != k]``; interval ``(c - k)^2``;
ordinal ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``; ratio
``((c - k) / (c + k))^2``.  Agrees with the ``krippendorff`` package (0.9.0)
to 1e-9 (``tests/agreement/test_krippendorff.py``).

The interval level uses the equivalent moment form (per unit: the number of
values, their sum and sum of squares), so continuous ratings cost nothing
extra.  The bootstrap resamples units with replacement (a percentile
interval): a replicate is the same sums with multinomial unit weights.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._rng import RNGLike, as_generator
from .._validation import check_columns, check_int, check_probability
from ..errors import InputError
from ..intervals import ConfidenceInterval

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS = ("nominal", "ordinal", "interval", "ratio")
MAX_VALUES = 2000


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha with a bootstrap interval.

    Attributes
    ----------
    alpha : float
    level : str
        Level of measurement (the distance used).
    ci : ConfidenceInterval or None
        Percentile bootstrap interval over units (``None`` when ``n_boot=0``).
    n_units : int
        Units with at least two ratings (the pairable ones).
    n_values : int
        Pairable ratings (``n``).
    n_boot : int
    confidence_level : float
    """

    alpha: float
    level: str
    ci: ConfidenceInterval | None
    n_units: int
    n_values: int
    n_boot: int = 0
    confidence_level: float = 0.95

    def __repr__(self) -> str:
        ci = "" if self.ci is None else f", CI=[{self.ci.low:.3f}, {self.ci.high:.3f}]"
        return f"AlphaResult({self.level} alpha={self.alpha:.4f}{ci}, n_units={self.n_units})"

    def summary(self) -> str:
        """One line of text."""
        ci = ("" if self.ci is None else
              f", {100 * self.confidence_level:g}% bootstrap CI [{self.ci.low:.3f}, "
              f"{self.ci.high:.3f}] ({self.n_boot} resamples of units)")
        return (f"Krippendorff's alpha ({self.level}) = {self.alpha:.4f}{ci}; "
                f"{self.n_units} units, {self.n_values} pairable ratings")

    def to_frame(self) -> pd.DataFrame:
        """One row: alpha, level, interval, counts."""
        lo, hi = (math.nan, math.nan) if self.ci is None else (self.ci.low, self.ci.high)
        return pd.DataFrame([{"measure": f"alpha ({self.level})", "estimate": self.alpha,
                              "ci_low": lo, "ci_high": hi, "n_units": self.n_units,
                              "n_values": self.n_values}])


def _checked_values(data: pd.DataFrame, cols: list[str], value: str) -> pd.Series:
    """The ratings as numbers (NaN: missing); text, infinite ratings and unnamed units refused."""
    raw = data[value]
    vals = pd.to_numeric(raw, errors="coerce")
    bad = (vals.isna() & raw.notna()) | np.isinf(vals.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        shown = ", ".join(repr(v) for v in raw[bad].unique()[:3])
        raise InputError(
            f"column {value!r} has {int(bad.sum())} rating(s) that are not finite numbers "
            f"({shown}); alpha needs numeric scale points. Map labels to their numbers (e.g. "
            f"'4 - good' -> 4), or drop those rows and leave missing ratings empty."
        )
    missing = data[cols].isna().any(axis=1) & vals.notna()
    if missing.any():
        raise InputError(
            f"{int(missing.sum())} rating(s) have no {' / '.join(map(repr, cols))} (an empty "
            "unit column), so the unit they rate is unknown; fill in or drop those rows."
        )
    return vals


def value_counts(data: Any, *, unit: str | Sequence[str] = ("item", "system"),
                 value: str = "rating") -> tuple[np.ndarray, np.ndarray]:
    """Units x values count matrix and the sorted value domain.

    ``data``: a long frame (one row per rating; ``unit`` names the column(s)
    that identify a unit) or a 2-d array of raters x units with NaN for a
    missing rating (the ``krippendorff`` package's ``reliability_data``).
    """
    if isinstance(data, pd.DataFrame):
        cols = [unit] if isinstance(unit, str) else list(unit)
        cols = [c for c in cols if c in data.columns] or cols
        check_columns("data", [*cols, value], list(map(str, data.columns)))
        vals = _checked_values(data, cols, value)
        keep = vals.notna().to_numpy()
        codes = pd.MultiIndex.from_frame(data.loc[keep, cols].astype(str)).factorize()[0] \
            if len(cols) > 1 else pd.factorize(data.loc[keep, cols[0]])[0]
        domain, vcode = np.unique(vals[keep].to_numpy(dtype=float), return_inverse=True)
        counts = np.zeros((int(codes.max()) + 1 if codes.size else 0, domain.size))
        np.add.at(counts, (codes, vcode), 1.0)
        return counts, domain
    try:
        arr = np.asarray(data, dtype=float)
    except (TypeError, ValueError):
        raise InputError("data must be a DataFrame of ratings or a 2-d numeric array "
                         "(raters x units, NaN for missing).") from None
    if arr.ndim != 2:
        raise InputError(f"data as an array must be 2-d (raters x units); got shape {arr.shape}.")
    domain = np.unique(arr[np.isfinite(arr)])
    counts = np.stack([(arr == v).sum(axis=0) for v in domain], axis=1).astype(float)
    return counts, domain


def _distance(level: str, domain: np.ndarray, n_c: np.ndarray) -> np.ndarray:
    c, k = domain[:, None], domain[None, :]
    if level == "nominal":
        return (c != k).astype(float)
    if level == "interval":
        return (c - k) ** 2
    if level == "ratio":
        s = c + k
        return np.divide(c - k, s, out=np.zeros_like(s), where=s != 0) ** 2
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    i = np.arange(domain.size)
    lo, hi = np.minimum.outer(i, i), np.maximum.outer(i, i)
    between = cum[hi + 1] - cum[lo]
    return (between - (n_c[lo] + n_c[hi]) / 2) ** 2


def coincidences(counts: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Coincidence matrix of pairable units (``counts``: units x values), units weighted."""
    m = counts.sum(axis=1)
    a = counts / (m - 1)[:, None]
    if weights is not None:
        a = a * weights[:, None]
    return np.asarray(a.T @ counts - np.diag(a.sum(axis=0)))


def _interval_moments(counts: np.ndarray, domain: np.ndarray) -> np.ndarray:
    """Per unit: (m, sum v, sum v^2, within-unit pair term) -- interval alpha's sufficient statistics."""
    m = counts.sum(axis=1)
    s1 = counts @ domain
    s2 = counts @ domain**2
    within = 2 * m * (s2 - s1**2 / m) / (m - 1)  # sum over ordered pairs of (v_i - v_j)^2 / (m - 1)
    return np.column_stack([m, s1, s2, within])


def _alpha_interval(totals: np.ndarray) -> float:
    n, s1, s2, within = totals
    ss = s2 - s1**2 / n
    return float(1.0 - (n - 1) * within / (2 * n * ss)) if ss > 0 else math.nan


def _alpha_from_o(o: np.ndarray, level: str, domain: np.ndarray) -> float:
    n_c = o.sum(axis=0)
    n = n_c.sum()
    d = _distance(level, domain, n_c)
    expected = (np.outer(n_c, n_c) - np.diag(n_c)) * d
    denom = expected.sum()
    return float(1.0 - (n - 1) * (o * d).sum() / denom) if denom > 0 else math.nan


def krippendorff_alpha(data: Any, *, level: Level = "interval",
                       unit: str | Sequence[str] = ("item", "system"), value: str = "rating",
                       n_boot: int = 0, confidence_level: float = 0.95,
                       rng: RNGLike = None) -> AlphaResult:
    """Krippendorff's alpha of a rating file, with a bootstrap CI over units.

    Parameters
    ----------
    data : DataFrame or array_like
        Long ratings (one row per rating; missing ratings are simply absent
        or NaN) or a raters x units array with NaN for missing.
    level : {"nominal", "ordinal", "interval", "ratio"}
    unit : str or sequence of str, default ("item", "system")
        Column(s) identifying a unit (the thing rated); by default one
        system's output on one item.  Columns not in the frame are ignored
        when at least one is present (a file without systems: units = items).
    value : str, default "rating"
    n_boot : int, default 0
        Bootstrap resamples of units for the interval (0: none).
    confidence_level : float, default 0.95
    rng : seed or Generator, keyword-only
        For the bootstrap.

    Returns
    -------
    AlphaResult

    Examples
    --------
    >>> import numpy as np
    >>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
    ...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
    ...         [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
    ...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan]]
    >>> round(krippendorff_alpha(data, level="nominal").alpha, 3)
    0.743
    >>> round(krippendorff_alpha(data, level="ordinal").alpha, 3)
    0.815
    """
    if level not in LEVELS:
        raise InputError(f"level must be one of {', '.join(map(repr, LEVELS))}; got {level!r}.")
    n_boot = check_int("n_boot", n_boot, min=0)
    check_probability("confidence_level", confidence_level)
    counts, domain = value_counts(data, unit=unit, value=value)
    counts = counts[counts.sum(axis=1) >= 2]
    if counts.shape[0] == 0 or domain.size < 2:
        raise InputError("alpha needs at least one unit rated at least twice and two distinct "
                         f"values; got {counts.shape[0]} such units and {domain.size} value(s).")
    if level != "interval" and domain.size > MAX_VALUES:
        raise InputError(f"level={level!r} with {domain.size} distinct values: the coincidence "
                         f"matrix would be too large (limit {MAX_VALUES}). Continuous ratings "
                         "call for level='interval'.")
    gen = as_generator(rng) if n_boot else None
    u = counts.shape[0]
    weights = (gen.multinomial(u, np.full(u, 1.0 / u), size=n_boot).astype(float)
               if gen is not None else np.zeros((0, u)))
    if level == "interval":
        stats_ = _interval_moments(counts, domain)
        est = _alpha_interval(stats_.sum(axis=0))
        vals = np.array([_alpha_interval(t) for t in weights @ stats_])
    else:
        est = _alpha_from_o(coincidences(counts), level, domain)
        vals = np.array([_alpha_from_o(coincidences(counts, w), level, domain) for w in weights])
    ci = None
    if n_boot:
        a = 1 - confidence_level
        lo, hi = np.nanquantile(vals, [a / 2, 1 - a / 2])
        ci = ConfidenceInterval(float(lo), float(hi))
    return AlphaResult(est, level, ci, u, int(counts.sum()), n_boot,
                       confidence_level)
