"""Power for any term of a fitted model: simulate -> refit -> test, over replicates (simr).

One replicate draws a response from the truth (a :class:`ModelDesign`: the
fitted model with its parameters, on the pilot's rows or an extended
design), refits the analysis model (by default the same formula) through
the engine protocol, and applies a test rule from the registry
(:mod:`nlpower.powersim.rules`) to the hypothesis
(:mod:`nlpower.study.hypothesis`).  Replicates run in the fixed batches of
:func:`nlpower.powersim.batches.run_batches` -- checkpoints, ``n_jobs``,
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
from scipy.special import chdtrc

from .. import __version__
from .._rng import RNGLike, seed_record
from ..errors import FitError, InputError
from ..formula import parse
from ..lmm.draw import SimulatesGaussian
from ..lmm.layout import theta_layout
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
from ..powersim.result import Replicates
from ..powersim.rules import get_test
from .batched import BatchTests, gaussian_draws, lmm_replicates, nested_refits, ordinal_refits
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

__all__ = ["power_curve", "power_model"]

_FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError, ValueError)
_ALIASES = {"t": "satterthwaite", "kr": "kenward-roger", "lr": "lrt"}
#: replicates per batch (checkpoint unit, the unit of n_jobs, and what a model that fits many
#: responses at once fits together)
STUDY_BATCH = 200


@dataclass(frozen=True)
class _Study:
    """Everything a batch of replicates needs (picklable: sent to loky workers)."""

    design: ModelDesign
    analysis: str
    hypothesis: Hypothesis
    test: str
    REML: bool
    engine: str
    alternative: str
    n_resamples: int
    alpha: float
    j: int
    drop: str | None
    same_random: bool
    comparisons: Comparisons | None = None


def _resolve_test(test: Any, hyp: Hypothesis, family: str) -> str:
    if test is None:
        return ("satterthwaite" if family == "gaussian" else "z") if hyp.one_df else "lrt"
    name = _ALIASES.get(test, test) if isinstance(test, str) else test
    rule = get_test(name)
    if "simulate" not in rule.paths:
        raise InputError(f"test={rule.name!r} runs on the balanced fast path of the paper's "
                         "design only; for a fitted model use 'z', 'satterthwaite', "
                         "'kenward-roger', 'lrt' or 'pblrt'.")
    if not hyp.one_df and rule.name != "lrt":
        raise InputError(f"{hyp.label!r} has several degrees of freedom (or is a model "
                         f"comparison): it is tested by test='lrt', not {rule.name!r}.")
    rule.check_family(family)
    if rule.bootstrap and family != "gaussian":
        raise InputError("test='pblrt' draws its bootstrap from Gaussian fits; use test='lrt' "
                         f"for a {family} model.")
    return rule.name


def _batch(study: _Study, seeds: Sequence[np.random.SeedSequence], lo: int, hi: int,
           errors: list[str]) -> Replicates:
    # trial steps of the optimisers overflow now and then on extreme simulated responses; the
    # fits recover (or fail and are counted), so numpy's warnings would only be noise
    with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
        return _batch_fits(study, seeds, lo, hi, errors)


def _batch_fits(study: _Study, seeds: Sequence[np.random.SeedSequence], lo: int, hi: int,
                errors: list[str]) -> Replicates:
    d, hyp = study.design, study.hypothesis
    rule = get_test(study.test)
    n = hi - lo
    est, se, stat, df, p = (np.full(n, np.nan) for _ in range(5))
    conv, sing, failed = (np.zeros(n, dtype=bool) for _ in range(3))
    sim = d.prepare()
    # the analysis is the truth's model (simr's usual question): one prepared model serves both
    same = study.analysis == d.formula and study.engine == "native"
    model = sim if same else d.prepare(study.analysis, engine=study.engine)
    start = d.start(coef_names(model), same_random=study.same_random)
    null = None
    if hyp.reduced is not None:
        null = d.prepare(hyp.reduced, engine=study.engine)
    elif rule.needs_null:
        null = d.prepare(study.analysis, engine=study.engine, drop=study.drop)
    null_start = (d.start(coef_names(null), same_random=_same_random(d, null.spec))
                  if null is not None else None)
    gens, Y = _draws(d, seeds, lo, hi, sim)
    fast = lmm_replicates(study, model, null, Y, start, null_start)
    if study.comparisons is not None:
        return _batch_many(study, lo, hi, Y, model, start, errors, fast)
    state = None
    if hyp.one_df and (fast is None or not fast.ok.all()):
        state = rule.general_state(model.spec, model, null, study.j, start, study.n_resamples,
                                   L=hyp.L, null_start=null_start, cold_null=null_start is None)
    q = (_n_params(model) - _n_params(null)) if null is not None else 0
    todo = range(n) if fast is None else [int(i) for i in np.flatnonzero(~fast.ok)]
    if fast is not None:
        est[:], se[:], stat[:], df[:], p[:] = fast.estimate, fast.se, fast.statistic, fast.df, \
            fast.pvalue
        conv[:], sing[:] = fast.ok, fast.singular
    cores = _refit_many(model, Y, study.REML, start) if fast is None and not rule.bootstrap \
        else None
    cores0 = nested_refits(model, null, Y, cores)   # a GLMM null from each full fit
    if cores0 is None and cores is not None and null is not None and null_start is not None:
        cores0 = _refit_many(null, Y, False, null_start, hessian=False)
    for i in todo:
        gen, y, k = gens[i], Y[i], lo + i
        try:
            core = _take(cores, i) or model.refit(y, REML=study.REML, start=start)
            conv[i], sing[i] = bool(core.converged), bool(core.singular)
            if state is not None:
                est[i], se[i], stat[i], df[i], pb = rule.general(
                    state, core, y, gen, _FAILURES, null_core=_take(cores0, i))
                p[i] = pb if rule.bootstrap else float(
                    rule.pvalue(np.array([stat[i]]), np.array([df[i]]), study.alternative)[0])
            else:
                assert null is not None
                core0 = _take(cores0, i) or null.refit(y, REML=False, start=null_start)
                stat[i] = max(float(core0.deviance - core.deviance), 0.0)
                est[i], df[i], p[i] = stat[i], q, float(chdtrc(q, stat[i]))
        except _FAILURES as exc:
            failed[i] = True
            errors.append(f"replicate {k}: {type(exc).__name__}: {exc}")
    failed |= ~np.isfinite(p)
    return Replicates(est, se, stat, df, np.where(failed, np.nan, p), conv, sing, failed)


def _draws(d: ModelDesign, seeds: Sequence[np.random.SeedSequence], lo: int, hi: int, sim: Any
           ) -> tuple[list[np.random.Generator], np.ndarray]:
    """Replicates ``lo:hi``: each one's generator (its own child seed) and its simulated response."""
    gens = [np.random.Generator(np.random.PCG64(seeds[k])) for k in range(lo, hi)]
    if not gens:
        return gens, np.zeros((0, d.nobs))
    if d.family.name == "gaussian" and isinstance(sim, SimulatesGaussian):
        return gens, gaussian_draws(d, sim.spec, gens)
    if hasattr(sim, "simulate_each"):          # the same draws, the predictors formed at once
        return gens, sim.simulate_each(gens, params=d)
    return gens, np.vstack([d.simulate(1, rng=g, model=sim)[0] for g in gens])


def _refit_many(model: Any, Y: np.ndarray, REML: bool, start: Any, *, hessian: bool = True
                ) -> list[Any] | None:
    """``model.refit_many`` where the model has it (None: fit replicate by replicate).

    Models that fit many responses at once (GLMMs of scalar terms) take the batch
    together; cumulative link models take BFGS steps from one Hessian at the truth
    (:func:`~nlpower.study.batched.ordinal_refits`).  Each replicate's result is the
    one its own refit gives (to the optimiser's tolerance); ``hessian=False``: the
    fit's deviance is all that is needed (a null model).
    """
    if start is None or Y.shape[0] < 2:
        return None
    many = getattr(model, "refit_many", None)
    if many is None:
        return ordinal_refits(model, Y, start, _FAILURES, hessian=hessian)
    return list(many(Y, REML=REML, start=start))


def _take(cores: list[Any] | None, i: int) -> Any:
    """The batch's fit of replicate ``i`` (None: not batched); a refused replicate raises here."""
    if cores is None:
        return None
    if isinstance(cores[i], Exception):
        raise cores[i]
    return cores[i]


def _batch_many(study: _Study, lo: int, hi: int, Y: np.ndarray, model: Any, start: Any,
                errors: list[str], fast: BatchTests | None) -> Replicates:
    """A batch of a multiple-comparison run: every comparison from one refit per replicate."""
    comp = study.comparisons
    assert comp is not None
    rule = get_test(study.test)
    L, M = comp.L, comp.M
    n, k = hi - lo, L.shape[0]
    est, se, df, p = (np.full((n, k), np.nan) for _ in range(4))
    means = np.full((n, M.shape[0]), np.nan)
    conv, sing, failed = (np.zeros(n, dtype=bool) for _ in range(3))
    todo = range(n) if fast is None else [int(i) for i in np.flatnonzero(~fast.ok)]
    if fast is not None and fast.many is not None:
        est[:], se[:], df[:], p[:] = fast.many
        means[:] = fast.beta @ M.T
        conv[:], sing[:] = fast.ok, fast.singular
    cores = _refit_many(model, Y, study.REML, start) if fast is None else None
    for i in todo:
        r = lo + i
        try:
            core = _take(cores, i) or model.refit(Y[i], REML=study.REML, start=start)
            conv[i], sing[i] = bool(core.converged), bool(core.singular)
            est[i] = L @ core.beta
            se[i] = np.sqrt(np.einsum("kp,pq,kq->k", L, core.vcov_beta, L))
            df[i] = ([float(model.satterthwaite_df(core, Lc)) for Lc in L]
                     if rule.df_method == "satterthwaite" else np.inf)
            p[i] = rule.pvalue(est[i] / se[i], df[i], study.alternative)
            means[i] = M @ core.beta
        except _FAILURES as exc:
            failed[i] = True
            errors.append(f"replicate {r}: {type(exc).__name__}: {exc}")
    failed |= ~np.all(np.isfinite(p), axis=1)
    extra = {f"estimate.{c}": est[:, c] for c in range(k)}
    extra.update({f"pvalue.{c}": p[:, c] for c in range(k)})
    extra.update({f"mean.{j}": means[:, j] for j in range(M.shape[0])})
    first_p = np.where(failed, np.nan, p[:, 0])
    return Replicates(np.where(failed, np.nan, est[:, 0]), se[:, 0], est[:, 0] / se[:, 0],
                      df[:, 0], first_p, conv, sing, failed, extra=extra)


def coef_names(model: Any) -> tuple[str, ...]:
    """The prepared model's coefficient names (a cumulative link model's have no intercept)."""
    return tuple(getattr(model, "fixef_names", model.spec.fixef_names))


def _n_params(model: Any) -> int:
    extra = 1 if model.family.name == "gaussian" else 0
    thr = getattr(model, "n_alpha", 0)
    return int(model.spec.p + theta_layout(model.spec.re_terms).size + extra + thr)


def _same_random(d: ModelDesign, spec: Any) -> bool:
    """Whether ``spec`` has the design's random part (then its true ``theta`` is a warm start)."""
    return bool(theta_layout(spec.re_terms).size == d.theta.size and
                str(parse(spec.formula).random) == str(parse(d.formula).random))


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
    from ..powersim.options import check_test_options
    d = model_design(model)
    check_test_options(alpha, "z", alternative)
    if isinstance(n_sims, bool) or not isinstance(n_sims, (int, np.integer)) or n_sims < 1:
        raise InputError(f"n_sims must be a positive integer; got {n_sims!r}.")
    if on_failure not in ("ignore", "warn", "raise"):
        raise InputError(f"on_failure must be 'ignore', 'warn' or 'raise'; got {on_failure!r}.")
    precision = check_precision(precision)
    formula = d.formula if analysis is None else analysis
    amodel = d.prepare(formula, engine=engine)
    names = coef_names(amodel)
    comp = None
    if pairwise is not None:
        if term is not None or compare is not None:
            raise InputError("pairwise= compares the levels of a factor; do not pass term= or "
                             "compare= with it.")
        if adjust not in ADJUST:
            raise InputError(f"adjust must be one of {', '.join(map(repr, ADJUST))}; got "
                             f"{adjust!r} (Tukey- and Dunnett-type adjustments are not "
                             "available for simulated power; Holm controls the family-wise "
                             "error for any correlation).")
        comp = comparisons(d, formula, pairwise, baseline=baseline, coef_names=names)
        hyp = Hypothesis(comp.labels[0], comp.L[0], None, float(comp.truth[0]))
        if test is not None and _ALIASES.get(test, test) not in ("z", "satterthwaite"):
            raise InputError(f"pairwise comparisons are Wald tests: test='z' or "
                             f"'satterthwaite'; got {test!r}.")
    elif baseline is not None:
        raise InputError("baseline= goes with pairwise= (the factor whose levels are compared).")
    else:
        hyp = resolve(term, compare, formula=formula, names=names, truth=d.fixef,
                      aliases=coef_aliases(amodel))
    name = _resolve_test(test, hyp, d.family.name)
    rule = get_test(name)
    if d.family.name == "gaussian":
        reml = rule.resolve_REML(REML)
    elif REML:
        raise InputError(f"REML applies to Gaussian models; a {d.family.name} model is fitted "
                         "by maximum likelihood.")
    else:
        reml = False
    if hyp.one_df and alternative != "two-sided" and rule.two_sided_only:
        raise InputError(f"test={name!r} is two-sided only; use alternative='two-sided'.")
    assert hyp.L is not None or hyp.reduced is not None
    j = int(np.argmax(np.abs(hyp.L))) if hyp.L is not None else 0
    drop = names[j] if (hyp.one_df and rule.needs_null) else None
    if drop is not None and hyp.L is not None and np.count_nonzero(hyp.L) != 1:
        raise InputError(f"test={name!r} compares models; the contrast {hyp.label!r} is tested "
                         "by a Wald test (test='z' or 'satterthwaite').")
    study = _Study(d, formula, hyp, name, reml, engine, alternative, int(n_resamples),
                   float(alpha), j, drop, _same_random(d, amodel.spec), comp)
    root = checkpoint_root(checkpoint, rng)
    seeds = root.spawn(int(n_sims))
    errors: list[str] = []

    def compute(lo: int, hi: int) -> Replicates:
        reps = _batch(study, seeds, lo, hi, errors)
        if bar is not None:
            bar.update(hi - lo)
        return reps

    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=int(n_sims), desc=f"power of {hyp.label}", unit="replicate",
                   leave=False, file=sys.stderr)
    run = run_id("model-power", formula=d.formula, analysis=formula,
                 hypothesis=hyp.label if comp is None else list(comp.labels),
                 test=name, REML=reml, data=int(d.nobs), fixef=d.fixef.round(12).tolist(),
                 theta=np.round(d.theta, 12).tolist(), sigma=round(d.sigma, 12),
                 entropy=str(root.entropy), n_sims=int(n_sims), batch=STUDY_BATCH)
    store = None
    if checkpoint is not None:
        store = open_run_checkpoint(checkpoint, design={"rows": int(d.nobs)},
                                    params={"formula": d.formula, "run": run},
                                    options={"test": name, "alpha": float(alpha)},
                                    seed=seed_record(root))
    try:
        with replicate_jobs(n_jobs):
            reps = run_batches(int(n_sims), compute, run=run, checkpoint=store,
                               on_read=None if bar is None else bar.update,
                               batch_size=STUDY_BATCH,
                               stop=_rule(precision, alpha, comp, adjust))
    finally:
        if bar is not None:
            bar.close()
    used = int(reps.pvalue.shape[0])           # fewer than n_sims when precision stopped it
    if comp is not None:
        return replace(_many_result(reps, study, comp, adjust, errors, used),
                       n_max=int(n_sims), precision=precision)
    stop_rule: dict[str, Any] = {"n_max": int(n_sims), "precision": precision}
    return replace(_result(reps, study, errors, on_failure, root, used, stop_rule),
                   parameters=model_parameters(model, d))


def _rule(precision: float | None, alpha: float, comp: Comparisons | None,
          adjust: str) -> Precision | None:
    """The stopping rule: one power's, or every rate of the comparisons."""
    if precision is None:
        return None
    if comp is None:
        return Precision(precision, alpha)
    return ComparisonsPrecision(precision, alpha, comparisons=comp, adjust=adjust)


def _many_result(reps: Replicates, study: _Study, comp: Comparisons, adjust: str,
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


def _result(reps: Replicates, study: _Study, errors: list[str], on_failure: str,
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
    return ModelPowerResult(
        mc=mc, hypothesis=hyp.label, test=study.test, alpha=study.alpha,
        alternative=study.alternative, formula=d.formula, analysis=study.analysis,
        family=d.family.name, engine=study.engine, nobs=d.nobs,
        mean_estimate=float(np.mean(reps.estimate[ok])) if ok.any() and hyp.one_df else math.nan,
        n_failed=n_failed, n_singular=int((reps.singular & ok).sum()),
        n_nonconverged=int((~reps.converged & ok).sum()), first_error=first,
        seed=seed_record(root), version=__version__)


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
                rng: RNGLike = None, n_jobs: int = 1, progress: bool = False,
                checkpoint: Any = None) -> PowerCurve:
    """Power against the number of levels of ``along`` (simr's ``powerCurve``).

    Each break ``b`` keeps the rows of the first ``b`` levels of ``along``
    (in order of appearance) of the model's design -- extend it first
    (:func:`nlpower.extend`) to go beyond the pilot -- and runs
    :func:`nlpower.power` there.  The points run on the grid runner: each
    from its own seed (the same numbers for any ``n_jobs``), in parallel
    with ``n_jobs``, resumable with ``checkpoint``.

    Parameters
    ----------
    model : fitted model or ModelDesign
    along : str
        A grouping factor (``"worker"``, ``"item"``) or covariate.
    breaks : sequence of int, optional
        Numbers of levels (default: up to 10 values from 3 to all levels).
    term, compare, test, analysis, n_sims, alpha, alternative, REML, engine
        As :func:`nlpower.power` for a fitted model.
    rng, n_jobs, progress, checkpoint
        As :func:`nlpower.power_grid`.

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
    """
    from ..grid import RunOptions, run_grid
    d = model_design(model)
    n_levels = int(d.data[along].nunique()) if along in d.data.columns else 0
    if n_levels == 0:
        d.first(along, 1)       # the column's own error
    if breaks is None:
        lo = min(3, n_levels)
        breaks = sorted({int(round(v)) for v in np.linspace(lo, n_levels, min(10, n_levels))})
    bs = []
    for b in breaks:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)) or not 1 <= b <= n_levels:
            raise InputError(f"breaks must be numbers of levels of {along!r} from 1 to "
                             f"{n_levels}; got {b!r}. Extend the design first for more.")
        bs.append(int(b))
    options = (("term", term), ("compare", compare), ("test", test), ("analysis", analysis),
               ("n_sims", n_sims), ("alpha", alpha), ("alternative", alternative),
               ("REML", REML), ("engine", engine))
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
    return PowerCurve(along, tuple(bs), points)  # type: ignore[arg-type]
