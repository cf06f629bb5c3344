"""One interim look's statistic on real ratings, for each outcome a sequential design simulates.

Each look refits the model to every observation so far and returns the
tested coefficient's estimate, SE and degrees of freedom (``inf`` for a Wald
z), the way :mod:`nlpower.sequential.outcomes` analyses simulated looks:

``"gaussian"``
    :func:`nlpower.lmer` of the ratings (REML), Satterthwaite t.
``"likert"``, ``analysis="lmm"``
    :func:`nlpower.lmer` of the ratings rescaled to [0, 1] by
    ``(r - 1) / (K - 1)`` (with ``levels=K``; as given without), Satterthwaite t.
``"likert"``, ``analysis="clmm"``
    :func:`nlpower.clmm` of the integer ratings (``link=``; a design simulated
    from :class:`~nlpower.outcomes.LikertParams` fits the parameters' link),
    Wald z of the term.
``"preference"``
    :func:`nlpower.glmer` (binomial) of head-to-head judgements with columns
    ``worker``, ``item``, ``win`` and optionally ``weight`` (ties weight 0),
    as :func:`nlpower.pilot.judgements.judgement_frame` builds them; Wald z
    of the intercept (the logit of the share preferring the pair's second
    system).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .._validation import check_choice, check_real
from ..errors import InputError

__all__ = ["InterimAnalysis", "PREFERENCE_FORMULA"]

#: the head-to-head model of :func:`nlpower.pilot.fit_judgements`
PREFERENCE_FORMULA = "win ~ 1 + (1 | worker) + (1 | item)"

_ANALYSES = {"gaussian": ("lmm",), "likert": ("lmm", "clmm"), "preference": ("glmer",)}


@dataclass(frozen=True)
class InterimAnalysis:
    """The model an interim look fits, validated once (see the module docstring)."""

    outcome: str
    analysis: str
    formula: str
    term: str | None
    levels: int | None
    contrasts: dict[str, str] | None
    link: str = "logit"

    @classmethod
    def make(cls, outcome: str, analysis: str | None, formula: str | None, term: str | None,
             levels: Any, contrasts: dict[str, str] | None, link: str = "logit"
             ) -> InterimAnalysis:
        outcome = check_choice("outcome", outcome, tuple(_ANALYSES))
        allowed = _ANALYSES[outcome]
        a = allowed[0] if analysis is None else analysis
        if a not in allowed:
            raise InputError(f"analysis must be one of {', '.join(map(repr, allowed))} for "
                             f"outcome={outcome!r}; got {analysis!r}.")
        if formula is None:
            if outcome != "preference":
                raise InputError(f"outcome={outcome!r} needs formula= (lme4 syntax, e.g. "
                                 "'rating ~ system + (1 | worker) + (1 | item)').")
            formula = PREFERENCE_FORMULA
        if not isinstance(formula, str) or "~" not in formula:
            raise InputError(f"formula must be a model formula like 'rating ~ system + "
                             f"(1 | worker) + (1 | item)'; got {formula!r}.")
        if levels is not None:
            if outcome != "likert":
                raise InputError(f"levels= is the number of Likert scale points; outcome="
                                 f"{outcome!r} has none. Leave levels=None.")
            levels = int(check_real("levels", levels, min=2))
        link = check_choice("link", link, ("logit", "probit", "cloglog"))
        if link != "logit" and a != "clmm":
            raise InputError(f"link={link!r} is the link of the clmm analysis of Likert ratings; "
                             f"this look fits analysis={a!r}. Leave link='logit'.")
        if outcome == "preference" and term is None:
            term = "(Intercept)"
        return cls(outcome, a, formula, term, levels, contrasts, link)

    @property
    def response(self) -> str:
        return self.formula.split("~", 1)[0].strip()

    def statistic(self, data: pd.DataFrame) -> tuple[float, float, float]:
        """``(estimate, SE, df)`` of the tested term on all of ``data``."""
        if self.response not in data.columns:
            raise InputError(f"the formula's response {self.response!r} is not a column of the "
                             f"data; columns are {list(map(str, data.columns))}.")
        if self.outcome == "preference":
            return self._glmer(data)
        if self.analysis == "clmm":
            return self._clmm(data)
        return self._lmer(data)

    def _pick(self, names: list[str], fixed: list[str], fit: Any) -> str:
        from ..lmm.names import canonical, coef_aliases

        term = self.term
        if term is None:
            if len(fixed) != 1:
                raise InputError(f"the model has fixed effects {fixed}; name the one tested with term=.")
            term = fixed[0]
        found = canonical(term, names, coef_aliases(fit))      # lme4's system1 for system[A]
        if found is None:
            raise InputError(f"term={term!r} is not a fixed effect of the model; it has {names}.")
        return found

    def _lmer(self, data: pd.DataFrame) -> tuple[float, float, float]:
        from ..lmm import lmer

        if self.outcome == "likert" and self.levels is not None:
            y = pd.to_numeric(data[self.response], errors="coerce")
            data = data.assign(**{self.response: (y - 1.0) / (self.levels - 1)})
        fit = lmer(self.formula, data, REML=True, contrasts=self.contrasts, checkconv="ignore")
        table = fit.coef_table(ddf="satterthwaite")
        names = list(map(str, table.index))
        term = self._pick(names, [n for n in names if n != "(Intercept)"], fit)
        est, se, df = table.loc[term, ["estimate", "std_error", "df"]].to_numpy(dtype=float)
        return float(est), float(se), float(df)

    def _clmm(self, data: pd.DataFrame) -> tuple[float, float, float]:
        from ..ordinal import clmm

        levels = None if self.levels is None else range(1, self.levels + 1)
        fit = clmm(self.formula, data, link=self.link, contrasts=self.contrasts,
                   checkconv="ignore", levels=levels)
        table = fit.coef_table()
        fixed = [str(n) for n in table.index[table["kind"] == "fixed"]]
        term = self._pick(fixed, fixed, fit)
        est, se = table.loc[term, ["estimate", "se"]].to_numpy(dtype=float)
        return float(est), float(se), math.inf

    def _glmer(self, data: pd.DataFrame) -> tuple[float, float, float]:
        from ..glmm import glmer

        weights = "weight" if "weight" in data.columns else None
        fit = glmer(self.formula, data, family="binomial", weights=weights,
                    contrasts=self.contrasts, checkconv="ignore")
        table = fit.coef_table()
        names = list(map(str, table.index))
        term = self._pick(names, names, fit)
        est, se = table.loc[term, ["estimate", "std_error"]].to_numpy(dtype=float)
        return float(est), float(se), math.inf
