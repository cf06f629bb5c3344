"""Power for any term of a fitted model: simulate -> refit -> test, over replicates (simr).

One replicate draws a response from the truth (a :class:`ModelDesign`: the
fitted model with its parameters, on the pilot's rows or an extended
design), refits the analysis model (by default the same formula) through
the engine protocol, and applies a test rule from the registry
(:mod:`nlpower.powersim.rules`) to the hypothesis
(:mod:`nlpower.study.hypothesis`).  Replicates run on the one replicate
loop, :func:`nlpower.powersim.loop.replicate_batch` (the generator and the
whole-batch analysis of :mod:`nlpower.study.analysis`), in the fixed batches
of :func:`nlpower.powersim.batches.run_batches` -- checkpoints, ``n_jobs``,
progress -- each from its own child seed, so the numbers do not depend on
``n_jobs`` or on resuming.  Every fit starts at the truth.

:func:`power_curve` runs one such study per break on the grid runner.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import __version__
from .._rng import RNGLike, seed_record
from .._validation import check_int
from ..errors import FitError, InputError
from ..lmm.family import Family
from ..lmm.names import coef_aliases
from ..montecarlo import MonteCarloSummary
from ..powersim.batches import (
    Precision,
    check_precision,
    checkpoint_root,
    open_run_checkpoint,
    replicate_jobs,
    run_batches,
    run_id,
)
from ..powersim.loop import replicate_batch
from ..powersim.options import PowerOptions
from ..powersim.result import Replicates
from ..powersim.rules import get_test
from ..powersim.simoptions import SimOptions, with_sim
from . import spec
from .analysis import (
    ModelGenerator,
    Study,
    StudyAnalysis,
    coef_names,
    n_params,
    same_random,
)
from .design import ModelDesign, model_design
from .hypothesis import Hypothesis, resolve
from .multiple import (
    ADJUST,
    Comparisons,
    ComparisonsPrecision,
    MultiplePowerResult,
    comparisons,
    replicate_columns,
    summarise,
)
from .result import ModelPowerResult, PowerCurve, model_parameters

__all__ = ["curve_of_study", "model_study", "power_curve", "power_model", "power_keywords"]

#: what the loop reads of its options when the analysis tests whole batches: nothing (the
#: study's own options travel with its analysis)
_OPTIONS = PowerOptions()
_ALIASES = {"t": "satterthwaite", "kr": "kenward-roger", "lr": "lrt"}
#: replicates per batch (checkpoint unit, the unit of n_jobs, and what a model that fits many
#: responses at once fits together)
STUDY_BATCH = 200


def _resolve_test(test: Any, hyp: Hypothesis, family: Family) -> str:
    if test is None:
        return ("satterthwaite" if family.has_sigma else "z") if hyp.one_df else "lrt"
    name = _ALIASES.get(test, test) if isinstance(test, str) else test
    rule = get_test(name)
    if "simulate" not in rule.paths:
        raise InputError(f"test={rule.name!r} runs on the balanced fast path of the paper's "
                         "design only; for a fitted model use 'z', 'satterthwaite', "
                         "'kenward-roger', 'lrt' or 'pblrt'.")
    if not hyp.one_df and rule.name != "lrt":
        raise InputError(f"{hyp.label!r} has several degrees of freedom (or is a model "
                         f"comparison): it is tested by test='lrt', not {rule.name!r}.")
    if rule.bootstrap and not family.has_sigma:
        raise InputError("test='pblrt' draws its bootstrap from Gaussian fits; a "
                         f"{family.name} model is tested by test='z' or 'lrt'.")
    if not family.has_sigma and rule.families is not None and family.name not in rule.families:
        raise InputError(f"test={rule.name!r} is defined for Gaussian models only (its df come "
                         f"from the linear mixed model); a {family.name} model is tested by "
                         "test='z' or 'lrt'.")
    rule.check_family(family.name)
    return rule.name


def _batch(study: Study, seeds: Sequence[np.random.SeedSequence], lo: int, hi: int,
           errors: list[str]) -> Replicates:
    """Replicates ``lo:hi`` on the one replicate loop (the truth drawn, the batch refitted)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        return replicate_batch(ModelGenerator(study.design), StudyAnalysis(study, errors),
                               _OPTIONS, lo, hi, n_sims=len(seeds), seeds=seeds)


def power_model(model: Any, *, term: str | None = None, compare: str | None = None,
                test: str | None = None, analysis: str | None = None, n_sims: int = 1000,
                alpha: float = 0.05, alternative: str = "two-sided", REML: bool | None = None,
                engine: str = "native", n_resamples: int = 99, rng: RNGLike = None,
                n_jobs: int = 1, progress: bool = False, on_failure: str = "ignore",
                checkpoint: Any = None, pairwise: str | None = None, baseline: Any = None,
                adjust: str = "holm", precision: float | None = None) -> Any:
    """Power of a test of ``term`` of a fitted model (``nlpower.power(fit, term=...)``).

    See :func:`nlpower.power` for the parameters; this is its fitted-model branch.
    With ``pairwise=`` (a factor of the fixed part) it compares that factor's
    levels -- all pairs, or each against ``baseline`` -- with the p-values of
    each replicate adjusted together (:mod:`nlpower.study.multiple`) and
    returns a :class:`~nlpower.study.multiple.MultiplePowerResult`.
    ``precision`` stops the replicates early (:func:`nlpower.power`; batches
    of ``STUDY_BATCH``; with ``pairwise=`` the rule watches every reported
    rate, :class:`~nlpower.study.multiple.ComparisonsPrecision`).

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    >>> m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
    >>> res = power_model(m.with_params(fixef={"Days": 2.0}), term="Days", n_sims=40, rng=1)
    >>> res.test, res.n_sims, 0 <= res.power <= 1
    ('satterthwaite', 40, True)
    """
    d = model_design(model)
    _check_run(n_sims, alpha, alternative, on_failure)
    precision = check_precision(precision)
    formula = d.formula if analysis is None else analysis
    amodel = d.prepare(formula, engine=engine)
    names = coef_names(amodel)
    comp: Comparisons | None = None
    if pairwise is not None:
        comp = _comparisons(d, formula, names, term, compare, pairwise, baseline, adjust, test)
        hyp = Hypothesis(comp.labels[0], comp.L[0], None, float(comp.truth[0]))
    elif baseline is not None:
        raise InputError("baseline= goes with pairwise= (the factor whose levels are compared).")
    else:
        hyp = resolve(term, compare, formula=formula, names=names, truth=d.fixef,
                      aliases=coef_aliases(amodel))
    name = _resolve_test(test, hyp, d.family)
    rule = get_test(name)
    n_resamples = check_int("n_resamples", n_resamples, min=1)
    if rule.bootstrap:     # the paper's model's own check: a bootstrap that can reject at alpha
        rule.check(alpha=alpha, alternative="two-sided", method="simulate",
                   n_resamples=n_resamples)
    reml = _criterion(rule, REML, d.family)
    j, drop = _tested_coefficient(hyp, rule, names, alternative)
    if hyp.reduced is not None:
        _check_reduced(d, amodel, hyp, engine)
    study = Study(d, formula, hyp, name, reml, engine, alternative, int(n_resamples),
                  float(alpha), j, drop, same_random(d, amodel.spec), comp)
    root = checkpoint_root(checkpoint, rng)
    errors: list[str] = []
    try:
        reps = _replicates(study, root, int(n_sims), errors, n_jobs=n_jobs, progress=progress,
                           checkpoint=checkpoint, stop=_rule(precision, alpha, comp, adjust))
    except MemoryError as exc:       # the fitter's matrices for a design extended too far
        raise InputError(f"power of {hyp.label!r} on {d.nobs:,} rows ran out of memory fitting "
                         f"a replicate ({exc}). Extend the design less, or fit a simpler "
                         "analysis= model.") from None
    used = int(reps.pvalue.shape[0])           # fewer than n_sims when precision stopped it
    if comp is not None:
        return replace(_many_result(reps, study, comp, adjust, errors, used),
                       n_max=int(n_sims), precision=precision, seed=seed_record(root),
                       engine=engine)
    stop_rule: dict[str, Any] = {"n_max": int(n_sims), "precision": precision}
    return _result(reps, study, errors, on_failure, root, used, stop_rule).with_study(
        parameters=model_parameters(model, d))


def _check_run(n_sims: Any, alpha: Any, alternative: Any, on_failure: Any) -> None:
    """The run's options, refused in words before anything is fitted."""
    from ..powersim.options import check_test_options
    check_test_options(alpha, "z", alternative)
    if isinstance(n_sims, bool) or not isinstance(n_sims, (int, np.integer)) or n_sims < 1:
        raise InputError(f"n_sims must be a positive integer; got {n_sims!r}.")
    if on_failure not in ("ignore", "warn", "raise"):
        raise InputError(f"on_failure must be 'ignore', 'warn' or 'raise'; got {on_failure!r}.")


def _comparisons(d: ModelDesign, formula: str, names: Sequence[str], term: Any, compare: Any,
                 pairwise: str, baseline: Any, adjust: str, test: Any) -> Comparisons:
    """The comparisons of ``pairwise``'s levels, after refusing what does not go with them."""
    if term is not None or compare is not None:
        raise InputError("pairwise= compares the levels of a factor; do not pass term= or "
                         "compare= with it.")
    if adjust not in ADJUST:
        raise InputError(f"adjust must be one of {', '.join(map(repr, ADJUST))}; got "
                         f"{adjust!r} (Tukey- and Dunnett-type adjustments are not "
                         "available for simulated power; Holm controls the family-wise "
                         "error for any correlation).")
    comp = comparisons(d, formula, pairwise, baseline=baseline, coef_names=names)
    if test is not None and _ALIASES.get(test, test) not in ("z", "satterthwaite"):
        raise InputError(f"pairwise comparisons are Wald tests: test='z' or "
                         f"'satterthwaite'; got {test!r}.")
    return comp


def _criterion(rule: Any, REML: bool | None, family: Family) -> bool:
    """REML or ML for every refit: the test's choice where the family has a residual SD."""
    if family.has_sigma:
        return bool(rule.resolve_REML(REML))
    if REML:
        raise InputError(f"REML applies to Gaussian models; a {family.name} model is fitted "
                         "by maximum likelihood.")
    return False


def _tested_coefficient(hyp: Hypothesis, rule: Any, names: Sequence[str],
                        alternative: str) -> tuple[int, str | None]:
    """The coefficient a one-df test reads, and the one a likelihood-ratio test drops."""
    if hyp.one_df and alternative != "two-sided" and rule.two_sided_only:
        raise InputError(f"test={rule.name!r} is two-sided only; use alternative='two-sided'.")
    if not hyp.one_df and alternative != "two-sided":
        raise InputError(f"alternative={alternative!r}: {hyp.label!r} is a model comparison (a "
                         "likelihood ratio of several df), which has no direction; use "
                         "alternative='two-sided'.")
    assert hyp.L is not None or hyp.reduced is not None
    j = int(np.argmax(np.abs(hyp.L))) if hyp.L is not None else 0
    drop = names[j] if (hyp.one_df and rule.needs_null) else None
    if drop is not None and hyp.L is not None and np.count_nonzero(hyp.L) != 1:
        raise InputError(f"test={rule.name!r} compares models; the contrast {hyp.label!r} is "
                         "tested by a Wald test (test='z' or 'satterthwaite').")
    return j, drop


def _check_reduced(d: ModelDesign, model: Any, hyp: Hypothesis, engine: str) -> None:
    """Refuse a reduced model that is not smaller than the analysis model (no df to test)."""
    q = n_params(model) - n_params(d.prepare(hyp.reduced, engine=engine))
    if q < 1:
        raise InputError(f"compare={hyp.label!r}: the reduced model {hyp.reduced!r} has "
                         f"{'as many parameters as' if q == 0 else 'more parameters than'} the "
                         f"model ({n_params(model)}), so there is nothing to test. Name a smaller "
                         "model nested in it, e.g. '~ . - x' for a fixed term x of the model, "
                         "or the formula without a random-effects term.")


def _replicates(study: Study, root: np.random.SeedSequence, n_sims: int, errors: list[str], *,
                n_jobs: int, progress: bool, checkpoint: Any,
                stop: Precision | None) -> Replicates:
    """Every replicate of ``study``, batch by batch (checkpoints, ``n_jobs``, progress)."""
    d, hyp, comp = study.design, study.hypothesis, study.comparisons
    seeds = root.spawn(n_sims)
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=n_sims, desc=f"power of {hyp.label}", unit="replicate",
                   leave=False, file=sys.stderr)

    def compute(lo: int, hi: int) -> Replicates:
        reps = _batch(study, seeds, lo, hi, errors)
        if bar is not None:
            bar.update(hi - lo)
        return reps

    run = run_id("model-power", formula=d.formula, analysis=study.analysis,
                 hypothesis=hyp.label if comp is None else list(comp.labels),
                 test=study.test, REML=study.REML, data=int(d.nobs),
                 fixef=d.fixef.round(12).tolist(), theta=np.round(d.theta, 12).tolist(),
                 sigma=round(d.sigma, 12), entropy=str(root.entropy), n_sims=n_sims,
                 batch=STUDY_BATCH)
    store = None
    if checkpoint is not None:
        store = open_run_checkpoint(checkpoint, design={"rows": int(d.nobs)},
                                    params={"formula": d.formula, "run": run},
                                    options={"test": study.test, "alpha": study.alpha},
                                    seed=seed_record(root))
    try:
        with replicate_jobs(n_jobs):
            return run_batches(n_sims, compute, run=run, checkpoint=store,
                               on_read=None if bar is None else bar.update,
                               batch_size=STUDY_BATCH, stop=stop)
    finally:
        if bar is not None:
            bar.close()


def _rule(precision: float | None, alpha: float, comp: Comparisons | None,
          adjust: str) -> Precision | None:
    """The stopping rule: one power's, or every rate of the comparisons."""
    if precision is None:
        return None
    if comp is None:
        return Precision(precision, alpha)
    return ComparisonsPrecision(precision, alpha, comparisons=comp, adjust=adjust)


def _many_result(reps: Replicates, study: Study, comp: Comparisons, adjust: str,
                 errors: list[str], n_sims: int) -> MultiplePowerResult:
    n_failed = int(reps.failed.sum())
    if n_failed == n_sims:
        raise FitError(f"every one of the {n_sims} replicate fits failed "
                       f"({errors[0] if errors else 'no finite test statistic'}).")
    est, p, means = replicate_columns(comp, reps)
    counts = summarise(comp, est, p, means, reps.failed, alpha=study.alpha, adjust=adjust)
    return MultiplePowerResult(comp.factor, comp.levels, comp.labels, adjust, study.test,
                               study.alpha, tuple(float(t) for t in comp.truth),
                               n_sims=n_sims, n_failed=n_failed, formula=study.design.formula,
                               version=__version__, **counts)


def _result(reps: Replicates, study: Study, errors: list[str], on_failure: str,
            root: np.random.SeedSequence, n_sims: int,
            rule: dict[str, Any] | None = None) -> ModelPowerResult:
    import warnings

    from ..errors import NlpowerWarning
    hyp, d = study.hypothesis, study.design
    n_failed = int(reps.failed.sum())
    first = errors[0] if errors else ("" if n_failed == 0 else "no finite test statistic")
    if n_failed == n_sims:
        raise FitError(f"every one of the {n_sims} replicate fits failed ({first}); the model "
                       "cannot be fitted to data simulated from these parameters. Check the "
                       "parameters (with_params) and the design's size.")
    if n_failed and on_failure == "raise":
        raise FitError(f"{n_failed} of {n_sims} replicate fits failed (first: {first}); "
                       "on_failure='raise'.")
    if n_failed and on_failure == "warn":
        warnings.warn(f"{n_failed} of {n_sims} replicate fits failed (first: {first}); counted "
                      "as non-detections.", NlpowerWarning, stacklevel=3)
    sig = np.nan_to_num(reps.pvalue, nan=1.0) <= study.alpha
    rule = rule or {}
    if hyp.one_df:
        mc = MonteCarloSummary.from_draws(reps.estimate, sig, effect=hyp.effect, **rule)
    else:
        mc = MonteCarloSummary(n_sims, int(sig.sum()), int(sig.sum()), 0, math.nan,
                               n_max=rule.get("n_max") if rule.get("precision") else None,
                               precision=rule.get("precision"))
    ok = ~reps.failed
    return ModelPowerResult.for_model(
        mc=mc, hypothesis=hyp.label, test=study.test, alpha=study.alpha,
        alternative=study.alternative, formula=d.formula, analysis=study.analysis,
        family=d.family.name, engine=study.engine, nobs=d.nobs,
        mean_estimate=float(np.mean(reps.estimate[ok])) if ok.any() and hyp.one_df else math.nan,
        n_failed=n_failed, n_singular=int((reps.singular & ok).sum()),
        n_nonconverged=int((~reps.converged & ok).sum()), first_error=first,
        seed=seed_record(root), version=__version__)


#: the keywords of the fitted-model front doors that a Study holds, and their defaults
MODEL_KEYWORDS: dict[str, Any] = {"term": None, "compare": None, "test": None, "analysis": None,
                                  "REML": None, "engine": "native", "n_resamples": 99}


def model_study(where: str, model: Any, keywords: dict[str, Any]) -> spec.Study:
    """The :class:`~nlpower.Study` of a fitted-model front door (:func:`power_curve`, ``plan_model``).

    ``model`` is a Study (``Study.model(fit, term=...)``) -- then each of
    ``keywords`` must keep its default or repeat the Study's value -- or a
    fitted model / :class:`ModelDesign`, whose Study the keywords build.
    Each point of a curve or a plan is one power: pairwise comparisons are
    refused.
    """
    if not isinstance(model, spec.Study) and not spec.is_model(model):
        raise InputError(f"{where}() needs a fitted model (nlpower.lmer / glmer / clmm, or "
                         f"nlpower.extend(...)) or Study.model(fit, term=...); got "
                         f"{type(model).__name__}.")
    study = spec.resolve_study(where, model, None, keywords,
                               {k: MODEL_KEYWORDS[k] for k in keywords})
    if not study.is_model:
        raise InputError(f"{where}() studies a fitted model (Study.model(fit, term=...)); got a "
                         "rating study. For designs of the paper's model use "
                         "nlpower.power_grid or nlpower.plan.")
    spec.refuse_fields(where, study, {"analysis": ("method",),
                                      "test": ("pairwise", "baseline", "adjust")},
                       " (each point is one power; for pairwise comparisons use "
                       "nlpower.power(fit, pairwise=...))")
    return study


def power_keywords(study: spec.Study) -> dict[str, Any]:
    """:func:`power_model`'s keywords of a fitted model's Study (its analysis and test)."""
    a, t = study.analysis, study.test
    return {"term": t.term, "compare": t.compare, "test": t.rule, "analysis": a.model,
            "REML": a.REML, "engine": a.engine, "n_resamples": t.n_resamples}


@dataclass(frozen=True)
class _CurveProblem:
    """One power study per number of levels of ``along`` (a :class:`~nlpower.grid.PowerProblem`)."""

    design: ModelDesign
    along: str
    options: tuple[tuple[str, Any], ...]
    #: processes for each point's replicates (a one-point curve: the grid has one cell)
    replicate_jobs: int = 1

    @property
    def name(self) -> str:
        return "model-power-curve"

    @property
    def result_columns(self) -> tuple[str, ...]:
        return ("power", "ci_low", "ci_high", "se", "rejection_rate", "nobs", "n_failed")

    def fingerprint(self) -> dict[str, Any]:
        d = self.design
        return {"formula": d.formula, "family": d.family.name, "rows": int(d.nobs),
                "fixef": d.fixef.round(12).tolist(), "theta": np.round(d.theta, 12).tolist(),
                "sigma": round(d.sigma, 12), "along": self.along,
                "options": {k: repr(v) for k, v in self.options}}

    def run_cell(self, key: Any, rng: np.random.SeedSequence) -> ModelPowerResult:
        options: dict[str, Any] = dict(self.options)
        return power_model(self.design.first(self.along, int(key[f"n_{self.along}"])),
                           rng=rng, n_jobs=self.replicate_jobs, **options)

    def from_record(self, record: Any) -> ModelPowerResult:
        return ModelPowerResult.from_record(record)


def power_curve(model: Any, *, along: str, breaks: Sequence[int] | None = None,
                term: str | None = None, compare: str | None = None, test: str | None = None,
                analysis: str | None = None, n_sims: int = 1000, alpha: float = 0.05,
                alternative: str = "two-sided", REML: bool | None = None, engine: str = "native",
                n_resamples: int = 99, rng: RNGLike = None, n_jobs: int = 1,
                progress: bool = False, checkpoint: Any = None,
                sim: SimOptions | None = None) -> PowerCurve:
    """Power against the number of levels of ``along`` (simr's ``powerCurve``).

    Each break ``b`` keeps the rows of the first ``b`` levels of ``along``
    (in order of appearance) of the model's design -- extend it first
    (:func:`nlpower.extend`) to go beyond the pilot -- and runs
    :func:`nlpower.power` there.  The points run on the grid runner: each
    from its own seed (the same numbers for any ``n_jobs``), in parallel
    with ``n_jobs``, resumable with ``checkpoint``.

    Parameters
    ----------
    model : fitted model, ModelDesign or Study
        The truth; or a whole ``Study.model(fit, term=...)`` (then the
        keywords it holds -- ``term``, ``compare``, ``test``, ``analysis``,
        ``REML``, ``engine``, ``n_resamples`` -- are left out; one given
        with a different value is refused, naming it).
    along : str
        A grouping factor (``"worker"``, ``"item"``) or covariate.
    breaks : sequence of int, optional
        Numbers of levels (default: up to 10 values from 3 to all levels).
    term, compare, test, analysis, n_sims, alpha, alternative, REML, engine, n_resamples
        As :func:`nlpower.power` for a fitted model.
    rng, n_jobs, progress, checkpoint
        As :func:`nlpower.power_grid` (but ``progress`` is off unless asked for: a bar of
        the curve's points on stderr).
    sim : SimOptions, optional
        The run's options as one value (``n_sims``, ``alpha``,
        ``alternative``, ``rng``, ``n_jobs``, ``progress``, ``checkpoint``).

    Returns
    -------
    PowerCurve

    Examples
    --------
    >>> import pandas as pd, nlpower
    >>> d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    >>> m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
    >>> curve = power_curve(m.with_params(fixef={"Days": 2.0}), along="Subject",
    ...                     breaks=[6, 18], term="Days", test="z", n_sims=30, rng=1)
    >>> curve.to_frame()[["n_Subject", "nobs"]].values.tolist()
    [[6, 60], [18, 180]]

    The same curve from a Study:

    >>> study = nlpower.Study.model(m.with_params(fixef={"Days": 2.0}), term="Days", test="z")
    >>> again = power_curve(study, along="Subject", breaks=[6, 18], n_sims=30, rng=1)
    >>> again.to_frame().equals(curve.to_frame())
    True
    """
    n_sims, alpha, alternative, rng, n_jobs, progress, checkpoint = with_sim(
        sim, power_curve, n_sims=n_sims, alpha=alpha, alternative=alternative, rng=rng,
        n_jobs=n_jobs, progress=progress, checkpoint=checkpoint)
    study = model_study("power_curve", model, {
        "term": term, "compare": compare, "test": test, "analysis": analysis, "REML": REML,
        "engine": engine, "n_resamples": n_resamples})
    return curve_of_study(study, along=along, breaks=breaks, n_sims=n_sims, alpha=alpha,
                          alternative=alternative, rng=rng, n_jobs=n_jobs, progress=progress,
                          checkpoint=checkpoint)


def curve_of_study(study: spec.Study, *, along: str, breaks: Sequence[int] | None, n_sims: int,
                   alpha: float, alternative: str, rng: RNGLike, n_jobs: int, progress: bool,
                   checkpoint: Any) -> PowerCurve:
    """:func:`power_curve` of a fitted model's Study (both spellings run this)."""
    from ..grid import RunOptions, run_grid
    d = model_design(study.truth)
    bs = _breaks(d, along, breaks)
    options = (*power_keywords(study).items(), ("n_sims", n_sims), ("alpha", alpha),
               ("alternative", alternative))
    # the first point validates the options before anything runs in parallel
    check: dict[str, Any] = {k: v for k, v in options if k != "n_sims"}
    power_model(d.first(along, bs[-1]), n_sims=1, rng=0, **check)
    # one point: its replicates in the n_jobs processes (the same numbers: one seed each)
    inner = n_jobs if len(bs) == 1 else 1
    grid = run_grid(_CurveProblem(d, along, options, inner), {f"n_{along}": bs}, rng=rng,
                    run=RunOptions(n_jobs=n_jobs if inner == 1 else 1, checkpoint=checkpoint,
                                   progress=progress),
                    desc=f"power curve along {along}")
    points = tuple(c.result for c in grid.cells)
    for c in grid.cells:
        if c.failed:
            raise FitError(f"the power curve's point {dict(c.key)} failed: {c.result!r}")
    return PowerCurve(along, tuple(bs), points, seed=dict(grid.seed),  # type: ignore[arg-type]
                      version=__version__)


def _breaks(d: ModelDesign, along: str, breaks: Sequence[int] | None) -> list[int]:
    """The numbers of levels of ``along`` of a curve (default: up to 10, from 3 to all)."""
    n_levels = int(d.data[along].nunique()) if along in d.data.columns else 0
    if n_levels == 0:
        d.first(along, 1)       # the column's own error
    if breaks is not None and (isinstance(breaks, (str, bytes)) or not np.iterable(breaks)
                               or len(list(breaks)) == 0):
        raise InputError(f"breaks must be a non-empty list of numbers of levels of {along!r} "
                         f"(from 1 to {n_levels}), e.g. [3, {n_levels}]; got {breaks!r}. Leave "
                         "it out for up to 10 values from 3 to all levels.")
    if breaks is None:
        lo = min(3, n_levels)
        breaks = sorted({int(round(v)) for v in np.linspace(lo, n_levels, min(10, n_levels))})
    bs = []
    for b in breaks:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 1 <= b <= n_levels:
            raise InputError(f"breaks must be numbers of levels of {along!r} from 1 to "
                             f"{n_levels}; got {b!r}. Extend the design first for more.")
        bs.append(int(b))
    return bs
