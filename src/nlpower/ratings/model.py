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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._choices import Coding, RatingsModel
from .._validation import closest_name
from ..coding import check_coding
from ..convert import FORMULA
from ..errors import FormulaError, RatingsError
from ..formula import Formula, parse
from .io import Ratings, ratings_choice

__all__ = ["FORMULA", "GROUPS", "ModelChoice", "check_formula", "choose_model", "contrast_rows",
           "identified_pairs"]

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
        grouping factors other than ``worker`` and ``item``, no random term.
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
        if term.nested or len(term.group) != 1 or term.group[0] not in GROUPS:
            raise RatingsError(
                f"model: random term {term} in {model!r} is grouped by {term.group_name!r}; "
                f"only worker and item are grouping factors of rating data.{example}"
            )
        if any(v != "system" for v in term.expr.variables):
            raise RatingsError(
                f"model: random term {term} in {model!r} uses "
                f"{', '.join(repr(v) for v in term.expr.variables if v != 'system')}; a random "
                f"term may hold the intercept and system only.{example}"
            )
    return f


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
    user_formula = check_formula(model).text if is_formula(model) else None
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
    if user_formula is not None:
        return ModelChoice(formula=user_formula, data=data, levels=tuple(levels),
                           baseline=baseline, coding=coding, pairs=pairs, reduced=(),
                           indicators=(), model="formula")
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
