"""Paired significance tests of ``d = a - b`` against a hypothesised difference delta.

Each test returns a :class:`TestOutcome`: statistic, p-value, a confidence
interval for the location it tests, and the estimate.  ``alternative`` is
scipy's: "greater" means A scores higher than B by more than ``delta``.
One-sided tests give one-sided intervals at level ``1 - alpha``; two-sided
tests equal-tailed ``1 - alpha`` intervals.

Resampling tests are paired: the bootstrap resamples *pairs* (rows of
indices into d), the permutation test flips the signs of the differences
(swapping a_i and b_i within a pair).  Both are vectorised over index or
sign matrices of shape (n_resamples, n) in batches.  Their p-values carry the
+1 correction ``(1 + #{as or more extreme}) / (n_resamples + 1)`` (Davison &
Hinkley 1997, eq. 4.11; Phipson & Smyth 2010), so they are never 0; a
two-sided p-value is ``min(1, 2 min(p_less, p_greater))``.  The permutation
test enumerates all 2^n sign vectors when ``2^n <= n_resamples`` (exact,
no +1), as scipy's ``permutation_test`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..errors import InputError
from ..intervals import ConfidenceInterval
from .effects import hodges_lehmann, walsh_quantile, wilcoxon_z

__all__ = ["TESTS", "TestOutcome", "run_test"]

_CELLS = 2_000_000          # resampled values per batch (16 MB of float64)
_CACHE_CELLS = 64_000_000   # sign vectors kept in memory (int8) to invert the median test


@dataclass(frozen=True)
class TestOutcome:
    """What one test of the differences gives."""

    test: str
    statistic: float
    statistic_name: str
    pvalue: float
    ci: ConfidenceInterval
    estimate: float
    estimator: str
    n_resamples: int = 0
    note: str = ""


def _interval(lo: float, hi: float) -> ConfidenceInterval:
    return ConfidenceInterval(float(lo), float(hi))


def _sides(p_greater: float, p_less: float, alternative: str) -> float:
    if alternative == "greater":
        return p_greater
    if alternative == "less":
        return p_less
    return min(1.0, 2.0 * min(p_greater, p_less))


def _center(x: np.ndarray, center: str) -> np.ndarray:
    return x.mean(axis=-1) if center == "mean" else np.median(x, axis=-1)


# --- closed-form and exact tests ----------------------------------------------------------


def t_test(d: np.ndarray, *, alternative: str, alpha: float, delta: float, **_: object) -> TestOutcome:
    """Paired t test (``scipy.stats.ttest_1samp`` of the differences)."""
    res = stats.ttest_1samp(d, delta, alternative=alternative)
    ci = res.confidence_interval(1.0 - alpha)
    return TestOutcome("t", float(res.statistic), "t", float(res.pvalue),
                       _interval(ci.low, ci.high), float(np.mean(d)), "mean difference")


def _qsignrank(p: float, n: int) -> int:
    """R's ``qsignrank(p, n)``: smallest q with P(V <= q) >= p, V the signed-rank statistic."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    cdf = np.cumsum(counts) / counts.sum()
    return int(np.searchsorted(cdf, p * (1 - 64 * np.finfo(float).eps), side="left"))


def _wilcoxon_ci(d: np.ndarray, alternative: str, alpha: float) -> tuple[ConfidenceInterval, str]:
    """Walsh-average interval for the pseudo-median (Hollander & Wolfe; R's wilcox.test).

    Exact signed-rank quantiles when n < 50 with no ties and no zeros (R's
    rule), else the normal approximation with the tie correction.
    """
    n = d.size
    m = n * (n + 1) // 2
    a = alpha / 2 if alternative == "two-sided" else alpha
    abs_d = np.abs(d)
    exact = n < 50 and np.unique(abs_d).size == n and not np.any(d == 0)
    if exact:
        qu = _qsignrank(a, n)
        note = "exact signed-rank quantiles"
    else:
        t = np.unique(abs_d, return_counts=True)[1].astype(float)
        sd = np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0 - np.sum(t**3 - t) / 48.0)
        qu = int(np.floor(n * (n + 1) / 4.0 - stats.norm.isf(a) * sd + 0.5))
        note = "normal-approximation signed-rank quantiles"
    qu = min(max(qu, 1), m)
    ql = m - qu
    lo = walsh_quantile(d, qu) if alternative in ("two-sided", "greater") else -np.inf
    hi = walsh_quantile(d, ql + 1) if alternative in ("two-sided", "less") else np.inf
    return _interval(lo, hi), note


def wilcoxon_test(d: np.ndarray, *, alternative: str, alpha: float, delta: float,
                  **_: object) -> TestOutcome:
    """Wilcoxon signed-rank test; statistic W+ (sum of the ranks of positive d - delta).

    p-value from ``scipy.stats.wilcoxon`` (exact for small samples, normal
    approximation otherwise); "greater" is small when A beats B.
    """
    x = d - delta
    w_plus, _z, n_nonzero = wilcoxon_z(x)
    pvalue = 1.0 if n_nonzero == 0 else float(stats.wilcoxon(x, alternative=alternative).pvalue)
    ci, note = _wilcoxon_ci(d, alternative, alpha)
    return TestOutcome("wilcoxon", w_plus, "W+", pvalue, ci, hodges_lehmann(d),
                       "Hodges-Lehmann pseudo-median", note=note)


def sign_test(d: np.ndarray, *, alternative: str, alpha: float, delta: float,
              **_: object) -> TestOutcome:
    """Sign test: the number of d > delta among the non-zero d - delta is Binomial(n, 1/2).

    Interval for the median from order statistics (distribution-free,
    coverage >= 1 - alpha).
    """
    x = d - delta
    n_pos, n_nonzero = int(np.sum(x > 0)), int(np.sum(x != 0))
    p = 1.0 if n_nonzero == 0 else float(stats.binomtest(n_pos, n_nonzero, 0.5,
                                                         alternative=alternative).pvalue)
    s = np.sort(d)
    n = s.size
    a = alpha / 2 if alternative == "two-sided" else alpha
    j = int(stats.binom.ppf(a, n, 0.5))                 # largest j with cdf(j) <= a ...
    if stats.binom.cdf(j, n, 0.5) > a:
        j -= 1                                          # ... is j or j - 1
    k = j + 1                                           # 1-based order statistic
    lo = s[k - 1] if k >= 1 else -np.inf
    hi = s[n - k] if k >= 1 else np.inf
    lo = lo if alternative != "less" else -np.inf
    hi = hi if alternative != "greater" else np.inf
    return TestOutcome("sign", float(n_pos), "n(A > B)", p, _interval(lo, hi),
                       float(np.median(d)), "median difference")


# --- resampling tests --------------------------------------------------------------------


def _rows(n: int, n_resamples: int) -> int:
    return max(1, min(n_resamples, _CELLS // max(n, 1)))


def _bootstrap(d: np.ndarray, n_resamples: int, seq: np.random.SeedSequence,
               fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn`` of n_resamples paired bootstrap samples of d (rows of resampled pairs)."""
    gen = np.random.Generator(np.random.PCG64(seq))
    n = d.size
    rows = _rows(n, n_resamples)
    out = []
    for start in range(0, n_resamples, rows):
        idx = gen.integers(0, n, size=(min(rows, n_resamples - start), n))
        out.append(fn(d[idx]))
    return np.concatenate(out)


def bootstrap_t_test(d: np.ndarray, *, alternative: str, alpha: float, delta: float,
                     n_resamples: int, seq: np.random.SeedSequence, **_: object) -> TestOutcome:
    """Paired bootstrap-t (studentised) test of the mean and its bootstrap-t interval.

    ``t* = (mean(d*) - mean(d)) / se(d*)`` over resampled pairs; p-values
    compare ``t*`` with ``t = (mean(d) - delta) / se(d)`` (+1 corrected);
    the interval is ``[mean - q*(1 - a) se, mean - q*(a) se]`` (Efron &
    Tibshirani 1993, sec. 12.5 and 16.4).  Resamples with se(d*) = 0 are
    dropped (counted in ``note``); differences that are all equal leave no
    resample to compare with and are refused.
    """
    n = d.size
    mean = float(np.mean(d))
    se = float(np.std(d, ddof=1) / np.sqrt(n))
    if not np.ptp(d) > 1e-12 * max(1.0, float(np.max(np.abs(d)))):
        raise InputError(
            f"test='bootstrap_t' is undefined here: every difference is {d[0]:.6g} (up to "
            "rounding), so the resamples have no spread to studentise by (t* would be 0/0 or "
            "rounding noise). "
            "Use test='permutation', 'sign' or 'wilcoxon' (exact sign-flip and rank tests).")

    def studentised(x: np.ndarray) -> np.ndarray:
        s = x.std(axis=1, ddof=1) / np.sqrt(n)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(s > 0, (x.mean(axis=1) - mean) / s, np.nan)

    t_star = _bootstrap(d, n_resamples, seq, studentised)
    t_star = t_star[np.isfinite(t_star)]
    b = t_star.size
    t_obs = (mean - delta) / se if se > 0 else np.copysign(np.inf, mean - delta)
    p_g = (1 + np.sum(t_star >= t_obs)) / (b + 1)
    p_l = (1 + np.sum(t_star <= t_obs)) / (b + 1)
    a = alpha / 2 if alternative == "two-sided" else alpha
    q_hi, q_lo = np.quantile(t_star, [1 - a, a]) if b else (np.nan, np.nan)
    lo = mean - q_hi * se if alternative != "less" else -np.inf
    hi = mean - q_lo * se if alternative != "greater" else np.inf
    note = f"{n_resamples - b} resamples with zero SE dropped" if b < n_resamples else ""
    return TestOutcome("bootstrap_t", float(t_obs), "t", _sides(p_g, p_l, alternative),
                       _interval(lo, hi), mean, "mean difference", n_resamples=n_resamples,
                       note=note)


def bootstrap_percentile_test(d: np.ndarray, *, alternative: str, alpha: float, delta: float,
                              center: str, n_resamples: int, seq: np.random.SeedSequence,
                              **_: object) -> TestOutcome:
    """Paired percentile bootstrap of the mean or median difference.

    The p-value inverts the percentile interval: ``p_greater = (1 + #{theta* <= delta}) / (B + 1)``
    (the share of bootstrap estimates on the null side), so the test rejects
    when delta lies outside the interval, up to the +1 correction (Efron &
    Tibshirani 1993, sec. 16.4).
    """
    theta = float(_center(d, center))
    star = _bootstrap(d, n_resamples, seq, lambda x: _center(x, center))
    b = star.size
    p_g = (1 + np.sum(star <= delta)) / (b + 1)
    p_l = (1 + np.sum(star >= delta)) / (b + 1)
    a = alpha / 2 if alternative == "two-sided" else alpha
    q_lo, q_hi = np.quantile(star, [a, 1 - a])
    lo = q_lo if alternative != "less" else -np.inf
    hi = q_hi if alternative != "greater" else np.inf
    return TestOutcome("bootstrap_percentile", theta, center, _sides(p_g, p_l, alternative),
                       _interval(lo, hi), theta, f"{center} difference", n_resamples=n_resamples)


def _sign_batches(n: int, n_resamples: int, seq: np.random.SeedSequence
                  ) -> Iterator[np.ndarray]:
    """Sign matrices (rows of +-1): all 2^n when that is <= n_resamples, else random.

    Regenerated identically from ``seq`` on every call, so an interval found
    by inverting the test uses the same sign vectors as its p-value.
    """
    if 2**n <= n_resamples:
        codes = np.arange(2**n)[:, None] >> np.arange(n)
        yield (1 - 2 * (codes & 1)).astype(np.int8)
        return
    gen = np.random.Generator(np.random.PCG64(seq))
    rows = _rows(n, n_resamples)
    for start in range(0, n_resamples, rows):
        r = min(rows, n_resamples - start)
        yield (1 - 2 * gen.integers(0, 2, size=(r, n), dtype=np.int8)).astype(np.int8)


class _SignFlips:
    """p-values of the sign-flip test of ``d - delta`` for any delta, from one set of signs.

    For the mean, ``T*(delta) - T(delta) = (A_b - delta C_b) / n`` with
    ``A_b = sum_i (s_i - 1) d_i`` and ``C_b = sum_i (s_i - 1)`` computed once per
    sign vector b (one matrix-vector product), so inverting the test costs
    almost nothing.  For the median the flipped medians are recomputed (in
    batches, the same sign vectors every time).
    """

    def __init__(self, d: np.ndarray, center: str, n_resamples: int,
                 seq: np.random.SeedSequence) -> None:
        self.d, self.center, self.n_resamples, self.seq = d, center, n_resamples, seq
        self.exact = 2**d.size <= n_resamples
        self.a: np.ndarray | None = None
        self.c: np.ndarray | None = None
        self.cached: list[np.ndarray] | None = None
        if center == "median" and d.size * n_resamples <= _CACHE_CELLS:
            self.cached = list(_sign_batches(d.size, n_resamples, seq))
        if center == "mean":
            parts = [((signs - 1).astype(float) @ d, (signs - 1).sum(axis=1).astype(float))
                     for signs in _sign_batches(d.size, n_resamples, seq)]
            self.a = np.concatenate([p[0] for p in parts])
            self.c = np.concatenate([p[1] for p in parts])

    def pvalues(self, delta: float) -> tuple[float, float]:
        """(p_greater, p_less) of H0: location = delta (+1 corrected unless exact)."""
        x = self.d - delta
        obs = float(_center(x, self.center))
        gamma = abs(100 * np.finfo(float).eps * obs)       # scipy's tolerance for ties with T
        if self.a is not None and self.c is not None:
            diff = (self.a - delta * self.c) / x.size       # T* - T for every sign vector
            ge, le, total = int(np.sum(diff >= -gamma)), int(np.sum(diff <= gamma)), diff.size
        else:
            ge = le = total = 0
            batches = self.cached if self.cached is not None else \
                _sign_batches(x.size, self.n_resamples, self.seq)
            for signs in batches:
                t = _center(signs * x, self.center)
                ge += int(np.sum(t >= obs - gamma))
                le += int(np.sum(t <= obs + gamma))
                total += t.size
        if self.exact:
            return ge / total, le / total
        return (1 + ge) / (total + 1), (1 + le) / (total + 1)


def _invert(p_of: Callable[[float], float], a: float, inside: float, step: float,
            tol: float) -> float:
    """The delta where ``p_of`` drops to ``a``, searching from ``inside`` in direction ``step``.

    The bracket grows by doubling ``step`` (a standard error) until the test
    rejects, then bisection to ``tol`` standard errors; +-inf when even 2^20
    standard errors away the test does not reject (too few units).  ``tol``
    is in units of ``step``.
    """
    outside = inside + step
    for _ in range(20):
        if p_of(outside) <= a:
            break
        inside, outside = outside, outside + 2 * (outside - inside)
    else:
        return float(np.copysign(np.inf, step))
    while abs(outside - inside) > tol * abs(step):
        mid = 0.5 * (inside + outside)
        if p_of(mid) > a:
            inside = mid
        else:
            outside = mid
    return inside


def permutation_test(d: np.ndarray, *, alternative: str, alpha: float, delta: float,
                     center: str, n_resamples: int, seq: np.random.SeedSequence,
                     **_: object) -> TestOutcome:
    """Paired permutation (sign-flip) test of the mean or median of d - delta.

    Under H0 the pair labels are exchangeable, so each d_i - delta keeps or
    flips its sign.  The interval collects the delta the test does not
    reject (found by bisection with the same sign vectors, to 1e-4 standard
    errors for the mean and 1e-3 for the median, whose flipped medians are
    recomputed at every step: with n = 2000 units and 10^4 resamples the
    median's interval takes tens of seconds, the mean's under one).
    """
    flips = _SignFlips(d, center, n_resamples, seq)
    p_g, p_l = flips.pvalues(delta)
    a = alpha / 2 if alternative == "two-sided" else alpha
    theta = float(_center(d, center))
    se = float(np.std(d, ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
    se = max(se, 1e-10 * max(1.0, abs(theta)))        # (near-)constant d: a point interval
    lo, hi = -np.inf, np.inf
    tol = 1e-4 if center == "mean" else 1e-3
    if alternative != "less":
        lo = _invert(lambda dl: flips.pvalues(dl)[0], a, inside=theta, step=-se, tol=tol)
    if alternative != "greater":
        hi = _invert(lambda dl: flips.pvalues(dl)[1], a, inside=theta, step=se, tol=tol)
    return TestOutcome("permutation", float(_center(d - delta, center)), f"{center}(d - delta)",
                       _sides(p_g, p_l, alternative), _interval(lo, hi), theta,
                       f"{center} difference", n_resamples=0 if flips.exact else n_resamples,
                       note=f"exact: all {2**d.size} sign flips" if flips.exact else "")


TESTS: dict[str, Callable[..., TestOutcome]] = {
    "t": t_test,
    "wilcoxon": wilcoxon_test,
    "sign": sign_test,
    "bootstrap_t": bootstrap_t_test,
    "bootstrap_percentile": bootstrap_percentile_test,
    "permutation": permutation_test,
}
RESAMPLING = ("bootstrap_t", "bootstrap_percentile", "permutation")


def run_test(test: str, d: np.ndarray, *, alternative: str, alpha: float, delta: float,
             center: str, n_resamples: int, seq: np.random.SeedSequence) -> TestOutcome:
    """Run ``test`` on the differences (validated by the caller)."""
    return TESTS[test](d, alternative=alternative, alpha=alpha, delta=delta, center=center,
                       n_resamples=n_resamples, seq=seq)
