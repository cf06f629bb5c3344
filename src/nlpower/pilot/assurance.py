"""Assurance: power averaged over what a pilot does not know about its variances.

Power at a pilot's point estimates treats the estimated SDs as the truth.  A
pilot of a few workers estimates the worker-slope SD very loosely, and ML
estimates of variances are biased low, so that power is usually optimistic
(``docs/pilot.md`` measures by how much).  Given the smallest effect of
interest (never the pilot's own effect), this module reports for a design:

* ``power``: the analytic power at the pilot's point estimates;
* ``assurance``: the mean power over the pilot's sampling distribution of
  the variance components (:mod:`nlpower.pilot.draws`: parametric bootstrap
  of the pilot fit, or its asymptotic covariance), with its Monte Carlo SE
  and the distribution's quantiles (O'Hagan & Stevens 2001 call the mean
  "assurance");
* ``safeguard_power``: power at one-sided upper confidence bounds of the
  variances ("safeguard power analysis", Perugini, Gallucci & Costantini
  2014, with the bound on the noise instead of the effect);

and :func:`plan_with_assurance` gives the cheapest design at the point
estimates and the cheapest design that reaches the target at the upper
bounds (the *safeguard design*), each with its assurance.

The inner power evaluations use the analytic tier
(:func:`nlpower.powersim.analytic_power`: noncentral t with the
Satterthwaite df), vectorised over the draws for fully crossed paired
designs, so 200 bootstrap refits plus power take well under a second;
``n_sims > 0`` simulates each draw's power instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._choices import Alternative, AssuranceMethod, Coding, RatingsTest, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int, check_real
from ..convert import as_params, with_sds, zero_sd_notes
from ..convert_outcomes import pilot_family
from ..design import CrossedDesign
from ..errors import DesignError, InputError
from ..params import LMMParams
from ..powersim import PlanResult, plan, power
from ..powersim.analytic import information_moments
from ..powersim.fastpath import stratum_eigenvalues
from ..powersim.options import check_test_options
from ..powersim.plansearch import bar_reporting
from ..powersim.rules import get_test
from ..ratings import RatingsFit
from ..simulation import check_design_params
from .draws import (
    SD_NAMES,
    asymptotic_draws,
    bias_corrected,
    bootstrap_draws,
    params_at,
    upper_bounds,
    variances_of,
)
from .general import general_draws, general_label
from .outcome_assurance import DEFAULT_OUTCOME_SIMS, Stages, check_outcome, outcome_assurance
from .result import AssuranceResult, PilotPlanResult, plan_notes, summarise_powers

__all__ = ["AssuranceResult", "PilotPlanResult", "assurance", "plan_with_assurance"]


# ------------------------------------------------------------------------------------
# power of one design at many variance vectors
# ------------------------------------------------------------------------------------


def _moments(design: CrossedDesign, point: LMMParams, variances: np.ndarray, bar: Any = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """SE (in ``point``'s coding) and Satterthwaite df of the effect at each variance row.

    ``bar`` (a progress bar or None) advances by one per row.
    """
    v = np.atleast_2d(variances)
    if design.is_balanced_crossed:  # analytic.balanced_moments, vectorised over rows
        w, i = design.n_workers, design.n_items
        lam = stratum_eigenvalues(w, i, v)
        var = lam[:, 1] / (2.0 * w * i)
        df = lam[:, 1] ** 2 / (lam[:, 3] ** 2 / (w - 1) + lam[:, 5] ** 2 / (i - 1)
                               + lam[:, 6] ** 2 / (2.0 * (w - 1) * (i - 1)))
        lo, hi = point.x_values
        _advance(bar, len(v))
        return np.sqrt(var) * 2.0 / (hi - lo), df
    se, df = np.empty(len(v)), np.empty(len(v))
    for r, row in enumerate(v):
        var_r, df[r] = information_moments(design, params_at(point, row))
        se[r] = math.sqrt(var_r)
        _advance(bar, 1)
    return se, df


def _advance(bar: Any, k: int) -> None:
    if bar is not None:
        bar.update(k)


def _powers(design: CrossedDesign, point: LMMParams, variances: np.ndarray, *, alpha: float,
            test: RatingsTest, alternative: Alternative, n_sims: int, seq: np.random.SeedSequence,
            bar: Any = None) -> np.ndarray:
    if n_sims == 0:
        se, df = _moments(design, point, variances, bar)
        # PB-LRT: its chi^2 approximation (no bootstrap without data)
        return np.asarray(get_test(test).approximate().power(
            point.effect, se, df, alpha=alpha, alternative=alternative))
    v = np.atleast_2d(variances)
    seeds = seq.spawn(len(v))
    out = np.empty(len(v))
    for r, (row, s) in enumerate(zip(v, seeds, strict=True)):
        out[r] = power(design, params_at(point, row), n_sims=n_sims, alpha=alpha, test=test,
                       alternative=alternative, rng=s, keep_replicates=False).power
        _advance(bar, 1)
    return out


# the pilot's draws
# ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pilot:
    point: LMMParams
    v_hat: np.ndarray
    draws: np.ndarray
    upper: np.ndarray
    n_workers: int
    n_items: int
    method: str
    confidence_level: float
    layout: str | None = None     # the general path's description of the pilot

    @property
    def label(self) -> str:
        return self.layout or (f"{self.n_workers} workers x {self.n_items} items x 2 systems, fully crossed "
                f"({2 * self.n_workers * self.n_items} ratings)")


def _pilot_shape(fit: Any, pilot: Any) -> tuple[int, int, bool]:
    """``(n_workers, n_items, balanced)``; unbalanced fits take the general path (:mod:`.general`)."""
    if isinstance(fit, LMMParams):
        if pilot is None:
            raise InputError(
                "pilot=(n_workers, n_items) is required with parameters: the size of the balanced "
                "pilot the SDs were estimated from (their sampling distribution depends on it). "
                "Or pass the pilot's RatingsFit (nlpower.fit_ratings)."
            )
        if not (isinstance(pilot, (tuple, list)) and len(pilot) == 2):
            raise InputError(f"pilot must be a pair (n_workers, n_items); got {pilot!r}.")
        w, i = check_int("pilot n_workers", pilot[0], min=2), check_int("pilot n_items", pilot[1], min=2)
        return w, i, True
    if pilot is not None:
        raise InputError("pilot= is only for parameters; a RatingsFit knows its own design.")
    if not isinstance(fit, RatingsFit):
        raise InputError(
            f"fit must be a RatingsFit (nlpower.fit_ratings) of the pilot, or LMMParams with "
            f"pilot=(n_workers, n_items); got {type(fit).__name__}."
        )
    r = fit.report
    w, i = int(r.n_workers), int(r.n_items)
    if w < 2 or i < 2:
        raise InputError(f"assurance needs at least 2 workers and 2 items; the pilot has {w} x {i}.")
    return w, i, bool(r.n_systems == 2 and r.fully_crossed and r.n_ratings == 2 * w * i)


def _pilot(fit: Any, *, pilot: Any, effect: Any, coding: Coding, contrast: Any, method: str,
           n_boot: int, confidence_level: float, seq: np.random.SeedSequence,
           sd: Mapping[str, float] | None = None, stages: Stages | None = None) -> _Pilot:
    w, i, balanced = _pilot_shape(fit, pilot)
    if isinstance(fit, LMMParams) and effect is None:
        raise InputError("effect is required: the smallest effect worth detecting, in coding=.")
    point = as_params(fit, effect=effect, coding=coding, contrast=contrast)
    if not isinstance(point, LMMParams):
        raise InputError(f"this pilot has {fit.n_systems} systems {list(fit.systems)}: name the "
                         f"comparison the study plans, e.g. contrast={fit.systems[1]!r}.")
    v_hat = variances_of(point)
    if not balanced:       # any other pilot: parametric bootstrap through the engine
        with (stages or Stages(False)).stage("refitting the pilot (bootstrap)", n_boot) as bar:
            draws = general_draws(fit, v_hat, method, seq.spawn(n_boot), contrast=contrast,
                                  coding=coding, tick=lambda: _advance(bar, 1))
        label: str | None = general_label(fit)
    elif method == "bootstrap":
        draws = bias_corrected(v_hat, bootstrap_draws(v_hat, w, i, seq.spawn(n_boot)))
        label = None
    else:
        draws = asymptotic_draws(v_hat, w, i, n_boot, np.random.Generator(np.random.PCG64(seq)))
        label = None
    upper = upper_bounds(v_hat, draws, w, i, confidence_level, method)
    if sd:     # the user's SDs for what the pilot does not estimate: fixed in every draw
        point = with_sds(point, sd)
        v_set = variances_of(point)
        cols = [SD_NAMES.index(_sd_key(k)) for k in sd]
        v_hat = v_hat.copy()
        v_hat[cols] = v_set[cols]
        draws, upper = draws.copy(), upper.copy()
        draws[:, cols] = v_set[cols]
        upper[cols] = v_set[cols]
    return _Pilot(point, v_hat, draws, upper, w, i, method, confidence_level, label)


def _sd_key(name: Any) -> str:
    key = str(name)
    return key if key == "sigma" or key.startswith("sd_") else f"sd_{key}"


def _assess(pilot: _Pilot, design: CrossedDesign, *, target_power: float, alpha: float,
            test: RatingsTest, alternative: Alternative, n_sims: int,
            seq: np.random.SeedSequence, seed: dict[str, Any], stages: Stages | None = None
            ) -> AssuranceResult:
    s_point, s_draws, s_up = seq.spawn(3)
    kw: dict[str, Any] = dict(alpha=alpha, test=test, alternative=alternative, n_sims=n_sims)
    p_point = float(_powers(design, pilot.point, pilot.v_hat, seq=s_point, **kw)[0])
    with (stages or Stages(False)).stage(f"assurance of {design.n_workers} workers x "
                                         f"{design.n_items} items", len(pilot.draws),
                                         "draw") as bar:
        p_draws = _powers(design, pilot.point, pilot.draws, seq=s_draws, bar=bar, **kw)
    p_up = float(_powers(design, pilot.point, pilot.upper, seq=s_up, **kw)[0])
    sd = dict(zip(SD_NAMES, np.sqrt(pilot.v_hat).tolist(), strict=True))
    up = dict(zip(SD_NAMES, np.sqrt(pilot.upper).tolist(), strict=True))
    return AssuranceResult(
        power=p_point, safeguard_power=p_up, **summarise_powers(p_draws, target_power),
        sd_point=sd, sd_upper=up, effect=pilot.point.effect, coding=pilot.point.coding,
        target_power=target_power, confidence_level=pilot.confidence_level, design=repr(design),
        pilot=pilot.label, test=test, alpha=alpha, alternative=alternative, method=pilot.method,
        n_boot=len(p_draws), n_sims=n_sims, seed=seed, power_draws=p_draws,
        sd_draws=pilot.draws,
    )


#: Bootstrap draws of a Gaussian pilot (analytic power per draw) and of an ordinal or binary one
#: (simulated power per draw), when ``n_boot`` is not given.
DEFAULT_BOOT = {"gaussian": 200, "likert": 50, "preference": 50}


def default_boot(fit: Any, n_boot: Any) -> Any:
    """``n_boot``, or the default for this pilot's kind (:data:`DEFAULT_BOOT`)."""
    return DEFAULT_BOOT[pilot_family(fit)] if n_boot is None else n_boot


def _check_common(target_power: Any, confidence_level: Any, method: Any, n_boot: Any
                  ) -> tuple[float, float, AssuranceMethod, int]:
    t = check_real("target_power", target_power)
    if not 0.0 < t < 1.0:
        raise InputError(f"target_power must be strictly between 0 and 1; got {t}. The usual "
                         "target is 0.8.")
    c = check_real("confidence_level", confidence_level)
    if not 0.5 <= c < 1.0:
        raise InputError(f"confidence_level must be in [0.5, 1) (the one-sided level of the SDs' "
                         f"upper bounds); got {c}. 0.8 is a common safeguard level.")
    m: AssuranceMethod = check_choice("method", method, AssuranceMethod)
    n = check_int("n_boot", n_boot, min=20)
    return t, c, m, n


# ------------------------------------------------------------------------------------
# public entry points
# ------------------------------------------------------------------------------------


def assurance(
    fit: Any, design: CrossedDesign, *, pilot: tuple[int, int] | None = None, effect: float,
    coding: Coding = "sum", contrast: Any = None, target_power: float = 0.8,
    n_boot: int | None = None, n_sims: int | None = None, method: AssuranceMethod = "bootstrap",
    confidence_level: float = 0.8, alpha: float = 0.05, test: RatingsTest | None = None,
    alternative: Alternative = "two-sided", outcome: str | None = None,
    analysis: str | None = None, rng: RNGLike = None,
) -> AssuranceResult:
    """Power of ``design`` at a pilot's estimates, averaged over their uncertainty, and safeguarded.

    Each keyword in full, how the draws are made and how well the numbers are calibrated:
    ``docs/pilot.md``, "Assurance and the safeguard design".

    Parameters
    ----------
    fit : RatingsFit, LMMParams, clmm / OrdinalRatingsFit or GlmmFit
        The pilot: a Gaussian :func:`~nlpower.ratings.fit_ratings` fit, parameters estimated
        from a balanced pilot (with ``pilot``), an ordinal fit or a binomial glmer fit.
    design : CrossedDesign
        The planned study (2 systems, paired items).
    pilot : (n_workers, n_items), optional
        Size of the balanced pilot that ``fit`` (parameters) came from.
    effect : float
        Smallest effect of interest, in ``coding`` (required; the pilot's own estimate is
        never used); latent scale for an ordinal pilot, logit for a binary one.
    coding : {"sum", "half", "treatment"}, default "sum"
    contrast : optional
        The comparison of a K-system pilot (:func:`~nlpower.pilot.as_params`).
    target_power : float, default 0.8
        For ``prob_target`` (share of draws whose power reaches it).
    n_boot : int, optional
        Bootstrap refits (or asymptotic draws); default 200 (Gaussian), 50 (ordinal, binary).
    n_sims : int, optional
        Simulated replicates per draw: Gaussian default 0 (analytic power), others 10.
    method : {"bootstrap", "asymptotic"}, default "bootstrap"
        How the pilot's sampling distribution is described (:mod:`nlpower.pilot.draws`).
    confidence_level : float, default 0.8
        One-sided level of the SDs' upper bounds (``safeguard_power``).
    alpha : float, default 0.05
    test : str, optional
        As in :func:`nlpower.power` (default Satterthwaite for an LMM, z for clmm and glmer).
    alternative : {"two-sided", "greater", "less"}
    outcome, analysis : str, optional
        The planned outcome (default the pilot's) and its analysis (``"lmm"``, ``"clmm"``,
        ``"glmer"``).
    rng : optional
        Seed or stream (``docs/api.md``, "Randomness").

    Returns
    -------
    AssuranceResult

    Examples
    --------
    >>> from nlpower import CrossedDesign, read_ratings, fit_ratings
    >>> from nlpower.pilot import assurance
    >>> fit = fit_ratings(read_ratings("fixtures/pilot_ratings.csv", scale=(1, 5)))
    >>> res = assurance(fit, CrossedDesign(10, 100), effect=0.05, rng=1)
    >>> 0 <= res.assurance <= 1 and res.safeguard_power <= res.power
    True
    """
    target_power, confidence_level, method, n_boot = _check_common(
        target_power, confidence_level, method, default_boot(fit, n_boot))
    family = pilot_family(fit)
    if family != "gaussian":      # ordinal or binary pilot: bootstrap + simulated power
        alpha, _, alternative = check_test_options(alpha, "z", alternative)
        seq = root_seed(rng)
        return outcome_assurance(
            fit, design, effect=effect, coding=coding, contrast=contrast, outcome=outcome,
            analysis=analysis, test=test, target_power=target_power, n_boot=n_boot,
            n_sims=check_int("n_sims", DEFAULT_OUTCOME_SIMS if n_sims is None else n_sims, min=1),
            method=method, confidence_level=confidence_level, alpha=alpha,
            alternative=alternative, seq=seq, seed=seed_record(seq))
    check_outcome("gaussian", outcome, "lmm" if analysis is None else analysis)
    n_sims = check_int("n_sims", 0 if n_sims is None else n_sims, min=0)
    alpha, test, alternative = check_test_options(alpha, test or "satterthwaite", alternative)
    seq = root_seed(rng)
    s_pilot, s_assess = seq.spawn(2)
    pilot_ = _pilot(fit, pilot=pilot, effect=effect, coding=coding, contrast=contrast, method=method,
                   n_boot=n_boot, confidence_level=confidence_level, seq=s_pilot)
    design, _ = check_design_params(design, pilot_.point)
    if design.n_systems != 2 or design.items != "paired":
        raise DesignError(f"assurance plans a paired two-system study; got {design!r}.")
    return _assess(pilot_, design, target_power=target_power, alpha=alpha, test=test,
                   alternative=alternative, n_sims=n_sims, seq=s_assess, seed=seed_record(seq))


def plan_with_assurance(
    fit: Any, *, pilot: tuple[int, int] | None = None, effect: float, coding: Coding = "sum",
    contrast: Any = None, target_power: float = 0.8, cost_per_rating: float = 1.0,
    cost_per_worker: float = 0.0, confidence_level: float = 0.8,
    method: AssuranceMethod = "bootstrap", n_boot: int | None = None, alpha: float = 0.05,
    test: RatingsTest | None = None, alternative: Alternative = "two-sided", min_workers: int = 2,
    max_workers: int | None = None, max_items: int = 5000, workers_per_item: int | None = None,
    outcome: str | None = None, analysis: str | None = None, n_sims: int | None = None,
    rng: RNGLike = None, sd: Mapping[str, float] | None = None, progress: bool = False,
) -> PilotPlanResult:
    """The cheapest design at a pilot's estimates, and the safeguard design.

    Both come from :func:`nlpower.plan` (same cost model and search range): ``point`` at the
    pilot's estimated SDs, ``safeguard`` at their upper ``confidence_level`` bounds.  Each
    chosen design gets its :class:`AssuranceResult` (power at the estimates, mean power over
    the pilot's sampling distribution, power at the upper bounds).  Each keyword in full:
    ``docs/pilot.md``, "Assurance and the safeguard design".

    Parameters
    ----------
    fit : RatingsFit, LMMParams, clmm / OrdinalRatingsFit or GlmmFit
        The pilot, as in :func:`assurance`.
    pilot, contrast, n_boot, outcome, analysis : as in assurance, optional
    effect : float
        Smallest effect of interest, in ``coding`` (required).
    coding : {"sum", "half", "treatment"}, default "sum"
    target_power : float, default 0.8
    cost_per_rating : float, default 1.0
    cost_per_worker : float, default 0.0
    confidence_level : float, default 0.8
        One-sided level of the SDs' upper bounds (the safeguard design).
    method : {"bootstrap", "asymptotic"}, default "bootstrap"
    alpha : float, default 0.05
    test : str, optional
    alternative : {"two-sided", "greater", "less"}
    min_workers : int, default 2
    max_workers, workers_per_item : int, optional
        The range searched and the design's workers per item, as in :func:`nlpower.plan`.
    max_items : int, default 5000
    n_sims : int, optional
        Replicates per draw of an ordinal or binary pilot (default 10); not for Gaussian ones.
    rng : seed, optional
    sd : dict, optional
        SDs the pilot does not estimate (``{"item_slope": 0.1}``), fixed over its draws.
    progress : bool, default False
        Show each stage (bootstrap, searches, assurance) on standard error.

    Returns
    -------
    PilotPlanResult

    Examples
    --------
    >>> from nlpower import read_ratings, fit_ratings
    >>> from nlpower.pilot import plan_with_assurance
    >>> fit = fit_ratings(read_ratings("fixtures/pilot_ratings.csv", scale=(1, 5)))
    >>> res = plan_with_assurance(fit, effect=0.1, cost_per_worker=20, rng=1)
    >>> res.safeguard.cost >= res.point.cost
    True
    """
    target_power, confidence_level, method, n_boot = _check_common(
        target_power, confidence_level, method, default_boot(fit, n_boot))
    search: dict[str, Any] = dict(
        target_power=target_power, cost_per_rating=cost_per_rating,
        cost_per_worker=cost_per_worker, min_workers=min_workers, max_workers=max_workers,
        max_items=max_items, workers_per_item=workers_per_item)
    if pilot_family(fit) != "gaussian":      # ordinal or binary pilot (.outcome_plan)
        return _outcome_pilot_plan(
            fit, effect=effect, coding=coding, contrast=contrast, outcome=outcome,
            analysis=analysis, test=test, confidence_level=confidence_level, method=method,
            n_boot=n_boot, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng, sd=sd,
            progress=progress, search=search)
    check_outcome("gaussian", outcome, "lmm" if analysis is None else analysis)
    if n_sims not in (None, 0):
        raise InputError("n_sims is for ordinal and binary pilots; a Gaussian pilot's plans use "
                         "analytic power (nlpower.plan). Leave n_sims unset.")
    alpha, test, alternative = check_test_options(alpha, test or "satterthwaite", alternative)
    seq = root_seed(rng)
    s_pilot, s_point, s_safe = seq.spawn(3)
    stages = Stages(progress)
    pilot_ = _pilot(fit, pilot=pilot, effect=effect, coding=coding, contrast=contrast, method=method,
                   n_boot=n_boot, confidence_level=confidence_level, seq=s_pilot, sd=sd,
                   stages=stages)
    kw: dict[str, Any] = dict(alpha=alpha, test=test, alternative=alternative, **search)
    akw: dict[str, Any] = dict(target_power=target_power, alpha=alpha, test=test,
                               alternative=alternative, n_sims=0, seed=seed_record(seq))
    point_plan = _search_designs(pilot_.point, pilot_.point.effect, kw, stages, "estimates")
    point_a = _assess(pilot_, point_plan.design, seq=s_point, stages=stages, **akw)
    safe_plan, safe_a, note = _safeguard_plan(pilot_, kw, akw, s_safe, stages)
    zeros = " ".join(zero_sd_notes(fit, contrast, sd)) if pilot is None else ""
    note = " ".join(x for x in (note, plan_notes(point_plan, safe_plan).strip(), zeros) if x)
    return PilotPlanResult(point=point_plan, safeguard=safe_plan, point_assurance=point_a,
                           safeguard_assurance=safe_a, confidence_level=confidence_level,
                           method=method, note=note, compared=_pair(fit, contrast))


def _outcome_pilot_plan(fit: Any, *, n_sims: int | None, alpha: float, alternative: Any,
                        rng: RNGLike, search: dict[str, Any], **kw: Any) -> PilotPlanResult:
    """The plans of an ordinal or binary pilot: a Gaussian stand-in searched, the chosen
    designs checked by simulation (:mod:`nlpower.pilot.outcome_plan`)."""
    from .outcome_plan import outcome_plan

    alpha, _, alternative = check_test_options(alpha, "z", alternative)
    seq = root_seed(rng)
    return outcome_plan(
        fit, n_sims=check_int("n_sims", DEFAULT_OUTCOME_SIMS if n_sims is None else n_sims, min=1),
        alpha=alpha, alternative=alternative, seq=seq, seed=seed_record(seq), **search, **kw)


def _search_designs(params: Any, effect: float, kw: dict[str, Any], stages: Stages,
                    where: str) -> PlanResult:
    """:func:`nlpower.plan` at ``params``, shown as a stage of the plan."""
    with stages.stage(f"searching designs at the {where}", None, "worker count") as bar, \
            bar_reporting(bar):
        return plan(params, effect=effect, **kw)


def _safeguard_plan(pilot_: _Pilot, kw: dict[str, Any], akw: dict[str, Any],
                    seq: np.random.SeedSequence,
                    stages: Stages) -> tuple[PlanResult | None, AssuranceResult | None, str]:
    """The plan at the SDs' upper bounds and its assurance; ``(None, None, note)`` when no
    design in the searched range reaches the target there."""
    try:
        safe_plan = _search_designs(params_at(pilot_.point, pilot_.upper), pilot_.point.effect,
                                    kw, stages, "upper bounds")
        return safe_plan, _assess(pilot_, safe_plan.design, seq=seq, stages=stages, **akw), ""
    except DesignError as exc:
        return None, None, (
            f"no design in the searched range reaches the target at the upper bounds of the "
            f"SDs ({exc}) -- the pilot cannot bound the noise well enough; collect a larger "
            "pilot, lower confidence_level, or raise max_workers / max_items.")


def _pair(fit: Any, contrast: Any) -> tuple[str, str] | None:
    """The systems ``(a, b)`` a pilot fit compares (``a`` coded +1); None for parameters."""
    resolve = getattr(fit, "_resolve_contrast", None)
    return None if resolve is None else tuple(map(str, resolve(contrast)))  # type: ignore[return-value]
