"""Outcome kinds: what is rated, which analyses it has, which options it reads.

The front doors :func:`nlpower.power`, :func:`nlpower.power_grid`,
:func:`nlpower.mde` and :func:`nlpower.plan` take ``outcome=``, ``levels=``
and ``analysis=`` and look the outcome up here, in one registry
(:func:`get_outcome` is the only lookup; no front door compares outcome
names).  An :class:`OutcomeKind` is data -- its analyses and their tests,
the options it reads -- plus a pointer to its *model*, an object with four
methods that the front doors call (imported on first use, so this module
never imports the outcome packages above it):

- ``as_params(params, opts, *, effect, coding, contrast)`` -- the user's
  parameters (or pilot fit) as this outcome's parameters, ``effect``
  replacing theirs when given;
- ``with_effect(params, effect)`` and ``effect_of(params)`` -- the tested
  effect, on the analysis's latent/logit/rating scale (what ``mde`` solves
  for and ``plan`` plans for);
- ``run(design, params, opts, *, rng, progress)`` -- the simulated (or
  analytic) power: a :class:`~nlpower.powersim.result.PowerResult`, or for
  several analyses of the same replicates an
  :class:`~nlpower.outcomes.power.AnalysisComparison`.

=============  ==========================  =====================  ===================================
outcome        params                      analysis (tests)       effect scale
=============  ==========================  =====================  ===================================
``gaussian``   ``LMMParams``, K-system     ``lmm`` (every test    beta1 in the parameters' coding
               params, or a pilot fit      of :mod:`.rules`)
``likert``     ``LikertParams``, or a      ``lmm`` (satterthwaite latent effect / latent scale
               preset with ``levels=K``    kenward-roger, z,      (``clmm``); the LMM's effect on
               or an ordinal pilot fit     lrt), ``clmm`` (z,     [0, 1] is reported as ``effect``
                                           lrt)                   of its result
``preference`` ``HeadToHeadParams``, or a  ``glmer`` (z)          logit of the share preferring B
               binary ``glmer`` pilot fit
=============  ==========================  =====================  ===================================

Adding an outcome is one :class:`OutcomeKind` in :data:`OUTCOMES` and a
model object at its ``target``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .._validation import check_choice
from ..errors import InputError
from .rules import get_test

__all__ = ["COMMON_OPTIONS", "OUTCOMES", "OutcomeKind", "OutcomeModel", "get_outcome"]

#: Options every outcome reads (the rest are named per outcome in ``OutcomeKind.options``).
COMMON_OPTIONS = frozenset({"n_sims", "alpha", "test", "alternative", "null", "keep_replicates",
                            "on_failure", "outcome", "analysis"})


class OutcomeModel(Protocol):
    """What an outcome kind's ``target`` is (module docstring)."""

    def as_params(self, params: Any, opts: Any, *, effect: float | None, coding: Any,
                  contrast: Any) -> Any: ...

    def with_effect(self, params: Any, effect: float) -> Any: ...

    def effect_of(self, params: Any) -> float: ...

    def run(self, design: Any, params: Any, opts: Any, *, rng: Any, progress: bool,
            checkpoint: Any = None) -> Any: ...


@dataclass(frozen=True)
class OutcomeKind:
    """One outcome: its analyses and their tests, the options it reads, its model.

    Attributes
    ----------
    name : str
    analyses : mapping of str to tuple of str
        Analysis name -> the tests it offers; the first analysis is the
        default, and the first test of each is its default.
    options : frozenset of str
        Options of :func:`~nlpower.powersim.options.power_options` read
        beyond :data:`COMMON_OPTIONS`; any other option given a value other
        than its default is refused with a message naming it.
    params : str
        What ``params`` must be (for messages).
    effect_scale : str
        The scale of the effect ``mde`` solves for and ``plan`` plans for.
    analytic : bool
        ``mde``/``plan`` search an analytic power curve (else a simulated one).
    methods : tuple of str
        The ``method=`` values it takes (``"analytic"``: its expected-information tier).
    several : bool
        Several analyses can share the same replicates (``analysis=[...]``).
    target : str
        ``"module:attribute"`` of the :class:`OutcomeModel`.
    """

    name: str
    analyses: Mapping[str, tuple[str, ...]]
    options: frozenset[str]
    params: str
    target: str
    effect_scale: str = ""
    analytic: bool = False
    methods: tuple[str, ...] = ("auto", "balanced", "simulate", "analytic")
    several: bool = False

    @property
    def model(self) -> OutcomeModel:
        module, attr = self.target.split(":")
        model: OutcomeModel = getattr(importlib.import_module(module), attr)
        return model

    def resolve_analyses(self, analysis: Any) -> tuple[str, ...]:
        """``analysis`` (``None``: the default; a name; or a list when ``several``) as names."""
        names: tuple[Any, ...]
        if analysis is None:
            names = (next(iter(self.analyses)),)
        elif isinstance(analysis, str):
            names = tuple(self.analyses) if analysis == "both" and self.several else (analysis,)
        elif isinstance(analysis, (list, tuple)) and analysis and self.several:
            names = tuple(analysis)
        else:
            raise InputError(
                f"analysis must be one of {list(self.analyses)} for outcome={self.name!r}"
                + (" (or a list of them)" if self.several else "") + f"; got {analysis!r}.")
        for a in names:
            check_choice(f"analysis (outcome={self.name!r})", a, tuple(self.analyses))
        if len(set(names)) != len(names):
            raise InputError(f"analysis lists a name twice: {list(names)!r}.")
        return names

    def resolve_test(self, analysis: str, test: Any) -> str:
        """``test`` for ``analysis`` (``None``: the analysis's default), checked."""
        tests = self.analyses[analysis]
        if test is None:
            return tests[0]
        if test not in tests:
            get_test(test)          # an unknown name: the registry's message lists every test
            raise InputError(
                f"test={test!r} is not a test of outcome={self.name!r}, analysis={analysis!r}; "
                f"choose from {list(tests)} (or leave test=None for {tests[0]!r}).")
        return str(test)

    def refuse(self, given: Iterable[str], what: str = "") -> None:
        """Raise when options this outcome does not read were given (``given``: their names)."""
        bad = [k for k in given if k not in COMMON_OPTIONS and k not in self.options]
        if bad:
            raise InputError(
                f"outcome={self.name!r} does not take {', '.join(bad)}{what}; leave "
                f"{'it' if len(bad) == 1 else 'them'} at the default (params are {self.params}; "
                f"analyses {list(self.analyses)}).")


_LMM_TESTS = ("satterthwaite", "kenward-roger", "z", "lrt", "pblrt", "calibrated")

#: The outcome kinds, by name (``outcome=`` of every front door).
OUTCOMES: dict[str, OutcomeKind] = {
    "gaussian": OutcomeKind(
        name="gaussian", analyses={"lmm": _LMM_TESTS},
        options=frozenset({"method", "engine", "REML", "likert", "n_resamples", "effect", "coding",
                           "contrast", "checkpoint"}),
        params="LMMParams, K-system parameters or a fitted pilot",
        target="nlpower.powersim.run:GAUSSIAN", analytic=True,
        effect_scale="beta1 in the parameters' coding"),
    "likert": OutcomeKind(
        name="likert", analyses={"lmm": ("satterthwaite", "z", "lrt", "kenward-roger"),
                                 "clmm": ("z", "lrt")},
        options=frozenset({"method", "engine", "levels", "effect", "contrast", "checkpoint"}),
        params="LikertParams, LMMParams (a preset on [0, 1]) with levels=K, or an ordinal "
               "pilot fit (clmm) with effect=",
        target="nlpower.outcomes.api:LIKERT", several=True,
        methods=("auto", "simulate", "analytic"),
        effect_scale="latent scale, the parameters' coding"),
    "preference": OutcomeKind(
        name="preference", analyses={"glmer": ("z",)},
        options=frozenset({"method", "effect", "checkpoint"}),
        params="HeadToHeadParams (repeated judgements), or a binary glmer pilot fit with "
               "effect= (one judgement per person: nlpower.preference.power)",
        target="nlpower.outcomes.api:PREFERENCE", methods=("auto", "simulate", "analytic"),
        effect_scale="logit of the share preferring B"),
}


def get_outcome(name: Any) -> OutcomeKind:
    """The :class:`OutcomeKind` called ``name`` (the one lookup of ``outcome=``)."""
    if name not in OUTCOMES:
        raise InputError(
            f"outcome must be one of {list(OUTCOMES)}; got {name!r}. One-judgement head-to-head "
            "studies: nlpower.preference.power(n, p_win).")
    return OUTCOMES[name]
