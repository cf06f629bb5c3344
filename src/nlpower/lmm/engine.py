"""The mixed-model engine protocol and the one registry of engine names.

An *engine* turns a model structure (:class:`~nlpower.lmm.structure.ModelSpec`)
into a *prepared model*: the structure built once, the response swapped per
fit (STYLE 2; MixedModels.jl's ``refit!``).  Everything that fits a mixed
model -- :func:`nlpower.lmm.lmer`, :func:`nlpower.ratings.fit_ratings`, the
power replicates -- goes through :func:`get_engine`::

    model = get_engine("native").prepare(spec)      # structure once
    core = model.refit(y, REML=False)               # light FitCore, per replicate
    df = model.satterthwaite_df(core, L)            # lmerTest's df at that fit
    fit = model.fit(REML=True)                      # full LmmFit (y=None: spec.y)

Engines
-------
``"native"``
    :class:`~nlpower.lmm.native.NativeModel` (blocked-Cholesky profiled
    deviance + NLopt BOBYQA, checked against lme4 1.1-31).  ``prepare``
    builds the cross-products once; ``refit`` recomputes only the
    response's O(n) cross-products and skips input validation (the power
    layer's responses come from the simulator).
``"lme4"``
    R's lme4 through rpy2 (:mod:`nlpower.lmm.lme4`), imported lazily: R
    starts on the first fit, and a missing rpy2/R/lme4 raises
    :class:`~nlpower.errors.EngineUnavailableError` with install
    instructions.  ``refit`` is ``lme4::refit(fit, newresp)``.
"""

from __future__ import annotations

import warnings
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np

from .._choices import EngineName, check_choice
from ..errors import ConvergenceWarning, SingularFitWarning
from . import lme4 as _lme4
from .native import NativeModel
from .result import FitCore, LmmFit
from .structure import ModelSpec

__all__ = [
    "Engine",
    "Lme4Engine",
    "NativeEngine",
    "PreparedModel",
    "get_engine",
    "warn_diagnostics",
]


@runtime_checkable
class PreparedModel(Protocol):
    """A model structure prepared by an engine; the response is swapped per fit."""

    engine: EngineName
    spec: ModelSpec

    def refit(self, y: Any, *, REML: bool = False, start: Any = None) -> FitCore:
        """Fit response ``y`` (same length as ``spec.y``); the light result."""
        ...

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None,
            control: dict[str, Any] | None = None) -> LmmFit:
        """Fit ``y`` (``None``: ``spec.y``) and build the full :class:`LmmFit` (no warnings)."""
        ...

    def satterthwaite_df(self, core: FitCore, L: Any) -> float | np.ndarray:
        """Satterthwaite df of contrast(s) ``L`` at ``core``, this model's latest ``refit``."""
        ...


@runtime_checkable
class Engine(Protocol):
    """A fitter: builds :class:`PreparedModel` objects from model structures."""

    name: EngineName

    def prepare(self, spec: ModelSpec, **options: Any) -> PreparedModel:
        ...


class NativeEngine:
    """The embedded engine: :class:`~nlpower.lmm.native.NativeModel`."""

    name: EngineName = "native"

    def prepare(self, spec: ModelSpec, *, mode: str = "auto", family: Any = None,
                **options: Any) -> Any:
        """``NativeModel(spec, mode=mode)``: validates the structure and builds the blocks once.

        ``family``: ``None`` or Gaussian -> :class:`NativeModel`; an
        :class:`~nlpower.lmm.family.Ordinal` family -> :class:`nlpower.ordinal.ClmmModel`
        (``options``: ``nAGQ``).
        """
        if family is not None and getattr(family, "name", "gaussian") == "ordinal":
            from ..ordinal.api import prepare_spec  # lazy: the ordinal fitter
            return prepare_spec(spec, family, **options)
        return NativeModel(spec, mode=mode)

    def __repr__(self) -> str:
        return "NativeEngine()"


class Lme4Engine:
    """R's lme4 through rpy2 (optional extra ``nlpower[r]``)."""

    name: EngineName = "lme4"

    def prepare(self, spec: ModelSpec, *, data: Any = None) -> _lme4.Lme4Model:
        """An :class:`~nlpower.lmm.lme4.Lme4Model` for ``spec``.

        ``data``: the user's data frame behind ``spec`` (as given to
        :func:`~nlpower.lmm.frame.model_frame`); then :meth:`fit` with
        ``y=None`` sends the formula and those columns to ``lme4::lmer``
        unchanged (lme4's own names and contrasts).  Without ``data`` the
        model is sent as its matrices (``X``, each term's ``Z`` and grouping
        codes), which lme4 fits identically.  R is not started here.
        """
        return _lme4.Lme4Model(spec, data=data)

    def __repr__(self) -> str:
        return "Lme4Engine()"


# each engine takes its own options (``mode=`` / ``data=``), which Engine's
# ``**options`` cannot express to a type checker
_ENGINES: dict[str, Engine] = {"native": cast(Engine, NativeEngine()),
                               "lme4": cast(Engine, Lme4Engine())}


def get_engine(name: EngineName) -> Engine:
    """The engine called ``name`` (``"native"`` or ``"lme4"``; see :data:`nlpower._choices.EngineName`).

    Raises
    ------
    InputError
        Unknown name (the message lists the engines).

    Examples
    --------
    >>> get_engine("native").name
    'native'
    """
    return _ENGINES[check_choice("engine", name, EngineName)]


def warn_diagnostics(fit: LmmFit, *, where: str = "lmer", singular: bool = True,
                     stacklevel: int = 3) -> None:
    """Warn about a fit that did not converge or (``singular=True``) is singular.

    The user-facing functions (:func:`~nlpower.lmm.lmer`,
    :func:`~nlpower.ratings.fit_ratings`) call this; engines never warn, the
    diagnostics are in the result (STYLE 6).
    """
    lme4 = fit.engine == "lme4"
    tag = f"{where} (lme4)" if lme4 else where
    if not fit.converged:
        if lme4:
            why = "; ".join(dict.fromkeys(list(fit.optinfo.get("conv_messages", []))
                                          + list(fit.optinfo.get("warnings", []))))
            hint = ("Try another optimiser or more evaluations, e.g. control={'optimizer': "
                    "'bobyqa', 'optCtrl': {'maxfun': 100000}}, or rescale predictors.")
        else:
            why = str(fit.optinfo.get("message", ""))
            hint = "Try control={'maxeval': ...} or rescale predictors."
        warnings.warn(
            f"{tag}: the optimiser did not converge ({why}); the estimates may be inaccurate. "
            f"{hint}", ConvergenceWarning, stacklevel=stacklevel)
    if singular and fit.singular:
        warnings.warn(
            f"{tag}: boundary (singular) fit -- a variance component is estimated as (near) "
            "zero; see fit.varcorr(). Consider simplifying the random-effects structure.",
            SingularFitWarning, stacklevel=stacklevel)
