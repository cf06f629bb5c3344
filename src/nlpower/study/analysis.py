"""The fitted-model study as a generator and an analysis of the one replicate loop.

:func:`nlpower.power` of a fitted model runs its replicates on
:func:`nlpower.powersim.loop.replicate_batch`, like every other power of the
package.  The truth is a :class:`ModelGenerator` (the fitted model with its
parameters, on the pilot's rows or an extended design); the analysis is a
:class:`StudyAnalysis`, whose fitter sees the loop's whole batch of draws
(``test_batch``): models that fit many responses at once take the batch
together (:mod:`nlpower.study.batched`), the others are refitted replicate
by replicate, and every replicate is tested by the registry's rule
(:mod:`nlpower.powersim.rules`): ``TestRule.general`` on a coefficient or a
contrast, ``TestRule.comparison`` on a term of several df or a model
comparison, ``TestRule.wald_many`` on every comparison of a factor's levels.
Every fit starts at the truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import FitError, InputError
from ..formula import parse
from ..lmm.draw import SimulatesGaussian
from ..mixed.layout import theta_layout
from ..powersim.result import Replicates
from ..powersim.rules import get_test
from .batched import BatchTests, gaussian_draws, lmm_replicates, nested_refits, ordinal_refits
from .design import ModelDesign
from .hypothesis import Hypothesis
from .multiple import Comparisons

__all__ = ["ModelGenerator", "StudyAnalysis", "coef_names", "same_random"]

FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError, ValueError)


@dataclass(frozen=True)
class Study:
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


@dataclass(frozen=True)
class ModelGenerator:
    """The truth of a fitted-model study: responses simulated from the design's parameters."""

    design: ModelDesign

    def draw_batch(self, gens: list[np.random.Generator], model: Any = None) -> np.ndarray:
        """One response per generator (``model``: the prepared truth to simulate with).

        ``d.simulate(1, rng=gen)`` each: Gaussian draws and predictors formed for
        the whole batch at once, from each generator's own deviates.
        """
        d = self.design
        sim = d.prepare() if model is None else model
        if not gens:
            return np.zeros((0, d.nobs))
        if d.family.is_gaussian and isinstance(sim, SimulatesGaussian):
            return gaussian_draws(d, sim.spec, gens)
        if hasattr(sim, "simulate_each"):
            return np.asarray(sim.simulate_each(gens, params=d))
        return np.vstack([d.simulate(1, rng=g, model=sim)[0] for g in gens])

    def draw(self, k: int, gen: np.random.Generator) -> Any:
        from ..powersim.loop import Draw
        return Draw(self.draw_batch([gen])[0])


class StudyAnalysis:
    """The study's analysis: models prepared afresh for each batch, the batch tested together."""

    def __init__(self, study: Study, errors: list[str]) -> None:
        self.study, self.errors = study, errors
        self.label = study.analysis

    def batch(self) -> _StudyBatch:
        return _StudyBatch(self.study, self.errors)


class _StudyBatch:
    """One batch's prepared models (the truth's, the analysis's, the null's) and their tests."""

    def __init__(self, study: Study, errors: list[str]) -> None:
        d, hyp = study.design, study.hypothesis
        self.study, self.errors = study, errors
        self.rule = rule = get_test(study.test)
        self.truth = sim = d.prepare()
        # the analysis is the truth's model (simr's usual question): one prepared model serves both
        same = study.analysis == d.formula and study.engine == "native"
        self.model = model = sim if same else d.prepare(study.analysis, engine=study.engine)
        self.start = d.start(coef_names(model), same_random=study.same_random)
        null = None
        if hyp.reduced is not None:
            null = d.prepare(hyp.reduced, engine=study.engine)
        elif rule.needs_null:
            null = d.prepare(study.analysis, engine=study.engine, drop=study.drop)
        self.null = null
        self.null_start = (d.start(coef_names(null), same_random=same_random(d, null.spec))
                           if null is not None else None)

    def test_batch(self, Y: np.ndarray, gens: list[np.random.Generator], lo: int) -> Replicates:
        """Replicates ``lo:`` of the run, their responses ``Y`` (one row each) and generators."""
        # trial steps of the optimisers overflow now and then on extreme simulated responses;
        # the fits recover (or fail and are counted), so numpy's warnings would only be noise
        with np.errstate(over="ignore", divide="ignore", invalid="ignore", under="ignore"):
            fast = lmm_replicates(self.study, self.model, self.null, Y, self.start,
                                  self.null_start)
            if self.study.comparisons is not None:
                return self._many(Y, lo, fast)
            return self._one(Y, gens, lo, fast)

    def _one(self, Y: np.ndarray, gens: list[np.random.Generator], lo: int,
             fast: BatchTests | None) -> Replicates:
        study, hyp, rule = self.study, self.study.hypothesis, self.rule
        model, null = self.model, self.null
        n = Y.shape[0]
        est, se, stat, df, p = (np.full(n, np.nan) for _ in range(5))
        conv, sing, failed = (np.zeros(n, dtype=bool) for _ in range(3))
        state = None
        if hyp.one_df and (fast is None or not fast.ok.all()):
            state = rule.general_state(model.spec, model, null, study.j, self.start,
                                       study.n_resamples, L=hyp.L, null_start=self.null_start,
                                       cold_null=self.null_start is None)
        comparison = None if hyp.one_df else rule.comparison()
        q = (n_params(model) - n_params(null)) if null is not None else 0
        todo = range(n) if fast is None else [int(i) for i in np.flatnonzero(~fast.ok)]
        if fast is not None:
            est[:], se[:], stat[:], df[:], p[:] = (fast.estimate, fast.se, fast.statistic,
                                                   fast.df, fast.pvalue)
            conv[:], sing[:] = fast.ok, fast.singular
        cores = (refit_many(model, Y, study.REML, self.start)
                 if fast is None and not rule.bootstrap else None)
        cores0 = nested_refits(model, null, Y, cores)   # a GLMM null from each full fit
        if cores0 is None and cores is not None and null is not None \
                and self.null_start is not None:
            cores0 = refit_many(null, Y, False, self.null_start, hessian=False)
        for i in todo:
            y = Y[i]
            try:
                core = take(cores, i) or model.refit(y, REML=study.REML, start=self.start)
                conv[i], sing[i] = bool(core.converged), bool(core.singular)
                if state is not None:
                    est[i], se[i], stat[i], df[i], pb = rule.general(
                        state, core, y, gens[i], FAILURES, null_core=take(cores0, i))
                    p[i] = pb if rule.bootstrap else float(
                        rule.pvalue(np.array([stat[i]]), np.array([df[i]]), study.alternative)[0])
                else:
                    assert null is not None and comparison is not None
                    core0 = take(cores0, i) or null.refit(y, REML=False, start=self.null_start)
                    stat[i] = comparison.statistic(core, core0)
                    est[i], df[i], p[i] = stat[i], q, float(comparison.pvalue(stat[i], q))
            except FAILURES as exc:
                failed[i] = True
                self.errors.append(f"replicate {lo + i}: {type(exc).__name__}: {exc}")
        failed |= ~np.isfinite(p)
        return Replicates(est, se, stat, df, np.where(failed, np.nan, p), conv, sing, failed)

    def _many(self, Y: np.ndarray, lo: int, fast: BatchTests | None) -> Replicates:
        """A batch of a multiple-comparison run: every comparison from one refit per replicate."""
        study, model, rule = self.study, self.model, self.rule
        comp = study.comparisons
        assert comp is not None
        L, M = comp.L, comp.M
        n, k = Y.shape[0], L.shape[0]
        est, se, df, p = (np.full((n, k), np.nan) for _ in range(4))
        means = np.full((n, M.shape[0]), np.nan)
        conv, sing, failed = (np.zeros(n, dtype=bool) for _ in range(3))
        todo = range(n) if fast is None else [int(i) for i in np.flatnonzero(~fast.ok)]
        if fast is not None and fast.many is not None:
            est[:], se[:], df[:], p[:] = fast.many
            means[:] = fast.beta @ M.T
            conv[:], sing[:] = fast.ok, fast.singular
        cores = refit_many(model, Y, study.REML, self.start) if fast is None else None
        for i in todo:
            try:
                core = take(cores, i) or model.refit(Y[i], REML=study.REML, start=self.start)
                conv[i], sing[i] = bool(core.converged), bool(core.singular)
                est[i], se[i], df[i], p[i] = rule.wald_many(model, core, L, study.alternative)
                means[i] = M @ core.beta
            except FAILURES as exc:
                failed[i] = True
                self.errors.append(f"replicate {lo + i}: {type(exc).__name__}: {exc}")
        failed |= ~np.all(np.isfinite(p), axis=1)
        extra = {f"estimate.{c}": est[:, c] for c in range(k)}
        extra.update({f"pvalue.{c}": p[:, c] for c in range(k)})
        extra.update({f"mean.{j}": means[:, j] for j in range(M.shape[0])})
        first_p = np.where(failed, np.nan, p[:, 0])
        return Replicates(np.where(failed, np.nan, est[:, 0]), se[:, 0], est[:, 0] / se[:, 0],
                          df[:, 0], first_p, conv, sing, failed, extra=extra)


def refit_many(model: Any, Y: np.ndarray, REML: bool, start: Any, *, hessian: bool = True
               ) -> list[Any] | None:
    """``model.refit_many`` where the model has it (None: fit replicate by replicate).

    Models that fit many responses at once (GLMMs of scalar terms) take the batch
    together; cumulative link models scale their optimiser by one Hessian at the
    truth (:func:`~nlpower.study.batched.ordinal_refits`).  Each replicate's result is the
    one its own refit gives (to the optimiser's tolerance); ``hessian=False``: the
    fit's deviance is all that is needed (a null model).
    """
    if start is None or Y.shape[0] < 2:
        return None
    many = getattr(model, "refit_many", None)
    if many is None:
        return ordinal_refits(model, Y, start, FAILURES, hessian=hessian)
    return list(many(Y, REML=REML, start=start))


def take(cores: list[Any] | None, i: int) -> Any:
    """The batch's fit of replicate ``i`` (None: not batched); a refused replicate raises here."""
    if cores is None:
        return None
    if isinstance(cores[i], Exception):
        raise cores[i]
    return cores[i]


def coef_names(model: Any) -> tuple[str, ...]:
    """The prepared model's coefficient names (a cumulative link model's have no intercept)."""
    return tuple(getattr(model, "fixef_names", model.spec.fixef_names))


def n_params(model: Any) -> int:
    extra = int(model.family.has_sigma)           # sigma
    thr = getattr(model, "n_alpha", 0)
    return int(model.spec.p + theta_layout(model.spec.re_terms).size + extra + thr)


def same_random(d: ModelDesign, spec: Any) -> bool:
    """Whether ``spec`` has the design's random part (then its true ``theta`` is a warm start)."""
    return bool(theta_layout(spec.re_terms).size == d.theta.size and
                str(parse(spec.formula).random) == str(parse(d.formula).random))
