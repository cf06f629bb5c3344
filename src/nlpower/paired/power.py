"""Power of paired comparisons (NLPStatTest, Zhu et al. 2020, sec. 3.4).

* **Prospective** (planning a test set): the exact power of the paired t test
  for an expected mean and SD of the differences (noncentral t), and the
  smallest number of units that reaches a target power (:func:`sample_size`).
* **Retrospective** (after a test, power against sample size): Monte Carlo
  from a normal with a given (or the observed) mean and SD, or resampling
  the observed differences (bootstrap), for the t, Wilcoxon or sign test
  (:func:`retrospective_power`).
* **Observed power** (:func:`observed_power`): the power at the *observed*
  effect and n.  It is a one-to-one transformation of the p-value (p = alpha
  gives about 50%) and says nothing the p-value does not (Hoenig & Heisey
  2001); it is reported only with that label.

Power counts sign-correct rejections only (nlpower's rule, Card et al. 2020
Fig. 2): a two-sided rejection in the wrong direction is a Type-S error, not
power.  For the t test this omits the tail ``P(T' < -c)`` that statsmodels'
``TTestPower`` adds, which is negligible unless the effect is ~0.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from .. import __version__
from .._choices import Alternative, PairedPowerTest, RetroPowerMethod, check_choice
from .._records import RecordCodec, RecordLayout
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_probability, check_real
from ..errors import InputError
from ..intervals import ConfidenceInterval, mc_se, wilson_ci
from ..montecarlo import MonteCarloSummary
from . import plots
from .units import EvaluationUnits, as_scores

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "PairedPowerResult",
    "PowerCurveResult",
    "SampleSizeResult",
    "observed_power",
    "power_curve",
    "retrospective_power",
    "sample_size",
    "t_power",
]

_CELLS = 2_000_000


# --- exact power of the paired t test ------------------------------------------------------


def _t_parts(n: int, mean: float, sd: float, alpha: float, alternative: str
             ) -> tuple[float, float]:
    """(sign-correct, wrong-sign) rejection probabilities of the paired t test."""
    df = n - 1
    ncp = mean / sd * np.sqrt(n)
    if alternative == "greater":
        c = stats.t.isf(alpha, df)
        return float(stats.nct.sf(c, df, ncp)), 0.0
    if alternative == "less":
        c = stats.t.isf(alpha, df)
        return float(stats.nct.cdf(-c, df, ncp)), 0.0
    c = stats.t.isf(alpha / 2, df)
    up, down = float(stats.nct.sf(c, df, ncp)), float(stats.nct.cdf(-c, df, ncp))
    return (up, down) if mean >= 0 else (down, up)


def t_power(n: int, mean: float, sd: float, *, alpha: float = 0.05,
            alternative: Alternative = "two-sided") -> float:
    """Exact power of the paired t test with n units, differences ~ N(mean, sd^2).

    Sign-correct rejections only (see the module docstring); with mean = 0
    the rejection rate (alpha).

    Examples
    --------
    >>> round(t_power(34, 0.5, 1.0), 4)
    0.8078

    Provenance: noncentral t with df = n - 1 and ncp = sqrt(n) mean / sd;
    checked against statsmodels ``TTestPower`` and R ``power.t.test(type="paired")``.
    """
    n = check_int("n", n, min=2)
    sd = check_real("sd", sd, min=0.0, min_open=True)
    mean = check_real("mean", mean)
    alpha = check_probability("alpha", alpha)
    check_choice("alternative", alternative, Alternative)
    right, wrong = _t_parts(n, mean, sd, alpha, alternative)
    return right + wrong if mean == 0 else right


@dataclass(frozen=True)
class SampleSizeResult:
    """Smallest number of evaluation units for a target power (prospective, paired t).

    Attributes
    ----------
    n : int
        Units needed (with m instances per unit, ``n * m`` test instances).
    power : float
        Exact power at ``n`` (>= ``target_power``).
    target_power, mean, sd, effect_size, alpha, alternative
        The inputs; ``effect_size = mean / sd`` (Cohen's d of the differences).
    """

    n: int
    power: float
    target_power: float
    mean: float
    sd: float
    alpha: float
    alternative: Alternative

    @property
    def effect_size(self) -> float:
        return self.mean / self.sd

    def __repr__(self) -> str:
        return (f"SampleSizeResult(n={self.n}, power={self.power:.4f}, "
                f"effect_size={self.effect_size:.4g})")

    def summary(self) -> str:
        return (f"Prospective power (paired t test, exact noncentral t)\n"
                f"  expected difference {self.mean:.4g}, SD {self.sd:.4g} "
                f"(d = {self.effect_size:.4g}), alpha = {self.alpha:g}, {self.alternative}\n"
                f"  n = {self.n} evaluation units give power {self.power:.4f} "
                f"(target {self.target_power:g})")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"n": self.n, "power": self.power, "target_power": self.target_power,
                              "mean": self.mean, "sd": self.sd, "effect_size": self.effect_size,
                              "alpha": self.alpha, "alternative": self.alternative}])


def sample_size(mean: float, sd: float, *, target_power: float = 0.8, alpha: float = 0.05,
                alternative: Alternative = "two-sided", max_n: int = 10**8) -> SampleSizeResult:
    """Smallest n (units) at which the paired t test reaches ``target_power`` (NLPStatTest sec. 3.4.1).

    Parameters
    ----------
    mean, sd : float
        Expected mean and SD of the per-unit differences A - B.
    target_power, alpha, alternative
        Target power (sign-correct), significance level, direction.

    Examples
    --------
    >>> sample_size(0.5, 1.0).n
    34

    Provenance: exact search on :func:`t_power` (power is increasing in n);
    agrees with statsmodels ``TTestPower().solve_power`` rounded up.
    """
    mean = check_real("mean", mean)
    sd = check_real("sd", sd, min=0.0, min_open=True)
    target = check_probability("target_power", target_power)
    alpha = check_probability("alpha", alpha)
    check_choice("alternative", alternative, Alternative)
    if mean == 0 or (alternative == "greater" and mean < 0) or (alternative == "less" and mean > 0):
        raise InputError(
            f"mean={mean:g} cannot be detected with alternative={alternative!r}: power stays at or "
            "below alpha. Give the expected difference A - B in the direction of the alternative.")

    def pw(n: int) -> float:
        return _t_parts(n, mean, sd, alpha, alternative)[0]

    hi = 2
    while pw(hi) < target:
        if hi >= max_n:
            raise InputError(f"more than max_n={max_n} units are needed for power {target:g} at "
                             f"mean={mean:g}, sd={sd:g}; raise max_n or expect a larger effect.")
        hi = min(hi * 2, max_n)
    lo = max(2, hi // 2)
    if pw(lo) >= target:
        hi = lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pw(mid) >= target:
            hi = mid
        else:
            lo = mid
    return SampleSizeResult(n=hi, power=pw(hi), target_power=target, mean=mean, sd=sd,
                            alpha=alpha, alternative=alternative)


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairedPowerResult(RecordCodec):
    """Power of one paired test at one sample size.

    Attributes
    ----------
    power : float
        Share of sign-correct rejections (exact for ``method="exact"``).
    se, ci : float, ConfidenceInterval
        Monte Carlo SE and 95% Wilson interval (0 and zero width when exact).
    type_m, type_s : float
        Exaggeration ratio ``E|estimate| / |effect|`` among significant
        replicates, and the share of them with the wrong sign (Gelman &
        Carlin 2014); NaN when nothing was significant or not simulated.
    n_sims : int
        Replicates (0 when exact).
    n, test, alternative, alpha, effect, sd, method, seed, version
        Settings: ``effect`` is the true effect of the simulation (its mean,
        or for a bootstrap the observed mean/median), ``method`` one of
        "exact", "normal", "bootstrap".
    """

    power: float
    se: float
    ci: ConfidenceInterval
    type_m: float
    type_s: float
    n_sims: int
    n: int
    test: str
    alternative: str
    alpha: float
    effect: float
    sd: float
    method: str
    seed: dict[str, Any] | None = None
    version: str = __version__
    #: the Monte Carlo summary of a simulated result (None when exact)
    mc: MonteCarloSummary | None = field(default=None, repr=False, compare=False)

    _record_layout = RecordLayout(first=("power", "ci_low", "ci_high"), nan="keep",
                                  seed="text", summary="effect")

    def __repr__(self) -> str:
        return (f"PairedPowerResult(n={self.n}, power={self.power:.4f}, se={self.se:.3g}, "
                f"test={self.test!r}, method={self.method!r})")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([self.to_record()])

    def summary(self) -> str:
        mc = (f" (Monte Carlo SE {self.se:.3g}, 95% CI {self.ci.low:.3f}-{self.ci.high:.3f}, "
              f"{self.n_sims} simulations)" if self.n_sims else " (exact)")
        return (f"power of the {self.test} test at n = {self.n}: {self.power:.4f}{mc}; "
                f"method {self.method}, alpha = {self.alpha:g}, {self.alternative}")


@dataclass(frozen=True)
class PowerCurveResult:
    """Power against the number of evaluation units (NLPStatTest Figure 3).

    ``results`` holds one :class:`PairedPowerResult` per sample size;
    ``to_frame()`` is tidy (one row per n), ``plot()`` draws the curve.
    ``n_observed`` marks the size of the data the curve was derived from;
    ``observed_effect`` is True when the simulated effect is the observed one
    (then the power at ``n_observed`` is "observed power", a transformation
    of the p-value).
    """

    results: tuple[PairedPowerResult, ...]
    method: str
    test: str
    alpha: float
    alternative: str
    effect: float
    sd: float
    n_observed: int | None
    seed: dict[str, Any] | None
    note: str = ""
    observed_effect: bool = False
    version: str = field(default=__version__)

    @property
    def sizes(self) -> np.ndarray:
        return np.array([r.n for r in self.results])

    @property
    def power(self) -> np.ndarray:
        return np.array([r.power for r in self.results])

    def __repr__(self) -> str:
        return (f"PowerCurveResult(method={self.method!r}, test={self.test!r}, "
                f"n={self.sizes.min()}..{self.sizes.max()}, power={self.power.min():.3f}.."
                f"{self.power.max():.3f})")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([r.to_record() for r in self.results])

    def summary(self) -> str:
        head = {"exact": "prospective, exact noncentral t",
                "normal": f"retrospective, Monte Carlo from N({self.effect:.4g}, {self.sd:.4g}^2)",
                "bootstrap": "retrospective, bootstrap from the observed differences"}[self.method]
        cols = ["n", "power", "ci_low", "ci_high", "type_m", "type_s", "n_sims"]
        lines = [f"Power of the {self.test} test vs number of evaluation units ({head}), "
                 f"alpha = {self.alpha:g}, {self.alternative}",
                 self.to_frame()[cols].to_string(index=False, float_format=lambda v: f"{v:.4g}")]
        if self.note:
            lines.append(f"note: {self.note}")
        if self.observed_effect:
            lines.append("note: the effect simulated is the observed one, so the power at the "
                         "observed n is a transformation of the p-value (observed power); pass "
                         "mean= with an effect chosen in advance for a planning curve")
        return "\n".join(lines)

    def plot(self, ax: Any = None, *, target: float | None = 0.8) -> Figure:
        """Power vs sample size with the Monte Carlo band (see :mod:`nlpower.paired.plots`)."""
        return plots.plot_power_curve(self, ax=ax, target=target)


def power_curve(sizes: Any, mean: float, sd: float, *, alpha: float = 0.05,
                alternative: Alternative = "two-sided") -> PowerCurveResult:
    """Exact paired-t power at each n of ``sizes`` (prospective curve).

    Examples
    --------
    >>> power_curve([10, 34, 100], 0.5, 1.0).power.round(3).tolist()
    [0.293, 0.808, 0.999]
    """
    ns = _sizes(sizes)
    results = []
    for n in ns:
        p = t_power(int(n), mean, sd, alpha=alpha, alternative=alternative)
        results.append(PairedPowerResult(
            power=p, se=0.0, ci=ConfidenceInterval(p, p), type_m=np.nan,
            type_s=_exact_type_s(int(n), mean, sd, alpha, alternative), n_sims=0, n=int(n),
            test="t", alternative=alternative, alpha=alpha, effect=mean, sd=sd, method="exact"))
    return PowerCurveResult(results=tuple(results), method="exact", test="t", alpha=alpha,
                            alternative=alternative, effect=mean, sd=sd, n_observed=None,
                            seed=None)


def _exact_type_s(n: int, mean: float, sd: float, alpha: float, alternative: str) -> float:
    right, wrong = _t_parts(n, mean, sd, alpha, alternative)
    return wrong / (right + wrong) if mean != 0 and right + wrong > 0 else float("nan")


def _sizes(sizes: Any) -> np.ndarray:
    try:
        ns = np.atleast_1d(np.asarray(sizes))
    except (TypeError, ValueError):
        ns = np.array([])
    if ns.size == 0 or ns.ndim != 1 or not np.issubdtype(ns.dtype, np.integer) or (ns < 2).any():
        raise InputError(f"sizes must be a non-empty list of integers >= 2 (numbers of "
                         f"evaluation units); got {sizes!r}.")
    return np.unique(ns)


# --- retrospective power by simulation ------------------------------------------------------


def _pvalues(x: np.ndarray, test: str, alternative: str) -> np.ndarray:
    """p-values of ``test`` for each row of x (H0: location 0)."""
    if test == "t":
        with np.errstate(divide="ignore", invalid="ignore"):
            return stats.ttest_1samp(x, 0.0, axis=1, alternative=alternative).pvalue
    if test == "wilcoxon":
        return _wilcoxon_pvalues(x, alternative)
    n_pos = np.sum(x > 0, axis=1)
    n_nz = np.sum(x != 0, axis=1)
    p_g = np.where(n_nz > 0, stats.binom.sf(n_pos - 1, n_nz, 0.5), 1.0)
    p_l = np.where(n_nz > 0, stats.binom.cdf(n_pos, n_nz, 0.5), 1.0)
    if alternative == "greater":
        return p_g
    if alternative == "less":
        return p_l
    return np.minimum(1.0, 2 * np.minimum(p_g, p_l))


@functools.cache
def _asymptotic() -> str:
    """scipy's name of the normal approximation ('approx' before scipy 1.13)."""
    try:
        stats.wilcoxon([1.0, 2.0, 3.5], method="asymptotic")
    except ValueError:
        return "approx"
    return "asymptotic"


def _wilcoxon_pvalues(x: np.ndarray, alternative: str) -> np.ndarray:
    """Signed-rank p-values per row, by R's rule: the exact null distribution for a row of
    fewer than 50 values without ties or zeros, else the normal approximation (tie-corrected).

    Bootstrap resamples repeat values, so most rows are tied; scipy's ``method="auto"`` runs a
    permutation test of every row (2^n statistics each) once any row of n <= 13 is tied --
    minutes for a thousand rows -- and the normal approximation for all rows, tie-free ones
    too, once any row of n > 13 is.
    """
    p = np.ones(x.shape[0])
    absx = np.sort(np.abs(x), axis=1)
    tied = np.any(absx[:, 1:] == absx[:, :-1], axis=1) | np.any(x == 0, axis=1)
    nonzero = np.any(x != 0, axis=1)
    exact = nonzero & ~tied & (x.shape[1] < 50)
    normal = nonzero & ~exact
    if exact.any():
        p[exact] = stats.wilcoxon(x[exact], axis=1, alternative=alternative,
                                  method="exact").pvalue
    if normal.any():
        p[normal] = stats.wilcoxon(x[normal], axis=1, alternative=alternative,
                                   method=_asymptotic()).pvalue
    return p


def _simulate_cell(draw: Any, n: int, n_sims: int, test: str, alternative: str, alpha: float,
                   effect: float, gen: np.random.Generator) -> tuple[int, int, list[float]]:
    """(sign-correct rejections, wrong-sign rejections, |estimate| of the significant)."""
    rows = max(1, _CELLS // n)
    direction = np.sign(effect) or 1.0
    a = alpha / 2 if alternative == "two-sided" else alpha
    right_alt = ("greater" if direction > 0 else "less") if alternative == "two-sided" else alternative
    wrong_alt = "less" if right_alt == "greater" else "greater"
    right = wrong = 0
    magnitudes: list[float] = []
    for start in range(0, n_sims, rows):
        x = draw(gen, min(rows, n_sims - start), n)
        est = np.median(x, axis=1) if test == "sign" else x.mean(axis=1)
        hit = _pvalues(x, test, right_alt) <= a
        miss = (_pvalues(x, test, wrong_alt) <= a) if alternative == "two-sided" \
            else np.zeros_like(hit)
        right += int(hit.sum())
        wrong += int(miss.sum())
        magnitudes.extend(np.abs(est[hit | miss]).tolist())
    return right, wrong, magnitudes


def retrospective_power(data: Any, *, sizes: Any = None, method: RetroPowerMethod = "normal",
                        test: PairedPowerTest | None = None, mean: float | None = None,
                        sd: float | None = None, alpha: float | None = None,
                        alternative: Alternative | None = None, n_sims: int = 1000,
                        rng: RNGLike = None) -> PowerCurveResult:
    """Power against sample size after a test (NLPStatTest sec. 3.4.2, Figure 3).

    Parameters
    ----------
    data : CompareResult or array-like
        A :class:`~nlpower.paired.CompareResult` (its differences, test,
        alpha and alternative are the defaults) or the differences A - B.
    sizes : list of int, optional
        Numbers of evaluation units; default 9 sizes from n/4 to 4n.
    method : {"normal", "bootstrap"}
        "normal": simulate N(``mean``, ``sd``^2) (defaults: the observed mean
        and SD; pass an informed ``mean`` from earlier studies).  "bootstrap":
        resample the observed differences with replacement (the true effect
        is then the observed mean, or median for the sign test).
    test : {"t", "wilcoxon", "sign"}, optional
        Default: the compared test; resampling tests map to their
        closed-form counterpart (bootstrap_t/permutation -> t,
        bootstrap_percentile -> sign), said in ``note``.
    n_sims : int
        Replicates per size.
    rng : seed or Generator
        nlpower's rng policy; each size gets a child stream.

    Examples
    --------
    >>> import numpy as np
    >>> d = np.random.default_rng(1).normal(0.3, 1.0, 60)
    >>> curve = retrospective_power(d, sizes=[20, 80], n_sims=400, rng=7)
    >>> curve.power.round(2).tolist()
    [0.24, 0.71]
    """
    note = ""
    chosen: str | None = test
    if isinstance(getattr(data, "units", None), EvaluationUnits):      # a CompareResult
        d = data.units.diff
        chosen = chosen or _POWER_TEST.get(data.test, "t")
        if _POWER_TEST.get(data.test) != data.test and chosen == _POWER_TEST.get(data.test):
            note = (f"the {data.test} test is simulated by its closed-form counterpart, the "
                    f"{chosen} test")
        alpha = data.alpha if alpha is None else alpha
        alternative = data.alternative if alternative is None else alternative
    else:
        d = as_scores("data", data, min_size=2)
    test = check_choice("test", "t" if chosen is None else chosen, PairedPowerTest)
    check_choice("method", method, RetroPowerMethod)
    alpha = check_probability("alpha", 0.05 if alpha is None else alpha)
    alternative = check_choice("alternative", alternative or "two-sided", Alternative)
    n_sims = check_int("n_sims", n_sims, min=1)
    n_obs = d.size
    ns = _sizes(sizes if sizes is not None else
                np.unique(np.round(np.geomspace(max(5, n_obs / 4), 4 * n_obs, 9)).astype(int)))
    seq = root_seed(rng)
    if method == "normal":
        mu = float(np.mean(d)) if mean is None else check_real("mean", mean)
        sigma = float(np.std(d, ddof=1)) if sd is None else check_real("sd", sd, min=0.0,
                                                                         min_open=True)
        if not sigma > 0:
            raise InputError("sd of the differences is 0; pass sd= explicitly.")

        def draw(gen: np.random.Generator, r: int, n: int) -> np.ndarray:
            return gen.normal(mu, sigma, size=(r, n))
    else:
        if mean is not None or sd is not None:
            raise InputError("mean= and sd= apply to method='normal'; the bootstrap resamples the "
                             "observed differences as they are.")
        mu = float(np.median(d)) if test == "sign" else float(np.mean(d))
        sigma = float(np.std(d, ddof=1))

        def draw(gen: np.random.Generator, r: int, n: int) -> np.ndarray:
            return d[gen.integers(0, n_obs, size=(r, n))]

    results = []
    for n, child in zip(ns, seq.spawn(len(ns)), strict=True):
        gen = np.random.Generator(np.random.PCG64(child))
        right, wrong, mags = _simulate_cell(draw, int(n), n_sims, test, alternative, alpha, mu, gen)
        p = right / n_sims
        sig = right + wrong
        type_m = float(np.mean(mags) / abs(mu)) if sig and mu != 0 else float("nan")
        mc = MonteCarloSummary(n_sims, right, sig, wrong, mu, type_m,
                               MonteCarloSummary.spread(np.asarray(mags) / abs(mu))
                               if mu != 0 else float("nan"))
        results.append(PairedPowerResult(
            mc=mc,
            power=p, se=mc_se(p, n_sims), ci=ConfidenceInterval(*wilson_ci(right, n_sims)),
            type_m=type_m,
            type_s=wrong / sig if sig else float("nan"), n_sims=n_sims, n=int(n), test=test,
            alternative=alternative, alpha=alpha, effect=mu, sd=sigma, method=method,
            seed=seed_record(child)))
    return PowerCurveResult(results=tuple(results), method=method, test=test, alpha=alpha,
                            alternative=alternative, effect=mu, sd=sigma, n_observed=n_obs,
                            seed=seed_record(seq), note=note,
                            observed_effect=method == "bootstrap" or mean is None)


_POWER_TEST = {"t": "t", "wilcoxon": "wilcoxon", "sign": "sign", "bootstrap_t": "t",
               "permutation": "t", "bootstrap_percentile": "sign"}


def observed_power(n: int, mean: float, sd: float, *, alpha: float = 0.05,
                   alternative: Alternative = "two-sided") -> float:
    """"Observed power": paired-t power at the observed mean and SD -- a transformation of p.

    For the t test it is a monotone function of the p-value alone (p = alpha
    gives ~0.5), so it adds no information and cannot show a test "had
    enough power" (Hoenig & Heisey 2001).  Reported only with that label;
    plan with :func:`sample_size` or :func:`retrospective_power` at an
    effect chosen in advance.
    """
    if not sd > 0:
        return float("nan")
    return t_power(n, mean, sd, alpha=alpha, alternative=alternative)
