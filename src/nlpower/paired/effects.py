"""Effect sizes of paired differences (NLPStatTest, Zhu et al. 2020, sec. 3.3).

All take the differences ``w = a - b`` per evaluation unit.

* Cohen's d (paired, "d_z"): ``mean(w) / sd(w)`` (eq. 2, sd with ddof = 1).
* Hedges' g: ``J d`` with the *paired* small-sample correction
  ``J = 1 - 3 / (4 (n - 1) - 1)`` (Hedges 1981 with df = n - 1).  The paper's
  eq. 3, ``1 - 3 / (4 n - 9)``, is the two-sample correction (df = 2n - 2
  with two groups of n) and over-corrects paired data.
* Wilcoxon r: ``Z / sqrt(n)`` with Z from eq. 4 and n the number of non-zero
  differences; the tie correction sums ``t^3 - t`` over the *sizes* t of the
  groups of tied |w| (not over the tied values).
* Hodges-Lehmann: the median of the Walsh averages ``(w_i + w_j) / 2`` over
  i <= j (Hodges & Lehmann 1963; R's ``wilcox.test(conf.int=TRUE)`` estimate).

``convention="nlpstattest"`` gives NLPStatTest's own formulas as printed
(Zhu et al. 2020, eq. 3-4), to reproduce a report made with it:
``J = 1 - 3 / (4 n - 9)``; ``r = Z / sqrt(n)`` with ``n`` the number of
differences ``{u_i - v_i}`` (zeros included, ranked with the others, lowest)
and eq. 4's tie term summed over ``T``, "the set of tied ranks": each distinct
mid-rank shared by two or more ``|w|`` contributes ``t^3 - t`` with ``t`` the
rank itself.  That is our reading of the paper; NLPStatTest's code was not
available to check it against.  Cohen's d and Hodges-Lehmann are the same in
both conventions.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal, TypeAlias

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_choice

#: Effect-size formulas: nlpower's (paired Hedges J, tie-group sizes) or NLPStatTest's eq. 3-4.
EffectConvention: TypeAlias = Literal["nlpower", "nlpstattest"]

__all__ = [
    "EffectConvention",
    "EffectSizes",
    "effect_sizes",
    "hedges_j",
    "hodges_lehmann",
    "tie_groups",
    "walsh_quantile",
    "wilcoxon_z",
]


def hedges_j(n: int) -> float:
    """Paired small-sample correction ``J = 1 - 3 / (4 (n - 1) - 1)`` for n differences."""
    df = n - 1
    return 1.0 - 3.0 / (4.0 * df - 1.0)


def hedges_j_nlpstattest(n: int) -> float:
    """NLPStatTest's eq. 3 correction ``J = 1 - 3 / (4 n - 9)`` (the two-sample form)."""
    return 1.0 - 3.0 / (4.0 * n - 9.0)


def wilcoxon_z_nlpstattest(w: np.ndarray) -> tuple[float, float, int]:
    """(W+, Z, n) by NLPStatTest's eq. 4 as printed (module docstring): all ``n`` differences
    ranked by ``|w|`` (zeros too), ``W`` the sum of the ranks of positive differences, and
    ``sum(t^3 - t) / 48`` over the distinct tied mid-ranks ``t``."""
    w = np.asarray(w, dtype=float)
    n = w.size
    if n == 0:
        return 0.0, float("nan"), 0
    ranks = stats.rankdata(np.abs(w))
    w_plus = float(ranks[w > 0].sum())
    values, counts = np.unique(ranks, return_counts=True)
    tied = values[counts > 1]
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(tied**3 - tied)) / 48.0
    z = (w_plus - n * (n + 1) / 4.0) / np.sqrt(var) if var > 0 else float("nan")
    return w_plus, float(z), n


def tie_groups(x: np.ndarray) -> np.ndarray:
    """Sizes of the groups of equal values in ``x`` (groups of size 1 included)."""
    _, counts = np.unique(x, return_counts=True)
    return counts


def wilcoxon_z(w: np.ndarray) -> tuple[float, float, int]:
    """(W+, Z, n) of the signed-rank statistic, NLPStatTest eq. 4 (no continuity correction).

    Zeros are dropped (Wilcoxon's zero method); ranks of |w| are mid-ranks;
    ``Z = (W+ - n(n+1)/4) / sqrt(n(n+1)(2n+1)/24 - sum(t^3 - t)/48)`` with t the
    sizes of the tie groups of |w|.  Agrees with the z statistic of
    ``scipy.stats.wilcoxon(method="approx", correction=False)``.
    """
    w = np.asarray(w, dtype=float)
    w = w[w != 0]
    n = w.size
    if n == 0:
        return 0.0, float("nan"), 0
    ranks = stats.rankdata(np.abs(w))
    w_plus = float(ranks[w > 0].sum())
    t = tie_groups(np.abs(w)).astype(float)
    var = n * (n + 1) * (2 * n + 1) / 24.0 - float(np.sum(t**3 - t)) / 48.0
    z = (w_plus - n * (n + 1) / 4.0) / np.sqrt(var) if var > 0 else float("nan")
    return w_plus, float(z), n


def _walsh_count(s: np.ndarray, x: float) -> int:
    """Number of Walsh averages ``(s_i + s_j)/2``, i <= j, that are <= x (s sorted)."""
    n = s.size
    j_end = np.searchsorted(s, 2.0 * x - s, side="right")      # j with s_j <= 2x - s_i
    return int(np.maximum(j_end - np.arange(n), 0).sum())


def walsh_quantile(w: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) of the n(n+1)/2 Walsh averages, in O(n log n) memory-free steps.

    Bisection on the value with a sorted-array count, then the exact Walsh
    average at the boundary, so no n^2 array is built (n = 10^5 works).
    """
    s = np.sort(np.asarray(w, dtype=float))
    n = s.size
    m = n * (n + 1) // 2
    if not 1 <= k <= m:
        raise ValueError(f"k must be in 1..{m}; got {k}")
    lo, hi = float(s[0]), float(s[-1])
    if _walsh_count(s, lo) >= k:
        return lo
    for _ in range(200):                       # invariant: count(lo) < k <= count(hi)
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if _walsh_count(s, mid) >= k:
            hi = mid
        else:
            lo = mid
    # the answer is the smallest Walsh average > lo
    idx = np.arange(n)
    j = np.maximum(np.searchsorted(s, 2.0 * lo - s, side="right"), idx)
    ok = j < n
    return float(np.min((s[idx[ok]] + s[j[ok]]) / 2.0))


def hodges_lehmann(w: np.ndarray) -> float:
    """Hodges-Lehmann one-sample estimator: median of the Walsh averages (i <= j)."""
    w = np.asarray(w, dtype=float)
    m = w.size * (w.size + 1) // 2
    if m % 2:
        return walsh_quantile(w, (m + 1) // 2)
    return 0.5 * (walsh_quantile(w, m // 2) + walsh_quantile(w, m // 2 + 1))


@dataclass(frozen=True)
class EffectSizes:
    """Effect sizes of the paired differences ``a - b`` (NLPStatTest sec. 3.3).

    Attributes
    ----------
    cohens_d : float
        ``mean(a - b) / sd(a - b)``.
    hedges_g : float
        ``cohens_d * J``, ``J = 1 - 3 / (4 (n - 1) - 1)`` (paired).
    wilcoxon_r : float
        ``Z / sqrt(n_nonzero)``, Z by eq. 4 with tie-group sizes.
    hodges_lehmann : float
        Median of the Walsh averages, in score units.
    mean_difference, median_difference : float
        Unstandardised differences (Dror et al. 2020's effect size).
    n : int
        Number of differences (evaluation units).
    """

    cohens_d: float
    hedges_g: float
    wilcoxon_r: float
    hodges_lehmann: float
    mean_difference: float
    median_difference: float
    n: int
    convention: str = "nlpower"

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)

    def cohens_d_interval(self, confidence_level: float = 0.95) -> tuple[float, float]:
        """Exact interval of the paired Cohen's d (assumes normal differences).

        ``d sqrt(n)`` is the one-sample t statistic, noncentral t with ``n - 1``
        df and noncentrality ``delta sqrt(n)``; the interval inverts its CDF in
        the noncentrality (Steiger & Fouladi 1997).  ``(nan, nan)`` when d is
        undefined.

        Examples
        --------
        >>> es = effect_sizes([0.3, 0.5, 0.2, 0.9, 0.4], [0.1, 0.4, 0.3, 0.5, 0.1])
        >>> [round(x, 3) for x in es.cohens_d_interval()]
        [-0.176, 1.977]
        """
        return cohens_d_interval(self.cohens_d, self.n, confidence_level)

    def to_frame(self) -> pd.DataFrame:
        """One row per index: name, value, and what it estimates."""
        what = {
            "cohens_d": "standardised mean difference (assumes normality)",
            "hedges_g": "Cohen's d, small-sample corrected (paired J)",
            "wilcoxon_r": "Wilcoxon signed-rank Z / sqrt(n)",
            "hodges_lehmann": "pseudo-median of A - B (score units)",
            "mean_difference": "mean of A - B (score units)",
            "median_difference": "median of A - B (score units)",
        }
        return pd.DataFrame({"effect_size": list(what),
                             "value": [getattr(self, k) for k in what],
                             "meaning": list(what.values())})

    def __repr__(self) -> str:
        return (f"EffectSizes(cohens_d={self.cohens_d:.4g}, hedges_g={self.hedges_g:.4g}, "
                f"wilcoxon_r={self.wilcoxon_r:.4g}, hodges_lehmann={self.hodges_lehmann:.4g}, "
                f"n={self.n})")


def effect_sizes(a: np.ndarray, b: np.ndarray | None = None, *,
                 convention: EffectConvention = "nlpower") -> EffectSizes:
    """All four effect sizes of ``a - b`` (or of ``a`` when ``b`` is None).

    ``convention="nlpstattest"`` uses NLPStatTest's printed Hedges' g and Wilcoxon
    r formulas (module docstring); the default is ours (paired J, tie-group sizes).

    Examples
    --------
    >>> es = effect_sizes([0.3, 0.5, 0.2, 0.9, 0.4], [0.1, 0.4, 0.3, 0.5, 0.1])
    >>> round(es.cohens_d, 4), round(es.hedges_g, 4), round(es.hodges_lehmann, 4)
    (0.9358, 0.7486, 0.2)
    >>> round(effect_sizes([0.3, 0.5, 0.2, 0.9, 0.4], [0.1, 0.4, 0.3, 0.5, 0.1],
    ...                    convention="nlpstattest").hedges_g, 4)   # J = 1 - 3/11
    0.6806

    Provenance: NLPStatTest (Zhu et al. 2020) eq. 2-5, with the paired
    Hedges correction and tie-group sizes (see the module docstring).
    """
    convention = check_choice("convention", convention, ("nlpower", "nlpstattest"))
    w = np.asarray(a, dtype=float) if b is None else np.asarray(a, float) - np.asarray(b, float)
    n = w.size
    sd = float(np.std(w, ddof=1)) if n > 1 else float("nan")
    mean = float(np.mean(w))
    # differences that do not vary (within rounding): no standardised difference exists
    varies = n > 1 and np.ptp(w) > 1e-12 * max(1.0, float(np.max(np.abs(w))))
    d = mean / sd if sd > 0 and varies else float("nan")
    if convention == "nlpstattest":
        g = d * hedges_j_nlpstattest(n) if n > 2 else float("nan")
        _, z, n_r = wilcoxon_z_nlpstattest(w)
    else:
        g = d * hedges_j(n) if n > 2 else float("nan")
        _, z, n_r = wilcoxon_z(w)
    r = z / np.sqrt(n_r) if n_r > 0 else float("nan")
    return EffectSizes(cohens_d=d, hedges_g=g, wilcoxon_r=float(r),
                       hodges_lehmann=hodges_lehmann(w), mean_difference=mean,
                       median_difference=float(np.median(w)), n=int(n), convention=convention)


def cohens_d_interval(d: float, n: int, confidence_level: float = 0.95) -> tuple[float, float]:
    """Exact interval of a one-sample (paired) Cohen's d from ``n`` differences.

    Inverts the noncentral t distribution of ``t = d sqrt(n)`` in its
    noncentrality (see :meth:`EffectSizes.cohens_d_interval`).
    """
    from scipy import optimize, stats

    if not (math.isfinite(d) and n > 1 and 0.0 < confidence_level < 1.0):
        return (math.nan, math.nan)
    t, df, tail = d * math.sqrt(n), n - 1, (1.0 - confidence_level) / 2.0

    def nc_at(prob: float) -> float:
        # the noncentrality whose CDF at t equals prob (the CDF falls as nc grows); scipy's
        # nct.cdf gives NaN far below t, where the CDF is 1 to double precision
        def f(nc: float) -> float:
            p = float(stats.nct.cdf(t, df, nc))
            return (1.0 if nc < t else 0.0) - prob if math.isnan(p) else p - prob

        step, lo, hi = 1.0, t - 1.0, t + 1.0
        while f(lo) < 0.0:
            step *= 2.0
            lo -= step
        step = 1.0
        while f(hi) > 0.0:
            step *= 2.0
            hi += step
        return float(optimize.brentq(f, lo, hi, xtol=1e-10))

    root_n = math.sqrt(n)
    return (nc_at(1.0 - tail) / root_n, nc_at(tail) / root_n)
