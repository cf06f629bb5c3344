"""Stage 2 of :func:`~nlpower.powersim.power`: replicate runs, simulate -> fit -> test.

Each run takes the design, the parameters, one child seed per replicate and
the validated :class:`~nlpower.powersim.options.PowerOptions`, and returns
:class:`~nlpower.powersim.result.Replicates` (estimate, SE, statistic, df,
p-value, flags per replicate):

:func:`run_balanced` (``method="balanced"``)
    The exact balanced fast path: fully crossed, paired, 2 systems,
    :class:`~nlpower.params.LMMParams` in sum or half coding (treatment only
    without slope SDs).  Gaussian ratings: the five sums of squares and the
    estimate are drawn directly (O(1) per replicate); Likert ratings:
    computed from simulated rating arrays.  All replicates are fitted at once
    (:mod:`nlpower.powersim.balanced_fit`).
:func:`run_simulate` (``method="simulate"``)
    Any design: the structure is prepared by the engine
    (:func:`nlpower.lmm.get_engine`) once per batch of replicates
    (:mod:`nlpower.powersim.batches`), each replicate swaps the response and
    refits (start at the true theta); finished batches go to the current
    checkpoint, so a killed run resumes mid-run with the same numbers.

Tests are :class:`~nlpower.powersim.rules.TestRule` objects
(:mod:`nlpower.powersim.rules`): each computes its statistic, df and (PB-LRT)
bootstrap p-value on either path, and its p-values; nothing here branches on
the test's name.

Replicate ``r`` draws from child ``r`` of the run's seed, so results do not
depend on chunking, and the first ``m`` replicates of a run of ``N`` are those
of a run of ``m``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from ..design import CrossedDesign
from ..errors import FitError, InputError
from ..grid.batchfile import BatchFile
from ..lmm import PreparedModel, get_engine
from ..lmm.structure import ModelSpec
from ..params import LMMParams
from ..simulation import simulate_y
from . import fastpath as fp
from .balanced_fit import fit_balanced
from .batches import options_identity, run_batches, run_id, seeds_identity
from .models import Params, build_model
from .options import PowerOptions
from .result import Replicates
from .rules import GeneralState, get_test


def pvalues(statistic: np.ndarray, df: np.ndarray, test: str, alternative: str) -> np.ndarray:
    """p-values of Wald t/z statistics or signed LR roots (:meth:`TestRule.pvalue`)."""
    return get_test(test).pvalue(statistic, df, alternative)


def _replicates(estimate: np.ndarray, se: np.ndarray, statistic: np.ndarray, df: np.ndarray,
                converged: np.ndarray, singular: np.ndarray, failed: np.ndarray,
                opts: PowerOptions, p_boot: np.ndarray | None = None) -> Replicates:
    failed = failed | ~np.isfinite(statistic)
    if p_boot is not None:
        failed |= ~np.isfinite(p_boot)
    p = p_boot if p_boot is not None else get_test(opts.test).pvalue(statistic, df,
                                                                     opts.alternative)
    p = np.where(failed, np.nan, p)
    return Replicates(estimate, se, statistic, df, p, converged, singular, failed)


# ----------------------------------------------------------------------------------------
# balanced fast path
# ----------------------------------------------------------------------------------------


def balanced_exact(design: CrossedDesign, params: Params) -> str | None:
    """Why the balanced fast path is not exact for this design and parameters (None when it is)."""
    if not design.is_balanced_crossed:
        why = "items are nested in systems" if design.items == "nested" else \
            f"each item is rated by {design.raters_per_item} of {design.n_workers} workers"
        return f"the design is not fully crossed and paired ({why})"
    if design.n_systems != 2 or not isinstance(params, LMMParams):
        return "the balanced fast path handles 2 systems with LMMParams only"
    if params.coding == "treatment" and (params.sd_worker_slope > 0 or params.sd_item_slope > 0):
        return ("treatment coding with random slopes is a different model from the +-1 one "
                "(intercepts and slopes become correlated)")
    return None


def run_balanced(design: CrossedDesign, params: LMMParams, seeds: Sequence[np.random.SeedSequence],
                 opts: PowerOptions) -> Replicates:
    """Replicates through the exact balanced fast path (module docstring)."""
    p = params if params.coding == "sum" else params.to_coding("sum")
    w, i = design.n_workers, design.n_items
    gens = [np.random.Generator(np.random.PCG64(s)) for s in seeds]
    if opts.likert is None:
        v = [p.sigma**2, p.sd_worker**2, p.sd_worker_slope**2, p.sd_item**2, p.sd_item_slope**2]
        st = fp.draw_stats(w, i, p.beta0, p.effect, v, gens)
    else:
        arrays = design.arrays()
        y = np.vstack([simulate_y(arrays, params, 1, g, likert=opts.likert) for g in gens])
        # layout rows: item, then worker, then system
        st = fp.stats_from_ratings(y.reshape(len(gens), i, w, 2).transpose(0, 2, 1, 3))
    rule = get_test(opts.test)
    fit = fit_balanced(st, REML=opts.REML, with_df=rule.df_method == "satterthwaite")
    scale = 2.0 / (params.x_values[1] - params.x_values[0])  # sum -> params' coding
    stat, df, p_boot = rule.balanced(st, fit, gens, opts.n_resamples)
    return _replicates(fit.beta1 * scale, fit.se * scale, stat, df, fit.converged, fit.singular,
                       np.zeros(st.n_sims, dtype=bool), opts, p_boot)


# ----------------------------------------------------------------------------------------
# general path through the engine protocol
# ----------------------------------------------------------------------------------------


def prepare(engine: str, spec: ModelSpec) -> PreparedModel:
    """The engine's prepared model of ``spec`` (structure built once, y swapped per replicate)."""
    return get_engine(engine).prepare(spec)  # type: ignore[arg-type]


_FIT_FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError)


def run_simulate(design: CrossedDesign, params: Params, seeds: Sequence[np.random.SeedSequence],
                 opts: PowerOptions, *, progress: bool = False, desc: str = "replicates",
                 checkpoint: BatchFile | None = None) -> Replicates:
    """Replicates simulated and refitted with ``opts.engine`` (module docstring).

    Replicates run in the fixed batches of :mod:`nlpower.powersim.batches`,
    each with its own prepared models; every fit starts at the true theta.
    With ``checkpoint`` (default: the current batch file, e.g. a grid cell's)
    each finished batch is stored and a resumed run reads it back -- same
    numbers bit for bit.  A replicate whose fit raises is recorded as failed;
    with ``on_failure="raise"`` the first one stops the run with a
    :class:`~nlpower.errors.FitError` naming it.
    """
    dm = build_model(design, params)
    arrays = design.arrays()
    r = len(seeds)
    rule = get_test(opts.test)
    j = dm.effect_index

    def batch(lo: int, hi: int) -> Replicates:
        n = hi - lo
        est, se, stat, df = (np.full(n, np.nan) for _ in range(4))
        p_boot = np.full(n, np.nan) if rule.bootstrap else None
        conv, sing, failed = (np.zeros(n, dtype=bool) for _ in range(3))
        state: GeneralState | None = None
        for i, k in enumerate(range(lo, hi)):
            gen = np.random.Generator(np.random.PCG64(seeds[k]))
            y = simulate_y(arrays, params, 1, gen, likert=opts.likert)[0]
            try:
                if state is None:
                    # prepared once per batch, with its first usable replicate's response
                    null_model = (prepare(opts.engine, dm.null_spec().with_response(y))
                                  if rule.needs_null else None)
                    model = prepare(opts.engine, dm.spec.with_response(y))
                    state = rule.general_state(dm.spec, model, null_model, j, dm.theta,
                                               opts.n_resamples)
                core = state.model.refit(y, REML=opts.REML, start=dm.theta)
                est[i], se[i] = float(core.beta[j]), math.sqrt(float(core.vcov_beta[j, j]))
                conv[i], sing[i] = bool(core.converged), bool(core.singular)
                est[i], se[i], stat[i], df[i], pb = rule.general(state, core, y, gen,
                                                                 _FIT_FAILURES)
                if p_boot is not None:
                    p_boot[i] = pb
            except _FIT_FAILURES as exc:
                if opts.on_failure == "raise":
                    raise FitError(
                        f"replicate {k} of {r} failed to fit with engine={opts.engine!r}: {exc} "
                        "(on_failure='raise'; use on_failure='ignore' or 'warn' to count failed "
                        "fits as non-detections)."
                    ) from exc
                failed[i] = True
            if bar is not None:
                bar.update(1)
        return _replicates(est, se, stat, df, conv, sing, failed, opts, p_boot)

    run = run_id("simulate", params=repr(params), options=options_identity(opts),
                 seeds=seeds_identity(seeds))
    bar = tqdm(total=r, desc=desc, unit="replicate", leave=False, file=sys.stderr) \
        if progress else None
    try:
        return run_batches(r, batch, run=run, checkpoint=checkpoint,
                           on_read=None if bar is None else bar.update)
    finally:
        if bar is not None:
            bar.close()


__all__ = ["balanced_exact", "prepare", "pvalues", "run_balanced", "run_simulate"]
