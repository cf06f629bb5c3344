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
    Any design: the structure is prepared once by the engine
    (:func:`nlpower.lmm.get_engine`), each replicate swaps the response and
    refits (warm start at the true theta).

Replicate ``r`` draws from child ``r`` of the run's seed, so results do not
depend on chunking, and the first ``m`` replicates of a run of ``N`` are those
of a run of ``m``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

from ..design import CrossedDesign
from ..errors import FitError, InputError
from ..lmm import PreparedModel, get_engine
from ..lmm.structure import ModelSpec
from ..params import LMMParams
from ..simulation import simulate_y
from . import fastpath as fp
from .balanced_fit import fit_balanced, null_deviance
from .models import Params, build_model
from .options import PowerOptions
from .result import Replicates

# ----------------------------------------------------------------------------------------
# the test on per-replicate statistics
# ----------------------------------------------------------------------------------------


def pvalues(statistic: np.ndarray, df: np.ndarray, test: str, alternative: str) -> np.ndarray:
    """p-values of Wald t/z statistics or signed LR roots.

    ``"satterthwaite"``: t distribution with ``df``; ``"z"`` and ``"lrt"``
    (signed root of the LR statistic, so the two-sided p is the chi^2(1)
    p-value): standard normal.
    """
    s = np.asarray(statistic, dtype=float)
    if test == "satterthwaite":
        dist_sf = lambda v: stats.t.sf(v, np.asarray(df, dtype=float))  # noqa: E731
    else:
        dist_sf = stats.norm.sf
    with np.errstate(invalid="ignore"):
        if alternative == "two-sided":
            return np.minimum(1.0, 2.0 * dist_sf(np.abs(s)))
        if alternative == "greater":
            return np.asarray(dist_sf(s))
        return np.asarray(dist_sf(-s))


def _replicates(estimate: np.ndarray, se: np.ndarray, statistic: np.ndarray, df: np.ndarray,
                converged: np.ndarray, singular: np.ndarray, failed: np.ndarray,
                opts: PowerOptions) -> Replicates:
    failed = failed | ~np.isfinite(statistic)
    p = np.where(failed, np.nan, pvalues(statistic, df, opts.test, opts.alternative))
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
    fit = fit_balanced(st, REML=opts.REML, with_df=(opts.test == "satterthwaite"))
    scale = 2.0 / (params.x_values[1] - params.x_values[0])  # sum -> params' coding
    if opts.test == "lrt":
        lr = np.maximum(null_deviance(st) - fit.deviance, 0.0)
        stat = np.sign(fit.beta1) * np.sqrt(lr)
    else:
        stat = fit.t
    df = fit.df if opts.test == "satterthwaite" else np.full(st.n_sims, np.inf)
    return _replicates(fit.beta1 * scale, fit.se * scale, stat, df, fit.converged, fit.singular,
                       np.zeros(st.n_sims, dtype=bool), opts)


# ----------------------------------------------------------------------------------------
# general path through the engine protocol
# ----------------------------------------------------------------------------------------


def prepare(engine: str, spec: ModelSpec) -> PreparedModel:
    """The engine's prepared model of ``spec`` (structure built once, y swapped per replicate)."""
    return get_engine(engine).prepare(spec)  # type: ignore[arg-type]


_FIT_FAILURES = (FitError, InputError, np.linalg.LinAlgError, FloatingPointError)


def run_simulate(design: CrossedDesign, params: Params, seeds: Sequence[np.random.SeedSequence],
                 opts: PowerOptions) -> Replicates:
    """Replicates simulated and refitted with ``opts.engine`` (module docstring).

    A replicate whose fit raises is recorded as failed; with
    ``on_failure="raise"`` the first one stops the run with a
    :class:`~nlpower.errors.FitError` naming it.
    """
    dm = build_model(design, params)
    arrays = design.arrays()

    def response(seed: np.random.SeedSequence) -> np.ndarray:
        gen = np.random.Generator(np.random.PCG64(seed))
        return simulate_y(arrays, params, 1, gen, likert=opts.likert)[0]

    r = len(seeds)
    j = dm.effect_index
    L = np.zeros(dm.spec.p)
    L[j] = 1.0
    est, se, stat, df = (np.full(r, np.nan) for _ in range(4))
    conv = np.zeros(r, dtype=bool)
    sing = np.zeros(r, dtype=bool)
    failed = np.zeros(r, dtype=bool)
    model: PreparedModel | None = None
    null_model: PreparedModel | None = None
    for k, s in enumerate(seeds):
        y = response(s)
        try:
            if model is None:
                # prepared once, with the first usable replicate's response (engines check it)
                null_model = (prepare(opts.engine, dm.null_spec().with_response(y))
                              if opts.test == "lrt" else None)
                model = prepare(opts.engine, dm.spec.with_response(y))
            core = model.refit(y, REML=opts.REML, start=dm.theta)
            b = float(core.beta[j])
            sd = math.sqrt(float(core.vcov_beta[j, j]))
            est[k], se[k] = b, sd
            conv[k], sing[k] = bool(core.converged), bool(core.singular)
            if opts.test == "lrt":
                assert null_model is not None
                core0 = null_model.refit(y, REML=False, start=dm.theta)
                lr = max(float(core0.deviance - core.deviance), 0.0)
                stat[k] = math.copysign(math.sqrt(lr), b)
                df[k] = math.inf
            else:
                stat[k] = b / sd
                df[k] = (float(model.satterthwaite_df(core, L)) if opts.test == "satterthwaite"
                         else math.inf)
        except _FIT_FAILURES as exc:
            if opts.on_failure == "raise":
                raise FitError(
                    f"replicate {k} of {r} failed to fit with engine={opts.engine!r}: {exc} "
                    "(on_failure='raise'; use on_failure='ignore' or 'warn' to count failed fits "
                    "as non-detections)."
                ) from exc
            failed[k] = True
    return _replicates(est, se, stat, df, conv, sing, failed, opts)


__all__ = ["balanced_exact", "prepare", "pvalues", "run_balanced", "run_simulate"]
