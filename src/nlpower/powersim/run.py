"""``power()``: options -> replicate runs -> summary (Card et al. 2020, Fig. 2).

The stages, each a function that can be called and tested alone (STYLE 1):

1. :func:`~nlpower.powersim.options.power_options` -- validate once, a frozen
   :class:`~nlpower.powersim.options.PowerOptions` (a grid builds it once and
   passes it to every cell as ``options=``);
2. :func:`~nlpower.powersim.replicate.run_balanced` /
   :func:`~nlpower.powersim.replicate.run_simulate` -- one child seed per
   replicate, :class:`~nlpower.powersim.result.Replicates` back;
3. :func:`~nlpower.powersim.summary.power_result` -- counts, Wilson CI,
   Type-S/M, Type I error, diagnostics, failure policy.

Randomness: ``rng`` gives the root :class:`~numpy.random.SeedSequence`
(:func:`nlpower._rng.root_seed`); its first two children seed the main run
and the ``null=True`` run; replicate ``r`` of a run uses child ``r`` of that
run's sequence.
"""

from __future__ import annotations

import functools
import inspect
import os
import warnings
from typing import Any

from .._choices import (
    Alternative,
    Coding,
    EngineName,
    FailurePolicy,
    PowerMethod,
    RatingsTest,
    check_choice,
)
from .._memory import check_fits
from .._rng import RNGLike, seed_record
from ..convert import as_params, is_pilot_fit
from ..design import CrossedDesign
from ..errors import DesignError, InputError, NlpowerWarning
from ..lmm import get_engine
from ..params import LMMParams
from ..simulation import check_design_params
from ..study.spec import Study, refuse_fields, resolve_study
from .analytic import analytic_moments
from .batches import checkpoint_root, open_run_checkpoint, replicate_jobs, stop_early, stopping
from .models import Params, effect_of, mean_difference_of, with_effect
from .options import PowerOptions, power_options, same_value
from .replicate import balanced_exact, run_balanced, run_simulate
from .result import PowerResult, Replicates
from .rules import FEW_WORKERS, check_path, get_test, size_check
from .simoptions import SimOptions, with_sim
from .summary import analytic_power_result, apply_failure_policy, count, power_result


def resolve_method(opts: PowerOptions, design: CrossedDesign, params: Params) -> str:
    """``"balanced"``, ``"simulate"`` or ``"analytic"`` for this design (``"auto"`` resolved)."""
    why = balanced_exact(design, params)
    if opts.method == "balanced" and why is not None:
        raise DesignError(
            f"method='balanced' is exact only for a fully crossed, paired 2-system design; here "
            f"{why}. Use method='simulate' (any design) or method='auto'."
        )
    if opts.method == "auto":
        # the balanced closed-form fits stand in for refits only for an engine that says
        # they give its numbers (the native one); other engines refit every replicate
        shortcut = get_engine(opts.engine).balanced_shortcut
        return "balanced" if why is None and shortcut else "simulate"
    return opts.method


def power(
    design: Any, params: Params | None = None, *, n_sims: int = 1000, alpha: float = 0.05,
    test: RatingsTest | None = None, alternative: Alternative = "two-sided",
    method: PowerMethod = "auto", engine: EngineName = "native", null: bool = False,
    rng: RNGLike = None, likert: int | None = None, keep_replicates: bool = True,
    REML: bool | None = None, on_failure: FailurePolicy = "ignore", n_resamples: int = 99,
    options: PowerOptions | None = None, progress: bool = False, effect: float | None = None,
    coding: Coding = "sum", contrast: Any = None, outcome: str = "gaussian",
    levels: int | None = None, analysis: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None, n_jobs: int = 1, term: str | None = None,
    compare: str | None = None, pairwise: str | None = None, baseline: Any = None,
    adjust: str = "holm", precision: float | None = None, sim: SimOptions | None = None,
) -> Any:
    """Power of a design by simulation: simulate -> fit -> test (Card et al. 2020, Fig. 2).

    ``power(design, params)``, ``power(model, term=...)`` (any fitted model, as simr's
    ``powerSim``: a ``ModelPowerResult``; ``docs/study.md``) or ``power(study, sim=...)``.
    Each keyword in full: ``docs/power.md``, "Keywords of power, power_grid, mde and plan".

    Parameters
    ----------
    design : CrossedDesign, a fitted model, or a Study
        Who rates what; or a fitted ``lmer``/``glmer``/``clmm`` model (the truth); or a Study.
    params : LMMParams, MultiSystemParams or a fitted pilot, optional
        The true model (tested effect ``params.effect``); not given with a model or a Study.
    n_sims : int, default 1000
    alpha : float, default 0.05
    test : str, optional
        ``"satterthwaite"``, ``"kenward-roger"``, ``"z"`` (the paper's), ``"lrt"``,
        ``"pblrt"`` or ``"calibrated"``; default the analysis's first.
    alternative : {"two-sided", "greater", "less"}
        As in scipy; power counts only rejections with the sign of the true effect.
    method : {"auto", "balanced", "simulate", "analytic"}
        ``"auto"``: the exact balanced fast path when it applies, else simulation.
    engine : {"native", "lme4"}
    null : bool, default False
        Also simulate at effect 0 (own child seed); its rejection rate is ``type1``.
    rng : seed or numpy.random.Generator, optional
    likert, levels : int, optional
        Points of simulated ratings the LMM analyses; of ``outcome="likert"`` with a preset.
    keep_replicates : bool, default True
    REML : bool, optional
        Fit criterion; default REML for Satterthwaite, ML for ``"z"`` and ``"lrt"``.
    on_failure : {"ignore", "warn", "raise"}
    n_resamples : int, default 99
        Bootstrap samples per replicate of ``"pblrt"`` and ``"calibrated"``.
    options : PowerOptions, optional
        The analysis options, validated once; then those keywords keep their defaults.
    progress : bool, default False
    effect, contrast : optional
        The effect to detect in ``coding``, required with a fitted pilot; a K-system contrast.
    coding : {"sum", "half", "treatment"}, default "sum"
    outcome : {"gaussian", "likert", "preference"}, default "gaussian"
    analysis : str, optional
        The outcome's analysis (default its first: ``"lmm"``; ``"glmer"`` for preferences).
    checkpoint : path, optional
        Finished batches of replicates (run by ``n_jobs`` processes): a rerun resumes.
    n_jobs : int, default 1
    term, compare, pairwise, baseline : str, optional
        With a fitted model: the term tested, a reduced model, or a factor compared pairwise.
    adjust : {"holm", "bonferroni", "fdr", "none"}, default "holm"
    precision : float, optional
        Stop at the first batch of 50 whose 95% interval has at most this half-width.
    sim : SimOptions, optional
        The shared simulation options (``n_sims``, ``alpha``, ``rng``, ...) as one object.

    Returns
    -------
    PowerResult

    Raises
    ------
    InputError
        Bad options (the message names the option).
    DesignError
        ``method="balanced"`` where the fast path is not exact.
    FitError
        ``on_failure="raise"`` and a replicate fit failed.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> res = power(CrossedDesign(3, 100), presets.high_variance(0.1), n_sims=200, rng=1)
    >>> 0 <= res.power <= 1, res.method
    (True, 'balanced')
    """
    n_sims, alpha, alternative, rng, n_jobs, precision, progress, on_failure, checkpoint = \
        with_sim(sim, power, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng,
                 n_jobs=n_jobs, precision=precision, progress=progress, on_failure=on_failure,
                 checkpoint=checkpoint)
    study = resolve_study("power", design, params, {
        "test": test, "method": method, "engine": engine, "likert": likert, "REML": REML,
        "n_resamples": n_resamples, "effect": effect, "coding": coding, "contrast": contrast,
        "outcome": outcome, "levels": levels, "analysis": analysis, "term": term,
        "compare": compare, "pairwise": pairwise, "baseline": baseline, "adjust": adjust},
        _keyword_defaults())
    return run_power(study, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng,
                     n_jobs=n_jobs, precision=precision, progress=progress,
                     on_failure=on_failure, checkpoint=checkpoint, null=null,
                     keep_replicates=keep_replicates, options=options)


def run_power(study: Study, *, n_sims: int, alpha: float, alternative: Any, rng: RNGLike,
              n_jobs: int, precision: float | None, progress: bool, on_failure: Any,
              checkpoint: str | os.PathLike[str] | None, null: bool, keep_replicates: bool,
              options: PowerOptions | None) -> Any:
    """:func:`power` of a :class:`~nlpower.study.spec.Study` (both spellings run this)."""
    a, t = study.analysis, study.test
    if study.is_model:
        refuse_fields("power", study, {"analysis": ("method",)},
                      " (a fitted model's replicates are always simulated and refitted)")
        if null:
            raise InputError("null=True goes with power(design, params); for a fitted model set "
                             "the tested term's true value to 0 with with_params(fixef={...: "
                             "0.0}) and run power again: its type1 is the Type I error.")
        if options is not None:
            raise InputError("options= (PowerOptions) goes with power(design, params); for a "
                             "fitted model pass test=, alpha=, n_sims=, ... as keywords.")
        from ..study import power_model
        return power_model(study.truth, term=t.term, compare=t.compare, test=t.rule,
                           analysis=a.model, n_sims=n_sims, alpha=alpha,
                           alternative=alternative, REML=a.REML, engine=a.engine,
                           n_resamples=t.n_resamples, rng=rng, n_jobs=n_jobs,
                           progress=progress, on_failure=on_failure, checkpoint=checkpoint,
                           pairwise=t.pairwise, baseline=t.baseline, adjust=t.adjust,
                           precision=precision)
    truth = study.truth
    refuse_fields("power", study, {"truth": ("sd",)},
                  " (the SDs a pilot does not identify are set for plan(); set them on the "
                  "parameters for power())")
    kw: dict[str, Any] = {"n_sims": n_sims, "alpha": alpha, "test": t.rule,
          "alternative": alternative, "method": a.method, "engine": a.engine, "REML": a.REML,
          "null": null, "likert": truth.likert, "keep_replicates": keep_replicates,
          "on_failure": on_failure, "n_resamples": t.n_resamples, "outcome": truth.outcome,
          "analysis": a.model, "levels": truth.levels, "precision": precision}
    if options is None:
        opts = power_options(**kw)
    elif not isinstance(options, PowerOptions):
        raise InputError(f"options must be a PowerOptions from power_options(...); got "
                         f"{type(options).__name__}.")
    else:
        changed = [k for k, v in kw.items() if not same_value(v, _keyword_default(k))]
        if changed:
            raise InputError(
                f"pass either options= (a PowerOptions) or keyword options, not both; got options= "
                f"and {', '.join(changed)}. Build the options with power_options(...) instead."
            )
        opts = options
    if len(opts.analyses) != 1:
        raise InputError(f"nlpower.power takes one analysis; got analysis={list(opts.analyses)!r}. "
                         "To compare analyses on the same replicates use "
                         "nlpower.outcomes.likert_power(..., analysis=[...]) or "
                         "nlpower.power_grid(..., analysis=[...]).")
    kind = opts.kind
    kind.refuse([k for k, v in (("effect", truth.effect), ("coding", truth.coding),
                                ("contrast", truth.contrast), ("checkpoint", checkpoint))
                 if not same_value(v, _keyword_default(k))])
    model = kind.model
    params = model.as_params(truth.params, opts, effect=truth.effect, coding=truth.coding,
                             contrast=truth.contrast)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with replicate_jobs(n_jobs):
            result = model.run(study.design, params, opts, rng=rng, progress=progress,
                               checkpoint=checkpoint)
    _reemit(caught)
    return result


def _reemit(caught: list[warnings.WarningMessage]) -> None:
    """The warnings of a run again, the package's own pointing at the caller of :func:`power`.

    (However deep the outcome's run emitted them; others keep their origin.)
    """
    for w in caught:
        if issubclass(w.category, NlpowerWarning):
            warnings.warn(w.message, w.category, stacklevel=4)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def gaussian_power(design: CrossedDesign, params: Params, opts: PowerOptions, *,
                   rng: RNGLike = None, progress: bool = False,
                   checkpoint: str | os.PathLike[str] | None = None) -> PowerResult:
    """:func:`power` of Gaussian ratings, options validated (the ``"gaussian"`` outcome's run)."""
    design, params = check_design_params(design, params)
    how = resolve_method(opts, design, params)
    check_path(opts.test, how)
    effect = effect_of(params)
    mean_diff = mean_difference_of(params)
    notes: list[str] = []
    coding = params.coding if isinstance(params, LMMParams) else "sum"
    if not isinstance(params, LMMParams):
        notes.append(f"effect tested: {design.system_names[1]} minus the grand mean (sum "
                     "contrast x1)")
    if how == "simulate":
        check_fits(design.n_ratings, f"method='simulate' on {design!r}",
                   hint=" Use method='balanced' or 'analytic' (no per-rating arrays), or a "
                        "smaller design.")
    root = checkpoint_root(checkpoint, rng)       # rng=None resumes with the file's seed
    seed = seed_record(root)
    main_seq, null_seq = root.spawn(2)
    ckpt = None if checkpoint is None or how != "simulate" else open_run_checkpoint(
        checkpoint, design=design, params=params, options=opts, seed=seed)

    if how == "analytic":
        def analytic(p: Params) -> Any:
            return analytic_moments(design, p, alpha=opts.alpha, test=opts.test,
                                    alternative=opts.alternative)

        ap = analytic(params)
        type1 = analytic(with_effect(params, 0.0)).power if opts.null or effect == 0 else None
        return analytic_power_result(ap, type1, mean_difference=mean_diff, design=design,
                                     opts=opts, seed=seed, notes=notes, params=params)

    def run(p: Params, seq: Any, where: str) -> Replicates:
        seeds = seq.spawn(opts.n_sims)
        if how == "balanced":      # all at once in milliseconds; the rule applied after
            assert isinstance(p, LMMParams)
            reps = stop_early(run_balanced(design, p, seeds, opts))
        else:
            try:
                reps = run_simulate(design, p, seeds, opts, progress=progress, checkpoint=ckpt,
                                    desc="replicates" if where == "main" else
                                    "replicates, effect 0")
            except MemoryError as exc:     # the fitter's own matrices, past the ratings' size
                raise InputError(
                    f"method='simulate' on {design!r} ran out of memory fitting a replicate "
                    f"({exc}). Use method='balanced' or 'analytic' where the design allows, "
                    "or fewer workers or items.") from None
        apply_failure_policy(reps, opts, where)
        return reps

    main = run(params, main_seq, "main")
    null_reps = run(with_effect(params, 0.0), null_seq, "null (effect 0)") \
        if opts.null and effect != 0 else None
    size_reps = main if effect == 0 else null_reps
    if size_reps is None and how == "balanced" and design.n_workers < FEW_WORKERS \
            and not get_test(opts.test).bootstrap:       # few workers: measure the Type I error
        size_reps = run(with_effect(params, 0.0), null_seq, "null (effect 0)")
    if size_reps is not None:
        msg = size_check(opts.test, opts.alpha, design.n_workers,
                         count(size_reps, 0.0, opts.alpha).n_sig, size_reps.failed.shape[0])
        notes += [msg] if msg else []
    return power_result(main, size_reps, effect=effect, mean_difference=mean_diff, design=design,
                        method=how, coding=coding, opts=opts, seed=seed, notes=notes,
                        params=params)


def _keyword_default(name: str) -> Any:
    """The default of :func:`power`'s keyword ``name`` (its signature is the one source)."""
    return inspect.signature(power).parameters[name].default


@functools.cache
def _keyword_defaults() -> dict[str, Any]:
    return {n: p.default for n, p in inspect.signature(power).parameters.items()}


class GaussianOutcome:
    """The ``"gaussian"`` outcome's model (:mod:`nlpower.powersim.outcome`): the paper's ratings."""

    def as_params(self, params: Any, opts: PowerOptions, *, effect: float | None, coding: Any,
                  contrast: Any) -> Params:
        """Parameters as given, or a pilot fit's (:func:`nlpower.convert.as_params`)."""
        if effect is not None or is_pilot_fit(params):
            return as_params(params, effect=effect, coding=coding, contrast=contrast)
        check_choice("coding", coding, Coding)
        own = getattr(params, "coding", coding)
        if coding not in (own, _keyword_default("coding")):  # coding= is effect='s coding
            raise InputError(
                f"coding={coding!r} is the coding of effect=, which was not given; the "
                f"parameters carry their own coding ({own!r}) and their own effect. Pass "
                f"effect= in {coding!r} coding, or convert the parameters with "
                f"params.to_coding({coding!r}).")
        return params  # type: ignore[no-any-return]

    def with_effect(self, params: Params, effect: float) -> Params:
        return with_effect(params, effect)

    def effect_of(self, params: Params) -> float:
        return effect_of(params)

    def run(self, design: CrossedDesign, params: Params, opts: PowerOptions, *, rng: RNGLike,
            progress: bool, checkpoint: str | os.PathLike[str] | None = None) -> PowerResult:
        with stopping(opts.precision, opts.alpha):
            return gaussian_power(design, params, opts, rng=rng, progress=progress,
                                  checkpoint=checkpoint)


#: The Gaussian outcome's model (the target of ``OUTCOMES["gaussian"]``).
GAUSSIAN = GaussianOutcome()

__all__ = ["GAUSSIAN", "gaussian_power", "power", "resolve_method", "run_power"]

