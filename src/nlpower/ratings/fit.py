"""Fit Card et al.'s (2020) model to rating data (Tables 13-15 of the paper).

``fit_ratings`` = :func:`~nlpower.ratings.model.choose_model` (level order,
baseline, formula) -> an engine from :func:`nlpower.lmm.get_engine` -> the
variance components read into a :class:`~nlpower.ratings.result.RatingsFit`.
The model and its choices are described in :mod:`nlpower.ratings.model`,
what the fit identifies in :mod:`nlpower.ratings.result`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .._choices import Coding, EngineName, RatingsModel
from ..errors import InputError, RatingsError
from ..lmm import LmmFit, get_engine, model_frame, warn_diagnostics
from .io import Ratings
from .model import GROUPS, ModelChoice, choose_model
from .result import RatingsFit

__all__ = ["fit_ratings"]


def fit_ratings(
    ratings: Ratings,
    *,
    baseline: str | None = None,
    coding: Coding = "sum",
    REML: bool = False,
    engine: EngineName = "native",
    model: RatingsModel = "auto",
    start: Any = None,
    control: dict[str, Any] | None = None,
) -> RatingsFit:
    """Fit ``rating ~ system + (system || worker) + (system || item)`` (Card et al. 2020).

    Parameters
    ----------
    ratings : Ratings
        From :func:`read_ratings` (ratings already on [0, 1]).
    baseline : str, optional
        The system without its own coefficient (module docstring).  Default:
        the first system label in sorted order.
    coding : {"sum", "half", "treatment"}, default "sum"
        Contrast for ``system`` in the fixed part: ``"sum"`` is the paper's
        (R ``contr.sum``; effects are deviations from the grand mean; with two
        systems, half the mean difference); ``"half"`` (two systems only)
        gives the mean difference; ``"treatment"`` differences from the
        baseline.  The random part is the same for every coding.
    REML : bool, default False
        Maximum likelihood, like the paper.
    engine : {"native", "lme4"}
        The fitter (:func:`nlpower.lmm.get_engine`).
    model : {"auto", "paper"}, default "auto"
        ``"paper"``: always the formula above.  ``"auto"``: the same, except
        that a grouping factor nested in systems gets independent per-system
        variances (module docstring, "Model choice").
    start : array-like, optional
        Starting ``theta`` for the native engine (lme4's order).
    control : dict, optional
        Optimiser settings for the native engine (see :func:`nlpower.lmm.lmer`).

    Returns
    -------
    RatingsFit

    Notes
    -----
    Checked against lme4 1.1-31 on InstEval (``tests/reference/insteval_fit_ratings.R``).
    Singular fits are expected for this over-parameterised model; they are
    reported in :meth:`RatingsFit.summary` instead of warned about.

    Raises
    ------
    RatingsError
        ``ratings`` not a :class:`Ratings`, unknown baseline, unknown coding,
        ``"half"`` with more than two systems, unknown engine or model,
        ``start`` with ``engine="lme4"``, a model the data cannot support.

    Warns
    -----
    ConvergenceWarning
        The optimiser did not converge.
    """
    if not isinstance(ratings, Ratings):
        hint = (" Read a data frame with nlpower.read_ratings(df, ..., scale=(lo, hi)) first, so "
                "that columns are checked and ratings rescaled to [0, 1]."
                if isinstance(ratings, pd.DataFrame) else "")
        raise RatingsError(
            f"ratings must be a Ratings object from read_ratings; got {type(ratings).__name__}.{hint}"
        )
    try:
        eng = get_engine(engine)
    except InputError as exc:
        raise RatingsError(str(exc)) from None
    if not isinstance(REML, bool):
        raise RatingsError(f"REML must be True or False; got {REML!r}.")
    if start is not None and eng.name != "native":
        raise RatingsError("start= is only supported with engine='native'.")
    choice = choose_model(ratings, baseline=baseline, coding=coding, model=model)
    fit = _fit(choice, eng.name, REML=REML, start=start, control=control, model=model)
    return _ratings_fit(ratings, choice, fit)


def _fit(choice: ModelChoice, engine: EngineName, *, REML: bool, start: Any,
         control: dict[str, Any] | None, model: str) -> LmmFit:
    """The chosen model through the engine; input errors as RatingsError."""
    formula = choice.formula
    try:
        spec = model_frame(formula, choice.data, contrasts={"system": choice.coding})
        options = {"data": choice.data} if engine == "lme4" else {}
        fit = get_engine(engine).prepare(spec, **options).fit(REML=REML, start=start,
                                                              control=control)
    except InputError as exc:
        if isinstance(exc, RatingsError):
            raise
        hint = (" With items or workers nested in systems, model='auto' fits the identified "
                "per-system variances instead." if model == "paper" else "")
        raise RatingsError(f"fit_ratings: cannot fit {formula!r}: {exc}{hint}") from exc
    # singular fits are expected for this over-parameterised model: reported, not warned
    warn_diagnostics(fit, where="fit_ratings", singular=False, stacklevel=4)
    return fit


def _ratings_fit(ratings: Ratings, choice: ModelChoice, fit: LmmFit) -> RatingsFit:
    """Read the intercept SDs and per-system covariances out of the fit's terms."""
    levels, reduced, indicators = choice.levels, choice.reduced, choice.indicators
    k = len(levels)
    intercept_sd: dict[str, float] = {}
    system_cov: dict[str, pd.DataFrame] = {}
    for g in GROUPS:
        terms = [t for t in fit.var_terms if t.group == g]
        if g in reduced:
            by_name = {t.cnames[0]: float(t.cov[0, 0]) for t in terms if len(t.cnames) == 1}
            if sorted(by_name) != sorted(indicators):  # pragma: no cover - formula contract
                raise RatingsError(f"internal error: unexpected terms for {g}: {sorted(by_name)}")
            intercept_sd[g] = 0.0
            cov = np.diag([by_name[n] for n in indicators])
        else:
            ints = [t for t in terms if tuple(t.cnames) == ("(Intercept)",)]
            blocks = [t for t in terms if len(t.cnames) == k]
            if len(ints) != 1 or len(blocks) != 1:  # pragma: no cover - formula contract
                raise RatingsError(
                    f"internal error: unexpected random-effects terms for {g}: "
                    f"{[tuple(t.cnames) for t in terms]}"
                )
            intercept_sd[g] = float(math.sqrt(max(float(ints[0].cov[0, 0]), 0.0)))
            cov = np.asarray(blocks[0].cov, dtype=float)
        system_cov[g] = pd.DataFrame(cov, index=list(levels), columns=list(levels))
    return RatingsFit(
        fit=fit, report=ratings.report, systems=tuple(levels), baseline=choice.baseline,
        coding=choice.coding, scale=ratings.scale, fixef=fit.fixef.copy(), sigma=float(fit.sigma),
        intercept_sd=intercept_sd, system_cov=system_cov, identified_pairs=choice.pairs,
        formula=choice.formula, reduced=reduced,
    )
