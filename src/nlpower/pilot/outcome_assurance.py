"""Assurance from ordinal (clmm) and binary (glmer) pilots: parametric bootstrap + simulated power.

The Gaussian paths (:mod:`.draws`, :mod:`.general`) draw the five variances
of the paper's model and evaluate power analytically.  An ordinal or binary
pilot has no analytic power, and its uncertainty is about more than five
variances (thresholds, position effects), so assurance is computed the long
way, as ``lme4``'s ``bootMer`` / ``simulate + refit`` with simr-style power:

1. the pilot fit is turned into the parameters of its outcome model
   (:mod:`nlpower.convert_outcomes`: :class:`~nlpower.outcomes.LikertParams` or
   :class:`~nlpower.outcomes.HeadToHeadParams`), with the user's effect;
2. each of ``n_boot`` bootstrap samples simulates a new response on the
   pilot's own rows from the fitted model (``fit.simulate``), refits the same
   structure with the same engine (``fit.refit``, warm-started at the pilot),
   and converts the refit the same way: one draw of the whole parameter set
   (thresholds, SDs, position effects); samples whose refit fails are dropped;
3. the draws' variances are rescaled for the ML bias of variance estimates
   (:func:`.draws.bias_corrected`, uncapped on the latent scale);
4. each draw's power for the planned design is simulated with ``n_sims``
   replicates (:func:`~nlpower.outcomes.likert_power` with the chosen
   analysis, or :func:`~nlpower.outcomes.headtohead_power`), each draw from
   its own child seed.

Assurance is the mean of the draws' simulated powers: an unbiased estimate of
the probability of rejecting under the pilot's predictive distribution for
any ``n_sims >= 1``; its Monte Carlo SE (the SD of the per-draw powers over
``sqrt(n_boot)``) includes the per-draw simulation noise, so few replicates
per draw and many draws is the efficient split.  The per-draw quantiles and
``prob_target`` include that noise too (they widen with small ``n_sims``).
Power at the estimates and at the SDs' upper bounds are simulated with as
many replicates as the draws used together (``n_boot * n_sims``), at most
:data:`POINT_SIMS` (200) and at least ``n_sims``.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._choices import Coding
from .._validation import check_choice
from ..coding import x_values
from ..convert_outcomes import OrdinalPilot, binary_params, pilot_family, separation_notes
from ..design import CrossedDesign
from ..errors import DesignError, FitError, InputError
from ..outcomes import HeadToHeadParams, LikertParams, headtohead_power, likert_power
from ..powersim.batches import reporting_batches
from ..powersim.outcome import OUTCOMES
from .draws import bias_corrected
from .result import AssuranceResult, summarise_powers

__all__ = ["DEFAULT_OUTCOME_SIMS", "OutcomePilot", "POINT_SIMS", "SD_FIELDS", "outcome_assurance", "outcome_draws"]

#: Default replicates per draw (assurance is unbiased for any n_sims >= 1).
DEFAULT_OUTCOME_SIMS = 10
#: Most replicates of the power at the estimates and at the upper bounds.
POINT_SIMS = 200
#: The SDs drawn and bounded, per outcome (fields of its parameters).
SD_FIELDS: dict[str, tuple[str, ...]] = {
    "likert": ("sd_worker", "sd_worker_slope", "sd_item", "sd_item_slope"),
    "preference": ("sd_worker", "sd_item", "sd_worker_position", "sd_item_position"),
}
#: Analyses of each outcome's planned study (the first is the default).
ANALYSES: dict[str, tuple[str, ...]] = {"likert": ("clmm", "lmm"), "preference": ("glmer",),
                                        "gaussian": ("lmm",)}

_FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError, ValueError,
             ZeroDivisionError)


class OutcomePilot:
    """An ordinal or binary pilot fit: its parameters, and bootstrap draws of them (module docstring)."""

    def __init__(self, fit: Any, contrast: Any = None) -> None:
        self.outcome = pilot_family(fit)
        self.point: LikertParams | HeadToHeadParams
        if self.outcome == "likert":
            self.ordinal: OrdinalPilot | None = OrdinalPilot(fit, contrast)
            self.base = self.ordinal.clmm
            self.point = self.ordinal.to_params(self.base, unequal="warn")
        else:
            if contrast is not None:
                raise InputError("contrast= is for rating pilots; a head-to-head pilot compares "
                                 "its two systems already (its intercept is the preference).")
            self.ordinal = None
            self.base = fit
            self.point = binary_params(fit)

    def notes(self, sd: Any = None) -> list[str]:
        """What the plan must say about the pilot's SDs: unestimated (ordinal) or separated (binary)."""
        if self.ordinal is not None:
            return self.ordinal.zero_sd_notes(sd)
        return separation_notes(self.base, sd)

    def params_of(self, refit: Any) -> LikertParams | HeadToHeadParams:
        if self.ordinal is not None:
            return self.ordinal.to_params(refit, unequal="ignore")
        return binary_params(refit)

    def draw(self, gen: np.random.Generator) -> LikertParams | HeadToHeadParams:
        """One bootstrap draw: simulate the pilot's response from its fit, refit, convert."""
        y = self.base.simulate(1, rng=gen)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")      # convergence / singular notes, once per draw
            return self.params_of(self.base.refit(y))

    @property
    def label(self) -> str:
        b = self.base
        if self.ordinal is not None:
            return (f"ordinal pilot, {b.nobs} ratings on {len(b.categories)} levels (parametric "
                    f"bootstrap of clmm {b.formula!r})")
        return (f"head-to-head pilot, {b.nobs} judgements (parametric bootstrap of glmer "
                f"{b.formula!r})")


class Stages:
    """Progress of a plan on standard error: one bar per stage, with its elapsed and remaining time.

    Off (``progress=False``) it does nothing, so the stages' code is the same
    either way.
    """

    def __init__(self, progress: bool) -> None:
        self.progress = bool(progress)

    @contextmanager
    def stage(self, desc: str, total: int | None = None, unit: str = "fit") -> Iterator[Any]:
        if not self.progress:
            yield None
            return
        from tqdm.auto import tqdm
        bar = tqdm(total=total, desc=desc, unit=unit, leave=False, file=sys.stderr)
        try:
            yield bar
        finally:
            bar.close()


def _tick(bar: Any) -> None:
    if bar is not None:
        bar.update(1)


def outcome_draws(pilot: OutcomePilot, seeds: Sequence[np.random.SeedSequence],
                  stages: Stages | None = None) -> list[LikertParams | HeadToHeadParams]:
    """Bootstrap draws of the pilot's parameters, one per seed (failed refits dropped)."""
    out = []
    with (stages or Stages(False)).stage("refitting the pilot (bootstrap)", len(seeds)) as bar:
        for s in seeds:
            try:
                out.append(pilot.draw(np.random.Generator(np.random.PCG64(s))))
            except _FAILURES:
                pass
            _tick(bar)
    if len(out) < max(1, len(seeds) // 2):
        raise FitError(f"only {len(out)} of {len(seeds)} bootstrap refits of the pilot succeeded; "
                       "the pilot's model is too rich for its data. Refit it with a simpler "
                       "formula and plan again.")
    return out


def _variances(params: Any, names: tuple[str, ...]) -> np.ndarray:
    return np.array([getattr(params, n) ** 2 for n in names])


def _with_variances(params: Any, names: tuple[str, ...], v: np.ndarray) -> Any:
    return replace(params, **{n: math.sqrt(max(float(x), 0.0)) for n, x in zip(names, v,
                                                                              strict=True)})


def planned_effect(outcome: str, effect: Any, coding: Coding) -> float:
    """The user's effect on the outcome model's scale (sum coding for Likert; logit for preference)."""
    if effect is None or isinstance(effect, bool) or not isinstance(effect, (int, float)) \
            or effect == 0 or not math.isfinite(effect):
        scale = ("latent (logit or probit) scale of the ordinal model, in coding=" if
                 outcome == "likert" else "logit scale: log(share / (1 - share)) of the share "
                 "preferring system B, e.g. 0.41 for 60%")
        raise InputError(f"effect must be a finite non-zero number on the {scale}; got "
                         f"{effect!r}. It is the smallest effect worth detecting, never the "
                         "pilot's estimate.")
    if outcome == "preference":
        if coding != "sum":
            raise InputError(f"coding={coding!r} does not apply to a head-to-head pilot: its "
                             "effect is the logit of the share preferring B; leave coding='sum'.")
        return float(effect)
    lo, hi = x_values(coding)
    return float(effect) * (hi - lo) / 2.0


@dataclass(frozen=True)
class _Setup:
    design: CrossedDesign
    outcome: str
    analysis: str
    test: str | None
    n_sims: int
    alpha: float
    alternative: str


@contextmanager
def _counted(bar: Any, n: int) -> Iterator[None]:
    """Advance ``bar`` by the ``n`` replicates simulated inside: batch by batch as the loop
    finishes them, and whatever it did not report at the end."""
    if bar is None:
        yield
        return
    seen = [0]

    def update(k: int) -> None:
        seen[0] += k
        bar.update(k)

    with reporting_batches(update):
        yield
    if seen[0] < n:
        bar.update(n - seen[0])


def _power(s: _Setup, params: Any, seed: np.random.SeedSequence, n_sims: int,
           bar: Any = None) -> float:
    """Simulated power of ``params`` on ``s.design`` (``bar``: advanced by each replicate batch)."""
    with warnings.catch_warnings(), _counted(bar, n_sims):
        warnings.simplefilter("ignore")
        if s.outcome == "likert":
            r: Any = likert_power(s.design, params, analysis=s.analysis, test=s.test,
                                  n_sims=n_sims, alpha=s.alpha,
                                  alternative=s.alternative,  # type: ignore[arg-type]
                                  rng=seed, keep_replicates=False)
        else:
            r = headtohead_power(s.design, params, n_sims=n_sims, alpha=s.alpha,
                                 alternative=s.alternative,  # type: ignore[arg-type]
                                 rng=seed, keep_replicates=False)
    return float(r.power)


def check_outcome(fit_outcome: str, outcome: Any, analysis: Any) -> str:
    """The planned analysis, after checking the planned outcome can use this pilot."""
    if outcome is not None:
        check_choice("outcome", outcome, OUTCOMES)   # a misspelt name first: did you mean
    if outcome is not None and outcome != fit_outcome:
        what = {"likert": "an ordinal (clmm) pilot describes K-point ratings on a latent scale",
                "preference": "a binary (glmer) pilot describes head-to-head judgements",
                "gaussian": "a Gaussian pilot (fit_ratings) describes continuous ratings"}
        fix = {"likert": "plan with outcome='likert' (analysis='clmm', or 'lmm' for the paper's "
                         "LMM of ratings rescaled to [0, 1]), or fit the pilot with "
                         "fit_ratings(...) for outcome='gaussian'",
               "preference": "plan with outcome='preference' (analysis='glmer')",
               "gaussian": "plan with outcome='gaussian', or fit the pilot with fit_ratings(..., "
                           "family='ordinal') for outcome='likert'"}
        raise InputError(f"outcome={outcome!r} cannot use this pilot: {what[fit_outcome]}. "
                         f"{fix[fit_outcome][0].upper()}{fix[fit_outcome][1:]}.")
    allowed = ANALYSES[fit_outcome]
    a = allowed[0] if analysis is None else analysis
    if a not in allowed:
        raise InputError(f"analysis={analysis!r} is not an analysis of outcome={fit_outcome!r}; "
                         f"choose from {list(allowed)}.")
    return str(a)


def outcome_assurance(fit: Any, design: CrossedDesign, *, effect: Any, coding: Coding,
                      contrast: Any, outcome: Any, analysis: Any, test: str | None,
                      target_power: float, n_boot: int, n_sims: int, method: str,
                      confidence_level: float, alpha: float, alternative: str,
                      seq: np.random.SeedSequence, seed: dict[str, Any],
                      pilot: OutcomePilot | None = None, draws: list[Any] | None = None,
                      known: Mapping[str, float] | None = None,
                      stages: Stages | None = None) -> Any:
    """:func:`nlpower.pilot.assurance` for an ordinal or binary pilot (module docstring).

    ``known`` holds powers a plan's search has already simulated on this
    design with :data:`POINT_SIMS` replicates (``"point"``: at the estimates,
    ``"upper"``: at the upper bounds); they are reported as they are, so a
    plan never shows a second, noisier estimate of the power it was chosen by.
    """
    if method != "bootstrap":
        raise InputError(f"method={method!r} describes a Gaussian pilot's variances; ordinal and "
                         "binary pilots are bootstrapped: use method='bootstrap'.")
    if not isinstance(design, CrossedDesign):
        raise DesignError(f"design must be a CrossedDesign; got {type(design).__name__}.")
    if design.n_systems != 2 or design.items != "paired":
        raise DesignError(f"assurance plans a paired two-system study; got {design!r}.")
    p = pilot if pilot is not None else OutcomePilot(fit, contrast)
    a = check_outcome(p.outcome, outcome, analysis)
    eff = planned_effect(p.outcome, effect, coding)
    names = SD_FIELDS[p.outcome]
    s_draws, s_assess = seq.spawn(2)
    if draws is None:
        draws = outcome_draws(p, s_draws.spawn(n_boot), stages)
    v_hat = _variances(p.point, names)
    v = bias_corrected(v_hat, np.array([_variances(d, names) for d in draws]), cap=None)
    draws = [_with_variances(d, names, row).with_effect(eff) for d, row in zip(draws, v,
                                                                                strict=True)]
    upper = np.quantile(v, confidence_level, axis=0)
    point = p.point.with_effect(eff)
    setup = _Setup(design, p.outcome, a, test, n_sims, alpha, alternative)
    s_point, s_each, s_up = s_assess.spawn(3)
    known = dict(known or {})
    n_point = POINT_SIMS if known else max(n_sims, min(POINT_SIMS, len(draws) * n_sims))
    # one bar over every replicate of the stage (the draws', and the point and upper powers')
    total = len(draws) * n_sims + n_point * (("point" not in known) + ("upper" not in known))
    with (stages or Stages(False)).stage(f"assurance of {design.n_workers} workers x "
                                         f"{design.n_items} items", total, "replicate") as bar:
        p_point = (known["point"] if "point" in known
                   else _power(setup, point, s_point, n_point, bar))
        powers = [_power(setup, d, s, n_sims, bar)
                  for d, s in zip(draws, s_each.spawn(len(draws)), strict=True)]
        p_draws = np.array(powers)
        p_up = (known["upper"] if "upper" in known
                else _power(setup, _with_variances(point, names, upper), s_up, n_point, bar))
    stats = summarise_powers(p_draws, target_power)
    return AssuranceResult(
        power=p_point, safeguard_power=p_up, **stats,
        sd_point=dict(zip(names, np.sqrt(v_hat).tolist(), strict=True)),
        sd_upper=dict(zip(names, np.sqrt(upper).tolist(), strict=True)),
        effect=float(effect), coding=coding, target_power=target_power,
        confidence_level=confidence_level, design=repr(design), pilot=p.label,
        test=test or ("z" if a != "lmm" else "satterthwaite"), alpha=alpha,
        alternative=alternative, method=method, n_boot=len(draws), n_sims=n_sims, seed=seed,
        power_draws=p_draws, sd_draws=v, outcome=p.outcome, analysis=a, point_sims=n_point)
