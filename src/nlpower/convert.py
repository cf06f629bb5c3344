"""One hand-off from a fitted pilot to simulation parameters: :func:`as_params`.

Every planning entry point (``power``, ``mde``, ``plan``, ``power_grid``,
``nlpower power --ratings``, ``nlpower plan``) accepts either parameters or a
fitted pilot and calls :func:`as_params` once at its boundary; past it the
power layer (:mod:`nlpower.powersim`) sees parameters only.  This module sits
below both :mod:`nlpower.ratings` and :mod:`nlpower.powersim`: a
:class:`~nlpower.ratings.RatingsFit` is recognised by what it can do
(:class:`FittedPilot`: ``to_params``, ``to_multi_params``), so the power layer
never imports the ratings package.  For a fit the
*variance components* come from the pilot and the *effect* from the user: the
pilot's own effect estimate is never used silently (a pilot's effect is the
noisiest number it produces, and planning for it is the "observed power"
fallacy); the user states the smallest effect of interest and its coding.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ._choices import Coding, check_choice
from ._validation import check_real
from .errors import InputError
from .lmm.result import LmmFit
from .params import LMMParams, MultiSystemParams, pm1_random_effects, x_values

__all__ = ["FORMULA", "FittedPilot", "PilotLike", "as_params", "is_pilot_fit", "with_sds",
           "zero_sd_note", "zero_sd_notes"]

#: Card et al.'s (2020) model of human ratings (what ``fit_ratings`` fits by default).
FORMULA = "rating ~ system + (system || worker) + (system || item)"


@runtime_checkable
class FittedPilot(Protocol):
    """A fitted pilot that gives simulation parameters (:class:`~nlpower.ratings.RatingsFit`)."""

    @property
    def n_systems(self) -> int: ...

    def to_params(self, contrast: Any = None, *, coding: Coding = "sum") -> LMMParams: ...

    def to_multi_params(self) -> MultiSystemParams: ...


#: What :func:`as_params` accepts.
PilotLike = LMMParams | MultiSystemParams | FittedPilot | LmmFit

_EFFECT_HELP = (
    "pass effect= the smallest effect worth detecting, in the coding given by coding= "
    "('sum', Card et al.'s: half the difference between the two system means on the [0, 1] "
    "scale; 'half' or 'treatment': the full mean difference). nlpower never plans for the "
    "pilot's own effect estimate silently: it is too noisy to plan for."
)


def is_pilot_fit(obj: Any) -> bool:
    """Whether ``obj`` is a fitted pilot: a :class:`FittedPilot` such as ``RatingsFit``, an
    :class:`LmmFit`, or an ordinal (``clmm``) or ``glmer`` fit (``outcome="likert"`` /
    ``"preference"``; :mod:`nlpower.convert_outcomes`)."""
    if isinstance(obj, (FittedPilot, LmmFit)):
        return True
    # no import: an instance of these classes exists only once their module is loaded
    return any(isinstance(obj, getattr(sys.modules[m], c)) for m, c in _OUTCOME_FITS
               if m in sys.modules)


#: The non-Gaussian pilot fits (module, class) of :func:`is_pilot_fit`.
_OUTCOME_FITS = (("nlpower.glmm.result", "GlmmFit"), ("nlpower.ordinal.result", "ClmmFit"),
                 ("nlpower.ordinal.ratings", "OrdinalRatingsFit"))


def _is_clmm(obj: Any) -> bool:
    from .ordinal import ClmmFit
    return isinstance(obj, ClmmFit)


def is_ordinal_fit(obj: Any) -> bool:
    """A ``clmm`` fit or an ``OrdinalRatingsFit`` (``fit_ratings(..., family="ordinal")``)."""
    from .ordinal.ratings import OrdinalRatingsFit
    return _is_clmm(obj) or isinstance(obj, OrdinalRatingsFit)


def is_binary_fit(obj: Any) -> bool:
    """A ``glmer`` fit (any family; :func:`binary_params` checks it is binomial)."""
    from .glmm import GlmmFit
    return isinstance(obj, GlmmFit)


def pilot_family(obj: Any) -> str:
    """The outcome a pilot fit describes: ``"likert"``, ``"preference"`` or ``"gaussian"``."""
    if is_ordinal_fit(obj):
        return "likert"
    if is_binary_fit(obj):
        return "preference"
    return "gaussian"


def _span(coding: Coding) -> float:
    lo, hi = x_values(coding)
    return hi - lo


def _effect_in(params_coding: Coding, effect: float, coding: Coding) -> float:
    """``effect`` stated in ``coding``, re-expressed in ``params_coding`` (same mean difference)."""
    return effect * _span(coding) / _span(params_coding)


def as_params(
    params_or_fit: PilotLike,
    *,
    effect: float | Sequence[float] | None = None,
    coding: Coding = "sum",
    contrast: Any = None,
) -> LMMParams | MultiSystemParams:
    """Simulation parameters from parameters or from a fitted pilot.

    Parameters
    ----------
    params_or_fit : LMMParams, MultiSystemParams, RatingsFit or LmmFit
        Parameters, returned unchanged (no ``effect``) or with their tested effect replaced;
        or a :class:`~nlpower.ratings.RatingsFit`, or the :class:`~nlpower.lmm.LmmFit` of the
        paper's model (``fit_ratings(...).fit``), whose variance components are used.
    effect : float (or K-1 floats for a K-system fit), required for a fit
        The smallest effect of interest, in ``coding``; the pilot's estimate is never used
        silently (:class:`InputError` without it).
    coding : {"sum", "half", "treatment"}, default "sum"
        Coding of ``effect`` and of the returned :class:`LMMParams` (parameters keep theirs);
        ``"sum"`` is the paper's (x = +-1, effect = half the mean difference).
    contrast : str or (str, str), optional
        For a :class:`RatingsFit`: which two systems (:meth:`RatingsFit.to_params`); with more
        systems and none, sum-coded :class:`MultiSystemParams` (``docs/pilot.md``).

    Returns
    -------
    LMMParams or MultiSystemParams

    Raises
    ------
    InputError
        A fit without ``effect``; a zero or non-finite effect; an object that
        is neither parameters nor a fit of the paper's model; ``coding`` other
        than ``"sum"`` for K systems.

    Notes
    -----
    The variance components of a fit are converted by the fit's own
    conversion (:meth:`RatingsFit.to_params`: the two systems' total
    per-system covariances mapped to +-1 intercept and slope SDs), which may
    warn (``RatingsFitWarning``) when it loses information.

    Examples
    --------
    >>> from nlpower import presets
    >>> from nlpower.pilot import as_params
    >>> p = presets.high_variance(0.1)
    >>> as_params(p) is p
    True
    >>> as_params(p, effect=0.1, coding="half").effect   # mean difference 0.1 = 0.05 in sum coding
    0.05
    """
    coding = check_choice("coding", coding, Coding)
    obj = params_or_fit
    if isinstance(obj, (LMMParams, MultiSystemParams)):
        if effect is None:
            return obj
        return _set_effect(obj, effect, coding)
    if isinstance(obj, LmmFit):
        if effect is None:
            raise InputError(f"effect is required when planning from a fitted pilot: {_EFFECT_HELP}")
        p = _lmmfit_params(obj, coding)
        return _set_effect(p if coding == "sum" else p.to_coding(coding), effect, coding)
    if not isinstance(obj, FittedPilot):
        raise _not_a_gaussian_pilot(obj)
    if effect is None:
        raise InputError(f"effect is required when planning from a fitted pilot: {_EFFECT_HELP}")
    return _ratings_fit_params(obj, effect, coding, contrast)


def _not_a_gaussian_pilot(obj: Any) -> InputError:
    """The error for an object :func:`as_params` cannot plan from: an ordinal or binary
    pilot (pointing at its outcome), another fit, or no fit at all."""
    if not is_pilot_fit(obj):
        return InputError(
            f"params must be LMMParams, MultiSystemParams, a RatingsFit (nlpower.fit_ratings) or "
            f"the LmmFit of the paper's model; got {type(obj).__name__}. Fit a pilot "
            "with nlpower.fit_ratings(nlpower.read_ratings(path, scale=(lo, hi)))."
        )
    kind = pilot_family(obj)
    if kind == "preference" and getattr(obj, "family", None) != "binomial":
        kind = "gaussian"          # e.g. a Poisson glmer: no outcome plans from it
    if kind == "gaussian":
        return InputError(
            f"this {type(obj).__name__} pilot ({getattr(obj, 'family', '?')}) is no model "
            "nlpower plans from: fit the ratings with nlpower.fit_ratings(...) "
            "(outcome='gaussian'), fit_ratings(..., family='ordinal') (outcome='likert'), "
            "or head-to-head judgements with a binomial glmer (outcome='preference').")
    what = ("K-point ratings on a latent scale (clmm)" if kind == "likert" else
            "head-to-head judgements (binomial glmer)")
    return InputError(
        f"this {type(obj).__name__} pilot describes {what}, not the Gaussian ratings of "
        f"outcome='gaussian': pass outcome={kind!r} with effect=, e.g. plan(fit, "
        f"effect=0.3, outcome={kind!r}); or plan for the pilot's uncertainty with "
        "nlpower.plan_with_assurance(fit, effect=...) (nlpower.assurance for a given "
        "design).")


def _ratings_fit_params(fit: FittedPilot, effect: Any, coding: Coding, contrast: Any
                        ) -> LMMParams | MultiSystemParams:
    """The parameters of a :class:`RatingsFit`: two systems (or ``contrast``) as
    :class:`LMMParams` in ``coding``, more as sum-coded :class:`MultiSystemParams`."""
    if fit.n_systems > 2 and contrast is None:
        if coding != "sum":
            raise InputError(
                f"coding={coding!r} with {fit.n_systems} systems: K-system parameters "
                "(MultiSystemParams) are in sum coding only (each effect = system mean minus the "
                "grand mean). Use coding='sum', or pass contrast=(system_a, system_b) to compare two."
            )
        multi = fit.to_multi_params()
        return _set_effect(multi, effect, "sum")
    if not isinstance(effect, (int, float, np.integer, np.floating)):
        raise InputError(f"effect must be one number for a two-system comparison; got {effect!r}.")
    params = fit.to_params(contrast, coding=coding)
    return params.with_effect(_check_effect(effect))


def _check_effect(effect: Any) -> float:
    e = check_real("effect", effect)
    if e == 0 or not math.isfinite(e):
        raise InputError(
            f"effect must be a finite non-zero number; got {effect!r}. A design has no power to "
            f"detect 0: {_EFFECT_HELP}"
        )
    return e


def _set_effect(params: LMMParams | MultiSystemParams, effect: Any, coding: Coding
                ) -> LMMParams | MultiSystemParams:
    if isinstance(params, LMMParams):
        return params.with_effect(_effect_in(params.coding, _check_effect(effect), coding))
    if coding != "sum":
        raise InputError(
            f"coding={coding!r} for MultiSystemParams: their effects are in sum coding only "
            "(system mean minus the grand mean). Use coding='sum'."
        )
    k1 = params.n_systems - 1
    if isinstance(effect, (int, float, np.integer, np.floating)):
        effects = (_check_effect(effect), *([0.0] * (k1 - 1)))
    else:
        effects = tuple(check_real("effect", e) for e in effect)
        if len(effects) != k1:
            raise InputError(
                f"effect: {params.n_systems} systems need one effect or {k1} effects (one per "
                f"non-baseline system, minus the grand mean); got {len(effects)}."
            )
        _check_effect(effects[0])
    return params.with_effects(effects)


# ------------------------------------------------------------------------------------
# an LmmFit of the paper's model, seen as a RatingsFit
# ------------------------------------------------------------------------------------

_PAPER = re.compile(r"^\s*(\w+)\s*~\s*(\w+)\s*\+\s*\(\s*\2\s*\|\|\s*(\w+)\s*\)\s*\+\s*"
                    r"\(\s*\2\s*\|\|\s*(\w+)\s*\)\s*$")


def _lmmfit_params(fit: LmmFit, coding: Coding) -> LMMParams:
    """Sum-coded :class:`LMMParams` (effect 0) of an :class:`LmmFit` of the paper's two-system model.

    Needs ``y ~ f + (f || g1) + (f || g2)`` with a two-level factor ``f`` (as
    :func:`~nlpower.ratings.fit_ratings` fits it: ``g1`` the workers, ``g2``
    the items).  The per-system random effects are mapped to +-1 intercept
    and slope SDs by :func:`nlpower.params.pm1_random_effects` (the same
    conversion as :meth:`RatingsFit.to_params`).  The fit keeps no data, so
    every worker and item is taken to have rated both systems; use the
    :class:`RatingsFit` when items are nested in systems.
    """
    m = _PAPER.match(fit.formula)
    if m is None:
        raise InputError(
            f"an LmmFit must be of the paper's model {FORMULA!r} to give simulation parameters; "
            f"got {fit.formula!r}. Fit the pilot with nlpower.fit_ratings (which also handles "
            "nested designs) and pass its RatingsFit."
        )
    _, factor, g1, g2 = m.groups()
    fit_coding: Coding = check_choice(f"LmmFit contrasts for {factor!r}",
                                      fit.contrasts.get(factor, "sum"), Coding)
    sds: dict[str, tuple[float, float]] = {}
    for group, name in ((g1, "worker"), (g2, "item")):
        terms = [t for t in fit.var_terms if t.group == group]
        ints = [t for t in terms if tuple(t.cnames) == ("(Intercept)",)]
        blocks = [t for t in terms if len(t.cnames) == 2]
        if len(ints) != 1 or len(blocks) != 1:
            raise InputError(
                f"LmmFit: expected (1 | {group}) + (0 + {factor} | {group}) with a two-level factor "
                f"{factor!r}; got terms {[tuple(t.cnames) for t in terms]}. Only two-system fits can "
                "be converted from an LmmFit; for more systems use fit_ratings."
            )
        levels = [c[len(factor):] if c.startswith(factor) else c for c in blocks[0].cnames]
        cov = np.asarray(blocks[0].cov, dtype=float)
        # the baseline (x = -1) is R's last level under contr.sum, the first under contr.treatment
        b, o = (1, 0) if fit_coding in ("sum", "half") else (0, 1)
        sds[name] = pm1_random_effects(
            math.sqrt(max(float(ints[0].cov[0, 0]), 0.0)), math.sqrt(max(cov[b, b], 0.0)),
            math.sqrt(max(cov[o, o], 0.0)), float(cov[b, o]), group=name, unequal="warn",
            systems=(levels[b], levels[o]), where="as_params")
    b0, b1 = (float(v) for v in fit.fixef.to_numpy()[:2])
    lo, hi = x_values(fit_coding)
    mean_base, mean_other = b0 + lo * b1, b0 + hi * b1
    return LMMParams(beta0=(mean_base + mean_other) / 2, effect=0.0,
                     sd_worker=sds["worker"][0], sd_worker_slope=sds["worker"][1],
                     sd_item=sds["item"][0], sd_item_slope=sds["item"][1],
                     sigma=float(fit.sigma), coding="sum")


# ------------------------------------------------------------------------------------
# variance components a pilot does not estimate: flagged, and set by the user
# ------------------------------------------------------------------------------------


def _sd_field(params: Any, name: Any) -> str:
    """The parameter field ``name`` means (``"item_slope"`` -> ``"sd_item_slope"``)."""
    fields = [f.name for f in dataclasses.fields(params)
              if f.name == "sigma" or f.name.startswith("sd_")]
    key = str(name)
    key = key if key in fields or key.startswith("sd_") else f"sd_{key}"
    if key not in fields:
        short = [f.removeprefix("sd_") for f in fields]
        raise InputError(f"sd names a variance component of the plan's parameters; got "
                         f"{name!r}. {type(params).__name__} has {short} (e.g. sd={{'item_slope': "
                         "0.1}}).")
    return key


def with_sds(params: Any, sd: Mapping[str, float] | None) -> Any:
    """``params`` with the SDs in ``sd`` set (keys with or without ``sd_``; ``sigma``).

    For the parts of the model a pilot does not estimate (:func:`zero_sd_notes`),
    on the parameters' scale and coding (+-1, sum coding for Card et al.'s model).

    Examples
    --------
    >>> from nlpower import presets
    >>> with_sds(presets.low_variance(), {"item_slope": 0.1}).sd_item_slope
    0.1
    """
    if not sd:
        return params
    if not isinstance(sd, Mapping):
        raise InputError(f"sd must be a mapping of variance components to SDs, e.g. "
                         f"{{'item_slope': 0.1}}; got {sd!r}.")
    new = {}
    for name, value in sd.items():
        key = _sd_field(params, name)
        v = check_real(f"sd[{name!r}]", value, min=0.0)
        if not math.isfinite(v):
            raise InputError(f"sd[{name!r}] must be a finite SD >= 0; got {value!r}.")
        new[key] = v
    return dataclasses.replace(params, **new)


_GROUP_TAGS = (("worker", "w"), ("item", "i"))


def zero_sd_notes(fit: Any, contrast: Any = None, sd: Mapping[str, float] | None = None
                  ) -> list[str]:
    """Notes on the planning SDs a fitted pilot sets to 0 because it cannot estimate them.

    A pilot model without a per-system (slope) term for workers or items, or
    without a term for them at all, gives 0 for what it leaves out; a pilot
    whose two compared systems share no item (items nested in systems) cannot
    identify the item slope, which is also set to 0.  Zero is the most
    optimistic reading of what is unknown, so a plan from such a pilot names
    them; ``sd`` (the user's values) replaces a note by one saying the value
    is the user's.

    Examples
    --------
    >>> from nlpower.ratings import fit_ratings, read_ratings
    >>> r = read_ratings("fixtures/pilot_ratings.csv", scale=(1, 5))
    >>> fit = fit_ratings(r, model="rating ~ system + (1 | worker) + (1 | item)")
    >>> [n.split(" is ")[0] for n in zero_sd_notes(fit)]
    ['sd_worker_slope', 'sd_item_slope']
    """
    missing = getattr(fit, "not_modelled", None)
    pairs = getattr(fit, "identified_pairs", None)
    if missing is None or pairs is None:
        return []
    a, b = fit._resolve_contrast(contrast)
    ia, ib = fit.systems.index(a), fit.systems.index(b)
    notes = []
    per_system = getattr(fit, "interaction_sd", {})     # (1 | g:system): a per-system term
    for g, tag in _GROUP_TAGS:
        why: tuple[str, tuple[str, ...]] | None = None
        if g not in per_system and f"sigma0{tag}" in missing and f"sigma1{tag}" in missing:
            why = (f"the pilot's model has no {g} term", (f"sd_{g}", f"sd_{g}_slope"))
        elif g not in per_system and f"sigma1{tag}" in missing:
            why = (f"the pilot's model has no per-system {g} term (system x {g} variance)",
                   (f"sd_{g}_slope",))
        elif not bool(np.asarray(pairs[g])[ia, ib]):
            why = (f"{a} and {b} share no {g} in the pilot ({g}s nested in systems), so the "
                   f"{g} slope is not identified", (f"sd_{g}_slope",))
        if why is not None:
            notes += [zero_sd_note(name, why[0], sd) for name in why[1]]
    return notes


def zero_sd_note(name: str, why: str, sd: Mapping[str, float] | None) -> str:
    """The note on one SD a pilot cannot estimate (``why``), or on the user's value for it."""
    if name in {_sd_field_name(k) for k in (sd or {})}:
        return f"{name} is {sd_value(sd, name):g}, as given ({why})."
    return (f"{name} is set to 0 because {why}; 0 is the most optimistic reading. Set it with "
            f"sd={{'{name.removeprefix('sd_')}': S}} (e.g. from a similar study).")


def _sd_field_name(name: Any) -> str:
    key = str(name)
    return key if key == "sigma" or key.startswith("sd_") else f"sd_{key}"


def sd_value(sd: Mapping[str, float] | None, name: str) -> float:
    """The value ``sd`` gives the field ``name`` (either spelling)."""
    for k, v in (sd or {}).items():
        if _sd_field_name(k) == name:
            return float(v)
    raise KeyError(name)
