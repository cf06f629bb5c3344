"""From an ordinal or binary pilot fit to the parameters of its outcome model.

The front door of planning from a non-Gaussian pilot (as :func:`nlpower.convert.as_params`
is for Gaussian ones): the power layer and :mod:`nlpower.outcomes` see parameters only.

* An ordinal pilot -- :func:`nlpower.clmm` (``ClmmFit``) or
  ``fit_ratings(..., family="ordinal")`` (``OrdinalRatingsFit``) -- of ratings of
  two (or, with ``contrast``, more) systems by workers and items gives
  :class:`~nlpower.outcomes.LikertParams`: the latent model's thresholds
  (centred at the two compared systems' mean latent location), the worker and
  item SDs of the comparison on the +-1 scale (the per-system random effects
  mapped by :func:`nlpower.params.pm1_random_effects`, as
  :meth:`RatingsFit.to_params` does for Gaussian ratings), ``scale = 1`` and
  the fit's link (logit or probit).
* A binary pilot -- :func:`nlpower.glmer` (``GlmmFit``, binomial, logit) of
  head-to-head judgements ``win ~ 1 [+ pos] + (1 | worker) + (1 | item)
  [+ (0 + pos | worker)] [+ (0 + pos | item)]`` -- gives
  :class:`~nlpower.outcomes.HeadToHeadParams`: the worker and item SDs, the
  position effect and position SDs (for ``pos`` coded +-1/2; another two-valued
  coding +-c is rescaled), and ``p_draw`` = the share of judgements with prior
  weight 0 (draws excluded, as :func:`~nlpower.outcomes.headtohead_power` does).

The effect is never the pilot's: the caller sets it (``with_effect``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .convert import _is_clmm, is_binary_fit, is_ordinal_fit, pilot_family, zero_sd_note
from .errors import InputError
from .formula import parse
from .outcomes import HeadToHeadParams, LikertParams
from .params import pm1_random_effects

__all__ = ["GROUPS", "OrdinalPilot", "binary_params", "is_binary_fit", "is_ordinal_fit",
           "pilot_family", "separation_notes"]

#: The grouping factors of a pilot fit (fit_ratings' names).
GROUPS = ("worker", "item")


# ------------------------------------------------------------------------------------
# ordinal pilots
# ------------------------------------------------------------------------------------


class OrdinalPilot:
    """An ordinal pilot fit and the comparison planned: ``to_params(clmm_fit)`` per (re)fit.

    Parameters
    ----------
    fit : ClmmFit or OrdinalRatingsFit
    contrast : str or (str, str), optional
        ``(a, b)``: system ``a`` is coded +1 and ``b`` (the baseline) -1; one
        name ``a`` means ``(a, baseline)``; ``None`` needs two systems.
    """

    def __init__(self, fit: Any, contrast: Any = None) -> None:
        from .ordinal.ratings import OrdinalRatingsFit
        clmm = fit.fit if isinstance(fit, OrdinalRatingsFit) else fit
        if not _is_clmm(clmm):
            raise InputError(f"an ordinal pilot must be a clmm fit or fit_ratings(..., "
                             f"family='ordinal'); got {type(fit).__name__}.")
        model = clmm.model
        link = model.link.name
        if link not in ("logit", "probit"):
            raise InputError(f"the ordinal pilot uses the {link!r} link; Likert power simulates "
                             "a logistic (logit) or normal (probit) latent residual. Refit the "
                             "pilot with link='logit' or 'probit'.")
        data = getattr(model, "data", None)
        if not isinstance(data, pd.DataFrame):
            raise InputError("this clmm fit keeps no data (fit by engine='ordinal'?); refit the "
                             "pilot with the native engine (nlpower.clmm or fit_ratings(..., "
                             "family='ordinal')).")
        groups = [t.group for t in model.spec.re_terms]
        bad = sorted(set(groups) - set(GROUPS))
        if bad:
            raise InputError(f"the ordinal pilot's random effects are grouped by {bad}; planning "
                             f"needs groups named {list(GROUPS)} (rename the columns, or fit with "
                             "fit_ratings(..., family='ordinal')).")
        f = parse(model.spec.formula)
        # the fixed part only: the random part may use indicator columns of the system
        # (is_sys1 ... of the default fit of items nested in systems)
        fixed = [c for c in f.fixed.variables if c != f.response and c not in GROUPS]
        if len(fixed) != 1:
            raise InputError(f"the ordinal pilot must have one fixed effect, the system factor; "
                             f"its formula {model.spec.formula!r} uses {fixed}.")
        col = data[fixed[0]]
        levels = [str(v) for v in (col.cat.categories if hasattr(col, "cat")
                                   else sorted(col.unique()))]
        baseline = fit.baseline if isinstance(fit, OrdinalRatingsFit) else levels[0]
        a, b = _resolve_contrast(contrast, levels, baseline)
        codes = col.astype(str).to_numpy()
        self.rows = (int(np.flatnonzero(codes == b)[0]), int(np.flatnonzero(codes == a)[0]))
        self.systems = (b, a)
        self.link = link
        self.clmm = clmm
        self.model = model
        self.identified = {g: _shares_level(data, g, codes, a, b) for g in GROUPS
                           if g in data.columns}

    def zero_sd_notes(self, sd: Any = None) -> list[str]:
        """Notes on the SDs this pilot sets to 0 (:func:`nlpower.convert.zero_sd_notes`)."""
        b, a = self.systems
        notes = []
        for g in GROUPS:
            cols = [tuple(t.cnames) for t in self.model.spec.re_terms if t.group == g]
            if not cols:
                why: tuple[str, tuple[str, ...]] | None = (
                    f"the pilot's model has no {g} term", (f"sd_{g}", f"sd_{g}_slope"))
            elif all(c == ("(Intercept)",) for c in cols):
                why = (f"the pilot's model has no per-system {g} term (system x {g} variance)",
                       (f"sd_{g}_slope",))
            elif not self.identified.get(g, True):
                why = (f"{a} and {b} share no {g} in the pilot ({g}s nested in systems), so "
                       f"the {g} slope is not identified", (f"sd_{g}_slope",))
            else:
                why = None
            if why is not None:
                notes += [zero_sd_note(name, why[0], sd) for name in why[1]]
        return notes

    def to_params(self, clmm: Any, *, unequal: str = "warn") -> LikertParams:
        """:class:`LikertParams` (effect 0, sum coding) of a fit of this pilot's structure."""
        model = self.model
        beta = np.asarray(clmm.core.beta, dtype=float)
        eta = model.X[list(self.rows)] @ beta
        tau = np.asarray(clmm.core.thresholds, dtype=float) - float(eta.mean())
        sds: dict[str, tuple[float, float]] = {}
        for g in GROUPS:
            cov = np.zeros((2, 2))
            for k, t in enumerate(model.spec.re_terms):
                if t.group == g:
                    L = np.asarray(t.Z, dtype=float)[list(self.rows)]
                    cov += L @ clmm._term_cov(k) @ L.T
            c = cov[0, 1] if self.identified.get(g, True) else math.nan
            sds[g] = pm1_random_effects(0.0, math.sqrt(max(cov[0, 0], 0.0)),
                                        math.sqrt(max(cov[1, 1], 0.0)), c, group=g,
                                        unequal=unequal,  # type: ignore[arg-type]
                                        systems=self.systems, where="the ordinal pilot")
        return LikertParams(thresholds=tuple(tau), effect=0.0, sd_worker=sds["worker"][0],
                            sd_worker_slope=sds["worker"][1], sd_item=sds["item"][0],
                            sd_item_slope=sds["item"][1], scale=1.0,
                            link=self.link, coding="sum")  # type: ignore[arg-type]


def _resolve_contrast(contrast: Any, levels: list[str], baseline: str) -> tuple[str, str]:
    if contrast is None:
        if len(levels) != 2:
            raise InputError(f"this pilot has {len(levels)} systems {levels}: name the comparison "
                             f"the study plans, e.g. contrast={levels[1]!r}.")
        other = levels[1] if levels[0] == baseline else levels[0]
        return other, baseline
    pair = (contrast, baseline) if isinstance(contrast, str) else tuple(contrast)
    if len(pair) != 2 or any(str(s) not in levels for s in pair) or pair[0] == pair[1]:
        raise InputError(f"contrast must name one system (against the baseline {baseline!r}) or "
                         f"two different systems of {levels}; got {contrast!r}.")
    return str(pair[0]), str(pair[1])


def _shares_level(data: pd.DataFrame, g: str, codes: np.ndarray, a: str, b: str) -> bool:
    """Whether some level of ``g`` rated both systems (else their covariance is not identified)."""
    lv = data[g].astype(str).to_numpy()
    return bool(set(lv[codes == a]) & set(lv[codes == b]))


# ------------------------------------------------------------------------------------
# binary (head-to-head) pilots
# ------------------------------------------------------------------------------------


#: What a study of a 0/1 rating per system (top-box, acceptable / not) plans with instead.
_TOPBOX = ("A 0/1 rating of each system (e.g. top-box, rating >= 4) is no head-to-head judgement: "
           "it is a 2-point rating, so fit it with nlpower.fit_ratings(nlpower.read_ratings(data, "
           "rating='top', scale=(0, 1)), family='ordinal') (or, better, the full K-point ratings) "
           "and plan with outcome='likert', analysis='clmm'.")


def binary_params(fit: Any) -> HeadToHeadParams:
    """:class:`HeadToHeadParams` (effect 0) of a binomial ``glmer`` fit of head-to-head judgements.

    Raises
    ------
    InputError
        Not binomial with the logit link; groups other than worker and item;
        a fixed effect besides the intercept and one two-valued position
        column; prior weights other than 0 (a draw) and 1 (a judgement).
    """
    if fit.family != "binomial" or fit.link != "logit":
        raise InputError(f"a binary pilot must be a binomial glmer fit with the logit link; got "
                         f"{fit.family}({fit.link}). HeadToHeadParams are on the logit scale.")
    model = fit.model
    if model is None or not hasattr(model, "simulate"):
        raise InputError("this glmer fit keeps no prepared model (engine='lme4'?); refit the "
                         "pilot with the native engine to bootstrap it.")
    names = list(fit.fixef.index)
    if "(Intercept)" not in names or len(names) > 2:
        raise InputError(f"a binary pilot is a model of head-to-head judgements, 'win ~ 1 [+ pos] "
                         f"+ (1 | worker) + (1 | item)': the intercept (the preference) and at most "
                         f"a position column; got fixed effects {names}. {_TOPBOX}")
    pos = next((n for n in names if n != "(Intercept)"), None)
    c = 0.5
    if pos is not None:
        x = np.asarray(model.spec.X, dtype=float)[:, names.index(pos)]
        vals = np.unique(np.round(x, 12))
        if vals.size != 2 or not math.isclose(vals[0], -vals[1]) or vals[1] <= 0:
            raise InputError(f"a binary pilot is a model of head-to-head judgements, 'win ~ 1 "
                             f"[+ pos] + (1 | worker) + (1 | item)' (win = 1 when B is preferred), "
                             f"so its second fixed effect is the position column, which must take "
                             f"two values -c and +c (e.g. -1/2 when system B is shown second, "
                             f"+1/2 first); {pos!r} takes {vals[:5].tolist()}. {_TOPBOX}")
        c = float(vals[1])
    k = 2.0 * c                            # coefficients of pos = +-c, re-expressed for +-1/2
    var: dict[tuple[str, str], float] = {}
    for t in fit.var_terms:
        if t.group not in GROUPS:
            raise InputError(f"the binary pilot's random effects are grouped by {t.group!r}; "
                             f"planning needs groups named {list(GROUPS)}. Fit the judgements "
                             "with nlpower.fit_judgements(file, worker=..., item=..., a=..., "
                             "b=..., choice=...), which maps your column names onto them.")
        for j, cn in enumerate(t.cnames):
            kind = "int" if cn == "(Intercept)" else ("pos" if cn == pos else None)
            if kind is None:
                raise InputError(f"random term ({' + '.join(t.cnames)} | {t.group}) has a column "
                                 f"{cn!r} that is neither the intercept nor the position.")
            var[(t.group, kind)] = var.get((t.group, kind), 0.0) + float(t.cov[j, j])
    wt = np.asarray(model.wt, dtype=float)
    if not np.all((wt == 0) | (wt == 1)):
        raise InputError("a head-to-head pilot has one judgement per row (prior weights 1, or 0 "
                         "for a draw); this fit has other weights.")
    sd = {key: math.sqrt(max(v, 0.0)) for key, v in var.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HeadToHeadParams(
            effect=0.0, sd_worker=sd.get(("worker", "int"), 0.0),
            sd_item=sd.get(("item", "int"), 0.0),
            position=float(fit.fixef[pos]) * k if pos is not None else 0.0,
            sd_worker_position=sd.get(("worker", "pos"), 0.0) * k,
            sd_item_position=sd.get(("item", "pos"), 0.0) * k,
            p_draw=float(np.mean(wt == 0)))


#: An SD above this on the logit scale is the mark of a quasi-separated binary pilot.
SEPARATION_SD = 4.0


def separation_notes(fit: Any, sd: Any = None) -> list[str]:
    """Notes on a head-to-head pilot whose worker or item SD is implausibly large (quasi-separation).

    When most of a group's levels have all their judgements one way, the
    binomial likelihood keeps growing with that group's SD: the fitted SD
    (logit scale, above :data:`SEPARATION_SD`) describes the pilot's sparsity,
    not the population, and a plan built on it asks for far too many items.
    ``sd`` (the user's values, e.g. ``{"item": 1.0}``) replaces the note by
    one saying the value is the user's.
    """
    params = binary_params(fit)
    data = getattr(fit, "data", None)
    given = {str(k).removeprefix("sd_") for k in (sd or {})}
    notes = []
    for g in GROUPS:
        value = float(getattr(params, f"sd_{g}"))
        if value <= SEPARATION_SD:
            continue
        if g in given:
            notes.append(f"sd_{g} is {sd_value_of(sd, g):g}, as given (the pilot's fitted "
                         f"{value:.3g} on the logit scale is a mark of quasi-separation).")
            continue
        one_way = ""
        if isinstance(data, pd.DataFrame) and g in data.columns:
            y = np.asarray(fit.model.spec.y, dtype=float)
            w = np.asarray(fit.model.wt, dtype=float)
            frame = pd.DataFrame({"g": data[g].to_numpy(), "y": y, "w": w})[w > 0]
            per = frame.groupby("g", observed=True)["y"].agg(["min", "max"])
            share = float(np.mean(per["min"] == per["max"]))
            one_way = f" {share:.0%} of its {per.shape[0]} {g}s have all their judgements one way;"
        notes.append(f"sd_{g} = {value:.3g} on the logit scale: the pilot looks quasi-separated "
                     f"({one_way.strip()} the likelihood keeps rising with this SD), so the "
                     f"estimate is not a usable planning value. Set it with sd={{'{g}': S}} "
                     f"(CLI: --sd {g}=S), e.g. 0.5-1.5 as in published head-to-head studies.")
    return notes


def sd_value_of(sd: Any, name: str) -> float:
    """The user's SD for ``name`` (keys with or without ``sd_``)."""
    for k, v in (sd or {}).items():
        if str(k).removeprefix("sd_") == name:
            return float(v)
    raise KeyError(name)
