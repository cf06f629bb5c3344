"""Plans from ordinal and binary pilots: an approximate search, then simulation of what it chose.

Simulated power of a clmm or glmer analysis costs a fit per replicate, far
too much to search thousands of designs.  :func:`outcome_plan` searches with
a Gaussian stand-in of the latent model and checks the choice by simulation:

1. **search**: :func:`nlpower.plan` (analytic, the same cost model and
   range) on :class:`~nlpower.params.LMMParams` of the latent model whose
   residual variance carries the information lost to categories
   (:func:`latent_proxy`): for ``K``-point ratings with marginal category
   shares ``p_k`` a location shift has ``1 - sum p_k^3`` of the information
   of the uncategorised latent variable (Whitehead 1993, proportional odds),
   so the residual variance is ``v_e / (1 - sum p_k^3)`` (``v_e`` = 3 for the
   logistic latent residual's location information, 1 for probit); a
   head-to-head judgement is one paired difference with residual variance
   ``1 / (p (1 - p) (1 - p_draw))`` plus the position SDs' share;
2. **check**: the chosen design's power at the estimates is simulated
   (:data:`~.outcome_assurance.POINT_SIMS` replicates, the planned analysis);
   while it is below the target, the number of items grows by 15% (at most
   ``max_items``), and when that is not enough the search moves on to more
   workers (a plan is never returned below its target: when no design in
   range reaches it, an error says so);
3. **assurance** of each chosen design over the pilot's bootstrap draws
   (:func:`~.outcome_assurance.outcome_assurance`, the same draws for both).

Only step 1 is approximate: every power reported is simulated.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from ..convert import with_sds
from ..design import CrossedDesign
from ..errors import DesignError, NlpowerWarning
from ..outcomes import HeadToHeadParams, LikertParams
from ..params import LMMParams
from ..powersim import PlanResult, plan
from ..powersim.plansearch import bar_reporting
from .draws import bias_corrected
from .outcome_assurance import (
    POINT_SIMS,
    SD_FIELDS,
    OutcomePilot,
    Stages,
    _power,
    _Setup,
    _variances,
    _with_variances,
    check_outcome,
    outcome_assurance,
    outcome_draws,
    planned_effect,
)
from .result import PilotPlanResult, plan_notes

__all__ = ["latent_proxy", "outcome_plan"]

#: Growth of the item count while the simulated power is below the target.
ITEM_STEP = 1.15
#: Most item-count increases in the check.
MAX_STEPS = 8
#: Growth of the fewest workers searched when more items alone do not reach the target.
WORKER_STEP = 1.5
#: Most such moves to more workers (2 -> 3 -> 5 -> 8 -> 12 workers).
MAX_WORKER_STEPS = 4


def latent_proxy(params: LikertParams | HeadToHeadParams) -> LMMParams:
    """Gaussian stand-in of an ordinal or head-to-head model for the plan search (module docstring).

    Examples
    --------
    >>> lp = LikertParams(thresholds=(-1.0, 0.0, 1.0), effect=0.3, sd_item_slope=0.2)
    >>> round(latent_proxy(lp).sigma, 3)
    1.045
    """
    if isinstance(params, LikertParams):
        q = params.with_effect(0.0)
        x0, x1 = q.x_values
        shares = (q.category_probabilities(x0) + q.category_probabilities(x1)) / 2.0
        eff = max(1.0 - float(np.sum(shares**3)), 1e-6)
        v_e = 3.0 if q.link == "logit" else 1.0
        return LMMParams(beta0=0.0, effect=params.effect, sd_worker=params.sd_worker,
                         sd_worker_slope=params.sd_worker_slope, sd_item=params.sd_item,
                         sd_item_slope=params.sd_item_slope, sigma=math.sqrt(v_e / eff),
                         coding=params.coding)
    p = 1.0 / (1.0 + math.exp(-params.effect))
    v = 1.0 / (p * (1.0 - p) * (1.0 - params.p_draw))
    v += (params.sd_worker_position**2 + params.sd_item_position**2) / 4.0
    # one judgement per (worker, item) = the paired difference y_B - y_A of a rating design
    return LMMParams(beta0=0.0, effect=params.effect / 2.0, sd_worker=0.0,
                     sd_worker_slope=params.sd_worker / 2.0, sd_item=0.0,
                     sd_item_slope=params.sd_item / 2.0, sigma=math.sqrt(v / 2.0), coding="sum")


def _choose(params: Any, setup: _Setup, *, kw: dict[str, Any], max_items: int,
            seed: np.random.SeedSequence, stages: Stages, which: str
            ) -> tuple[PlanResult, float]:
    """Approximate plan, items grown until the simulated power reaches the target, else more workers.

    The stand-in can be optimistic about few workers (its df and its worker
    variances are not those of the analysis), so when the items alone cannot
    lift the simulated power to the target the search moves on to more
    workers (:data:`WORKER_STEP`), at most :data:`MAX_WORKER_STEPS` times
    and never past ``max_workers``; if none reaches it a :class:`DesignError`
    says so and shows the best design tried.
    """
    proxy = latent_proxy(params)
    target = kw["target_power"]
    cap = kw["max_workers"]
    lo_w = kw["min_workers"]
    tried: list[tuple[CrossedDesign, float]] = []
    for _ in range(MAX_WORKER_STEPS + 1):
        with stages.stage(f"searching {which} designs (Gaussian stand-in)", None,
                          "worker count") as bar, \
                bar_reporting(bar):
            res = plan(proxy, effect=proxy.effect, max_items=max_items,
                       **{**kw, "min_workers": lo_w})
        with stages.stage(f"checking {which} designs by simulation", POINT_SIMS,
                          "replicate") as bar:
            design, pw = _grow_items(res.design, params, setup, seed, target, max_items, bar)
        if pw >= target:
            cost = kw["cost_per_rating"] * design.n_ratings + \
                kw["cost_per_worker"] * design.n_workers
            return replace(res, design=design, n_items=design.n_items, power=pw, cost=cost,
                           outcome=setup.outcome), pw
        tried.append((design, pw))
        nxt = max(design.n_workers + 1, math.ceil(design.n_workers * WORKER_STEP))
        if cap is not None and nxt > cap:
            break
        lo_w = nxt
    best = max(tried, key=lambda t: t[1])
    shown = ", ".join(f"{d.n_workers} x {d.n_items}: {q:.3f}" for d, q in tried)
    raise DesignError(
        f"no design reaches simulated power {target} at these SDs: the designs tried (workers x "
        f"items: simulated power) were {shown}; the best, {best[0].n_workers} workers x "
        f"{best[0].n_items} items, has {best[1]:.3f}. Raise max_workers"
        f"{'' if cap is None else f' (now {cap})'} or max_items (now {max_items}), or plan for "
        "a larger effect.")


def _grow_items(design: CrossedDesign, params: Any, setup: _Setup, seed: np.random.SeedSequence,
                target: float, max_items: int, bar: Any = None) -> tuple[CrossedDesign, float]:
    """Items grown by :data:`ITEM_STEP` while the simulated power is below ``target``.

    ``bar`` counts replicates: :data:`POINT_SIMS` per design, its total grown by as many for
    each further design checked.
    """
    for step in range(MAX_STEPS + 1):
        pw = _power(replace(setup, design=design), params, seed, POINT_SIMS, bar)
        if pw >= target or design.n_items >= max_items or step == MAX_STEPS:
            break
        if bar is not None:
            bar.total += POINT_SIMS
            bar.refresh()
        n_items = min(max_items, math.ceil(design.n_items * ITEM_STEP))
        design = CrossedDesign(design.n_workers, n_items,
                               workers_per_item=design.workers_per_item)
    return design, pw


def _mc_se(power: float, n_sims: int) -> float:
    """The Monte Carlo standard error of a simulated power near ``power``."""
    return math.sqrt(power * (1 - power) / n_sims)


def outcome_plan(fit: Any, *, effect: Any, coding: Any, contrast: Any, outcome: Any,
                 analysis: Any, test: Any, target_power: float, cost_per_rating: float,
                 cost_per_worker: float, confidence_level: float, method: str, n_boot: int,
                 n_sims: int, alpha: float, alternative: str, min_workers: int,
                 max_workers: int | None, max_items: int, workers_per_item: int | None,
                 seq: np.random.SeedSequence, seed: dict[str, Any],
                 sd: Any = None, progress: bool = False) -> PilotPlanResult:
    """:func:`nlpower.pilot.plan_with_assurance` for an ordinal or binary pilot (module docstring)."""
    p = OutcomePilot(fit, contrast)
    a = check_outcome(p.outcome, outcome, analysis)
    eff = planned_effect(p.outcome, effect, coding)
    names = SD_FIELDS[p.outcome]
    s_draws, s_point, s_safe, s_check = seq.spawn(4)
    stages = Stages(progress)
    raw = outcome_draws(p, s_draws.spawn(n_boot), stages)
    zeros = p.notes(sd)
    for z in zeros:
        if "quasi-separated" in z:
            warnings.warn(z, NlpowerWarning, stacklevel=3)
    if sd:          # the user's SDs for what the pilot does not estimate: fixed in every draw
        p.point = with_sds(p.point, sd)
        raw = [with_sds(d, sd) for d in raw]
    v_hat = _variances(p.point, names)
    v = bias_corrected(v_hat, np.array([_variances(d, names) for d in raw]), cap=None)
    point = p.point.with_effect(eff)
    upper = _with_variances(point, names, np.quantile(v, confidence_level, axis=0))
    half = 0.5 if p.outcome == "preference" else 1.0      # judgements are half a design's rows
    kw: dict[str, Any] = dict(target_power=target_power, alpha=alpha, alternative=alternative,
                              cost_per_rating=cost_per_rating * half,
                              cost_per_worker=cost_per_worker, min_workers=min_workers,
                              max_workers=max_workers, workers_per_item=workers_per_item,
                              test="z")
    setup = _Setup(CrossedDesign(2, 2), p.outcome, a, test, n_sims, alpha, alternative)
    s_c1, s_c2 = s_check.spawn(2)
    point_plan, point_pw = _choose(point, setup, kw=kw, max_items=max_items, seed=s_c1,
                                    stages=stages, which="point-plan")
    akw: dict[str, Any] = dict(effect=effect, coding=coding, contrast=contrast, outcome=outcome,
                               analysis=a, test=test, target_power=target_power, n_boot=n_boot,
                               n_sims=n_sims, method=method, confidence_level=confidence_level,
                               alpha=alpha, alternative=alternative, seed=seed, pilot=p, draws=raw,
                               stages=stages)
    safe_plan: PlanResult | None = None
    safe_a = None
    missing: DesignError | None = None
    try:
        safe_plan, safe_pw = _choose(upper, setup, kw=kw, max_items=max_items, seed=s_c2,
                                        stages=stages, which="safeguard")
        safe_a = outcome_assurance(fit, safe_plan.design, seq=s_safe, known={"upper": safe_pw},
                                   **akw)
    except DesignError as exc:
        missing = exc
    # the stand-in ranks designs only roughly: a cheaper safeguard design that reaches the
    # target at the estimates too (simulated) is the point plan as well (its assurance is
    # not computed twice; the two assurances have their own seeds, so order does not matter)
    cheaper = False
    if safe_plan is not None and safe_a is not None and safe_plan.cost < point_plan.cost \
            and safe_a.power >= target_power:
        cheaper = True
        point_plan = replace(safe_plan, power=safe_a.power)
        point_a = safe_a
    else:
        point_a = outcome_assurance(fit, point_plan.design, seq=s_point,
                                    known={"point": point_pw}, **akw)
    note = ("the designs were searched with a Gaussian stand-in of the latent model "
            "(nlpower.pilot.outcome_plan.latent_proxy) and checked by simulation: every power "
            f"shown is simulated ({point_a.point_sims} replicates at the estimates and bounds).")
    if cheaper:
        note += (" The safeguard design is cheaper than the design searched at the "
                 "estimates and reaches the target there too (simulated), so it is also "
                 "the point plan.")
    elif safe_plan is not None and safe_a is not None and safe_plan.cost < point_plan.cost:
        note += (f" The safeguard design is cheaper than the point plan but its simulated "
                 f"power at the estimates, {safe_a.power:.3f}, is below the target, so it is "
                 "not the point plan: the designs were checked on separate simulations "
                 f"(Monte Carlo SE about {_mc_se(target_power, safe_a.point_sims):.3f} "
                 "each), which can order neighbouring designs either way.")
    if missing is not None:
        note += (f" No design in the searched range reaches the target at the upper bounds of "
                 f"the SDs ({missing}).")
    note += plan_notes(point_plan, safe_plan) + "".join(f" {z}" for z in zeros)
    compared = None if p.ordinal is None else (p.ordinal.systems[1], p.ordinal.systems[0])
    return PilotPlanResult(point=point_plan, safeguard=safe_plan, point_assurance=point_a,
                           safeguard_assurance=safe_a, confidence_level=confidence_level,
                           method=method, note=note, compared=compared)
