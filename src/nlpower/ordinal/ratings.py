"""``fit_ratings(..., family="ordinal")``: Card et al.'s model as a cumulative link mixed model.

The same model choice as the Gaussian fit (:func:`nlpower.ratings.model.choose_model`:
``rating ~ system + (system || worker) + (system || item)`` or the identified
per-system variances for nested factors, or a formula given as ``model=``)
fitted by :func:`nlpower.clmm` to the ratings *as read* (integer Likert
scores, not rescaled; with integer ends of the Likert scale, its scores
nobody gave are reported as unused categories).  Results are on the latent logistic scale: fixed
effects without an intercept (the thresholds take its place), the
latent residual SD ``pi / sqrt(3)`` in the place of ``sigma``, and the
worker/item SDs of Tables 14-15 (intercept, then per system:
``sqrt(diag(L S L'))`` of each group's non-intercept terms, as the Gaussian
fit's ``system_cov``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from ..errors import InputError, RatingsError
from ..lmm.engine import get_engine
from ..lmm.family import Ordinal
from .api import ordinal_frame
from .result import ClmmFit

__all__ = ["OrdinalRatingsFit", "fit_ratings_ordinal"]

GROUPS = ("worker", "item")
#: the design report's scale line says what the Gaussian fit does; the ordinal fit does not rescale
_RESCALED = "ratings rescaled to [0, 1] as (r - lo) / (hi - lo)"
_AS_CATEGORIES = "integer ratings fitted as ordered categories (family='ordinal': not rescaled)"


@dataclass(frozen=True, eq=False)
class OrdinalRatingsFit:
    """Tables 13-15 of a cumulative link mixed model fitted to a rating file."""

    fit: ClmmFit = field(repr=False)
    report: Any = field(repr=False)
    systems: tuple[str, ...]
    baseline: str
    coding: str
    formula: str
    intercept_sd: dict[str, float]
    system_sd: dict[str, pd.Series]
    #: groups whose formula has per-system / intercept terms (else those SDs print as "-")
    system_terms: frozenset[str] = frozenset(GROUPS)
    intercept_terms: frozenset[str] = frozenset(GROUPS)

    @property
    def fixef(self) -> pd.Series:
        return self.fit.fixef

    @property
    def thresholds(self) -> pd.Series:
        return self.fit.thresholds

    @property
    def sigma(self) -> float:
        """The latent residual SD (logistic: ``pi / sqrt(3)``; probit: 1)."""
        return float(self.fit.varcorr()["sdcor"].iloc[-1])

    def tables(self) -> dict[str, pd.DataFrame]:
        """Table 13 (fixed effects, thresholds, latent residual SD), 14 (workers), 15 (items)."""
        t13 = {f"beta{j + 1}": float(v) for j, v in enumerate(self.fixef)}
        t13.update({f"theta[{k}]": float(v) for k, v in self.thresholds.items()})
        t13["sigma (latent)"] = self.sigma
        out = {"Table 13": pd.DataFrame([t13])}
        for title, g, tag in (("Table 14", "worker", "w"), ("Table 15", "item", "i")):
            row = {f"sigma0{tag}": self.intercept_sd[g]}
            row.update({f"sigma{j + 1}{tag}": float(v)
                        for j, v in enumerate(self.system_sd[g])})
            out[title] = pd.DataFrame([row])
        return out

    def summary(self) -> str:
        design = self.report.summary().replace(_RESCALED, _AS_CATEGORIES)
        lines = [design, "",
                 f"Model: {self.formula}  (cumulative {self.fit.model.link.name} mixed model, "
                 "Laplace; ratings as ordered categories, latent scale)",
                 f"  systems in fitted order: {', '.join(self.systems)} (coding {self.coding!r}, "
                 f"baseline {self.baseline!r}); beta_j: system j's latent effect; no intercept "
                 "(the thresholds theta[j|j+1] take its place)", ""]
        caption = {"Table 13": "fixed effects, thresholds and latent residual SD",
                   "Table 14": "worker SDs (intercept, then per system)",
                   "Table 15": "item SDs (intercept, then per system)"}
        for (title, t), g in zip(self.tables().items(), (None, *GROUPS), strict=True):
            text = t.to_string(index=False, float_format=lambda v: f"{v:.4f}")
            absent = [] if g is None else (
                ([0] if g not in self.intercept_terms else [])
                + (list(range(1, t.shape[1])) if g not in self.system_terms else []))
            if absent:                      # as the Gaussian fit's tables: "-", not 0.0000
                shown = t.astype(object)
                for j in range(t.shape[1]):
                    v = float(t.to_numpy(dtype=float)[0, j])
                    shown.iloc[0, j] = "-" if j in absent else f"{v:.4f}"
                text = (shown.to_string(index=False)
                        + f"\n- : not in the fitted model ({g} terms; 0 in the values)")
            lines += [f"{title} layout -- {caption[title]}:", text, ""]
        if self.fit.singular:
            lines.append("note: boundary (singular) fit -- some SD is estimated as 0 (expected "
                         "for (system || g) terms, whose intercept and per-system SDs trade off)")
        if not self.fit.converged:
            lines.append("note: the fit did not converge (see fit.optsum)")
        lines += ["", self.fit.summary()]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"family": "ordinal", "link": self.fit.model.link.name, "formula": self.formula,
                "systems": list(self.systems),
                "baseline": self.baseline, "coding": self.coding,
                "tables": {k: v.iloc[0].to_dict() for k, v in self.tables().items()},
                "loglik": self.fit.loglik, "converged": self.fit.converged,
                "unused_categories": list(self.fit.unused_categories)}

    def __repr__(self) -> str:
        return (f"OrdinalRatingsFit({self.formula!r}, systems={list(self.systems)}, "
                f"loglik={self.fit.loglik:.3f})")


def fit_ratings_ordinal(ratings: Any, choice: Any, *, engine: str = "native", start: Any = None,
                        control: dict[str, Any] | None = None,
                        link: str | None = None) -> OrdinalRatingsFit:
    """Fit ``choice.formula`` as a cumulative link mixed model (see the module docstring).

    ``engine``: the engine's ordinal fitter (:func:`nlpower.lmm.get_engine`;
    ``"lme4"``'s is R's ``ordinal::clmm``); ``link``: logit (default), probit or cloglog.
    """
    try:
        family = Ordinal(link)
    except InputError as exc:
        raise RatingsError(str(exc)) from None
    data = choice.data.copy()
    raw = ratings.data.loc[data.index, "rating_raw"].to_numpy(dtype=float)
    if not np.all(raw == np.round(raw)):
        rep = ratings.report
        if getattr(rep, "duplicates", None) == "mean" and getattr(rep, "n_duplicate_groups", 0):
            raise RatingsError(
                "family='ordinal' needs integer ratings (Likert scores); averaging the "
                f"{rep.n_duplicate_groups} repeated (worker, item, system) ratings "
                f"(duplicates='mean') made non-integer values such as "
                f"{float(raw[raw != np.round(raw)][0])!r}. Pass duplicates='keep' to fit "
                "repeated ratings as replicates, or remove them.")
        raise RatingsError("family='ordinal' needs integer ratings (Likert scores); the file has "
                           f"non-integer values such as {float(raw[raw != np.round(raw)][0])!r}.")
    data["rating"] = raw.astype(int)
    # integer ends of the Likert scale: its scores nobody gave are unused categories (reported)
    levels = None
    if ratings.scale is not None and all(float(v).is_integer() for v in ratings.scale):
        levels = range(int(ratings.scale[0]), int(ratings.scale[1]) + 1)
    try:
        spec, response, frame = ordinal_frame(choice.formula, data, levels=levels,
                                              contrasts={"system": choice.coding})
        model = get_engine(engine).prepare(spec, data=frame,  # type: ignore[arg-type]
                                           family=family, response=response)
        fit = cast(ClmmFit, model.fit(start=start, control=control))
    except InputError as exc:
        if isinstance(exc, RatingsError):
            raise
        raise RatingsError(f"family='ordinal' cannot fit {choice.formula!r}: {exc}"
                           ) from exc
    # singular fits are expected for this over-parameterised model: reported, not warned
    fit.warn_diagnostics({"singular": "ignore"}, where="fit_ratings")
    spec = fit.model.spec
    codes = data["system"].cat.codes.to_numpy()
    first = np.array([int(np.flatnonzero(codes == j)[0]) for j in range(len(choice.levels))])
    intercept_sd: dict[str, float] = {}
    system_sd: dict[str, pd.Series] = {}
    with_terms = frozenset(t.group for t in spec.re_terms if tuple(t.cnames) != ("(Intercept)",))
    with_intercept = frozenset(t.group for t in spec.re_terms if "(Intercept)" in t.cnames)
    for g in GROUPS:
        s0 = 0.0
        cov = np.zeros((len(choice.levels),) * 2)
        for k, t in enumerate(spec.re_terms):
            if t.group != g:
                continue
            S = fit._term_cov(k)
            if tuple(t.cnames) == ("(Intercept)",):
                s0 += float(S[0, 0])
            else:
                L = np.asarray(t.Z, dtype=float)[first]
                cov += L @ S @ L.T
        intercept_sd[g] = math.sqrt(max(s0, 0.0))
        system_sd[g] = pd.Series(np.sqrt(np.maximum(np.diag(cov), 0.0)), index=list(choice.levels))
    return OrdinalRatingsFit(fit=fit, report=ratings.report, systems=tuple(choice.levels),
                             baseline=choice.baseline, coding=choice.coding,
                             formula=choice.formula, intercept_sd=intercept_sd,
                             system_sd=system_sd, system_terms=with_terms,
                             intercept_terms=with_intercept)
