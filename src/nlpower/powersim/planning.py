"""Planning: minimum detectable effect of a design, cheapest design for a target power.

Both search the analytic power curve (:func:`~nlpower.powersim.analytic.analytic_power`;
the estimate's variance and df do not depend on the effect, so the curve in
the effect is one noncentral-t evaluation per point) and can confirm the
answer by simulation (:func:`~nlpower.powersim.replicate.power`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from scipy import optimize

from .._choices import Alternative, Coding, EngineName, MDEMethod, RatingsTest, check_choice
from .._rng import RNGLike, root_seed
from .._validation import check_int, check_real
from ..convert import as_params, is_pilot_fit, with_sds, zero_sd_notes
from ..design import CrossedDesign
from ..errors import DesignError, InputError
from ..params import LMMParams
from ..simulation import check_design_params
from ..study.spec import (
    PlanOptions,
    Study,
    from_keywords,
    plan_layout,
    plan_options,
    rating_study,
    resolve_study,
)
from .analytic import analytic_moments, power_from_moments
from .batches import check_precision
from .models import Params, with_effect
from .options import check_test_options, power_options, same_value
from .outcome import get_outcome
from .plansearch import Space, describe_plan, paid_ratings, search
from .result import ConfidenceInterval, PowerResult
from .run import power
from .simoptions import SimOptions, with_sim
from .simsearch import SimulatedPower, simulated_mde


def _default(fn: Any, name: str) -> Any:
    """The default of ``fn``'s keyword ``name`` (its signature is the one source)."""
    return inspect.signature(fn).parameters[name].default


@functools.cache
def _defaults(fn: Any) -> dict[str, Any]:
    return {n: p.default for n, p in inspect.signature(fn).parameters.items()}


def _check_target(target_power: Any) -> float:
    t = check_real("target_power", target_power)
    if not 0.0 < t < 1.0:
        raise InputError(
            f"target_power must be strictly between 0 and 1; got {t}. The usual target is 0.8."
        )
    return t


def _x_span(params: Params) -> float:
    if isinstance(params, LMMParams):
        lo, hi = params.x_values
        return hi - lo
    return 1.0  # K systems: effect = system mean minus grand mean


@dataclass(frozen=True)
class MDEResult:
    """Minimum detectable effect of a design.

    Attributes
    ----------
    effect : float
        Smallest positive effect (in ``coding``) with power ``target_power``.
    mean_difference : float
        The same effect as a difference between the system means (2 systems),
        or system minus grand mean (K systems).
    se, df : float
        SE of the estimate and Satterthwaite df at the true variances (NaN
        for a simulated MDE).
    design : CrossedDesign
    simulated : PowerResult or None
        Simulated power at ``effect`` (``method="simulation"``).
    effect_ci : ConfidenceInterval or None
        A simulated MDE's Monte Carlo interval: the effects whose simulated
        power cannot be told from the target (:mod:`nlpower.powersim.simsearch`).
    outcome, analysis : str
        What is rated and how it is analysed (:mod:`nlpower.powersim.outcome`).
    scale : str
        The scale of ``effect`` when it is not a coding of Gaussian ratings
        (e.g. ``"latent scale (likert, clmm)"``).
    """

    effect: float
    mean_difference: float
    coding: str
    target_power: float
    alpha: float
    test: str
    alternative: str
    se: float
    df: float
    method: str
    design: CrossedDesign
    simulated: PowerResult | None = field(default=None, repr=False)
    effect_ci: ConfidenceInterval | None = None
    outcome: str = "gaussian"
    analysis: str = "lmm"
    scale: str = ""

    def summary(self) -> str:
        how = (f"analytic SE {self.se:.4g}, df {self.df:.1f}" if self.effect_ci is None else
               f"simulated, Monte Carlo interval {self.effect_ci.low:.4g}-"
               f"{self.effect_ci.high:.4g}")
        scale = self.scale or f"{self.coding} coding"
        lines = [
            f"Minimum detectable effect: {self.design!r}",
            f"  {self.effect:.4g} ({scale}) = mean difference {self.mean_difference:.4g} "
            f"for power {self.target_power:g} (test {self.test!r}, {self.alternative}, "
            f"alpha {self.alpha:g}; {how})",
        ]
        if self.simulated is not None:
            s = self.simulated
            lines.append(f"  simulated power at this effect: {s.power:.3f} "
                         f"(95% CI {s.ci.low:.3f}-{s.ci.high:.3f}, {s.n_sims} replicates)")
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        row = {"effect": self.effect, "mean_difference": self.mean_difference,
               "coding": self.coding, "target_power": self.target_power, "alpha": self.alpha,
               "test": self.test, "alternative": self.alternative, "se": self.se, "df": self.df,
               "method": self.method}
        if self.simulated is not None:
            row.update(sim_power=self.simulated.power, sim_ci_low=self.simulated.ci.low,
                       sim_ci_high=self.simulated.ci.high)
        if self.effect_ci is not None:
            row.update(effect_ci_low=self.effect_ci.low, effect_ci_high=self.effect_ci.high,
                       outcome=self.outcome, analysis=self.analysis)
        return pd.DataFrame([row])

    def __repr__(self) -> str:
        return (f"MDEResult(effect={self.effect:.4g}, mean_difference={self.mean_difference:.4g}, "
                f"coding={self.coding!r}, target_power={self.target_power:g})")


def mde(
    design: Any,
    params: Params | None = None,
    *,
    target_power: float = 0.8,
    alpha: float = 0.05,
    test: RatingsTest | None = None,
    alternative: Alternative = "two-sided",
    method: MDEMethod = "analytic",
    n_sims: int = 1000,
    rng: RNGLike = None,
    coding: Coding = "sum",
    contrast: Any = None,
    outcome: str = "gaussian",
    levels: int | None = None,
    analysis: str | None = None,
    engine: EngineName = "native",
    precision: float | None = None,
    sim: SimOptions | None = None,
) -> MDEResult:
    """Minimum detectable (positive) effect of ``design`` at ``target_power``.

    Root of the analytic power curve in the effect (``params``' effect is
    ignored; its variances and coding are used).  ``params`` may be a fitted
    pilot (``RatingsFit``): its variance components are used and the MDE is
    reported in ``coding`` (``contrast`` picks the comparison of a K-system fit).  ``method="simulation"``
    also simulates ``n_sims`` replicates at the MDE (``rng``) and reports
    that power with its CI in ``result.simulated``.

    ``outcome="likert"`` (with ``levels=K`` for a preset, ``analysis="lmm"``
    or ``"clmm"``) and ``outcome="preference"`` (``HeadToHeadParams``,
    ``analysis="glmer"``) have no analytic power: their MDE is the root of
    the *simulated* power curve in the latent (Likert) or logit
    (preference) effect, ``n_sims`` replicates per evaluation, every
    evaluation from the same seed ``rng`` (common random numbers), with the
    Monte Carlo interval of the MDE in ``result.effect_ci``
    (:mod:`nlpower.powersim.simsearch`; ``method`` is ignored there, and
    ``engine`` refits the Likert LMM off the balanced fast path).
    ``precision`` stops each simulated power early (:func:`nlpower.power`).

    ``sim=SimOptions(...)`` (:class:`~nlpower.powersim.SimOptions`) gives ``n_sims``,
    ``alpha``, ``alternative``, ``rng`` and ``precision`` as one object beside the
    keywords.  ``mde(study, ...)`` takes a :class:`~nlpower.study.spec.Study`
    instead of ``design, params`` and the keywords it holds (its
    ``Truth.effect`` is what is solved for, so it is not used); the keyword
    spelling builds that Study and runs the same code.  The keywords shared with
    :func:`nlpower.power`: ``docs/power.md``, "Keywords of power, power_grid, mde and plan".

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> m = mde(CrossedDesign(3, 100), presets.high_variance())
    >>> round(m.mean_difference, 3) == round(2 * m.effect, 3)
    True
    """
    n_sims, alpha, alternative, rng, precision = with_sim(
        sim, mde, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng,
        precision=precision)
    study = resolve_study("mde", design, params, {
        "test": test, "coding": coding, "contrast": contrast, "outcome": outcome,
        "levels": levels, "analysis": analysis, "engine": engine}, _defaults(mde))
    return mde_of_study(study, target_power=target_power, method=method, n_sims=n_sims, rng=rng,
                        alpha=alpha, alternative=alternative, precision=precision)


def mde_of_study(study: Study, *, target_power: float, method: Any, n_sims: int, rng: RNGLike,
                 alpha: float, alternative: Any, precision: float | None) -> MDEResult:
    """:func:`mde` of a :class:`~nlpower.study.spec.Study` (both spellings run this)."""
    rating_study("mde", study, ("likert", "sd"))
    truth, a = study.truth, study.analysis
    design, params, test, engine, analysis = (study.design, truth.params, study.test.rule,
                                              a.engine, a.model)
    coding, contrast, outcome, levels = truth.coding, truth.contrast, truth.outcome, truth.levels
    kind = get_outcome(outcome)
    target_power = _check_target(target_power)
    method = check_choice("method", method, MDEMethod)
    if alternative == "less":
        raise InputError(
            "alternative='less' detects negative effects; mde() reports the smallest positive "
            "detectable effect. Use alternative='greater' or 'two-sided' (the MDE of a negative "
            "effect is the same in absolute value)."
        )
    n_sims = check_int("n_sims", n_sims, min=1)
    precision = check_precision(precision)
    if not kind.analytic:
        kind.refuse([k for k, v in (("coding", coding), ("contrast", contrast)) if
                     not same_value(v, _default(mde, k))])  # mde's defaults are the Study's
        opts = power_options(outcome=outcome, levels=levels, analysis=analysis, test=test,
                             n_sims=n_sims, alpha=alpha, alternative=alternative, engine=engine,
                             keep_replicates=False, precision=precision)
        p = kind.model.as_params(params, opts, effect=1.0 if is_pilot_fit(params) else None,
                                 coding=coding, contrast=contrast)  # a pilot: effect solved for
        curve = SimulatedPower(kind, p, opts, root_seed(rng))
        start = abs(kind.model.effect_of(p)) or 0.1
        eff, ci = simulated_mde(lambda e: curve(design, e), start, target_power)
        at = curve(design, eff)
        return MDEResult(effect=eff, mean_difference=at.mean_difference,
                         coding=str(getattr(p, "coding", "sum")), target_power=target_power,
                         alpha=opts.alpha, test=opts.test, alternative=opts.alternative,
                         se=float("nan"), df=float("nan"), method="simulation", design=design,
                         simulated=at, effect_ci=ci, outcome=kind.name, analysis=opts.analysis,
                         scale=f"{kind.effect_scale}; {kind.name}, {opts.analysis}")
    kind.refuse([k for k, v in (("levels", levels),) if v is not None])
    test = kind.resolve_test(kind.resolve_analyses(analysis)[0], test)  # type: ignore[assignment]
    if is_pilot_fit(params):  # variances from the pilot; the effect is what we solve for
        params = as_params(params, effect=1.0, coding=coding, contrast=contrast)
    design, params = check_design_params(design, params)
    alpha, test, alternative = check_test_options(alpha, test, alternative)
    # SE and df do not depend on the effect: the moments at effect 1 give the whole curve
    ap = analytic_moments(design, with_effect(params, 1.0), alpha=alpha, test=test,
                          alternative=alternative)
    se, df = ap.se, ap.df

    def f(e: float) -> float:
        return power_from_moments(e, se, df, alpha=alpha, test=test,
                                  alternative=alternative) - target_power

    hi = se
    while f(hi) < 0:
        hi *= 2.0
        if hi > 1e6 * se:
            raise DesignError(
                f"no effect reaches power {target_power} with this design (df {df:.3g}); add "
                "workers or items."
            )
    if f(1e-12 * se) >= 0:  # the rejection rate with no effect already reaches it
        raise InputError(
            f"target_power={target_power:g} is reached with no effect at all (power at effect 0 "
            f"is {f(0.0) + target_power:.3g}), so there is no smallest detectable effect. Choose "
            "target_power above alpha, e.g. 0.8.")
    eff = float(optimize.brentq(f, 1e-12 * se, hi, xtol=1e-10 * se))
    check = None
    if method == "simulation":
        check = power(design, with_effect(params, eff), n_sims=n_sims, alpha=alpha, test=test,
                      alternative=alternative, rng=rng, keep_replicates=False, engine=engine,
                      precision=precision)
    return MDEResult(effect=eff, mean_difference=eff * _x_span(params), coding=params.coding,
                     target_power=target_power, alpha=alpha, test=test, alternative=alternative,
                     se=se, df=df, method=method, design=design, simulated=check)


@dataclass(frozen=True)
class PlanResult:
    """Cheapest design reaching a target power.

    Attributes
    ----------
    n_workers, n_items : int
        The chosen design (``design`` the :class:`CrossedDesign`).
    power : float
        Analytic power of the chosen design.
    cost : float
        ``cost_per_rating * n_ratings + cost_per_worker * n_workers``.
    frontier : DataFrame
        For each number of workers searched, the fewest items reaching the
        target, its power and cost (``to_frame()``).
    curve : DataFrame
        Power of the chosen number of workers over a range of item counts
        around the chosen one.
    simulated : PowerResult or None
        Simulation of the chosen design (when ``rng`` is given; always for
        outcomes without analytic power, whose ``power`` it is).
    outcome : str
        What is rated (:mod:`nlpower.powersim.outcome`).
    params : optional
        The parameters planned with (for :meth:`methods`).
    """

    design: CrossedDesign
    n_workers: int
    n_items: int
    power: float
    cost: float
    effect: float
    coding: str
    target_power: float
    test: str
    alpha: float
    alternative: str
    frontier: pd.DataFrame = field(repr=False)
    curve: pd.DataFrame = field(repr=False)
    simulated: PowerResult | None = field(default=None, repr=False)
    outcome: str = "gaussian"
    notes: tuple[str, ...] = ()
    compared: tuple[str, str] | None = None
    params: Any = field(default=None, repr=False, compare=False)

    def methods(self, format: str = "text", source: str | None = None) -> str:
        """The paragraph a paper's methods section needs (``"text"`` or ``"latex"``).

        ``source``: where the variance components came from
        (:func:`nlpower.methods.plan_methods`).
        """
        from ..methods import plan_methods
        return plan_methods(self, source=source, format=format)

    @property
    def n_ratings(self) -> int:
        """What the budget pays for: ratings, or judgements of a head-to-head study."""
        return paid_ratings(self.design, self.outcome)

    def summary(self) -> str:
        kind = get_outcome(self.outcome)
        analytic = kind.analytic
        scale = f"{self.coding} coding" if analytic else f"{kind.effect_scale}; {kind.name}"
        lines = [
            f"Cheapest design for power {self.target_power:g} at effect {self.effect:g} "
            f"({scale}), test {self.test!r} ({self.alternative}, alpha {self.alpha:g}):",
            f"  {describe_plan(self.design, self.outcome, self.compared)}",
            f"  {'analytic' if analytic else 'simulated'} power {self.power:.3f}; "
            f"cost {self.cost:g}",
        ]
        if self.simulated is not None:
            s = self.simulated
            lines.append(f"  simulated power {s.power:.3f} (95% CI {s.ci.low:.3f}-{s.ci.high:.3f})")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_frame(self) -> pd.DataFrame:
        """The frontier: fewest items per number of workers, with power and cost."""
        return self.frontier.copy()

    def plot(self, ax: Any = None) -> Any:
        """The power curve (``curve``) with the target and the chosen design.

        See :func:`nlpower.plots.plot_plan`; returns the matplotlib Figure.
        """
        from ..plots import plot_plan  # matplotlib is imported only when plotting

        return plot_plan(self, ax=ax)

    def __repr__(self) -> str:
        return (f"PlanResult(n_workers={self.n_workers}, n_items={self.n_items}, "
                f"power={self.power:.3f}, cost={self.cost:g})")


def plan(
    params: Params, *, effect: float | None = None, target_power: float = 0.8, alpha: float = 0.05,
    test: RatingsTest | None = None, alternative: Alternative = "two-sided",
    cost_per_rating: float = 1.0, cost_per_worker: float = 0.0, min_workers: int = 2,
    max_workers: int | None = None, max_items: int = 5000, workers_per_item: int | None = None,
    n_sims: int = 500, rng: RNGLike = None, coding: Coding = "sum", contrast: Any = None,
    outcome: str = "gaussian", levels: int | None = None, analysis: str | None = None,
    engine: EngineName = "native", sd: Mapping[str, float] | None = None,
    precision: float | None = None, sim: SimOptions | None = None,
    planning: PlanOptions | None = None,
) -> PlanResult:
    """Cheapest (n_workers, n_items) design with analytic power >= ``target_power``.

    For every ``n_workers`` in ``min_workers .. max_workers`` the fewest items reaching the
    target are found by bisection, then the design with the lowest cost
    ``cost_per_rating * n_ratings + cost_per_worker * n_workers`` is chosen.  Likert and
    head-to-head outcomes search the simulated power instead.  The search in full (ties, the
    worker range, pilots' missing SDs): ``docs/power.md``, "Planning"; the keywords shared
    with :func:`nlpower.power`: its "Keywords of power, power_grid, mde and plan".

    Parameters
    ----------
    params : LMMParams, a fitted pilot (RatingsFit), LikertParams, HeadToHeadParams or Study
        The truth; a pilot gives its variance components (those it cannot estimate are 0).
    effect : float
        The smallest effect of interest, in ``coding`` (required, here or in the Study).
    target_power : float, default 0.8
    alpha : float, default 0.05
    test, contrast, levels, analysis : as in nlpower.power, optional
    alternative : {"two-sided", "greater", "less"}
    cost_per_rating : float, default 1.0
        The cost of one rating (a head-to-head judgement is one).
    cost_per_worker : float, default 0.0
    min_workers : int, default 2
    max_workers : int, optional
        A cap; without it, 2-50 workers, the range extended while the cheapest is on its edge.
    max_items : int, default 5000
    workers_per_item : int, optional
        Each item rated by this many workers (the slower expected-information method).
    n_sims : int, default 500
    rng : seed, optional
        With a seed, the chosen design is simulated (``n_sims`` replicates).
    precision : float, optional
    coding : {"sum", "half", "treatment"}, default "sum"
    outcome : {"gaussian", "likert", "preference"}, default "gaussian"
        Likert and head-to-head outcomes search the simulated power.
    engine : {"native", "lme4"}
    sd : dict, optional
        Variance components the pilot does not estimate, e.g. ``{"item_slope": 0.1}``.
    sim : SimOptions, optional
        ``n_sims``, ``alpha``, ``alternative``, ``rng`` and ``precision`` as one object.
    planning : PlanOptions, optional
        The target, costs and range searched (:class:`~nlpower.study.spec.PlanOptions`).

    Returns
    -------
    PlanResult
        The chosen design, its power and cost; ``to_frame()`` the frontier, ``notes``.

    Examples
    --------
    >>> from nlpower import presets
    >>> p = plan(presets.high_variance(), effect=0.1, max_workers=30)
    >>> p.power >= 0.8 and p.n_workers <= 30
    True
    """
    n_sims, alpha, alternative, rng, precision = with_sim(
        sim, plan, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng,
        precision=precision)
    defaults = _defaults(plan)
    keywords = {"effect": effect, "test": test, "coding": coding, "contrast": contrast,
                "outcome": outcome, "levels": levels, "analysis": analysis, "engine": engine,
                "sd": sd}
    study = resolve_study("plan", params, None, keywords, defaults,
                          build=lambda: from_keywords(None, params, keywords))
    planning = plan_options({"target_power": target_power, "cost_per_rating": cost_per_rating,
                             "cost_per_worker": cost_per_worker, "min_workers": min_workers,
                             "max_workers": max_workers, "max_items": max_items,
                             "workers_per_item": workers_per_item}, defaults, planning)
    return plan_of_study(study, planning, n_sims=n_sims, rng=rng, alpha=alpha,
                         alternative=alternative, precision=precision)


def plan_of_study(study: Study, planning: PlanOptions, *, n_sims: int, rng: RNGLike,
                  alpha: float, alternative: Any, precision: float | None) -> PlanResult:
    """:func:`plan` of a :class:`~nlpower.study.spec.Study` (both spellings run this)."""
    rating_study("plan", study, ("likert",))
    planning = plan_layout(study, planning)
    truth, a = study.truth, study.analysis
    params, effect, test, engine, analysis = (truth.params, truth.effect, study.test.rule,
                                              a.engine, a.model)
    coding, contrast, outcome, levels, sd = (truth.coding, truth.contrast, truth.outcome,
                                             truth.levels, truth.sd)
    target_power, cost_per_rating, cost_per_worker, min_workers, max_workers, max_items, \
        workers_per_item = (getattr(planning, f.name) for f in dataclasses.fields(planning))
    kind = get_outcome(outcome)
    if effect is None:
        raise InputError("plan() needs the effect to plan for (the smallest effect worth "
                         "detecting, in the parameters' coding): plan(params, effect=0.1), or "
                         "Study.ratings(..., effect=0.1).")
    effect = check_real("effect", effect)
    if effect == 0:
        raise InputError("effect must be non-zero: a design cannot have power to detect 0. "
                         "Pass the smallest effect worth detecting (in the parameters' coding).")
    target_power = _check_target(target_power)
    precision = check_precision(precision)
    notes: list[str] = []
    compared = _compared(params, contrast)
    if kind.analytic:
        kind.refuse([k for k, v in (("levels", levels),) if v is not None])
        test = kind.resolve_test(kind.resolve_analyses(analysis)[0], test)  # type: ignore[assignment]
        if is_pilot_fit(params):  # variances from the pilot, the effect (in coding) from the user
            notes += zero_sd_notes(params, contrast, sd)
            params = as_params(params, effect=effect, coding=coding, contrast=contrast)
        if not isinstance(params, LMMParams):
            raise InputError(f"plan() searches 2-system designs and needs LMMParams; got "
                             f"{type(params).__name__}.")
        lmm: LMMParams = with_sds(params, sd)
        alpha, test, alternative = check_test_options(alpha, test, alternative)
        p: Any = lmm.with_effect(effect)
        curve = None
    else:
        kind.refuse([k for k, v in (("coding", coding), ("contrast", contrast)) if
                     not same_value(v, _default(plan, k))])
        opts = power_options(outcome=outcome, levels=levels, analysis=analysis, test=test,
                             n_sims=check_int("n_sims", n_sims, min=1), alpha=alpha,
                             alternative=alternative, engine=engine, keep_replicates=False,
                             precision=precision)
        alpha, test, alternative = opts.alpha, opts.test, opts.alternative  # type: ignore[assignment]
        p = with_sds(kind.model.as_params(params, opts, effect=effect, coding=coding,
                                          contrast=contrast), sd)
        curve = SimulatedPower(kind, p, opts, root_seed(rng))
    space = Space.check(cost_per_rating, cost_per_worker, min_workers, max_workers, max_items,
                         workers_per_item, outcome=kind.name)

    def pw(w: int, i: int) -> float:
        if curve is not None:
            return curve(space.design(w, i), effect).power
        return analytic_moments(space.design(w, i), p, alpha=alpha, test=test,
                                alternative=alternative).power

    frontier, ok, top = search(space, pw, target_power, extend=curve is None)
    if ok.empty:
        fix = ("raise max_workers or max_items" if space.capped else "raise max_items")
        raise DesignError(
            f"no design with {space.min_workers}-{top} workers and at most {space.max_items} "
            f"items reaches power {target_power} for effect {effect}; {fix}, or plan for a "
            "larger effect.")
    best = ok.sort_values(["cost", "n_ratings", "n_workers"], kind="stable").iloc[0]
    w, i = int(best["n_workers"]), int(best["n_items"])
    notes += space.notes(w, top, i)
    power_curve = pd.DataFrame([{"n_workers": w, "n_items": ii, "power": pw(w, ii)}
                                for ii in space.item_grid(w, i, simulated=curve is not None)])
    check = None
    design = space.design(w, i)
    if curve is not None:
        check = curve(design, effect)
    elif rng is not None:
        check = power(design, p, n_sims=check_int("n_sims", n_sims, min=1), alpha=alpha, test=test,
                      alternative=alternative, rng=rng, keep_replicates=False, engine=engine,
                      precision=precision)
    return PlanResult(design=design, n_workers=w, n_items=i, power=float(best["power"]),
                      cost=float(best["cost"]), effect=effect,
                      coding=str(getattr(p, "coding", "sum")), target_power=target_power,
                      test=str(test), alpha=alpha, alternative=alternative, frontier=frontier,
                      curve=power_curve, simulated=check, outcome=kind.name, notes=tuple(notes),
                      compared=compared, params=p)


def _compared(params: Any, contrast: Any) -> tuple[str, str] | None:
    """``(a, b)`` of a pilot's contrast (a coded +1), for the summary; None without one."""
    if contrast is None or not is_pilot_fit(params):
        return None
    if isinstance(contrast, str):
        base = getattr(params, "baseline", None)
        return (contrast, str(base)) if base is not None else None
    a, b = contrast
    return str(a), str(b)


__all__ = ["MDEResult", "PlanResult", "mde", "mde_of_study", "plan", "plan_of_study"]
