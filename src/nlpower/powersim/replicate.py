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

import sys
from collections.abc import Sequence

import numpy as np
from tqdm.auto import tqdm

from ..design import CrossedDesign
from ..grid.batchfile import BatchFile
from ..params import LMMParams
from ..simulation import simulate_y
from . import fastpath as fp
from .balanced_fit import fit_balanced
from .batches import options_identity, run_batches, run_id, seeds_identity
from .loop import (
    FIT_FAILURES,
    EngineAnalysis,
    GaussianRatings,
    prepare,
    replicate_batch,
    replicates,
)
from .models import Params, build_model
from .options import PowerOptions
from .result import Replicates
from .rules import get_test


def pvalues(statistic: np.ndarray, df: np.ndarray, test: str, alternative: str) -> np.ndarray:
    """p-values of Wald t/z statistics or signed LR roots (:meth:`TestRule.pvalue`)."""
    return get_test(test).pvalue(statistic, df, alternative)


_replicates = replicates


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
    return balanced_replicates(st, params.x_values, gens, opts)


def balanced_replicates(st: fp.BalancedStats, x_values: tuple[float, float],
                        gens: Sequence[np.random.Generator], opts: PowerOptions) -> Replicates:
    """The balanced analysis of every replicate at once: closed-form fits, then the test rule.

    ``st``: the replicates' sufficient statistics (drawn directly, or from
    simulated ratings); ``x_values``: the coding the estimates are reported
    in; ``gens``: each replicate's generator (a bootstrap test continues it).
    """
    rule = get_test(opts.test)
    fit = fit_balanced(st, REML=opts.REML, with_df=rule.df_method == "satterthwaite")
    scale = 2.0 / (x_values[1] - x_values[0])  # sum -> the reported coding
    stat, df, p_boot = rule.balanced(st, fit, gens, opts.n_resamples)
    return replicates(fit.beta1 * scale, fit.se * scale, stat, df, fit.converged, fit.singular,
                      np.zeros(st.n_sims, dtype=bool), opts, p_boot)


# ----------------------------------------------------------------------------------------
# general path through the engine protocol
# ----------------------------------------------------------------------------------------


_FIT_FAILURES = FIT_FAILURES


def run_simulate(design: CrossedDesign, params: Params, seeds: Sequence[np.random.SeedSequence],
                 opts: PowerOptions, *, progress: bool = False, desc: str = "replicates",
                 checkpoint: BatchFile | None = None) -> Replicates:
    """Replicates simulated and refitted with ``opts.engine`` (module docstring).

    The one replicate loop (:func:`nlpower.powersim.loop.replicate_batch`)
    with the crossed model's ratings as the generator and the design's model,
    prepared by the engine, as the analysis; replicates run in the fixed
    batches of :mod:`nlpower.powersim.batches`, each with its own prepared
    models; every fit starts at the true theta.  With ``checkpoint``
    (default: the current batch file, e.g. a grid cell's) each finished batch
    is stored and a resumed run reads it back -- same numbers bit for bit.  A
    replicate whose fit raises is recorded as failed; with
    ``on_failure="raise"`` the first one stops the run with a
    :class:`~nlpower.errors.FitError` naming it.
    """
    dm = build_model(design, params)
    generator = GaussianRatings(design.arrays(), params, opts.likert)
    analysis = EngineAnalysis(dm, get_test(opts.test), opts, f"with engine={opts.engine!r}")
    r = len(seeds)
    run = run_id("simulate", params=repr(params), options=options_identity(opts),
                 seeds=seeds_identity(seeds))
    bar = tqdm(total=r, desc=desc, unit="replicate", leave=False, file=sys.stderr) \
        if progress else None
    on_each = None if bar is None else bar.update
    try:
        return run_batches(r, lambda lo, hi: replicate_batch(generator, analysis, opts, lo, hi,
                                                             n_sims=r, seeds=seeds,
                                                             on_each=on_each),
                           run=run, checkpoint=checkpoint, on_read=on_each)
    finally:
        if bar is not None:
            bar.close()


__all__ = ["balanced_exact", "balanced_replicates", "prepare", "pvalues", "run_balanced",
           "run_simulate"]
