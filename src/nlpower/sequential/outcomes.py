"""Each look's statistic for Likert ratings and head-to-head judgements, analysed as ``power`` does.

On a fully crossed, paired design the rows of the layout (and of the
head-to-head pair frame) are ordered by item, so the first ``m`` items of a
replicate are a prefix of its rows, and a look at them is the design
``CrossedDesign(n_workers, m)``.  Each replicate is drawn once at the full
design with its own child seed; each look then analyses the prefix of every
replicate with the outcome's own analysis:

Likert (:class:`~nlpower.outcomes.LikertParams`)
    ``analysis="lmm"`` (default, the paper's): the LMM of the ratings
    rescaled to [0, 1], Satterthwaite t (the balanced fitter, all replicates
    at once); ``"clmm"``: the cumulative link mixed model, Wald z -- both
    through :func:`nlpower.outcomes.power.analyse`, the functions behind
    ``nlpower.power(..., outcome="likert")``.
Head-to-head (:class:`~nlpower.outcomes.HeadToHeadParams`)
    The binomial GLMM of the decisive judgements (draws weight 0), Wald z of
    the intercept, each fit started at the truth -- as
    ``nlpower.power(..., outcome="preference")``.

A t statistic becomes the z with the same one-sided p-value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from ..design import CrossedDesign
from ..errors import DesignError, InputError

__all__ = ["LookStatistics", "gaussian_balanced", "look_statistics", "outcome_of"]


@dataclass(frozen=True)
class LookStatistics:
    """Every replicate's estimate and z statistic at every look (``(n_sims, looks)`` arrays)."""

    estimate: np.ndarray
    z: np.ndarray
    truth: float             # the true effect on the estimates' scale
    ratings: np.ndarray      # ratings (judgements) bought by each look


def outcome_of(params: Any) -> str:
    """``"gaussian"``, ``"likert"`` or ``"preference"`` from the type of ``params``."""
    from ..outcomes.headtohead import HeadToHeadParams
    from ..outcomes.likert import LikertParams
    if isinstance(params, LikertParams):
        return "likert"
    if isinstance(params, HeadToHeadParams):
        return "preference"
    return "gaussian"


def check_outcome(design: CrossedDesign, params: Any, analysis: str | None,
                  formula: str | None) -> str:
    """Refuse what a Likert or head-to-head sequential study cannot do; its analysis."""
    outcome = outcome_of(params)
    if outcome == "gaussian":
        if analysis not in (None, "lmm"):
            raise InputError(f"analysis={analysis!r} is for Likert parameters; Gaussian ratings "
                             "are analysed by the LMM (formula= changes its model).")
        return "lmm"
    if formula is not None:
        raise InputError(f"formula= sets the Gaussian LMM; {outcome} outcomes are analysed as "
                         "nlpower.power analyses them. Leave formula=None.")
    if not design.is_balanced_crossed:
        raise DesignError(f"a sequential {outcome} study looks at the first items of a fully "
                          f"crossed, paired design (every worker rates every item); got "
                          f"{design!r}. Use CrossedDesign(n_workers, n_items).")
    allowed = ("lmm", "clmm") if outcome == "likert" else ("glmer",)
    a = allowed[0] if analysis is None else analysis
    if a not in allowed:
        raise InputError(f"analysis must be one of {', '.join(map(repr, allowed))} for a "
                         f"{outcome} outcome; got {analysis!r}.")
    return a


def look_statistics(design: CrossedDesign, params: Any, items: np.ndarray, analysis: str,
                    n_sims: int, rng: np.random.SeedSequence) -> LookStatistics:
    """Estimates and z statistics of ``n_sims`` replicates at the looks of ``items`` items."""
    if outcome_of(params) == "likert":
        return _likert(design, params, items, analysis, n_sims, rng)
    return _preference(design, params, items, n_sims, rng)


def gaussian_balanced(design: CrossedDesign, params: Any, y: np.ndarray,
                      items: np.ndarray) -> LookStatistics:
    """The maximal crossed LMM (REML, Satterthwaite t as z) at every look, all replicates at once.

    ``y`` holds the replicates' ratings in layout order (item, worker,
    system) of a fully crossed, paired ``design``; each look's prefix is fitted by
    the exact balanced fitter (:mod:`nlpower.powersim.balanced_fit`), which
    equals the general engine's refit of
    ``rating ~ x + (1 + x || worker) + (1 + x || item)`` (t to ~1e-6).
    """
    from ..outcomes.analyses import ANALYSES
    from ..powersim.options import power_options

    per_item = 2 * design.n_workers
    opts = power_options(n_sims=y.shape[0], test="satterthwaite", REML=True,
                         keep_replicates=False)
    est, z = np.empty((y.shape[0], items.size)), np.empty((y.shape[0], items.size))
    for k, m in enumerate(items):
        look = CrossedDesign(design.n_workers, int(m), systems=design.system_names)
        reps = ANALYSES["lmm"](look, y[:, :int(m) * per_item], params, opts)
        est[:, k], z[:, k] = reps.estimate, z_from_t(reps.statistic, reps.df)
    return LookStatistics(est, z, float(params.effect), items * per_item)


def z_from_t(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """The z with the same one-sided p-value as ``t`` on ``df`` (inf: z itself); NaN if unknown."""
    t, df = np.asarray(t, dtype=float), np.asarray(df, dtype=float)
    ok = np.isfinite(t) & (df > 0)
    out = np.full(t.shape, np.nan)
    out[ok] = np.where(np.isinf(df[ok]), t[ok], stats.norm.isf(stats.t.sf(t[ok], df[ok])))
    return out


def _likert(design: CrossedDesign, params: Any, items: np.ndarray, analysis: str, n_sims: int,
            rng: np.random.SeedSequence) -> LookStatistics:
    from ..outcomes.power import LIKERT_ANALYSES, _simulate
    from ..powersim.options import power_options

    y = _simulate(design, params, rng, n_sims)         # (n_sims, ratings), rows by item
    per_item = 2 * design.n_workers
    opts = power_options(outcome="likert", analysis=analysis, n_sims=n_sims,
                         keep_replicates=False)
    an = LIKERT_ANALYSES[analysis]
    est, z = np.empty((n_sims, items.size)), np.empty((n_sims, items.size))
    for k, m in enumerate(items):
        look = CrossedDesign(design.n_workers, int(m), systems=design.system_names)
        reps = an.replicates(look, y[:, :m * per_item], params, opts)
        est[:, k], z[:, k] = reps.estimate, z_from_t(reps.statistic, reps.df)
    return LookStatistics(est, z, float(an.truth(params)), items * per_item)


def _preference(design: CrossedDesign, params: Any, items: np.ndarray, n_sims: int,
                rng: np.random.SeedSequence) -> LookStatistics:
    from ..glmm.model import GlmmModel
    from ..lmm.family import Binomial
    from ..lmm.frame import model_frame
    from ..outcomes.headtohead import _FIT_FAILURES, _draw, _formula, _pairs, _truth

    w, i, pos, frame = _pairs(design)                    # one row per (item, worker), by item
    draws = [_draw(w, i, pos, design.n_workers, design.n_items, params,
                   np.random.Generator(np.random.PCG64(s))) for s in rng.spawn(n_sims)]
    est, z = np.full((n_sims, items.size), np.nan), np.full((n_sims, items.size), np.nan)
    for k, m in enumerate(items):
        rows = int(m) * design.n_workers
        sub = frame.iloc[:rows]
        spec = model_frame(_formula(params), sub.assign(win=np.arange(rows) % 2))
        model = GlmmModel(spec, Binomial())
        start = _truth(model, params)
        for r, (win, draw) in enumerate(draws):
            try:
                core = model.refit(win[:rows].astype(float), start=start,
                                   weights=(~draw[:rows]).astype(float))
            except _FIT_FAILURES:
                continue                                  # NaN: counted as failed
            b, se = float(core.beta[0]), float(core.se[0])
            est[r, k] = b
            z[r, k] = b / se if se > 0 and math.isfinite(se) else math.nan
    return LookStatistics(est, z, float(params.effect), items * design.n_workers)
