"""Which mixed model :func:`~nlpower.ratings.fit_ratings` fits, and how the data are coded for it.

The model (App. H.3, with several systems as in Tables 13-15)::

    rating ~ system + (system || worker) + (system || item)        (ML, REML = FALSE)

with ``system`` a factor under sum contrasts.  lme4 expands ``(system || g)``
into ``(1 | g) + (0 + system | g)``: a random intercept plus an *unstructured*
K x K covariance over the K per-system indicators (this is why Tables 14-15
list an intercept SD and one SD per system).  nlpower's formula layer does the
same (``docs/formula.md``).

Level order and the baseline
----------------------------
``Ratings`` keeps the system labels in sorted order.  ``fit_ratings`` picks a
*baseline* (default: the first label in that order) and orders the factor
levels as

* ``coding="sum"`` or ``"half"``: the other systems in sorted order, then the
  baseline *last* -- R's ``contr.sum`` gives the last level -1 in every
  contrast column, so the baseline is the one system without its own
  coefficient.  ``beta_k`` (``k = 1..K-1``) is the mean of the k-th
  non-baseline system minus the grand mean (the unweighted mean of the K
  system means; Table 13's caption: "each coefficient can be interpreted as
  the difference from the grand mean"); the baseline's deviation is
  ``-(beta_1 + ... + beta_{K-1})``.  With two systems ``beta_1`` is half of
  mean(other) - mean(baseline) (the paper's +-1 coding); ``"half"`` (two
  systems only) gives the full difference.
* ``coding="treatment"``: the baseline *first* (R's ``contr.treatment``);
  ``beta_k`` is the k-th other system's mean minus the baseline mean.

The per-system SDs ``sigma_kw``/``sigma_ki`` of Tables 14-15 are listed in the
same level order (``k = 1..K``; under sum coding ``sigma_K`` is the baseline's).
:meth:`RatingsFit.legend` prints the mapping.  Identifiability of the
variance split: :mod:`nlpower.ratings.result`.

Model choice (``model=``)
-------------------------
``model="auto"`` (default) fits the paper's formula, except for a grouping
factor whose levels are each rated under a single system (items *nested* in
systems, or workers who each saw one system).  For such a factor the paper's
term has K + 1 variance parameters and K(K-1)/2 correlations of which only the
K per-system totals are identified -- and with few ratings per level lme4
refuses it outright ("number of observations <= number of random effects").
There ``"auto"`` fits the identified model instead: independent per-system
variances ``(0 + is_sys1 + ... + is_sysK || g)`` (numeric indicators of the
fitted levels), reported in the tables as intercept SD 0 and one SD per
system.  That point is on the paper's model's ridge of equal likelihood (its
maximum likelihood is the same), so the tables remain a valid ML fit of the
paper's model.  ``model="paper"`` always fits the paper's formula (what lme4
does with it), e.g. to compare with lme4 on nested data.

``model="<formula>"`` fits an lme4 formula of your own, for when the paper's
model is too rich for the data ("use a simpler term"): its response must be
``rating``, its fixed part ``system`` (with the intercept), its random terms
may use ``system`` and the intercept, grouped by ``worker`` or ``item``, e.g.
``rating ~ system + (1 | worker) + (1 | item)`` or
``rating ~ system + (1 | worker) + (system || item)``.  A grouping factor
absent from the formula, or a part of it absent (no ``(1 | g)``, no per-system
term), is reported in the tables as 0, marked as not in the model.

Interactions with ``system``
----------------------------
A random intercept of ``item:system`` (also written ``system:item``, or
``(1 | item/system)`` for ``(1 | item) + (1 | item:system)``) or of
``worker:system`` is accepted: each system's output of a segment is its own
level, with SD ``tau``.  It is the usual model of a many-system pilot (20 MT
systems, every segment under every system), as it has one variance however
many systems there are::

    rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)

It is the paper's ``(system || item)`` with the per-system block
``Sigma = tau^2 I``: exchangeable, independent item-by-system deviations, so
the total covariance of an item's per-system effects is
``s_0^2 J + tau^2 I``.  The tables report ``tau`` as ``sigma_item:system``
(``sigma_worker:system``); planning maps it exactly (``docs/pilot.md``).

Refused, each with what to do instead: a slope in an interaction term
(``(system | item:system)``); an interaction together with a per-system term of
the same factor (``(system || item) + (1 | item:system)``: ``tau^2`` adds to the
diagonal of an unstructured block and is not identified); an interaction whose
cells hold one rating each (its variance is the residual's); one that equals its
factor because the factor is nested in systems; ``worker:item`` (with one
rating per worker-item pair it is the residual; otherwise it is a component
the planner has no place for); any other grouping factor (``item:rating``,
``system``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._choices import Coding, RatingsModel
from .._validation import closest_name
from ..coding import check_coding
from ..convert import FORMULA
from ..errors import FormulaError, RatingsError
from ..formula import Formula, parse
from .io import Ratings, ratings_choice

__all__ = ["FORMULA", "GROUPS", "INTERACTIONS", "ModelChoice", "check_formula", "choose_model",
           "contrast_rows", "identified_pairs", "interactions", "pools_systems"]

GROUPS = ("worker", "item")
#: Columns of :attr:`Ratings.data` a formula given as ``model=`` may use.
COLUMNS = ("rating", "system", "worker", "item")
#: A simpler model to suggest when the paper's is too rich for the data.
SIMPLE_FORMULA = "rating ~ system + (1 | worker) + (1 | item)"


def check_formula(model: str) -> Formula:
    """Parse and check a formula given as ``model=`` (module docstring, "Model choice").

    Raises
    ------
    RatingsError
        Unparseable formula, a response other than ``rating``, no ``system``
        in the fixed part, other fixed terms or no intercept, unknown columns,
        grouping factors other than ``worker``, ``item``, ``worker:system`` and
        ``item:system``, a slope in an interaction term, an interaction with a
        per-system term of the same factor, no random term.
    """
    example = f" E.g. model={SIMPLE_FORMULA!r}."
    try:
        f = parse(model)
    except FormulaError as exc:
        raise RatingsError(f"model: cannot parse the formula {model!r}: {exc}") from None
    unknown = [v for v in f.variables if v not in COLUMNS]
    if unknown:
        hints = [f"{v!r}" + (f" (did you mean {c!r}?)" if (c := closest_name(v, list(COLUMNS)))
                             else "") for v in unknown]
        raise RatingsError(
            f"model: unknown column{'s' if len(unknown) > 1 else ''} {', '.join(hints)} in "
            f"{model!r}. After read_ratings the columns are rating, system, worker and item, "
            f"whatever they were called in the file.{example}"
        )
    if f.response != "rating":
        raise RatingsError(f"model: the response must be rating (the rescaled ratings); got "
                           f"{f.response!r} in {model!r}.{example}")
    if ("system",) not in f.fixed.terms:
        raise RatingsError(f"model: the fixed part must contain system (the comparison the fit "
                           f"is for); got {model!r}.{example}")
    if f.fixed.terms != (("system",),) or not f.fixed.intercept:
        raise RatingsError(
            f"model: the fixed part must be the intercept plus system ('rating ~ system + ...'), "
            f"as in the paper's tables; got {f.fixed} in {model!r}.{example}"
        )
    if not f.random:
        raise RatingsError(f"model: {model!r} has no random term; add (1 | worker) and/or "
                           f"(1 | item).{example}")
    for term in f.random:
        _check_group(term, model, example)
        if any(v != "system" for v in term.expr.variables):
            raise RatingsError(
                f"model: random term {term} in {model!r} uses "
                f"{', '.join(repr(v) for v in term.expr.variables if v != 'system')}; a random "
                f"term may hold the intercept and system only.{example}"
            )
    for g in interactions(f):
        slopes = [t for t in f.random for e in t.expand()
                  if e.group == (g,) and "system" in e.expr.variables]
        if slopes:
            raise RatingsError(
                f"model: {slopes[0]} and (1 | {g}:system) in {model!r} both give each {g} its own "
                f"effect per system: the {g}:system variance adds to the diagonal of the "
                f"per-system {g} block and is not identified. Keep one: "
                f"(1 | {g}) + (1 | {g}:system) (one SD for all systems, the many-system model) or "
                f"(system || {g}) (the paper's).")
    return f


#: lme4's spellings of an interaction of a grouping factor with ``system`` (either order).
INTERACTIONS: dict[tuple[str, ...], str] = {
    **{(g, "system"): g for g in GROUPS}, **{("system", g): g for g in GROUPS}}


def interactions(f: Formula) -> tuple[str, ...]:
    """The grouping factors (``worker``, ``item``) of a checked formula's ``g:system`` terms."""
    found = [INTERACTIONS[e.group] for t in f.random for e in t.expand() if e.group in INTERACTIONS]
    return tuple(g for g in GROUPS if g in found)


def _check_group(term: Any, model: str, example: str) -> None:
    """A random term's grouping: ``worker``, ``item``, or ``g:system`` / ``g/system`` with an
    intercept only (module docstring, "Interactions with system")."""
    group = tuple(term.group)
    if not term.nested and len(group) == 1 and group[0] in GROUPS:
        return
    if group in INTERACTIONS and (not term.nested or group[1] == "system"):
        g = INTERACTIONS[group]
        if term.expr.terms or not term.expr.intercept:
            raise RatingsError(
                f"model: random term {term} in {model!r}: the {g}:system term has one level per "
                f"{g} and system, so it takes a random intercept only, (1 | {g}:system); the "
                f"per-system {g} effects it models are its intercepts.")
        return
    name = term.group_name
    if "rating" in group:
        why = "rating is the response, not a grouping factor"
    elif set(group) == {"worker", "item"}:
        why = ("a worker-by-item effect is a worker's reaction to one item: with one rating per "
               "(worker, item) pair it cannot be told from the residual, and with several (the "
               "pair rated under several systems) it is a component the power model has no "
               "place for; leave it in the residual (drop the term), or fit it with "
               "nlpower.lmer to describe the data")
    elif group == ("system",) or term.nested:
        why = ("system is the fixed effect compared; (1 | item/system) means (1 | item) + "
               "(1 | item:system)")
    else:
        why = "the grouping factors of rating data are worker and item"
    raise RatingsError(
        f"model: random term {term} in {model!r} is grouped by {name!r}; {why}. Grouping "
        f"factors allowed: worker, item, worker:system, item:system.{example}")


def check_interactions(data: pd.DataFrame, groups: tuple[str, ...], model: str) -> None:
    """Refuse a ``g:system`` term the data cannot identify (module docstring).

    Raises
    ------
    RatingsError
        Every (g, system) cell rated once (the variance is the residual's), or
        every level of g rated under one system (g:system is g).
    """
    for g in groups:
        n_cells = int(data.groupby([g, "system"], observed=True).ngroups)
        n_levels = int(data[g].nunique())
        if n_cells == n_levels and data["system"].nunique() > 1:
            raise RatingsError(
                f"model: (1 | {g}:system) in {model!r}: every {g} was rated under one system "
                f"({g}s nested in systems), so {g}:system has the same levels as {g} and its "
                f"variance cannot be told from the {g} variance. Drop (1 | {g}:system) and keep "
                f"(1 | {g}), or use model='auto' (one {g} variance per system).")
        if n_cells >= len(data):
            raise RatingsError(
                f"model: (1 | {g}:system) in {model!r}: each of the {n_cells} ({g}, system) "
                f"cells has one rating, so the {g}:system variance cannot be told from the "
                f"residual (lme4: the number of levels of each grouping factor must be < the "
                f"number of observations). Drop (1 | {g}:system) (its variance stays in "
                f"sigma), or collect some cells twice.")


def pools_systems(model: object) -> bool:
    """Whether ``model=`` is a formula with a ``(1 | g:system)`` term and no per-system slope.

    Such a model has one variance per term whatever the number of systems, and
    assumes the systems exchangeable: every system's ratings inform every
    variance, so a plan of one comparison fits the whole pilot instead of the
    two compared systems' ratings (the command line's ``--contrast``).

    Examples
    --------
    >>> pools_systems("rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)")
    True
    >>> pools_systems("rating ~ system + (1 | worker) + (system || item)"), pools_systems("auto")
    (False, False)
    """
    if not is_formula(model):
        return False
    f = check_formula(str(model))
    return bool(interactions(f)) and not any("system" in t.expr.variables for t in f.random)


def is_formula(model: object) -> bool:
    """True when ``model=`` is a formula rather than ``"auto"``/``"paper"``."""
    return isinstance(model, str) and "~" in model


def contrast_rows(coding: Coding, k: int) -> np.ndarray:
    """(K, K-1) contrast matrix of ``coding`` for K levels in fitted order."""
    if coding in ("sum", "half"):
        c = np.vstack([np.eye(k - 1), -np.ones((1, k - 1))])
        return c * (0.5 if coding == "half" else 1.0)
    return np.vstack([np.zeros((1, k - 1)), np.eye(k - 1)])


def identified_pairs(data: pd.DataFrame, group: str, systems: tuple[str, ...]) -> np.ndarray:
    """(K, K) bool: is there a level of ``group`` rated under both systems j and k?"""
    k = len(systems)
    pos = {s: j for j, s in enumerate(systems)}
    sys_idx = data["system"].astype(str).map(pos).to_numpy()
    g_codes = pd.factorize(data[group])[0]
    m = np.zeros((g_codes.max() + 1, k), dtype=bool)
    m[g_codes, sys_idx] = True
    counts = m.T.astype(np.int64) @ m.astype(np.int64)
    return np.asarray(counts > 0)


@dataclass(frozen=True, eq=False)
class ModelChoice:
    """The model to fit: formula, the data coded for it, and what the design identifies.

    Attributes
    ----------
    formula : str
    data : DataFrame
        ``worker, item, system, rating`` with ``system`` a categorical in
        fitted level order, plus ``is_sys1..is_sysK`` when a factor is reduced.
    levels : tuple of str
        System levels in fitted order (module docstring).
    baseline : str
    coding : str
    pairs : dict
        ``{"worker": M, "item": M}`` from :func:`identified_pairs`.
    reduced : tuple of str
        Grouping factors nested in systems, fitted with independent per-system variances.
    indicators : tuple of str
        ``is_sys1 .. is_sysK``.
    model : str
        ``"auto"``, ``"paper"`` or ``"formula"`` (a formula given as ``model=``).
    interactions : tuple of str
        Grouping factors with a ``(1 | g:system)`` term in the formula.
    """

    formula: str
    data: pd.DataFrame
    levels: tuple[str, ...]
    baseline: str
    coding: Coding
    pairs: dict[str, np.ndarray]
    reduced: tuple[str, ...]
    indicators: tuple[str, ...]
    model: str = "auto"
    interactions: tuple[str, ...] = ()


def choose_model(ratings: Ratings, *, baseline: str | None = None, coding: Coding = "sum",
                 model: RatingsModel | str = "auto") -> ModelChoice:
    """Level order, baseline and formula for ``ratings`` (module docstring).

    Raises
    ------
    RatingsError
        Unknown baseline, coding or model; ``"half"`` with more than two systems;
        a formula :func:`check_formula` refuses.
    """
    check_coding(coding, error=RatingsError)
    parsed = check_formula(model) if is_formula(model) else None
    user_formula = parsed.text if parsed is not None else None
    if user_formula is None:
        ratings_choice("model", model, RatingsModel,
                       " 'auto' is the paper's formula with identified per-system variances for "
                       "nested factors; or pass an lme4 formula such as "
                       f"{SIMPLE_FORMULA!r}.")
    labels = ratings.systems
    if baseline is None:
        baseline = labels[0]
    else:
        baseline = str(baseline)
        if baseline not in labels:
            close = closest_name(baseline, list(labels))
            hint = f" Did you mean {close!r}?" if close else ""
            raise RatingsError(
                f"baseline {baseline!r} is not one of the systems "
                f"{', '.join(map(repr, labels))}.{hint}"
            )
    k = len(labels)
    if coding == "half" and k != 2:
        raise RatingsError(
            f"coding='half' (x = +-0.5, effect = mean difference) needs exactly 2 systems; the data "
            f"have {k}. Use coding='sum' (deviations from the grand mean) or 'treatment' "
            "(differences from the baseline)."
        )
    others = [s for s in labels if s != baseline]
    levels = (*others, baseline) if coding in ("sum", "half") else (baseline, *others)

    data = ratings.data[["worker", "item", "system", "rating"]].copy()
    data["system"] = pd.Categorical(data["system"].astype(str), categories=list(levels))
    pairs = {g: identified_pairs(data, g, tuple(levels)) for g in GROUPS}
    offdiag = ~np.eye(k, dtype=bool)
    reduced = tuple(g for g in GROUPS if model == "auto" and not pairs[g][offdiag].any())
    if parsed is not None:
        inter = interactions(parsed)
        check_interactions(data, inter, parsed.text)
        return ModelChoice(formula=parsed.text, data=data, levels=tuple(levels),
                           baseline=baseline, coding=coding, pairs=pairs, reduced=(),
                           indicators=(), model="formula", interactions=inter)
    indicators = tuple(f"is_sys{j + 1}" for j in range(k))
    if reduced:
        codes = data["system"].cat.codes.to_numpy()
        for j, name in enumerate(indicators):
            data[name] = (codes == j).astype(float)
    parts = [f"(0 + {' + '.join(indicators)} || {g})" if g in reduced else f"(system || {g})"
             for g in GROUPS]
    formula = "rating ~ system + " + " + ".join(parts)
    return ModelChoice(formula=formula, data=data, levels=tuple(levels), baseline=baseline,
                       coding=coding, pairs=pairs, reduced=reduced, indicators=indicators,
                       model=str(model))
