"""Results of the power layer: per-replicate records, ``PowerResult``, ``AnalyticPowerResult``.

One rule for ``.design``: it is the :class:`~nlpower.design.CrossedDesign`
object (``result.design.describe()`` for text); records store its
constructor arguments.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .._records import RecordCodec, RecordLayout
from .._validation import check_probability
from ..design import CrossedDesign
from ..intervals import ConfidenceInterval, wilson_ci
from ..montecarlo import MonteCarloSummary


@dataclass(frozen=True, eq=False)
class Replicates:
    """Per-replicate records (arrays of length ``n_sims``; NaN for failed fits)."""

    estimate: np.ndarray
    se: np.ndarray
    statistic: np.ndarray
    df: np.ndarray
    pvalue: np.ndarray
    converged: np.ndarray
    singular: np.ndarray
    failed: np.ndarray
    #: further per-replicate float columns of a run that tests several hypotheses at once
    #: (``"estimate.2"``, ``"pvalue.2"``, ...), each of length ``n_sims``
    extra: Mapping[str, np.ndarray] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({
            "estimate": self.estimate, "se": self.se, "statistic": self.statistic,
            "df": self.df, "pvalue": self.pvalue, "converged": self.converged,
            "singular": self.singular, "failed": self.failed,
        })

    def __repr__(self) -> str:
        return f"Replicates(n_sims={self.estimate.shape[0]})"


@dataclass(frozen=True)
class PowerResult(RecordCodec):
    """Power of one design by simulation (Card et al. 2020, Fig. 2 and App. B).

    Attributes
    ----------
    power : float
        ``mean(1[p <= alpha] * 1[sign(estimate) == sign(effect)])`` over the
        replicates (failed fits count as non-detections).  NaN when the true
        effect is 0 (then see ``rejection_rate``/``type1``).
    se : float
        Monte Carlo SE ``sqrt(power (1 - power) / n_sims)``.
    ci : ConfidenceInterval
        95% Wilson interval of ``power``; :meth:`proportion_ci` for others.
    n_sims, n_rejected : int
        Replicates and sign-correct rejections.
    rejection_rate : float
        Share of replicates with ``p <= alpha`` (any sign).
    type_s : float
        Share of significant replicates whose estimate has the wrong sign.
    type_m : float
        Mean ``|estimate| / |effect|`` over significant replicates (Gelman &
        Carlin 2014).
    mean_estimate : float
        Mean estimate over successful fits, in ``coding``.
    n_failed, n_singular, n_nonconverged : int
    type1 : float or None
        Type I error: the rejection rate of the same design at effect 0 (from
        ``null=True``, with its own child seed, or measured because the
        design has few workers), or the rejection rate itself when the
        effect is 0.  ``type1_ci`` its Wilson interval.
    effect : float
        True effect in ``coding``; ``mean_difference`` the implied difference
        between the system means.
    test, alpha, alternative, coding : str / float
        What was computed.
    method : str
        How power was computed: ``"balanced"``, ``"simulate"`` or
        ``"analytic"`` (``"auto"`` resolved).
    engine : str or None
        The fitter of ``method="simulate"`` (``"native"``, ``"lme4"``);
        None for the balanced fast path and the analytic tier.
    design : CrossedDesign
    seed : dict
        :func:`nlpower._rng.seed_record` of ``rng`` (entropy, spawn key).
    version : str
        nlpower version.
    replicates : Replicates or None
        Per-replicate estimate, SE, statistic, df, p-value and flags.
    REML : bool
        Whether the replicates were fitted by REML (else ML).
    n_resamples : int or None
        Bootstrap samples per replicate of ``test="pblrt"`` (None for the
        other tests).
    mc : MonteCarloSummary or None
        The Monte Carlo summary the simulated numbers come from (None for
        the analytic tier); ``type_s_ci`` and ``type_m_ci`` are its intervals.
    params : LMMParams, LikertParams, HeadToHeadParams or None
        The true model the replicates were drawn from (for :meth:`methods`;
        not kept by :meth:`to_record`).
    """

    power: float
    se: float
    ci: ConfidenceInterval
    n_sims: int
    n_rejected: int
    rejection_rate: float
    type_s: float
    type_m: float
    mean_estimate: float
    n_failed: int
    n_singular: int
    n_nonconverged: int
    type1: float | None
    type1_ci: ConfidenceInterval | None
    effect: float
    mean_difference: float
    test: str
    alpha: float
    alternative: str
    method: str
    engine: str | None
    coding: str
    design: CrossedDesign
    seed: dict[str, Any]
    version: str
    notes: tuple[str, ...] = ()
    replicates: Replicates | None = field(default=None, repr=False, compare=False)
    n_type1: int | None = None
    n_type1_sims: int | None = None
    REML: bool = False
    n_resamples: int | None = None
    mc: MonteCarloSummary | None = field(default=None, repr=False, compare=False)
    params: Any = field(default=None, repr=False, compare=False)

    #: the record's layout (``to_record``/``from_record``: ``nlpower._records.RecordCodec``;
    #: what a grid cell shows and checkpoints, without the replicates and the parameters)
    _record_layout = RecordLayout(
        first=("power", "ci_low", "ci_high", "se", "type_m", "type_s", "mean_estimate",
               "n_failed", "n_singular", "n_sims", "n_rejected", "test", "method", "engine",
               "alternative", "alpha", "coding", "n_nonconverged", "rejection_rate", "effect",
               "mean_difference", "type1", "n_type1", "n_type1_sims", "type1_ci_low",
               "type1_ci_high", "design", "REML", "n_resamples", "notes"),
        last=("seed", "version"), nan="keep", seed="nested", summary="effect",
        custom={"design": (lambda d: design_record(d), lambda d: d if isinstance(
            d, CrossedDesign) else CrossedDesign(**d))})

    def methods(self, format: str = "text", source: str | None = None) -> str:
        """The paragraph a paper's methods section needs (``"text"`` or ``"latex"``).

        Model and variance components (``source``: where they came from),
        design, test, alpha, replicates and Monte Carlo error, adaptive
        precision, and the power (:func:`nlpower.methods.power_methods`).

        Examples
        --------
        >>> from nlpower import CrossedDesign, power, presets
        >>> r = power(CrossedDesign(3, 50), presets.high_variance(0.1), n_sims=100, rng=1)
        >>> r.methods(source="Card et al. 2020, Table 16").startswith("We estimated")
        True
        """
        from ..methods import power_methods
        return power_methods(self, source=source, format=format)

    def proportion_ci(self, confidence_level: float = 0.95) -> ConfidenceInterval:
        """Wilson interval of ``power`` (or of the rejection rate when the effect is 0)."""
        if self.mc is not None:
            return self.mc.proportion_ci(confidence_level)
        confidence_level = check_probability("confidence_level", confidence_level)
        k = self.n_rejected if self.effect != 0 else int(round(self.rejection_rate * self.n_sims))
        return ConfidenceInterval(*wilson_ci(k, self.n_sims, confidence_level))

    @property
    def type_s_ci(self) -> ConfidenceInterval:
        """95% Wilson interval of ``type_s`` over the significant replicates (NaN if unknown)."""
        return self.mc.type_s_ci if self.mc is not None else ConfidenceInterval(math.nan, math.nan)

    @property
    def stopped_early(self) -> bool:
        """Whether adaptive precision (``precision=``) stopped the replicates before ``n_sims``."""
        return self.mc is not None and self.mc.stopped_early

    @property
    def type_m_ci(self) -> ConfidenceInterval:
        """95% t interval of ``type_m`` over the significant replicates (NaN if unknown)."""
        return self.mc.type_m_ci if self.mc is not None else ConfidenceInterval(math.nan, math.nan)

    def _analytic_summary(self) -> str:
        lines = [f"Power (analytic, no simulation): {self.design!r}",
                 f"  effect {self.effect:g} ({self.coding} coding; mean difference "
                 f"{self.mean_difference:g}), test {self.test!r}, alternative {self.alternative!r}, "
                 f"alpha {self.alpha:g}"]
        if self.effect != 0:
            lines.append(f"  power   {self.power:.3f} (sign-correct rejections; any rejection: "
                         f"{self.rejection_rate:.3f})")
        else:
            lines.append(f"  effect is 0: the rejection rate {self.rejection_rate:.3f} is the Type I "
                         "error; power is undefined")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def summary(self) -> str:
        """A short text report."""
        if self.method == "analytic":  # no replicates: no Monte Carlo fields to print
            return self._analytic_summary()
        lines = [f"Power simulation: {self.design!r}"]
        lines.append(
            f"  effect {self.effect:g} ({self.coding} coding; mean difference "
            f"{self.mean_difference:g}), test {self.test!r}, alternative {self.alternative!r}, "
            f"alpha {self.alpha:g}, method {self.method!r}"
            f"{'' if self.engine is None else f' (engine {self.engine!r})'}, "
            f"{'REML' if self.REML else 'ML'} fits, "
            f"{self.n_sims} replicates"
            f"{'' if self.n_resamples is None else f' x {self.n_resamples} bootstrap samples'}"
        )
        if self.effect != 0:
            lines.append(
                f"  power   {self.power:.3f}  (MC SE {self.se:.3f}; 95% CI {self.ci.low:.3f}-"
                f"{self.ci.high:.3f}); {self.n_rejected} sign-correct detections"
            )
            lines.append(f"  {self.mc.describe()}" if self.mc is not None
                         else f"  Type-S  {self.type_s:.3f}    Type-M  {self.type_m:.2f}")
            lines.append(
                f"  power counts rejections whose estimate has the true sign (Card et al. Fig. 2); "
                f"the rejection rate {self.rejection_rate:.3f} counts any p <= alpha"
            )
        else:
            lines.append("  effect is 0: power, Type-M and Type-S are undefined")
        if self.type1 is not None and self.type1_ci is not None:
            lines.append(
                f"  Type I error {self.type1:.3f} (95% CI {self.type1_ci.low:.3f}-"
                f"{self.type1_ci.high:.3f}) at effect 0"
            )
        lines.append(
            f"  mean estimate {self.mean_estimate:.4g}; failed fits {self.n_failed}, "
            f"singular {self.n_singular}, not converged {self.n_nonconverged}"
        )
        if self.n_singular and (self.type1 is None or self.type1_ci is None):
            # (a measured Type I error, printed above, speaks for itself)
            lines.append(
                "  singular fits put a variance component at 0 (common with few workers or items): "
                "they are kept, but their SE of the effect can be too small, so they lean liberal"
            )
        if self.mc is not None and self.mc.precision is not None:
            lines.append(f"  {self.mc.describe_precision()}")
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        """One tidy row."""
        return pd.DataFrame([{
            "effect": self.effect, "coding": self.coding, "mean_difference": self.mean_difference,
            "power": self.power, "se": self.se, "ci_low": self.ci.low, "ci_high": self.ci.high,
            "n_sims": self.n_sims, "n_rejected": self.n_rejected,
            "rejection_rate": self.rejection_rate, "type_s": self.type_s, "type_m": self.type_m,
            "mean_estimate": self.mean_estimate, "n_failed": self.n_failed,
            "n_singular": self.n_singular, "n_nonconverged": self.n_nonconverged,
            "type1": np.nan if self.type1 is None else self.type1,
            "test": self.test, "alpha": self.alpha, "alternative": self.alternative,
            "method": self.method, "engine": self.engine,
            "type_s_ci_low": self.type_s_ci.low, "type_s_ci_high": self.type_s_ci.high,
            "type_m_ci_low": self.type_m_ci.low, "type_m_ci_high": self.type_m_ci.high,
        }])

    def __repr__(self) -> str:
        if self.effect != 0:
            core = f"power={self.power:.3f} [{self.ci.low:.3f}, {self.ci.high:.3f}]"
        else:
            core = f"rejection_rate={self.rejection_rate:.3f} (effect 0)"
        t1 = "" if self.type1 is None or self.effect == 0 else f", type1={self.type1:.3f}"
        return (f"PowerResult({core}{t1}, n_sims={self.n_sims}, test={self.test!r}, "
                f"method={self.method!r})")

    def _repr_html_(self) -> str:
        """The summary as a notebook block (monospace, escaped)."""
        import html
        return f"<pre class=\"nlpower-power\">{html.escape(self.summary())}</pre>"


def design_record(design: CrossedDesign) -> dict[str, Any]:
    """The design's constructor arguments, JSON-able (``CrossedDesign(**record)`` rebuilds it)."""
    return {"n_workers": design.n_workers, "n_items": design.n_items,
            "systems": list(design.system_names), "workers_per_item": design.workers_per_item,
            "items": design.items}


@dataclass(frozen=True)
class AnalyticPowerResult:
    """Power from the analytic (noncentral-t) approximation.

    Attributes
    ----------
    power : float
        Probability of a sign-correct rejection.
    ncp : float
        Noncentrality ``effect / sqrt(Var(estimate))`` at the true parameters.
    df : float
        Satterthwaite df of the expected information (``inf`` for test "z").
    se : float
        ``sqrt(Var(estimate))`` at the true parameters.
    method : str
        ``"balanced"`` (expected mean squares, Westfall, Kenny & Judd 2014) or
        ``"information"`` (expected information of the general design).
    """

    power: float
    ncp: float
    df: float
    se: float
    effect: float
    coding: str
    test: str
    alpha: float
    alternative: str
    method: str
    design: CrossedDesign

    def summary(self) -> str:
        return (f"Analytic power ({self.method}): {self.design!r}\n"
                f"  effect {self.effect:g} ({self.coding} coding), test {self.test!r}, "
                f"alternative {self.alternative!r}, alpha {self.alpha:g}\n"
                f"  power {self.power:.3f}; SE(estimate) {self.se:.4g}, ncp {self.ncp:.3f}, "
                f"df {self.df:.1f}")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{
            "effect": self.effect, "coding": self.coding, "power": self.power, "ncp": self.ncp,
            "df": self.df, "se": self.se, "test": self.test, "alpha": self.alpha,
            "alternative": self.alternative, "method": self.method,
        }])

    def __repr__(self) -> str:
        return (f"AnalyticPowerResult(power={self.power:.3f}, ncp={self.ncp:.3f}, df={self.df:.1f}, "
                f"method={self.method!r})")

    def _repr_html_(self) -> str:
        """The summary as a notebook block (monospace, escaped)."""
        import html
        return f"<pre class=\"nlpower-power\">{html.escape(self.summary())}</pre>"


__all__ = ["AnalyticPowerResult", "ConfidenceInterval", "PowerResult", "Replicates",
           "design_record", "wilson_ci"]
