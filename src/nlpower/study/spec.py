"""A power study as one value: design, truth, analysis and test (:class:`Study`).

A study is four parts (``docs/study.md``, "A study as one value"):

* the **design** -- who rates what (a :class:`~nlpower.design.CrossedDesign`;
  ``None`` for a fitted model, whose own rows, or an
  :func:`~nlpower.extend`-ed design, are the design);
* the **truth** -- what generates the data: :class:`Truth` (the paper's
  parameters, a Likert or head-to-head model, or a pilot fit with the effect
  to plan for), or a fitted ``lmer``/``glmer``/``clmm`` model with its
  parameters set by the user (``fit.with_params``);
* the **analysis** -- what is fitted to each replicate and how
  (:class:`Analysis`: the outcome's analysis or a formula, the engine,
  ``REML``, the way power is computed);
* the **test** -- the rule from the registry and what it tests
  (:class:`Test`: a coefficient, a contrast, a model comparison, every
  pairwise comparison).

:func:`nlpower.power`, :func:`nlpower.power_grid`, :func:`nlpower.mde` and
:func:`nlpower.plan` take a :class:`Study` first and the run's options
(:class:`~nlpower.powersim.SimOptions`, :class:`PlanOptions`) beside it;
:func:`nlpower.power_curve` and :func:`nlpower.study.plan_model` take a
fitted model's study (:meth:`Study.model`).
Their keyword spellings build the same :class:`Study`
(:func:`resolve_study`) and run the same code: one path, not two.

This module holds values only; the numbers are computed where they always
were (:mod:`nlpower.powersim`, :mod:`nlpower.study.power`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._choices import Coding, EngineName, PowerMethod
from ..errors import InputError

__all__ = ["Analysis", "PlanOptions", "Study", "Test", "Truth", "from_keywords", "grid_parts",
           "is_model", "plan_layout", "plan_options", "rating_study", "refuse_fields",
           "resolve_study"]


@dataclass(frozen=True)
class Truth:
    """What generates a rating study's data: parameters (or a pilot fit) and the outcome.

    Parameters
    ----------
    params : LMMParams, MultiSystemParams, LikertParams, HeadToHeadParams or a pilot fit
        The true model; a fitted pilot (``RatingsFit``, an ``LmmFit`` of the
        paper's model, a ``clmm`` or binary ``glmer`` fit) gives its variance
        components and ``effect`` gives the effect.  :func:`nlpower.power_grid`
        also takes a dict (or list) of named parameter sets: a scenario axis.
    outcome : {"gaussian", "likert", "preference"}, default "gaussian"
        What is rated (:mod:`nlpower.powersim.outcome`).
    effect : float, optional
        The effect, in ``coding`` (latent / logit scale for Likert and
        head-to-head outcomes); replaces the parameters' own effect.
        Required with a pilot fit.  :func:`nlpower.mde` solves for the
        effect and ignores it.
    coding : {"sum", "half", "treatment"}, default "sum"
        Coding of ``effect`` (and of the parameters taken from a pilot fit).
    contrast : str or (str, str), optional
        Which comparison of a pilot fit of more than two systems.
    levels : int, optional
        Likert points (``outcome="likert"`` with a preset).
    likert : int, optional
        Gaussian outcome only: simulate ``likert``-point ratings, analysed
        by the Gaussian LMM.
    sd : mapping of str to float, optional
        SDs the pilot does not identify, set by the user
        (``{"item_slope": 0.1}``; :func:`nlpower.plan` only).
    """

    params: Any
    outcome: str = "gaussian"
    effect: float | None = None
    coding: Coding = "sum"
    contrast: Any = None
    levels: int | None = None
    likert: int | None = None
    sd: Mapping[str, float] | None = None


@dataclass(frozen=True)
class Analysis:
    """What is fitted to every replicate, and how power is computed.

    Parameters
    ----------
    model : str or list of str, optional
        A rating study's analysis (``"lmm"``, ``"clmm"``, ``"glmer"``; a
        list compares Likert analyses on the same replicates in a grid); a
        fitted model's analysis formula (default: the model's own).
    engine : {"native", "lme4"}, default "native"
        The fitter of every refit.
    REML : bool, optional
        Fit criterion (default: the test's, :func:`nlpower.power`).
    method : {"auto", "balanced", "simulate", "analytic"}, default "auto"
        How :func:`nlpower.power` computes power of a rating study.
    """

    model: Any = None
    engine: EngineName = "native"
    REML: bool | None = None
    method: PowerMethod = "auto"


@dataclass(frozen=True)
class Test:
    """The test: a rule from the registry and what it tests.

    Parameters
    ----------
    rule : str, optional
        ``"satterthwaite"``, ``"kenward-roger"``, ``"z"``, ``"lrt"``,
        ``"pblrt"``, ``"calibrated"`` (default: the analysis's first,
        :func:`nlpower.power`).
    term, compare, pairwise, baseline, adjust
        What a fitted model's test is about (:func:`nlpower.power`): a
        coefficient or contrast, a reduced model, every comparison of a
        factor's levels (each against ``baseline``) with ``adjust``.  A
        rating study tests its system effect (or the pilot's ``contrast``).
    n_resamples : int, default 99
        Bootstrap samples per replicate of ``"pblrt"`` and ``"calibrated"``.
    """

    rule: str | None = None
    term: str | None = None
    compare: str | None = None
    pairwise: str | None = None
    baseline: Any = None
    adjust: str = "holm"
    n_resamples: int = 99

    __test__ = False        # not a pytest test class, whatever its name


@dataclass(frozen=True)
class PlanOptions:
    """What :func:`nlpower.plan` searches and what it pays (the target, the costs, the caps).

    Parameters
    ----------
    target_power : float, default 0.8
    cost_per_rating, cost_per_worker : float
        Cost of a design: ``cost_per_rating * n_ratings + cost_per_worker * n_workers``
        (a head-to-head judgement is one rating).
    min_workers, max_workers, max_items : int
        The range searched (``max_workers=None``: 2-50, extended while the
        cheapest design lies on the edge).
    workers_per_item : int, optional
        Each item rated by that many workers.
    """

    target_power: float = 0.8
    cost_per_rating: float = 1.0
    cost_per_worker: float = 0.0
    min_workers: int = 2
    max_workers: int | None = None
    max_items: int = 5000
    workers_per_item: int | None = None


#: keyword of the front doors -> (part of the Study, field of that part)
KEYWORDS: dict[str, tuple[str, str]] = {
    "effect": ("truth", "effect"), "coding": ("truth", "coding"),
    "contrast": ("truth", "contrast"), "outcome": ("truth", "outcome"),
    "levels": ("truth", "levels"), "likert": ("truth", "likert"), "sd": ("truth", "sd"),
    "analysis": ("analysis", "model"), "engine": ("analysis", "engine"),
    "REML": ("analysis", "REML"), "method": ("analysis", "method"),
    "test": ("test", "rule"), "term": ("test", "term"), "compare": ("test", "compare"),
    "pairwise": ("test", "pairwise"), "baseline": ("test", "baseline"),
    "adjust": ("test", "adjust"), "n_resamples": ("test", "n_resamples"),
}
_CLASSES = {"truth": Truth, "analysis": Analysis, "test": Test}


@dataclass(frozen=True)
class Study:
    """A power study: design (who rates what), truth, analysis and test.

    Build it with a constructor -- :meth:`ratings`, :meth:`likert`,
    :meth:`head_to_head`, :meth:`model` -- or from its parts, and pass it
    to :func:`nlpower.power`, :func:`nlpower.power_grid`,
    :func:`nlpower.mde` or :func:`nlpower.plan` (a fitted model's study also
    to :func:`nlpower.power_curve` and :func:`nlpower.study.plan_model`)
    with the run's options (``sim=SimOptions(...)``).  A keyword given beside a Study that differs
    from what the Study holds is refused, naming it.

    Attributes
    ----------
    design : CrossedDesign or None
        Who rates what; ``None`` for a fitted model (its own rows), for a
        grid whose axes give the design, and for :func:`nlpower.plan`.
    truth : Truth, or a fitted model / ModelDesign
    analysis : Analysis
    test : Test

    Examples
    --------
    >>> from nlpower import CrossedDesign, SimOptions, Study, power, presets
    >>> study = Study.ratings(CrossedDesign(5, 30), presets.high_variance(), effect=0.2,
    ...                       test="z")
    >>> a = power(study, sim=SimOptions(n_sims=200, rng=1))
    >>> b = power(CrossedDesign(5, 30), presets.high_variance(), effect=0.2, test="z",
    ...           n_sims=200, rng=1)
    >>> a.power == b.power
    True
    """

    design: Any
    truth: Any
    analysis: Analysis = field(default_factory=Analysis)
    test: Test = field(default_factory=Test)

    def __post_init__(self) -> None:
        for name, cls in (("analysis", Analysis), ("test", Test)):
            part = getattr(self, name)
            if not isinstance(part, cls):
                raise InputError(f"Study {name} must be a {cls.__name__}(...); got "
                                 f"{type(part).__name__}. E.g. Study(design, truth, "
                                 "Analysis(engine='lme4'), Test('z')).")
        if is_model(self.truth):
            if self.design is not None:
                raise InputError(
                    "a fitted model's study uses the model's own rows: pass design=None, and a "
                    "larger design as the truth (nlpower.extend(fit, along='worker', n=40)).")
            return
        if not isinstance(self.truth, Truth):
            raise InputError(
                f"Study truth must be a Truth(params, ...) or a fitted lmer/glmer/clmm model; "
                f"got {type(self.truth).__name__}. Use Study.ratings(design, params) or "
                "Study.model(fit, term=...).")
        t = self.test
        if t.term is not None or t.compare is not None or t.pairwise is not None:
            raise InputError("term= and compare= test a term of a fitted model: pass the model "
                             "(nlpower.lmer / glmer / clmm, parameters set with with_params) as "
                             "the first argument, e.g. nlpower.power(fit, term='x').")

    @property
    def is_model(self) -> bool:
        """The truth is a fitted model (:func:`nlpower.power` of a term, simr's ``powerSim``)."""
        return is_model(self.truth)

    # ---- constructors of the common studies ----------------------------------------------

    @classmethod
    def ratings(cls, design: Any, params: Any, *, effect: float | None = None,
                coding: Coding = "sum", contrast: Any = None, likert: int | None = None,
                sd: Mapping[str, float] | None = None, test: str | Test | None = None,
                analysis: Analysis | None = None) -> Study:
        """The paper's model (Card et al. 2020) on ``design``: parameters or a pilot fit.

        ``effect`` is in ``coding`` (required with a pilot fit, whose own
        estimate is never used); ``contrast`` picks a K-system pilot's
        comparison.  ``test`` is a rule name or a :class:`Test`.
        """
        return cls(design, Truth(params, "gaussian", effect, coding, contrast, None, likert, sd),
                   analysis or Analysis(), _test(test))

    @classmethod
    def likert(cls, design: Any, params: Any, *, levels: int | None = None,
               effect: float | None = None, contrast: Any = None, sd: Mapping[str, float] | None
               = None, analysis: str | Analysis = "lmm", test: str | Test | None = None) -> Study:
        """Likert ratings from the latent threshold model, analysed by ``"lmm"`` or ``"clmm"``.

        ``params``: ``LikertParams``, a preset on [0, 1] with ``levels``, or
        an ordinal pilot fit with ``effect`` (latent scale).
        """
        return cls(design, Truth(params, "likert", effect, "sum", contrast, levels, None, sd),
                   _analysis(analysis), _test(test))

    @classmethod
    def head_to_head(cls, design: Any, params: Any, *, effect: float | None = None,
                     sd: Mapping[str, float] | None = None, test: str | Test | None = None,
                     analysis: str | Analysis = "glmer") -> Study:
        """Repeated head-to-head judgements (``HeadToHeadParams``), analysed by a binomial GLMM.

        ``effect`` is the logit of the share preferring B.
        """
        return cls(design, Truth(params, "preference", effect, "sum", None, None, None, sd),
                   _analysis(analysis), _test(test))

    @classmethod
    def model(cls, fit: Any, *, term: str | None = None, compare: str | None = None,
              pairwise: str | None = None, baseline: Any = None, adjust: str = "holm",
              test: str | None = None, analysis: str | Analysis | None = None,
              n_resamples: int = 99) -> Study:
        """Any fitted ``lmer``/``glmer``/``clmm`` model (or ``ModelDesign``) and what to test.

        ``fit``'s parameters are the truth (set them with ``fit.with_params``;
        a larger design with :func:`nlpower.extend`); ``analysis`` is the
        formula fitted to each replicate (default: the model's).
        """
        if not is_model(fit):
            raise InputError(f"Study.model needs a fitted model (nlpower.lmer / glmer / clmm) or "
                             f"a ModelDesign; got {type(fit).__name__}. For parameters on a "
                             "CrossedDesign use Study.ratings(design, params).")
        return cls(None, fit, _analysis(analysis),
                   Test(test, term, compare, pairwise, baseline, adjust, n_resamples))

    # ---- the keyword spelling ------------------------------------------------------------

    def value(self, keyword: str) -> Any:
        """The value this study holds for a front door's keyword (``"engine"``, ``"effect"``...).

        ``None`` for a keyword a fitted model's study has no place for (its
        truth is the model).
        """
        part, name = KEYWORDS[keyword]
        obj = getattr(self, part)
        return getattr(obj, name) if isinstance(obj, _CLASSES[part]) else None


def _test(test: Any) -> Test:
    if test is None or isinstance(test, str):
        return Test(rule=test)
    if isinstance(test, Test):
        return test
    raise InputError(f"test must be a test's name (e.g. 'z') or a Test(...); got "
                     f"{type(test).__name__}.")


def _analysis(analysis: Any) -> Analysis:
    if isinstance(analysis, Analysis):
        return analysis
    return Analysis(model=analysis)


def is_model(obj: Any) -> bool:
    """A fitted mixed model or a :class:`~nlpower.study.ModelDesign` (a study's truth)."""
    from ..glmm.result import GlmmFit
    from ..lmm.result import LmmFit
    from ..ordinal.result import ClmmFit
    from .design import ModelDesign
    return isinstance(obj, (LmmFit, GlmmFit, ClmmFit, ModelDesign))


def from_keywords(design: Any, params: Any, keywords: Mapping[str, Any],
                  where: str = "power") -> Study:
    """The :class:`Study` of a keyword call (``power(design, params, engine=..., ...)``).

    ``keywords`` holds the front door's study keywords (names of
    :data:`KEYWORDS`; those it does not take are left out and keep their
    defaults).
    """
    parts: dict[str, dict[str, Any]] = {"truth": {}, "analysis": {}, "test": {}}
    for kw, value in keywords.items():
        part, name = KEYWORDS[kw]
        parts[part][name] = value
    if is_model(design):
        if params is not None:
            raise InputError("power(model, term=...) takes the truth from the fitted model; do "
                             "not pass params (set parameters with model.with_params(...)).")
        base = Truth(None)
        for name, value in parts["truth"].items():
            if not _same(value, getattr(base, name)):
                raise InputError(f"{where}(model, ...) takes the truth from the fitted model; "
                                 f"{name}={value!r} does not apply (set the effect with "
                                 "model.with_params(fixef={...}); leave it out).")
        return Study(None, design, Analysis(**parts["analysis"]), Test(**parts["test"]))
    test = Test(**parts["test"])
    if test.term is not None or test.compare is not None or test.pairwise is not None:
        Study(design, Truth(None), Analysis(), test)        # its message: pass a fitted model
    if params is None:
        raise InputError(f"{where}(design, params) needs params (e.g. "
                         f"presets.high_variance(0.1)), or a Study; power() also takes a fitted "
                         "model: power(fit, term='x').")
    return Study(design, Truth(params, **parts["truth"]), Analysis(**parts["analysis"]), test)


def resolve_study(where: str, first: Any, params: Any, keywords: Mapping[str, Any],
                  defaults: Mapping[str, Any], *, build: Any = None) -> Study:
    """The study of a front door's call: the :class:`Study` given, or built from the keywords.

    ``first`` is the call's first argument.  Not a Study: the study is
    ``build()`` (default: :func:`from_keywords` of ``first`` and ``params``).
    A Study: ``params`` must be left out and every study keyword must keep
    its default or repeat the study's value; anything else is refused,
    naming the keyword and where the Study holds it.
    """
    if not isinstance(first, Study):
        return build() if build is not None else from_keywords(first, params, keywords, where)
    if params is not None:
        raise InputError(f"{where}(study, ...) takes the parameters from the Study; got a second "
                         f"argument ({type(params).__name__}). Put them in the Study "
                         "(Study.ratings(design, params)).")
    for kw, value in keywords.items():
        held = first.value(kw)
        if _same(value, defaults[kw]) or _same(value, held):
            continue
        part, name = KEYWORDS[kw]
        raise InputError(
            f"{kw}={value!r} is given to {where}() beside a Study that holds {part}.{name}="
            f"{held!r}; a Study carries its own {kw}. Set it in the Study "
            f"({_CLASSES[part].__name__}({name}=...), or dataclasses.replace) and leave the "
            "keyword out.")
    return first


def refuse_fields(where: str, study: Study, fields: Mapping[str, tuple[str, ...]],
                  why: str = "") -> None:
    """Refuse parts of ``study`` that ``where`` does not use (set to other than their default)."""
    for part, names in fields.items():
        obj = getattr(study, part)
        defaults = type(obj)(**({"params": None} if part == "truth" else {}))
        for name in names:
            if not _same(getattr(obj, name), getattr(defaults, name)):
                raise InputError(
                    f"{where}() does not use {part}.{name} (got {getattr(obj, name)!r}){why}; "
                    f"leave it at its default ({getattr(defaults, name)!r}).")


def grid_parts(study: Study, design: Any, effect: Any) -> Any:
    """A Study given to :func:`power_grid`: what it cannot hold refused; the effect axis."""
    if study.is_model:
        raise InputError("power_grid() runs rating studies over designs; for a fitted model's "
                         "power against the number of levels use nlpower.power_curve(fit, "
                         "along=..., term=...).")
    refuse_fields("power_grid", study, {"truth": ("sd",)})
    if design is not None and design != study.design:
        raise InputError(f"design={design!r} is given to power_grid() beside a Study whose design "
                         f"is {study.design!r}; a Study carries its own design template. Leave "
                         "the keyword out.")
    held = study.truth.effect
    if held is not None and effect is not None and not _same(effect, held):
        raise InputError(f"effect={effect!r} is given to power_grid() beside a Study that holds "
                         f"truth.effect={held!r}; give the effect axis once (in the Study for one "
                         "value, as effect=[...] with Truth(effect=None) for an axis).")
    return held if effect is None else effect


def rating_study(where: str, study: Study, truth_fields: tuple[str, ...] = ()) -> None:
    """Refuse a fitted model's study, and the parts of a rating study ``where`` does not use."""
    if study.is_model:
        raise InputError(f"{where}() plans a rating study (parameters on a CrossedDesign); for a "
                         "fitted model use nlpower.study.plan_model(fit, term=..., along=...) or "
                         "nlpower.power_curve.")
    refuse_fields(where, study, {"truth": truth_fields, "analysis": ("REML", "method"),
                                 "test": ("n_resamples",)})


def plan_options(keywords: Mapping[str, Any], defaults: Mapping[str, Any],
                 planning: Any) -> PlanOptions:
    """``planning``, or the :class:`PlanOptions` of :func:`nlpower.plan`'s keywords.

    A keyword beside ``planning`` that differs from its default and from
    ``planning``'s value is refused (given twice).
    """
    if planning is None:
        return PlanOptions(**keywords)
    if not isinstance(planning, PlanOptions):
        raise InputError(f"planning must be a PlanOptions (e.g. PlanOptions(max_workers=30)); "
                         f"got {type(planning).__name__}.")
    for kw, value in keywords.items():
        held = getattr(planning, kw)
        if not (_same(value, defaults[kw]) or _same(value, held)):
            raise InputError(f"{kw} is given twice to plan(): {kw}={value!r} and planning="
                             f"PlanOptions({kw}={held!r}). Give it once.")
    return planning


def plan_layout(study: Study, planning: PlanOptions) -> PlanOptions:
    """The layout :func:`nlpower.plan` searches: a Study's design gives its ``workers_per_item``.

    Its numbers of workers and items are what the plan searches; a design
    that is not paired with two systems is refused.
    """
    d = study.design
    if d is None:
        return planning
    if getattr(d, "items", "paired") != "paired" or len(getattr(d, "system_names", ())) != 2:
        raise InputError(f"plan() searches paired designs of two systems; the Study's design is "
                         f"{d!r}. Leave the design out (design=None) to plan.")
    wpi = getattr(d, "workers_per_item", None)
    if wpi is None or _same(wpi, planning.workers_per_item):
        return planning
    if planning.workers_per_item is not None:
        raise InputError(f"workers_per_item is given twice to plan(): the Study's design has "
                         f"workers_per_item={wpi!r}, PlanOptions has "
                         f"{planning.workers_per_item!r}. Give it once.")
    return dataclasses.replace(planning, workers_per_item=wpi)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a is b or (type(a) is type(b) and a == b))
    except Exception:      # arrays and other values without a plain truth value
        return False

