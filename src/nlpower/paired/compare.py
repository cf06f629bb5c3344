"""``compare``: NLPStatTest's comparison stage for two systems' paired scores.

Evaluation units -> data analysis (summaries, skewness rule, Shapiro-Wilk,
recommended tests) -> significance test (p-value and interval) -> effect
sizes -> (power) -> report, after Zhu et al. (2020), Figure 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import __version__
from .._choices import Alternative, Center, EUStat, PairedTest, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_probability, check_real
from ..errors import InputError
from ..intervals import ConfidenceInterval
from . import plots
from .analysis import DataAnalysisResult, Recommendation, analyze_units
from .effects import EffectConvention, EffectSizes, effect_sizes
from .power import (
    PairedPowerResult,
    PowerCurveResult,
    SampleSizeResult,
    observed_power,
    retrospective_power,
)
from .significance import RESAMPLING, run_test
from .units import EvaluationUnits, as_pairs, group_units

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["CompareResult", "analyze", "compare", "compare_units"]

TEST_NAMES = {
    "t": "paired t test",
    "wilcoxon": "Wilcoxon signed-rank test",
    "sign": "sign test",
    "bootstrap_t": "paired bootstrap-t test",
    "bootstrap_percentile": "paired percentile bootstrap test",
    "permutation": "paired permutation (sign-flip) test",
}
MIN_UNITS = 3


def _units(a: Any, b: Any, eu_size: Any, eu_stat: Any, shuffle: bool,
           seq: np.random.SeedSequence) -> EvaluationUnits:
    x, y = as_pairs(a, b)
    m = check_int("eu_size", eu_size, min=1)
    check_choice("eu_stat", eu_stat, EUStat)
    k = x.size // m
    if k < MIN_UNITS:
        raise InputError(
            f"{x.size} instances with eu_size={m} give {k} evaluation unit(s); at least "
            f"{MIN_UNITS} are needed. "
            + ("Use a smaller eu_size= or more test instances." if m > 1
               else f"Give scores of at least {MIN_UNITS} test instances."))
    order = np.random.Generator(np.random.PCG64(seq)).permutation(x.size) if shuffle else None
    ua, ub = group_units(x, y, m, eu_stat, order)
    return EvaluationUnits(a=ua, b=ub, n_instances=int(x.size), eu_size=m, eu_stat=eu_stat,
                           shuffle=bool(shuffle), n_dropped=int(x.size - k * m),
                           seed=seed_record(seq) if shuffle else None)


def analyze(a: Any, b: Any, *, eu_size: int = 1, eu_stat: EUStat = "mean", shuffle: bool = False,
            normality_alpha: float = 0.05, rng: RNGLike = None) -> DataAnalysisResult:
    """NLPStatTest's data-analysis step alone: summaries, skewness, normality, recommendation.

    Same grouping arguments as :func:`compare` (the same ``rng`` gives the
    same shuffle as there).

    Examples
    --------
    >>> res = analyze([0.9, 0.8, 0.7, 0.95, 0.6, 0.85], [0.7, 0.8, 0.6, 0.9, 0.5, 0.6])
    >>> res.center, res.recommendation.tests[0]
    ('mean', 't')
    """
    normality_alpha = check_probability("normality_alpha", normality_alpha)
    shuffle_seq, _ = root_seed(rng).spawn(2)
    units = _units(a, b, eu_size, eu_stat, shuffle, shuffle_seq)
    return analyze_units(units.a, units.b, normality_alpha=normality_alpha)


@dataclass(frozen=True)
class CompareResult:
    """Paired comparison of systems A and B (NLPStatTest's stage 2).

    Attributes
    ----------
    test : str
        The test run (see :data:`nlpower._choices.PairedTest`).
    pvalue, statistic, statistic_name
        The test's p-value and statistic (t, W+, number of A > B, ...).
    ci : ConfidenceInterval
        ``1 - alpha`` interval for the tested location of A - B (one-sided
        for one-sided alternatives); ``estimate`` and ``estimator`` name it.
    effect_sizes : EffectSizes
        Cohen's d, Hedges' g (paired J), Wilcoxon r, Hodges-Lehmann.
    analysis : DataAnalysisResult
        Summaries, skewness, Shapiro-Wilk and the recommendation.
    units : EvaluationUnits
        The EU scores tested.
    observed_power : float
        Paired-t power at the observed mean and SD: a transformation of the
        p-value, **not** evidence of power (see :func:`~nlpower.paired.power.observed_power`).
    alternative, alpha, delta, center, n_resamples, names, seed, version
        Settings (``n_resamples`` is 0 for closed-form and exact tests).
    """

    test: str
    pvalue: float
    statistic: float
    statistic_name: str
    ci: ConfidenceInterval
    estimate: float
    estimator: str
    effect_sizes: EffectSizes
    analysis: DataAnalysisResult
    units: EvaluationUnits
    observed_power: float
    alternative: Alternative
    alpha: float
    delta: float
    center: Center
    n_resamples: int
    names: tuple[str, str]
    seed: dict[str, Any]
    note: str = ""
    version: str = field(default=__version__)

    @property
    def recommendation(self) -> Recommendation:
        return self.analysis.recommendation

    @property
    def n(self) -> int:
        """Number of evaluation units tested."""
        return self.units.n_units

    @property
    def reject(self) -> bool:
        """NLPStatTest's rule: reject H0 iff p < alpha."""
        return bool(self.pvalue < self.alpha)

    def __repr__(self) -> str:
        return (f"CompareResult(test={self.test!r}, {self.statistic_name}={self.statistic:.4g}, "
                f"pvalue={self.pvalue:.4g}, estimate={self.estimate:.4g}, n={self.n})")

    def to_frame(self) -> pd.DataFrame:
        """One tidy row: test, statistic, p-value, interval, effect sizes, sample sizes."""
        row: dict[str, Any] = {
            "a": self.names[0], "b": self.names[1], "test": self.test,
            "alternative": self.alternative, "alpha": self.alpha, "delta": self.delta,
            "statistic": self.statistic, "statistic_name": self.statistic_name,
            "pvalue": self.pvalue, "reject": self.reject, "estimate": self.estimate,
            "estimator": self.estimator, "ci_low": self.ci.low, "ci_high": self.ci.high,
        }
        row.update(self.effect_sizes.to_dict())
        row.update({"n": self.n, "eu_size": self.units.eu_size, "eu_stat": self.units.eu_stat,
                    "n_instances": self.units.n_instances, "n_resamples": self.n_resamples,
                    "observed_power": self.observed_power})
        return pd.DataFrame([row])

    def _headline(self) -> str:
        level = f"{1 - self.alpha:.0%}" + ("" if self.alternative == "two-sided" else " one-sided")
        return (f"{TEST_NAMES[self.test]} ({self.alternative}, delta = {self.delta:g}): "
                f"{self.statistic_name} = {self.statistic:.4g}, p = {self.pvalue:.4g} -> "
                + ("reject H0" if self.reject else "do not reject H0") + f" at alpha = {self.alpha:g}\n"
                f"  {self.estimator}: {self.estimate:.4g}, {level} CI "
                f"[{self.ci.low:.4g}, {self.ci.high:.4g}]")

    def summary(self) -> str:
        """Data analysis, the test, effect sizes and the observed-power caveat."""
        u = self.units
        es = self.effect_sizes
        lines = [
            f"Paired comparison {self.names[0]} vs {self.names[1]} (NLPStatTest, Zhu et al. 2020)",
            f"  {u.n_units} evaluation units of {u.eu_size} instance(s) ({u.eu_stat}"
            + (", shuffled" if u.shuffle else "") + f"), {u.n_instances} instances"
            + (f", {u.n_dropped} trailing dropped" if u.n_dropped else ""),
            "", self.analysis.summary(), "", self._headline(),
            f"  effect sizes: Cohen's d = {_size(es.cohens_d)}{_d_interval(es)}, "
            f"Hedges' g = {_size(es.hedges_g)}, "
            f"Wilcoxon r = {es.wilcoxon_r:.4g}, Hodges-Lehmann = {es.hodges_lehmann:.4g}"
            + ("" if es.convention == "nlpower" else " (NLPStatTest's formulas)"),
            f"  observed power {self.observed_power:.3f} (a transformation of the p-value, "
            "not evidence of power; plan with sample_size or retrospective_power)",
        ]
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)

    def report(self, power: SampleSizeResult | PowerCurveResult | PairedPowerResult | None = None
               ) -> str:
        """What NLPStatTest says to report (sec. 2.3): test, alpha, effect size and estimator,
        sample size and power.

        ``power`` is a prospective :class:`SampleSizeResult`, a power curve
        or one power result; without it the report says power was not computed.
        """
        es = self.effect_sizes
        index = {"t": ("Cohen's d", es.cohens_d), "bootstrap_t": ("Cohen's d", es.cohens_d),
                 "wilcoxon": ("Wilcoxon r", es.wilcoxon_r),
                 "sign": ("Hodges-Lehmann", es.hodges_lehmann),
                 "bootstrap_percentile": ("Hedges' g", es.hedges_g),
                 "permutation": ("Hedges' g", es.hedges_g)}[self.test]
        if self.center == "median" and self.test in ("bootstrap_percentile", "permutation"):
            index = ("Hodges-Lehmann", es.hodges_lehmann)
        u = self.units
        lines = [
            f"test: {TEST_NAMES[self.test]}, {self.alternative}"
            + (f", {self.n_resamples} resamples" if self.n_resamples else ""),
            f"significance level: alpha = {self.alpha:g}",
            f"result: {self.statistic_name} = {self.statistic:.4g}, p = {self.pvalue:.4g}",
            f"effect size: {self.estimator} = {self.estimate:.4g} "
            f"[{self.ci.low:.4g}, {self.ci.high:.4g}]; {index[0]} = {_size(index[1])} "
            + (f"(Hedges' g with the paired correction = {es.hedges_g:.4g})"
               if es.convention == "nlpower" else
               f"(Hedges' g, NLPStatTest's J = 1 - 3/(4n - 9), = {es.hedges_g:.4g})"),
            f"sample size: {u.n_units} evaluation units x {u.eu_size} instance(s) "
            f"({u.eu_stat}), {u.n_instances} test instances",
        ]
        if power is None:
            lines.append("power: not computed (pass nlpower.paired.sample_size(...) or "
                         "retrospective_power(...)); observed power "
                         f"{self.observed_power:.3f} is a transformation of the p-value")
        elif isinstance(power, SampleSizeResult):
            lines.append(f"power (prospective): {power.power:.3f} with {power.n} units for an "
                         f"expected difference {power.mean:.4g} (SD {power.sd:.4g})")
        elif isinstance(power, PowerCurveResult):
            near = power.results[int(np.argmin(np.abs(power.sizes - u.n_units)))]
            lines.append(f"power ({power.method}, {power.test} test): {near.power:.3f} at "
                         f"n = {near.n} (effect {power.effect:.4g})"
                         + (" -- at the observed effect, a transformation of the p-value"
                            if power.observed_effect else ""))
        else:
            lines.append(f"power ({power.method}, {power.test} test): {power.power:.3f} at "
                         f"n = {power.n}")
        return "\n".join(lines)

    def plot(self, *, bins: int | str = "auto") -> Figure:
        """Histograms of A, B and A - B (NLPStatTest Figure 2)."""
        return plots.plot_histograms(self, bins=bins)

    def power_curve(self, **kwargs: Any) -> PowerCurveResult:
        """:func:`~nlpower.paired.retrospective_power` of these differences."""
        return retrospective_power(self, **kwargs)


def compare(a: Any, b: Any, *, test: PairedTest | None = None,
            alternative: Alternative = "two-sided", alpha: float = 0.05, eu_size: int = 1,
            eu_stat: EUStat = "mean", shuffle: bool = False, n_resamples: int = 10_000,
            rng: RNGLike = None, delta: float = 0.0, center: Center | None = None,
            normality_alpha: float = 0.05, names: tuple[str, str] = ("A", "B"),
            convention: EffectConvention = "nlpower") -> CompareResult:
    """Compare two systems' paired scores (NLPStatTest, Zhu et al. 2020).

    Parameters
    ----------
    a, b : array-like
        Per-instance (or per-EU) scores of systems A and B, paired by position.
    test : {"t", "wilcoxon", "sign", "bootstrap_t", "bootstrap_percentile", "permutation"}, optional
        None runs the first recommended test (see ``result.recommendation``).
    alternative : {"two-sided", "greater", "less"}
        "greater": A scores higher than B (by more than ``delta``).
    alpha : float
        Significance level (alpha_2 of NLPStatTest's Figure 1); H0 is
        rejected iff p < alpha.
    eu_size, eu_stat, shuffle
        Evaluation units of ``eu_size`` adjacent instances summarised by
        their mean or median, after an optional shuffle of the pairs
        (:func:`~nlpower.paired.evaluation_units`).
    n_resamples : int
        Resamples of the bootstrap and permutation tests.
    rng : seed or Generator
        nlpower's rng policy; the shuffle and the resampling get independent
        child streams, so the same seed gives the same result.
    delta : float
        Hypothesised difference A - B under H0 (NLPStatTest's delta).
    center : {"mean", "median"}, optional
        Location tested by the permutation and percentile bootstrap tests;
        default: the skewness rule's choice.
    normality_alpha : float
        Level of the Shapiro-Wilk test (alpha_1).
    names : (str, str)
        System names for summaries and plots.
    convention : {"nlpower", "nlpstattest"}
        Effect-size formulas: ours (paired Hedges J, Wilcoxon r with tie-group
        sizes) or NLPStatTest's printed ones, to reproduce its reports
        (:mod:`nlpower.paired.effects`).

    Returns
    -------
    CompareResult

    Examples
    --------
    >>> import numpy as np
    >>> gen = np.random.default_rng(0)
    >>> b = gen.uniform(0.2, 0.8, 300)
    >>> a = b + gen.normal(0.03, 0.1, 300)
    >>> res = compare(a, b, eu_size=3, rng=1)
    >>> res.test, res.reject
    ('t', True)

    Provenance: NLPStatTest's procedure (Zhu et al. 2020, sec. 2-3); each
    test is checked against scipy, statsmodels or R (tests/paired).
    """
    if test is not None:
        check_choice("test", test, PairedTest)
    check_choice("alternative", alternative, Alternative)
    alpha = check_probability("alpha", alpha)
    normality_alpha = check_probability("normality_alpha", normality_alpha)
    n_resamples = check_int("n_resamples", n_resamples, min=1)
    delta = check_real("delta", delta)
    if center is not None:
        check_choice("center", center, Center)
    if not (isinstance(names, (tuple, list)) and len(names) == 2):
        raise InputError(f"names must be a pair of system names like ('A', 'B'); got {names!r}.")
    check_choice("convention", convention, ("nlpower", "nlpstattest"))
    seq = root_seed(rng)
    shuffle_seq, resample_seq = seq.spawn(2)
    units = _units(a, b, eu_size, eu_stat, shuffle, shuffle_seq)
    return compare_units(units, test=test, alternative=alternative, alpha=alpha,
                         n_resamples=n_resamples, delta=delta, center=center,
                         normality_alpha=normality_alpha, names=(str(names[0]), str(names[1])),
                         resample_seq=resample_seq, seed=seed_record(seq), convention=convention)


def _size(value: float) -> str:
    """An effect size, or why there is none (differences that do not vary have no SD)."""
    return f"{value:.4g}" if np.isfinite(value) else "undefined (the differences do not vary)"


def _check_differ(units: EvaluationUnits, names: tuple[str, str]) -> None:
    """Identical scores (every difference zero within rounding) leave t, p and d undefined."""
    scale = max(float(np.max(np.abs(units.a), initial=0.0)), float(np.max(np.abs(units.b), initial=0.0)))
    if units.diff.size and float(np.max(np.abs(units.diff))) <= 1e-12 * scale:
        raise InputError(
            f"{names[0]} and {names[1]} have the same score on every evaluation unit (every "
            "difference is 0): there is nothing to test (t, p and Cohen's d are undefined). "
            "Check that the two inputs are not the same file.")


def compare_units(units: EvaluationUnits, *, test: str | None, alternative: Alternative,
                  alpha: float, n_resamples: int, delta: float, center: Center | None,
                  normality_alpha: float, names: tuple[str, str],
                  resample_seq: np.random.SeedSequence, seed: dict[str, Any],
                  convention: EffectConvention = "nlpower") -> CompareResult:
    """:func:`compare` on units already formed and validated (used by ``pairwise``)."""
    _check_differ(units, names)
    analysis = analyze_units(units.a, units.b, normality_alpha=normality_alpha, names=names)
    chosen = test if test is not None else analysis.recommendation.tests[0]
    loc = center if center is not None else analysis.center
    d = units.diff
    outcome = run_test(chosen, d, alternative=alternative, alpha=alpha, delta=delta, center=loc,
                       n_resamples=n_resamples, seq=resample_seq)
    sd = float(np.std(d, ddof=1))
    obs = observed_power(d.size, float(np.mean(d)) - delta, sd, alpha=alpha,
                         alternative=alternative)
    note = outcome.note
    if test is not None and test not in analysis.recommendation.tests:
        note = "; ".join(filter(None, [note, f"{test} is not among the recommended tests "
                                       f"({', '.join(analysis.recommendation.tests)})"]))
    return CompareResult(
        test=chosen, pvalue=outcome.pvalue, statistic=outcome.statistic,
        statistic_name=outcome.statistic_name, ci=outcome.ci, estimate=outcome.estimate,
        estimator=outcome.estimator, effect_sizes=effect_sizes(d, convention=convention), analysis=analysis,
        units=units, observed_power=obs, alternative=alternative, alpha=alpha, delta=delta,
        center=loc, n_resamples=outcome.n_resamples if chosen in RESAMPLING else 0,
        names=names, seed=seed, note=note)


def _d_interval(es: Any) -> str:
    """`` (95% CI lo to hi)`` after Cohen's d, or nothing when d is undefined."""
    low, high = es.cohens_d_interval()
    return "" if not math.isfinite(low) else f" (95% CI {low:.3g} to {high:.3g})"
