"""``sequential_power``: the simulated operating characteristics of a batched crossed study."""

from __future__ import annotations

import os
from typing import Any

from .._choices import Backend, OnError
from .._rng import RNGLike
from .._validation import check_int, check_real
from ..design import CrossedDesign
from ..errors import InputError
from ..grid import GridResult, RunOptions, run_grid
from ..grid.axes import axis_values
from .design import GroupSequentialDesign
from .outcomes import check_outcome, outcome_of
from .simulate import SequentialProblem, look_items

__all__ = ["check_sequential", "sequential_power"]


def check_sequential(design: CrossedDesign, boundaries: GroupSequentialDesign) -> None:
    """Refuse a design or boundaries a simulated sequential study cannot use."""
    if not isinstance(design, CrossedDesign):
        raise InputError(f"design must be a CrossedDesign; got {type(design).__name__}.")
    if design.n_systems != 2:
        raise InputError(f"a sequential study compares two systems; the design has {design.n_systems}.")
    if not isinstance(boundaries, GroupSequentialDesign):
        raise InputError("boundaries must be a GroupSequentialDesign from "
                         f"nlpower.sequential.group_sequential; got {type(boundaries).__name__}.")
    items = look_items(design.n_items, boundaries.information_rates)
    if len(set(items.tolist())) < items.size:
        raise InputError(f"design has {design.n_items} items, too few for {boundaries.looks} looks "
                         f"at fractions {boundaries.information_rates.round(3).tolist()} "
                         f"(items per look {items.tolist()}); add items or use fewer looks.")


def sequential_power(
    design: CrossedDesign,
    params: Any,
    boundaries: GroupSequentialDesign,
    *,
    effect: Any = 0.0,
    formula: str | None = None,
    analysis: str | None = None,
    n_sims: int = 500,
    rng: RNGLike = None,
    n_jobs: int = 1,
    backend: Backend = "loky",
    checkpoint: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_error: OnError = "raise",
) -> GridResult:
    """Type I error, power and expected cost of a group-sequential crossed rating study.

    The study buys the items of ``design`` in batches, looking after each at
    the planned information fractions of ``boundaries`` (items
    ``round(n_items * t_k)``); every worker of the design rates the items of
    every batch.  Each replicate is simulated from ``params`` with the effect
    set to each value of ``effect`` (a grid axis), fitted at every look
    (Satterthwaite t turned into z) and stopped at the first boundary
    crossed.  The same replicates give the single-look test at all items
    (``fixed_power``, ``fixed_rejection_rate``).

    Every outcome of :func:`nlpower.power` can be bought in batches, chosen
    by the type of ``params``: Gaussian ratings (``LMMParams``), Likert
    ratings (:class:`~nlpower.outcomes.LikertParams`; ``analysis="lmm"``,
    the paper's LMM of the rescaled ratings, or ``"clmm"``, Wald z) and
    repeated head-to-head judgements
    (:class:`~nlpower.outcomes.HeadToHeadParams`; the binomial GLMM's Wald
    z) -- the latter two on a fully crossed, paired design, each look
    analysed as ``nlpower.power`` analyses that outcome
    (:mod:`nlpower.sequential.outcomes`).

    Parameters
    ----------
    design : CrossedDesign
        The study at its largest (two systems).
    params : LMMParams, LikertParams or HeadToHeadParams
        Model parameters (e.g. ``nlpower.presets.high_variance``,
        ``LikertParams.from_preset(preset, levels=5)``); ``effect`` replaces
        theirs (latent scale for Likert, logit scale for head-to-head).
    boundaries : GroupSequentialDesign
        From :func:`group_sequential` (one-sided: the effect is positive under the alternative).
    effect : float or list
        Effects to simulate (0: the Type I error).
    formula : str, optional
        The fitted model of Gaussian ratings (default: the design's maximal
        crossed model).
    analysis : {"lmm", "clmm"}, optional
        The analysis of Likert ratings (default ``"lmm"``); head-to-head
        judgements are analysed by ``"glmer"``.
    n_sims : int
        Replicates per effect.
    rng, n_jobs, backend, checkpoint, progress, on_error
        As for :func:`nlpower.grid.run_grid`.

    Returns
    -------
    GridResult
        One row per effect: ``power`` (sign-correct rejections), ``rejection_rate``,
        ``fixed_power``, ``expected_items`` / ``max_items``, ``expected_ratings``,
        stopping shares per look.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets
    >>> from nlpower.sequential import group_sequential
    >>> g = sequential_power(CrossedDesign(4, 12), presets.high_variance(0.0),
    ...                      group_sequential(2), effect=0.3, n_sims=3, rng=1, progress=False)
    >>> int(g.to_frame()["max_items"].iloc[0])
    12

    Five-point Likert ratings, analysed at each look by the paper's LMM:

    >>> from nlpower.outcomes import LikertParams
    >>> lp = LikertParams.from_preset(presets.low_variance(0.0), levels=5)
    >>> g = sequential_power(CrossedDesign(4, 12), lp, group_sequential(2), effect=0.1,
    ...                      n_sims=20, rng=1, progress=False)
    >>> int(g.to_frame()["max_ratings"].iloc[0])
    96
    """
    from ..powersim.models import design_formula

    check_sequential(design, boundaries)
    n_sims = check_int("n_sims", n_sims, min=1)
    analysis = check_outcome(design, params, analysis, formula)
    _check_effects(axis_values("effect", effect), boundaries)
    if formula is None:
        formula = design_formula(design, params if outcome_of(params) == "gaussian" else None)
    problem = SequentialProblem(design, params, boundaries, formula, n_sims=n_sims,
                                analysis=analysis)
    run = RunOptions(n_jobs=n_jobs, backend=backend, checkpoint=checkpoint, progress=progress,
                     on_error=on_error)
    return run_grid(problem, {"effect": effect}, rng=rng, run=run, desc="sequential power")


def _check_effects(effects: Any, boundaries: Any) -> None:
    """Refuse a non-number, or a negative effect for a one-sided design (it tests for a positive one)."""
    for e in effects:
        check_real("effect", e)
        if boundaries.sided == 1 and float(e) < 0:
            raise InputError(f"effect={e!r}: a one-sided design tests for a positive effect; "
                             "give effects >= 0 or use sided=2.")
