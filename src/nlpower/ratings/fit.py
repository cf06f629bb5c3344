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
from ..lmm import Engine, LmmFit, get_engine, model_frame, report_convergence
from ..lmm.structure import ModelSpec
from .io import Ratings
from .model import GROUPS, INTERACTIONS, ModelChoice, choose_model
from .result import RatingsFit

__all__ = ["fit_ratings"]


def fit_ratings(
    ratings: Ratings,
    *,
    baseline: str | None = None,
    coding: Coding = "sum",
    REML: bool = False,
    engine: EngineName = "native",
    model: RatingsModel | str = "auto",
    start: Any = None,
    control: dict[str, Any] | None = None,
    family: str = "gaussian",
    link: str | None = None,
) -> Any:
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
    model : {"auto", "paper"} or str, default "auto"
        ``"paper"``: always the formula above.  ``"auto"``: the same, except
        that a grouping factor nested in systems gets independent per-system
        variances.  Or an lme4 formula with response ``rating``, fixed part
        ``system`` and random terms of the intercept and ``system`` by
        ``worker``/``item``, e.g. ``"rating ~ system + (1 | worker) + (1 | item)"``
        when the paper's model is too rich for the data, or random intercepts of
        ``item:system``/``worker:system`` (many systems:
        ``"rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"``);
        parts it leaves out are reported as 0, marked as not in the model
        (:mod:`nlpower.ratings.model`, "Model choice" and "Interactions with system").
    start : array-like, optional
        Starting ``theta`` (lme4's order).
    control : dict, optional
        The engine's optimiser settings (see :func:`nlpower.lmm.lmer`).
    family : {"gaussian", "ordinal"}, default "gaussian"
        ``"ordinal"``: the same model as a cumulative logit mixed model of
        the integer ratings (:func:`nlpower.clmm`; ``engine="native"`` or
        ``"lme4"`` for R's ``ordinal::clmm``); returns an
        :class:`~nlpower.ordinal.ratings.OrdinalRatingsFit` with thresholds
        and latent-scale SDs in the layout of Tables 13-15.
    link : {"logit", "probit", "cloglog"}, optional
        The cumulative link of ``family="ordinal"`` (default ``"logit"``);
        not read by the Gaussian fit (giving one is an error).

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
        ``"half"`` with more than two systems, unknown engine or model, a
        formula with other columns, grouping factors or response, or without
        ``system``; a model the data cannot
        support (the message suggests a simpler ``model=`` formula).

    Examples
    --------
    >>> from nlpower.ratings import fit_ratings, read_ratings
    >>> r = read_ratings("fixtures/pilot_ratings.csv", scale=(1, 5))
    >>> fit_ratings(r, model="rating ~ system + (1 | worker) + (1 | item)")
    RatingsFit(systems=['B', 'A'], baseline='A', coding='sum', beta0=0.4937, sigma=0.2883, n=640)

    (Paths are relative to the repository root, where ``fixtures/`` is.)

    Warns
    -----
    ConvergenceWarning
        The optimiser did not converge.
    """
    eng = _checked_engine(ratings, engine, REML)
    choice = choose_model(ratings, baseline=baseline, coding=coding, model=model)
    if family != "gaussian":
        return _fit_ordinal(ratings, choice, family, eng.name, start, control, link)
    if link is not None:
        raise RatingsError(f"link={link!r} is for family='ordinal' (the cumulative link); the "
                           "Gaussian fit of ratings on [0, 1] has none. Drop link=.")
    fit, loadings = _fit(choice, eng, REML=REML, start=start, control=control)
    return _ratings_fit(ratings, choice, fit, loadings)


def _checked_engine(ratings: Any, engine: Any, REML: Any) -> Any:
    """:func:`fit_ratings`' boundary checks of ``ratings`` and ``REML``; the engine named."""
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
    return eng


def _fit_ordinal(ratings: Ratings, choice: ModelChoice, family: Any, engine: str, start: Any,
                 control: Any, link: str | None) -> Any:
    """``family="ordinal"``: the cumulative link fit (the engine's name: native, else its R
    reference ``ordinal::clmm``)."""
    if family != "ordinal":
        raise RatingsError(f"family must be 'gaussian' or 'ordinal'; got {family!r}.")
    if choice.interactions:
        g = choice.interactions[0]
        raise RatingsError(
            f"model: family={family!r} fits worker and item terms only; (1 | {g}:system) in "
            f"{choice.formula!r} is for the Gaussian fit. Drop it, or use family='gaussian'.")
    from ..ordinal.ratings import fit_ratings_ordinal  # lazy: the cumulative link fitter
    return fit_ratings_ordinal(ratings, choice, engine=engine, start=start, control=control,
                               link=link)


def _simpler(choice: ModelChoice) -> str:
    """The formula to suggest when a per-system term has more effects than there are ratings."""
    n, k = len(choice.data), len(choice.levels)
    # a factor nested in systems has no per-system slope to fit (its per-system variances are
    # the auto model's indicator terms, which a formula cannot name): one intercept variance
    parts = [f"(1 | {g})" if g in choice.reduced or k * choice.data[g].nunique() >= n
             else f"(system || {g})" for g in GROUPS]
    return "rating ~ system + " + " + ".join(parts)


def _fit(choice: ModelChoice, engine: Engine, *, REML: bool, start: Any,
         control: dict[str, Any] | None) -> tuple[LmmFit, dict[tuple[str, tuple[str, ...]], np.ndarray]]:
    """The chosen model through the engine, and each term's per-system loadings.

    Input errors become RatingsError; the loadings are :func:`_loadings`.
    """
    formula = choice.formula
    try:
        spec = model_frame(formula, choice.data, contrasts={"system": choice.coding})
        fit = engine.prepare(spec, data=choice.data).fit(REML=REML, start=start,
                                                         control=control)
    except InputError as exc:
        if isinstance(exc, RatingsError):
            raise
        hint = (" With items or workers nested in systems, model='auto' fits the identified "
                "per-system variances instead." if choice.model == "paper" else "")
        if "simpler term" in str(exc):
            hint += f" To fit a simpler model, pass a formula: model={_simpler(choice)!r}."
        raise RatingsError(f"fit_ratings: cannot fit {formula!r}: {exc}{hint}") from exc
    # singular fits are expected for this over-parameterised model: reported, not warned
    report_convergence(fit, {"singular": "ignore"}, where="fit_ratings", stacklevel=4)
    return fit, _loadings(spec, choice)


def _loadings(spec: ModelSpec, choice: ModelChoice) -> dict[tuple[str, tuple[str, ...]], np.ndarray]:
    """``{(group, cnames): L}``: row k of the (K, q) matrix L is the term's Z row under system k.

    A term's random effects b (covariance S) add ``L b`` to the ratings of a
    worker / item under the K systems, so they contribute ``L S L'`` to the
    total covariance of its per-system effects, whatever the term's columns
    (intercept, contrasts, indicators).  Z depends only on ``system`` here.
    """
    codes = choice.data["system"].cat.codes.to_numpy()
    first = np.array([int(np.flatnonzero(codes == j)[0]) for j in range(len(choice.levels))])
    return {(t.group, tuple(t.cnames)): np.asarray(t.Z, dtype=float)[first] for t in spec.re_terms}


def _ratings_fit(ratings: Ratings, choice: ModelChoice, fit: LmmFit,
                 loadings: dict[tuple[str, tuple[str, ...]], np.ndarray]) -> RatingsFit:
    """Intercept SDs and per-system covariances from the fit's terms.

    For each grouping factor: the ``(1 | g)`` terms give the intercept
    variance ``s_0^2``; every other term adds ``L S L'`` (:func:`_loadings`)
    to the per-system block ``Sigma``.  For the paper's model this is its
    intercept and its K x K block as fitted; for the reduced model the
    diagonal; for a formula given as ``model=`` whatever its terms imply, with
    absent parts 0 and listed in ``not_modelled``; a ``(1 | g:system)`` term's
    SD goes to ``interaction_sd`` (its per-system covariance ``tau^2 I`` is added
    by :meth:`RatingsFit.total_cov`).
    """
    levels = choice.levels
    k = len(levels)
    interaction_sd = _interaction_sds(fit)
    intercept_sd: dict[str, float] = {}
    system_cov: dict[str, pd.DataFrame] = {}
    not_modelled: list[str] = []
    for g, tag in zip(GROUPS, ("w", "i"), strict=True):
        terms = [t for t in fit.var_terms if t.group == g]    # g:system: interaction_sd
        ints = [t for t in terms if tuple(t.cnames) == ("(Intercept)",)]
        others = [t for t in terms if tuple(t.cnames) != ("(Intercept)",)]
        s0sq = sum(float(t.cov[0, 0]) for t in ints)
        cov = np.zeros((k, k))
        for t in others:
            L = loadings.get((g, tuple(t.cnames)))
            if L is None:  # pragma: no cover - engines name terms as model_frame does
                raise RatingsError(f"internal error: the fit's term {t.cnames} | {g} is not in "
                                   "the model frame")
            cov += L @ np.asarray(t.cov, dtype=float) @ L.T
        intercept_sd[g] = float(math.sqrt(max(s0sq, 0.0)))
        system_cov[g] = pd.DataFrame(cov, index=list(levels), columns=list(levels))
        if not ints:
            not_modelled.append(f"sigma0{tag}")
        if not others:
            not_modelled += [f"sigma{j + 1}{tag}" for j in range(k)]
    return RatingsFit(
        fit=fit, report=ratings.report, systems=tuple(levels), baseline=choice.baseline,
        coding=choice.coding, scale=ratings.scale, fixef=fit.fixef.copy(), sigma=float(fit.sigma),
        intercept_sd=intercept_sd, system_cov=system_cov, identified_pairs=choice.pairs,
        formula=choice.formula, reduced=choice.reduced, model=choice.model,
        not_modelled=tuple(not_modelled), data=getattr(choice, "data", None),
        interaction_sd=interaction_sd,
    )


def _interaction_sds(fit: LmmFit) -> dict[str, float]:
    """``{g: tau_g}`` of the fit's ``(1 | g:system)`` terms (either spelling; absent: no key)."""
    out: dict[str, float] = {}
    for t in fit.var_terms:
        g = INTERACTIONS.get(tuple(str(t.group).split(":")))
        if g is not None:
            out[g] = float(math.sqrt(max(float(t.cov[0, 0]), 0.0)))
    return {g: out[g] for g in GROUPS if g in out}
