"""What a simulated power studied: the ``study`` of a :class:`~nlpower.powerresult.PowerResult`.

One small frozen descriptor per kind of study, each with the text and the
table row its results print (:meth:`summary_of`, :meth:`frame_of`,
:meth:`repr_of`):

* :class:`RatingsStudy` (``kind="ratings"``): the paper's model -- a
  :class:`~nlpower.design.CrossedDesign` and its true parameters, with the
  Gaussian, Likert or head-to-head outcome (:func:`nlpower.power`,
  :func:`nlpower.power_grid`, ``mde``, ``plan``);
* :class:`ModelStudy` (``"model"``): a term, contrast or comparison of a
  fitted model (``nlpower.power(fit, term=...)``, ``power_curve``);
* :class:`PreferenceStudy` (``"preference"``): one judgement per person
  between two systems (:func:`nlpower.preference.power`);
* :class:`CallbackStudy` (``"callback"``): the user's ``generate`` and
  ``test`` (:func:`nlpower.simulate_power`).

The numbers themselves (power, its interval, Type-S/M, counts, seed) are the
result's own fields, the same for every kind.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pandas as pd

from ..design import CrossedDesign

if TYPE_CHECKING:
    from .core import PowerResult

__all__ = ["STUDIES", "CallbackStudy", "ModelStudy", "PreferenceStudy", "RatingsStudy", "StudyKind"]


@dataclass(frozen=True)
class RatingsStudy:
    """The paper's model on a crossed design (Card et al. 2020): design, truth and analysis.

    Attributes
    ----------
    design : CrossedDesign
        Who rates what.
    coding : str
        The contrast coding ``effect`` is given in.
    mean_difference : float
        The difference between the two system means that ``effect`` implies.
    REML : bool
        Whether the replicates were fitted by REML (else ML).
    n_resamples : int or None
        Bootstrap samples per replicate of ``test="pblrt"`` (None for the other tests).
    params : LMMParams, LikertParams, HeadToHeadParams or None
        The true model the replicates were drawn from (for ``methods()``;
        not in records).
    """

    design: CrossedDesign
    coding: str
    mean_difference: float
    REML: bool = False
    n_resamples: int | None = None
    params: Any = field(default=None, repr=False, compare=False)

    kind: ClassVar[str] = "ratings"

    def repr_of(self, r: PowerResult) -> str:
        if r.effect != 0:
            core = f"power={r.power:.3f} [{r.ci.low:.3f}, {r.ci.high:.3f}]"
        else:
            core = f"rejection_rate={r.rejection_rate:.3f} (effect 0)"
        t1 = "" if r.type1 is None or r.effect == 0 else f", type1={r.type1:.3f}"
        return f"{core}{t1}, n_sims={r.n_sims}, test={r.test!r}, method={r.method!r}"

    def _head(self, r: PowerResult) -> str:
        return (f"  effect {r.effect:g} ({self.coding} coding; mean difference "
                f"{self.mean_difference:g}), test {r.test!r}, alternative {r.alternative!r}, "
                f"alpha {r.alpha:g}")

    def _analytic(self, r: PowerResult) -> list[str]:
        lines = [f"Power (analytic, no simulation): {self.design!r}", self._head(r)]
        if r.effect != 0:
            lines.append(f"  power   {r.power:.3f} (sign-correct rejections; any rejection: "
                         f"{r.rejection_rate:.3f})")
        else:
            lines.append(f"  effect is 0: the rejection rate {r.rejection_rate:.3f} is the Type I "
                         "error; power is undefined")
        return lines + [f"  note: {note}" for note in r.notes]

    def summary_of(self, r: PowerResult) -> str:
        if r.method == "analytic":  # no replicates: no Monte Carlo fields to print
            return "\n".join(self._analytic(r))
        lines = [f"Power simulation: {self.design!r}",
                 f"{self._head(r)}, method {r.method!r}"
                 f"{'' if r.engine is None else f' (engine {r.engine!r})'}, "
                 f"{'REML' if self.REML else 'ML'} fits, {r.n_sims} replicates"
                 f"{'' if self.n_resamples is None else f' x {self.n_resamples} bootstrap samples'}"]
        if r.effect != 0:
            lines.append(f"  power   {r.power:.3f}  (MC SE {r.se:.3f}; 95% CI {r.ci.low:.3f}-"
                         f"{r.ci.high:.3f}); {r.n_rejected} sign-correct detections")
            lines.append(f"  {r.mc.describe()}" if r.mc is not None
                         else f"  Type-S  {r.type_s:.3f}    Type-M  {r.type_m:.2f}")
            lines.append(f"  power counts rejections whose estimate has the true sign (Card et al. "
                         f"Fig. 2); the rejection rate {r.rejection_rate:.3f} counts any p <= alpha")
        else:
            lines.append("  effect is 0: power, Type-M and Type-S are undefined")
        if r.type1 is not None and r.type1_ci is not None:
            lines.append(f"  Type I error {r.type1:.3f} (95% CI {r.type1_ci.low:.3f}-"
                         f"{r.type1_ci.high:.3f}) at effect 0")
        lines.append(f"  mean estimate {r.mean_estimate:.4g}; failed fits {r.n_failed}, "
                     f"singular {r.n_singular}, not converged {r.n_nonconverged}")
        if r.n_singular and (r.type1 is None or r.type1_ci is None):
            # (a measured Type I error, printed above, speaks for itself)
            lines.append("  singular fits put a variance component at 0 (common with few workers "
                         "or items): they are kept, but their SE of the effect can be too small, "
                         "so they lean liberal")
        if r.mc is not None and r.mc.precision is not None:
            lines.append(f"  {r.mc.describe_precision()}")
        lines += [f"  note: {note}" for note in r.notes]
        return "\n".join(lines)

    def frame_of(self, r: PowerResult) -> pd.DataFrame:
        s, m = r.type_s_ci, r.type_m_ci
        return pd.DataFrame([{
            "effect": r.effect, "coding": self.coding, "mean_difference": self.mean_difference,
            "power": r.power, "se": r.se, "ci_low": r.ci.low, "ci_high": r.ci.high,
            "n_sims": r.n_sims, "n_rejected": r.n_rejected, "rejection_rate": r.rejection_rate,
            "type_s": r.type_s, "type_m": r.type_m, "mean_estimate": r.mean_estimate,
            "n_failed": r.n_failed, "n_singular": r.n_singular,
            "n_nonconverged": r.n_nonconverged, "type1": math.nan if r.type1 is None else r.type1,
            "test": r.test, "alpha": r.alpha, "alternative": r.alternative, "method": r.method,
            "engine": r.engine, "type_s_ci_low": s.low, "type_s_ci_high": s.high,
            "type_m_ci_low": m.low, "type_m_ci_high": m.high}])

    def methods_of(self, r: PowerResult, *, source: str | None, format: str) -> str:
        from ..methods import power_methods
        return power_methods(r, source=source, format=format)


@dataclass(frozen=True)
class ModelStudy:
    """A test of a term of a fitted mixed model (simr's ``powerSim``).

    Attributes
    ----------
    hypothesis : str
        What was tested: a term, a contrast, or a model comparison.
    formula, analysis : str
        The model that generated the data and the one fitted to it.
    family : str
        The generating model's family.
    nobs : int
        Rows of the design.
    parameters : dict
        The truth the data were simulated from
        (:func:`nlpower.study.result.model_parameters`): ``fixef``,
        ``varcorr`` (``(group, term, term2, SD or correlation)`` rows),
        ``sigma`` and ``params_set``; for ``methods()``.  Empty when unknown
        (a record read back).
    """

    hypothesis: str
    formula: str
    analysis: str
    family: str
    nobs: int
    parameters: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    kind: ClassVar[str] = "model"

    def repr_of(self, r: PowerResult) -> str:
        head = (f"type1={r.type1:.3f} [{r.type1_ci.low:.3f}, {r.type1_ci.high:.3f}]"
                if r.type1 is not None and r.type1_ci is not None else
                f"power={r.power:.3f} [{r.ci.low:.3f}, {r.ci.high:.3f}]")
        return (f"{head}, n_sims={r.n_sims}, test={r.test!r}, "
                f"hypothesis={self.hypothesis!r}")

    def summary_of(self, r: PowerResult) -> str:
        ci = r.ci
        n_rejected = r.mc.n_rejected if r.mc is not None else r.n_rejected
        lines = [f"Power for {self.hypothesis} ({r.test} test, alpha = {r.alpha:g}, "
                 f"{r.alternative}): {100 * r.power:.1f}% "
                 f"(95% CI {100 * ci.low:.1f}-{100 * ci.high:.1f}), "
                 f"{n_rejected} of {r.n_sims} replicates"]
        if r.effect == 0 and r.type1_ci is not None:
            lines = [f"Type I error for {self.hypothesis} ({r.test} test, alpha = {r.alpha:g}, "
                     f"{r.alternative}): {100 * r.rejection_rate:.1f}% (95% CI "
                     f"{100 * r.type1_ci.low:.1f}-{100 * r.type1_ci.high:.1f}), {r.n_type1} of "
                     f"{r.n_sims} replicates rejected",
                     f"  true value 0: power, Type-S and Type-M are undefined; mean estimate "
                     f"{_fmt(r.mean_estimate)}"]
        elif not math.isnan(r.effect):
            lines.append(f"  true value {r.effect:.4g}; rejections of either sign "
                         f"{r.rejection_rate:.3f}; Type-S {_fmt(r.type_s)}, "
                         f"Type-M {_fmt(r.type_m)}; mean estimate {_fmt(r.mean_estimate)}")
        else:
            lines.append("  a model comparison: power is the rejection rate")
        lines.append(f"  data: {self.formula} ({self.family}, {self.nobs} rows)")
        if self.analysis != self.formula:
            lines.append(f"  analysis: {self.analysis}")
        lines.append(f"  fits: {r.n_failed} failed, {r.n_singular} singular, "
                     f"{r.n_nonconverged} not converged (engine {r.engine})")
        if r.first_error:
            lines.append(f"  first failure: {r.first_error}")
        if r.mc is not None and r.mc.precision is not None:
            lines.append(f"  {r.mc.describe_precision()}")
        if r.seed:
            lines.append(f"  seed {r.seed.get('entropy')}; nlpower {r.version}")
        return "\n".join(lines)

    def frame_of(self, r: PowerResult) -> pd.DataFrame:
        return pd.DataFrame([r.to_record()])

    def methods_of(self, r: PowerResult, *, source: str | None, format: str) -> str:
        from ..methods import model_power_methods
        return model_power_methods(r, source=source, format=format)


@dataclass(frozen=True)
class PreferenceStudy:
    """One judgement per person between two systems' outputs (Card et al. 2020, Fig. 1).

    Attributes
    ----------
    n : int
        Judgements (people, one pair each).
    p_win, p_draw, p_lose : float
        Probabilities that B is preferred, of a draw, that A is preferred.
    share : float
        The tested share preferring B (``ties``); the result's ``effect`` is
        ``share - 1/2``.
    ties : str
        ``"exclude"`` (draws dropped) or ``"split"`` (half a win each).
    mean_significant : float
        Mean estimated share over the significant samples (the dotted line
        of Card et al. 2020, Fig. 1).
    """

    n: int
    p_win: float
    p_draw: float
    p_lose: float
    share: float
    ties: str
    mean_significant: float

    kind: ClassVar[str] = "preference"

    def repr_of(self, r: PowerResult) -> str:
        core = f"power={r.power:.4f}" if r.exact else (
            f"power={r.power:.4f} [{r.ci.low:.4f}, {r.ci.high:.4f}]")
        return (f"{core}, type_m={r.type_m:.3f}, type_s={r.type_s:.3g}, n={self.n}, "
                f"p_win={self.p_win:g}, p_draw={self.p_draw:g}, ties={self.ties!r}, "
                f"test={r.test!r}, method={r.method!r}")

    def summary_of(self, r: PowerResult) -> str:
        how = "exact enumeration" if r.exact else f"{r.n_sims} simulated samples"
        lines = [f"Head-to-head power ({r.test} test, {r.alternative}, alpha {r.alpha:g}; {how})",
                 f"  n {self.n} judges; P(B wins) {self.p_win:.4g}, P(draw) {self.p_draw:.4g}, "
                 f"P(A wins) {self.p_lose:.4g}",
                 f"  share preferring B ({self.ties} ties) {self.share:.4g}, effect "
                 f"{r.effect:+.4g}"]
        if r.effect == 0:
            lines.append(f"  no effect: rejection rate (size) {r.rejection_rate:.4f}")
        else:
            unc = "exact" if r.exact else (
                f"MC SE {r.se:.3f}; 95% CI {r.ci.low:.3f}-{r.ci.high:.3f}")
            lines.append(f"  power   {r.power:.4f}  ({unc})")
            lines.append(f"  Type-M  {r.type_m:.3f}    Type-S  {r.type_s:.3g}    mean "
                         f"share of significant samples {self.mean_significant:.4f}")
        lines.extend(f"  note: {n}" for n in r.notes)
        return "\n".join(lines)

    def frame_of(self, r: PowerResult) -> pd.DataFrame:
        rec = r.to_record()
        rec.pop("seed_spawn_key")
        rec["notes"] = "; ".join(r.notes)
        return pd.DataFrame([rec])

    def methods_of(self, r: PowerResult, *, source: str | None, format: str) -> str:
        from ..methods import _done
        how = ("computed exactly by enumerating the binomial outcomes" if r.exact
               else f"estimated from {r.n_sims} simulated samples")
        ties = ("dropped" if self.ties == "exclude" else "counted as half a preference for each")
        text = (f"We computed the power of a {r.test} test ({r.alternative}, alpha = "
                f"{r.alpha:g}) that system B is preferred, with nlpower {r.version}, for "
                f"{self.n} people each judging one pair: B preferred with probability "
                f"{self.p_win:.4g}" + (f", no preference with probability {self.p_draw:.4g} "
                                       f"(draws {ties})" if self.p_draw > 0 else "") + ".")
        if r.effect == 0:
            return _done([text, f"With no preference the rejection rate (size) was "
                                f"{r.rejection_rate:.3f}, {how}."], format)
        interval = "" if r.exact else f" (95% Wilson interval {r.ci.low:.3f}-{r.ci.high:.3f})"
        return _done([text, f"At a share of {self.share:.4g} preferring B power was "
                            f"{r.power:.3f}, {how}{interval}; Type-M {r.type_m:.3g}, "
                            f"Type-S {r.type_s:.3g}."], format)


@dataclass(frozen=True)
class CallbackStudy:
    """The user's simulator and test (:func:`nlpower.simulate_power`).

    Attributes
    ----------
    params : dict
        The keyword arguments of ``generate`` (a grid cell's values).
    generate_name, test_name : str
        The qualified names of ``generate`` and ``test`` (empty when unknown,
        e.g. a record read back; not compared).
    """

    params: dict[str, Any] = field(default_factory=dict)
    generate_name: str = field(default="", compare=False)
    test_name: str = field(default="", compare=False)

    kind: ClassVar[str] = "callback"

    def repr_of(self, r: PowerResult) -> str:
        return (f"power={r.power:.4f} [{r.ci.low:.4f}, {r.ci.high:.4f}], type_m={r.type_m:.3f}, "
                f"type_s={r.type_s:.3g}, n_sims={r.n_sims}")

    def summary_of(self, r: PowerResult) -> str:
        where = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        lines = [f"Simulated power ({r.n_sims} data sets, alpha {r.alpha:g}, true effect "
                 f"{r.effect:g}{'; ' + where if where else ''})"]
        if r.effect == 0:
            rc = r.rejection_ci
            lines.append(f"  effect is 0: rejection rate (Type I error) {r.rejection_rate:.4f} "
                         f"[{rc.low:.4f}, {rc.high:.4f}]")
        else:
            s, m = r.type_s_ci, r.type_m_ci
            lines.append(f"  power   {r.power:.4f}  (MC SE {r.se:.4f}; 95% CI "
                         f"{r.ci.low:.4f}-{r.ci.high:.4f})")
            lines.append(f"  Type-M  {r.type_m:.3f}  [{m.low:.3f}, {m.high:.3f}]")
            lines.append(f"  Type-S  {r.type_s:.4f}  [{s.low:.4f}, {s.high:.4f}]")
        if r.n_failed:
            lines.append(f"  note: {r.n_failed} simulation(s) failed (test raised or p-value "
                         "NaN); counted as non-rejections")
        if r.mc is not None and r.mc.precision is not None:
            lines.append(f"  {r.mc.describe_precision()}")
        return "\n".join(lines)

    def frame_of(self, r: PowerResult) -> pd.DataFrame:
        rec = r.to_record()
        params = rec.pop("params")
        rec.pop("seed_spawn_key")
        return pd.DataFrame([{**params, **rec}])

    def methods_of(self, r: PowerResult, *, source: str | None, format: str,
                   model: str | None = None, test: str | None = None) -> str:
        from ..methods import simulated_power_methods
        return simulated_power_methods(r, model=model, test=test, format=format)


#: What a :class:`~nlpower.powerresult.PowerResult` studied.
StudyKind = RatingsStudy | ModelStudy | PreferenceStudy | CallbackStudy
#: the study classes, one per kind
STUDIES = (RatingsStudy, ModelStudy, PreferenceStudy, CallbackStudy)


def _fmt(x: float | None) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.3g}"
