"""Stage 1 of :func:`~nlpower.powersim.power`: the run's options, validated once.

:func:`power_options` checks every option at the public boundary and returns
a frozen :class:`PowerOptions`; :func:`~nlpower.powersim.power` accepts it
as ``options=`` and then validates nothing again.  A grid builds one
``PowerOptions`` and passes it to every cell.

``method=`` says *how* power is computed, ``engine=`` only *which fitter*
refits the simulated data (``docs/api.md``, "Mixed-model engines"):

=============  ==================================================================
method         what runs
=============  ==================================================================
``"auto"``     ``"balanced"`` when it is exact for the design (and the engine is
               the native one), else ``"simulate"``
``"balanced"`` exact balanced fast path: sums of squares, closed-form / batched
               ML and REML fits, no engine (:mod:`nlpower.powersim.fastpath`)
``"simulate"`` simulate ratings, refit with ``engine`` through the engine protocol
``"analytic"`` no simulation: noncentral t (:mod:`nlpower.powersim.analytic`)
=============  ==================================================================
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._choices import (
    Alternative,
    EngineName,
    FailurePolicy,
    PowerMethod,
    RatingsTest,
    check_choice,
)
from .._validation import check_int, check_real
from ..errors import InputError
from .batches import check_precision
from .outcome import OutcomeKind, get_outcome
from .rules import get_test

#: Old ``engine=`` values that named a way of computing power: what to pass instead.
_RENAMED_ENGINES = {"fast": "method='balanced'", "auto": "method='auto'",
                    "analytic": "method='analytic'"}


@dataclass(frozen=True)
class PowerOptions:
    """Validated options of one power calculation (build with :func:`power_options`).

    Attributes
    ----------
    n_sims : int
    alpha : float
    test : {"satterthwaite", "kenward-roger", "z", "lrt", "pblrt"}
    alternative : {"two-sided", "greater", "less"}
    method : {"auto", "balanced", "simulate", "analytic"}
        As requested; :func:`~nlpower.powersim.power` resolves ``"auto"`` per design.
    engine : {"native", "lme4"}
        Fitter of ``method="simulate"``.
    REML : bool
        Fit criterion, resolved from ``test`` when not given.
    n_resamples : int
        Bootstrap samples per replicate of ``test="pblrt"`` (unused by the other tests).
    null : bool
    likert : int or None
    keep_replicates : bool
    on_failure : {"ignore", "warn", "raise"}
    outcome : {"gaussian", "likert", "preference"}
        What is rated (:mod:`nlpower.powersim.outcome`).
    analyses : tuple of str
        The analysis (one; several only in a Likert grid, which compares
        them on the same replicates); :attr:`analysis` is the first.
    levels : int or None
        Likert points of ``outcome="likert"``.
    precision : float or None
        Adaptive Monte Carlo precision: each run of replicates stops once the
        half-width of its rejection rate's 95% interval is at most this
        (``n_sims`` the maximum; :class:`nlpower.powersim.batches.Precision`).
    """

    n_sims: int = 1000
    alpha: float = 0.05
    test: RatingsTest = "satterthwaite"
    alternative: Alternative = "two-sided"
    method: PowerMethod = "auto"
    engine: EngineName = "native"
    REML: bool = True
    null: bool = False
    likert: int | None = None
    keep_replicates: bool = True
    on_failure: FailurePolicy = "ignore"
    n_resamples: int = 99
    outcome: str = "gaussian"
    analyses: tuple[str, ...] = ("lmm",)
    levels: int | None = None
    #: with several analyses, each one's test (``test`` is the first's); else empty
    analysis_tests: tuple[str, ...] = ()
    precision: float | None = None

    @property
    def analysis(self) -> str:
        """The (first) analysis."""
        return self.analyses[0]

    def for_analysis(self, analysis: str) -> PowerOptions:
        """The options of one of several analyses (its test, and that test's REML)."""
        if not self.analysis_tests:
            return self
        test = self.analysis_tests[self.analyses.index(analysis)]
        return replace(self, test=test, REML=get_test(test).resolve_REML(None),  # type: ignore[arg-type]
                       analyses=(analysis,), analysis_tests=())

    @property
    def kind(self) -> OutcomeKind:
        """The :class:`~nlpower.powersim.outcome.OutcomeKind` of ``outcome``."""
        return get_outcome(self.outcome)

    def to_dict(self) -> dict[str, Any]:
        """The options as a JSON-able dict."""
        return {"n_sims": self.n_sims, "alpha": self.alpha, "test": self.test,
                "alternative": self.alternative, "method": self.method, "engine": self.engine,
                "REML": self.REML, "null": self.null, "likert": self.likert,
                "keep_replicates": self.keep_replicates, "on_failure": self.on_failure,
                "n_resamples": self.n_resamples, "outcome": self.outcome,
                "analyses": list(self.analyses), "levels": self.levels,
                "analysis_tests": list(self.analysis_tests), "precision": self.precision}


def check_test_options(alpha: object, test: object, alternative: object
                       ) -> tuple[float, RatingsTest, Alternative]:
    """Validate ``alpha``, ``test`` and ``alternative`` (shared by every power function)."""
    a = check_real("alpha", alpha)
    if not 0.0 < a < 1.0:
        raise InputError(
            f"alpha must be strictly between 0 and 1 (the significance level); got {a}. "
            "The usual value is 0.05."
        )
    return a, get_test(test).name, check_choice("alternative", alternative,  # type: ignore[return-value]
                                                Alternative)


def check_engine(engine: object) -> EngineName:
    """A fitter name; the old ``engine="fast"/"auto"/"analytic"`` get a pointer to ``method=``."""
    if isinstance(engine, str) and engine in _RENAMED_ENGINES:
        raise InputError(
            f"engine={engine!r} is no longer a way of computing power: engine= only names the "
            f"fitter ('native' or 'lme4'). Use {_RENAMED_ENGINES[engine]} (with the default "
            "engine='native')."
        )
    name: EngineName = check_choice("engine", engine, EngineName)
    return name


def power_options(
    *,
    n_sims: int = 1000,
    alpha: float = 0.05,
    test: RatingsTest | str | None = None,
    alternative: Alternative = "two-sided",
    method: PowerMethod = "auto",
    engine: EngineName = "native",
    REML: bool | None = None,
    null: bool = False,
    likert: int | None = None,
    keep_replicates: bool = True,
    on_failure: FailurePolicy = "ignore",
    n_resamples: int = 99,
    outcome: str = "gaussian",
    analysis: Any = None,
    levels: int | None = None,
    precision: float | None = None,
) -> PowerOptions:
    """Validate the options of :func:`~nlpower.powersim.power` once.

    Parameters are those of :func:`~nlpower.powersim.power`.  ``outcome``
    is looked up in :data:`nlpower.powersim.outcome.OUTCOMES`, which says
    which analyses it has (``analysis=None``: its first), which tests each
    analysis offers (``test=None``: the analysis's first, e.g.
    ``"satterthwaite"`` for the Gaussian LMM, ``"z"`` for clmm) and which
    options it reads: any other option given a value other than its
    default is refused with a message naming it.  ``REML=None``
    resolves to the test rule's default (:mod:`nlpower.powersim.rules`):
    REML for ``test="satterthwaite"`` (lmerTest's default) and
    ``"kenward-roger"`` (which needs a REML fit, as in pbkrtest), ML for
    ``"z"`` (the paper), ``"lrt"`` and ``"pblrt"``.

    Raises
    ------
    InputError
        Any bad value; the message names the option, shows the value and
        says what is allowed.

    Examples
    --------
    >>> opts = power_options(n_sims=200, test="z")
    >>> opts.REML, opts.method, opts.engine
    (False, 'auto', 'native')
    """
    given = [k for k, v in (("method", method), ("engine", engine), ("REML", REML),
                            ("likert", likert), ("n_resamples", n_resamples), ("levels", levels))
             if not _same(v, _default(k))]
    kind = get_outcome(outcome)
    kind.refuse(given)
    analyses = kind.resolve_analyses(analysis)
    # several analyses of the same replicates: each its default test unless it offers the one given
    tests = tuple(kind.resolve_test(a, test if test in kind.analyses[a] else None)
                  for a in analyses) if len(analyses) > 1 else ()
    if tests and test is not None and test not in tests:
        kind.resolve_test(analyses[0], test)       # offered by none: the message lists the tests
    test = tests[0] if tests else kind.resolve_test(analyses[0], test)
    n_sims = check_int("n_sims", n_sims, min=1)
    alpha, test_, alternative_ = check_test_options(alpha, test, alternative)
    method_: PowerMethod = check_choice("method", method, PowerMethod)
    if method_ not in kind.methods:
        raise InputError(f"outcome={kind.name!r} takes method={' or '.join(map(repr, kind.methods))}"
                         f"; got method={method_!r}.")
    engine_ = check_engine(engine)
    if engine_ != "native" and method_ in ("balanced", "analytic"):
        raise InputError(
            f"method={method_!r} uses no mixed-model fitter, so engine={engine_!r} has no effect "
            f"there. Use method='simulate' (or 'auto') to refit every replicate with "
            f"engine={engine_!r}."
        )
    if likert is not None and (isinstance(likert, bool) or not isinstance(likert, (int, np.integer))
                               or likert < 2):
        raise InputError(
            f"likert must be None (Gaussian ratings) or the number of scale points, an integer "
            f">= 2; got {likert!r}."
        )
    n_resamples = check_int("n_resamples", n_resamples, min=1)
    rule = get_test(test_)
    REML = rule.resolve_REML(REML)
    rule.check(alpha=alpha, alternative=alternative_, method=method_, n_resamples=n_resamples)
    for name, flag in (("null", null), ("keep_replicates", keep_replicates)):
        if not isinstance(flag, (bool, np.bool_)):
            raise InputError(f"{name} must be True or False; got {flag!r}.")
    return PowerOptions(
        n_sims=n_sims, alpha=alpha, test=test_, alternative=alternative_, method=method_,
        engine=engine_, REML=bool(REML), null=bool(null),
        likert=None if likert is None else int(likert), keep_replicates=bool(keep_replicates),
        on_failure=check_choice("on_failure", on_failure, FailurePolicy), n_resamples=n_resamples,
        outcome=kind.name, analyses=analyses, analysis_tests=tests,
        levels=None if levels is None else _check_levels(levels),
        precision=check_precision(precision),
    )


def _check_levels(levels: Any) -> int:
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 2:
        raise InputError(
            f"levels (the number of Likert points) must be an integer >= 2, e.g. 5 for a 1-5 "
            f"scale; got {levels!r}.")
    return int(levels)


def _default(name: str) -> Any:
    """The default of :func:`power_options`' keyword ``name`` (its signature is the one source)."""
    return inspect.signature(power_options).parameters[name].default


def _same(value: Any, default: Any) -> bool:
    """``value`` is ``default`` (``True`` is not ``1``)."""
    return value is default or (type(value) is type(default) and value == default)


__all__ = ["PowerOptions", "check_engine", "check_test_options", "power_options", "same_value"]

same_value = _same
