"""The one replicate loop of simulated power: generator -> analysis -> test, per batch.

Every simulate-path power of a design and its parameters -- Gaussian ratings
(:func:`nlpower.powersim.replicate.run_simulate`), Likert ratings analysed
by the LMM or by clmm (:mod:`nlpower.outcomes.analyses`) and repeated
head-to-head judgements analysed by glmer (:mod:`nlpower.outcomes.headtohead`)
-- computes a batch of replicates with :func:`replicate_batch`, which
:func:`~nlpower.powersim.batches.run_batches` drives (checkpoints, failure
policy, ``n_jobs``, progress, adaptive precision).  A study plugs in three
parts:

generator
    The truth: ``draw(k, gen) -> Draw`` (the response of replicate ``k``,
    and prior weights where some rows do not count), from the replicate's
    own generator.  :class:`GaussianRatings` (the paper's model, optionally
    as Likert points), :class:`Responses` (rows drawn beforehand, e.g. the
    Likert replicates several analyses share), and the head-to-head model's
    judgements (:class:`nlpower.outcomes.headtohead.Judgements`).
analysis
    ``batch() -> fitter``: models prepared by
    :func:`nlpower.lmm.get_engine` afresh for each batch (no batch sees
    another's fits), and ``fitter.fit(draw) -> Fitted``: the replicate's fit
    and the :class:`~nlpower.powersim.rules.GeneralState` its test reads.
    :class:`EngineAnalysis` is the formula-on-the-design analysis of any
    engine; the cumulative link and head-to-head GLMM analyses live with
    their outcomes.
test
    A :class:`~nlpower.powersim.rules.TestRule` of the registry, applied by
    its :meth:`~nlpower.powersim.rules.TestRule.general`.

An analysis may see a whole batch of draws at once: when its batch fitter
has ``test_batch(Y, gens, lo) -> Replicates`` (a :class:`BatchFitter` of
the fitted-model study, :mod:`nlpower.study.power`, which refits a batch
together and tests it by the registry's rules, several comparisons per
refit), the loop draws every replicate of the batch -- in one step where the
generator has ``draw_batch(gens, model) -> Y``, given the fitter's prepared
``truth`` model -- and hands the batch over.  A per-replicate analysis is the
case without ``test_batch``: draw, fit and test replicate by replicate.

A replicate whose fit or test raises one of :data:`FIT_FAILURES` is recorded
as failed (``on_failure="raise"``: the first one stops the run with a
:class:`~nlpower.errors.FitError` that names it and the analysis).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import FitError, InputError
from ..lmm import PreparedModel, get_engine
from ..lmm.structure import ModelSpec
from .options import PowerOptions
from .result import Replicates
from .rules import GeneralState, TestRule, contrast, get_test

__all__ = ["FIT_FAILURES", "Analysis", "Draw", "EngineAnalysis", "Fitted", "GaussianRatings",
           "Generator", "Responses", "WholeBatchFitter", "onehot", "prepare", "replicate_batch",
           "replicates"]

#: What a replicate's fit may raise and still count as a failed fit (not a bug).
FIT_FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError)


@dataclass(frozen=True)
class Draw:
    """One simulated data set: the response, and prior weights (``None``: every row counts)."""

    y: np.ndarray
    weights: np.ndarray | None = None


class Generator(Protocol):
    """The truth of a study: replicate ``k``'s data from its own generator ``gen``."""

    def draw(self, k: int, gen: np.random.Generator) -> Draw: ...


@dataclass(frozen=True)
class Fitted:
    """One replicate's analysis: its fit, the test's state, and how to fit its null model.

    ``null``: a zero-argument function returning the null model's fit when
    the analysis fits it its own way (``None``: the test rule refits
    ``state.null_model`` if it needs one).
    """

    core: Any
    state: GeneralState
    null: Callable[[], Any] | None = None


class BatchFitter(Protocol):
    def fit(self, draw: Draw) -> Fitted: ...


@runtime_checkable
class WholeBatchFitter(Protocol):
    """A fitter that sees the whole batch: ``Y`` (one row per replicate) and their generators."""

    #: the prepared model the generator simulates with (None: the generator's own)
    truth: Any

    def test_batch(self, Y: np.ndarray, gens: list[np.random.Generator], lo: int
                   ) -> Replicates: ...


class Analysis(Protocol):
    """An analysis of the simulated data: fitters built afresh for each batch."""

    #: names the analysis in failure messages ("... failed to fit <label>: ...")
    label: str

    def batch(self) -> BatchFitter | WholeBatchFitter: ...


@dataclass(frozen=True)
class GaussianRatings:
    """The crossed model's ratings (:func:`nlpower.simulation.simulate_y`; ``likert``: K points)."""

    arrays: Any
    params: Any
    likert: int | None = None

    def draw(self, k: int, gen: np.random.Generator) -> Draw:
        from ..simulation import simulate_y
        return Draw(simulate_y(self.arrays, self.params, 1, gen, likert=self.likert)[0])


@dataclass(frozen=True)
class Responses:
    """Responses drawn beforehand, one row per replicate (``first``: the index of row 0)."""

    y: np.ndarray
    first: int = 0

    def draw(self, k: int, gen: np.random.Generator) -> Draw:
        return Draw(self.y[k - self.first])


def prepare(engine: str, spec: ModelSpec) -> PreparedModel:
    """The engine's prepared model of ``spec`` (structure built once, y swapped per replicate)."""
    return get_engine(engine).prepare(spec)  # type: ignore[arg-type]


def onehot(p: int, j: int) -> np.ndarray:
    """The contrast of coefficient ``j`` of ``p``."""
    L = np.zeros(p)
    L[j] = 1.0
    return L


class EngineAnalysis:
    """A formula on the design, fitted by an engine of :func:`nlpower.lmm.get_engine`.

    ``dm``: the :class:`~nlpower.powersim.models.DesignModel` (its ``spec``,
    ``null_spec()``, ``effect_index`` and true ``theta``, every replicate's
    warm start).  The models are prepared once per batch, with the batch's
    first usable response.
    """

    def __init__(self, dm: Any, rule: TestRule, opts: PowerOptions, label: str) -> None:
        self.dm, self.rule, self.opts, self.label = dm, rule, opts, label

    def prepare(self, spec: ModelSpec) -> PreparedModel:
        return prepare(self.opts.engine, spec)

    def batch(self) -> _EngineBatch:
        return _EngineBatch(self)


class _EngineBatch:
    def __init__(self, analysis: EngineAnalysis) -> None:
        self.a = analysis
        self.state: GeneralState | None = None

    def fit(self, draw: Draw) -> Fitted:
        a, dm = self.a, self.a.dm
        if self.state is None:
            null_model = (a.prepare(dm.null_spec().with_response(draw.y))
                          if a.rule.needs_null else None)
            model = a.prepare(dm.spec.with_response(draw.y))
            self.state = a.rule.general_state(dm.spec, model, null_model, dm.effect_index,
                                              dm.theta, a.opts.n_resamples)
        core = self.state.model.refit(draw.y, REML=a.opts.REML, start=dm.theta)
        return Fitted(core, self.state)


def replicates(estimate: np.ndarray, se: np.ndarray, statistic: np.ndarray, df: np.ndarray,
               converged: np.ndarray, singular: np.ndarray, failed: np.ndarray,
               opts: PowerOptions, p_boot: np.ndarray | None = None) -> Replicates:
    """The :class:`Replicates` of per-replicate values: p-values from the test, failures NaN."""
    failed = failed | ~np.isfinite(statistic)
    if p_boot is not None:
        failed |= ~np.isfinite(p_boot)
    p = p_boot if p_boot is not None else get_test(opts.test).pvalue(statistic, df,
                                                                     opts.alternative)
    p = np.where(failed, np.nan, p)
    return Replicates(estimate, se, statistic, df, p, converged, singular, failed)


def replicate_batch(generator: Generator, analysis: Analysis, opts: PowerOptions, lo: int,
                    hi: int, *, n_sims: int,
                    seeds: Sequence[np.random.SeedSequence] | None = None,
                    on_each: Callable[[int], Any] | None = None) -> Replicates:
    """Replicates ``lo:hi`` of a run of ``n_sims``: draw -> fit -> test (module docstring).

    ``seeds``: one child seed per replicate of the run (replicate ``k`` draws
    from ``seeds[k]``, and a bootstrap test continues that stream); without
    them the generator ignores its generator (responses drawn beforehand).
    ``on_each(1)`` is called after every replicate (a progress bar's update;
    once with the batch's size for an analysis that tests the whole batch).
    """
    fitter = analysis.batch()
    if isinstance(fitter, WholeBatchFitter):
        return _whole_batch(generator, fitter, lo, hi, seeds, on_each)
    rule = get_test(opts.test)
    n = hi - lo
    est, se, stat, df = (np.full(n, np.nan) for _ in range(4))
    p_boot = np.full(n, np.nan) if rule.bootstrap else None
    conv, sing, failed = (np.zeros(n, dtype=bool) for _ in range(3))
    spare = None if seeds is not None else np.random.Generator(np.random.PCG64(0))
    for i, k in enumerate(range(lo, hi)):
        gen = spare if seeds is None else np.random.Generator(np.random.PCG64(seeds[k]))
        assert gen is not None
        draw = generator.draw(k, gen)
        try:
            fitted = fitter.fit(draw)
            core = fitted.core
            b, var = contrast(fitted.state.L, core)
            if var < 0.0:
                raise FitError(f"the fit's covariance gives the effect a negative variance ({var!r})")
            est[i], se[i] = b, math.sqrt(var)
            conv[i], sing[i] = bool(core.converged), bool(core.singular)
            null_core = None if fitted.null is None else fitted.null()
            est[i], se[i], stat[i], df[i], pb = rule.general(fitted.state, core, draw.y, gen,
                                                             FIT_FAILURES, null_core=null_core)
            if p_boot is not None:
                p_boot[i] = pb
        except FIT_FAILURES as exc:
            if opts.on_failure == "raise":
                raise FitError(
                    f"replicate {k} of {n_sims} failed to fit {analysis.label}: {exc} "
                    "(on_failure='raise'; use on_failure='ignore' or 'warn' to count failed "
                    "fits as non-detections).") from exc
            failed[i] = True
        if on_each is not None:
            on_each(1)
    return replicates(est, se, stat, df, conv, sing, failed, opts, p_boot)


def _whole_batch(generator: Generator, fitter: WholeBatchFitter, lo: int, hi: int,
                 seeds: Sequence[np.random.SeedSequence] | None,
                 on_each: Callable[[int], Any] | None) -> Replicates:
    """Replicates ``lo:hi`` drawn here and fitted and tested together by ``fitter.test_batch``."""
    if seeds is None:
        raise InputError("an analysis that tests a whole batch needs one seed per replicate.")
    gens = [np.random.Generator(np.random.PCG64(seeds[k])) for k in range(lo, hi)]
    many = getattr(generator, "draw_batch", None)
    if many is not None:
        Y = many(gens, fitter.truth)
    else:
        Y = np.vstack([generator.draw(k, g).y for k, g in zip(range(lo, hi), gens, strict=True)])
    reps = fitter.test_batch(Y, gens, lo)
    if on_each is not None:
        on_each(hi - lo)
    return reps
