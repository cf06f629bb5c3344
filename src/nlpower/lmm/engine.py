"""The mixed-model engine protocol, the one registry of engine names and the family slot.

An *engine* turns a model structure (:class:`~nlpower.lmm.structure.ModelSpec`)
and an outcome *family* (:mod:`nlpower.lmm.family`) into a *prepared model*:
the structure built once, the response swapped per fit (STYLE 2;
MixedModels.jl's ``refit!``).  Everything that fits a mixed model --
:func:`nlpower.lmm.lmer`, :func:`nlpower.ratings.fit_ratings`, the power
replicates -- goes through :func:`get_engine`::

    model = get_engine("native").prepare(spec)      # structure once (family: Gaussian)
    core = model.refit(y, REML=False)               # light FitCore, per replicate
    df = model.satterthwaite_df(core, L)            # lmerTest's df at that fit
    fit = model.fit(REML=True, checkconv="warning")  # full LmmFit (y=None: spec.y)

Every engine fills the protocol the same way: ``prepare(spec, *, data=None,
family=None, **family_options)`` looks the family up in the engine's table of *fitters*
(:func:`register_fitter`; dotted paths imported on first use), so a new
outcome family is one registration, not a branch.  Nothing outside an engine
branches on its name.

Engines
-------
``"native"``
    Gaussian: :class:`~nlpower.lmm.native.NativeModel` (blocked-Cholesky
    profiled deviance + NLopt BOBYQA, checked against lme4 1.1-31).
    ``prepare`` builds the cross-products once; ``refit`` recomputes only
    the response's O(n) cross-products.  ``data`` is not needed.
``"lme4"``
    Gaussian: R's lme4 through rpy2 (:mod:`nlpower.lmm.lme4`), imported
    lazily: R starts on the first fit, and a missing rpy2/R/lme4 raises
    :class:`~nlpower.errors.EngineUnavailableError` with install
    instructions.  ``refit`` is ``lme4::refit(fit, newresp)``; ``data`` (the
    user's frame behind ``spec``) sends lme4 the formula unchanged.  The
    ordinal family: R's ``ordinal::clmm`` (lme4 has no cumulative link
    models; the fitter of the ``"ordinal"`` engine below).
``"ordinal"``
    R's ``ordinal`` package through rpy2 (:mod:`nlpower.ordinal.rclmm`), the
    reference of ``clmm``: ordinal family only; ``data`` is required.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal, Protocol, TypeAlias, cast, runtime_checkable

import numpy as np

from .._choices import EngineName, check_choice
from ..errors import InputError
from .ddf import kenward_roger_fn
from .draw import SimulatesGaussian
from .family import Family, Gaussian, get_family
from .native import NativeModel
from .result import FitCore, LmmFit
from .structure import ModelSpec

__all__ = [
    "AnyEngine",
    "LikelihoodOnly",
    "Engine",
    "Lme4Engine",
    "NativeEngine",
    "OrdinalREngine",
    "NativeGaussianModel",
    "PreparedModel",
    "get_engine",
    "register_fitter",
    "warn_diagnostics",
]


#: Every engine's name: the two that fit every family (``EngineName``) and R's ``ordinal``.
AnyEngine: TypeAlias = EngineName | Literal["ordinal"]


@runtime_checkable
class PreparedModel(Protocol):
    """A model structure prepared by an engine; the response is swapped per fit."""

    engine: AnyEngine
    spec: ModelSpec
    family: Family

    def refit(self, y: Any, *, REML: bool = False, start: Any = None) -> FitCore:
        """Fit response ``y`` (same length as ``spec.y``); the light result."""
        ...

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> Any:
        """Fit ``y`` (``None``: ``spec.y``) and build the full fit, a
        :class:`~nlpower.lmm.fitbase.MixedFit` (no warnings).

        ``checkconv``: lme4's post-fit checks (:class:`~nlpower.lmm.checkconv.CheckConvControl`);
        their findings are ``fit.optsum.check_messages``.
        """
        ...

    def satterthwaite_df(self, core: FitCore, L: Any) -> float | np.ndarray:
        """Satterthwaite df of contrast(s) ``L`` at ``core``, this model's latest ``refit``."""
        ...

    def simulate(self, n: int = 1, *, rng: Any, params: Any = None) -> np.ndarray:
        """``(n, nobs)`` responses drawn at ``params`` (a fit, a core, a ``ModelDesign`` or a
        mapping; :func:`~nlpower.lmm.simparams.sim_params`), new random effects each."""
        ...


class LikelihoodOnly:
    """The protocol's Gaussian-only parts for the other families (GLMMs, cumulative links).

    Their prepared models take ``REML=False`` like every model (maximum
    likelihood is the only criterion) and have no Satterthwaite df.
    """

    def check_REML(self, REML: Any) -> None:
        """Refuse ``REML=True``: these families are fitted by maximum likelihood."""
        if REML:
            raise InputError(f"REML applies to Gaussian models; a {_family_name(self)} model is "
                             "fitted by maximum likelihood. Use REML=False (the default).")

    def satterthwaite_df(self, core: Any, L: Any) -> float:
        """Refused: Satterthwaite df are defined for Gaussian models only."""
        raise InputError(f"Satterthwaite df are defined for Gaussian models; a "
                         f"{_family_name(self)} model's Wald tests are z tests. Use test='z' "
                         "or test='lrt'.")


def _family_name(model: Any) -> str:
    return str(getattr(getattr(model, "family", None), "name", "non-Gaussian"))


#: A fitter: ``(spec, *, data, family, **family_options) -> PreparedModel``.
Fitter: TypeAlias = Callable[..., PreparedModel]

# (engine, family name) -> "module:callable", imported on first use
_FITTERS: dict[tuple[str, str], str] = {
    ("native", "gaussian"): "nlpower.lmm.engine:native_gaussian",
    ("lme4", "gaussian"): "nlpower.lmm.lme4:Lme4Model",
    ("native", "binomial"): "nlpower.glmm.model:GlmmModel",
    ("native", "poisson"): "nlpower.glmm.model:GlmmModel",
    ("native", "negative_binomial"): "nlpower.glmm.negbin:NegBinModel",
    ("lme4", "binomial"): "nlpower.glmm.lme4:Lme4GlmmModel",
    ("lme4", "poisson"): "nlpower.glmm.lme4:Lme4GlmmModel",
    ("lme4", "negative_binomial"): "nlpower.glmm.lme4:Lme4GlmmModel",
    ("native", "ordinal"): "nlpower.ordinal.api:native_ordinal",
    # R's ordinal::clmm, the reference: clmm(engine="ordinal"), and the lme4 engine's
    # ordinal fitter (lme4 has none; fit_ratings(family="ordinal", engine="lme4"))
    ("ordinal", "ordinal"): "nlpower.ordinal.rclmm:r_ordinal",
    ("lme4", "ordinal"): "nlpower.ordinal.rclmm:r_ordinal",
}


def register_fitter(engine: AnyEngine, family: str, target: str) -> None:
    """Make ``get_engine(engine).prepare(spec, family=...)`` use ``target`` for ``family``.

    ``target`` is ``"package.module:callable"``, imported on first use; it is
    called as ``target(spec, data=data, family=family, **family_options)``
    (the options :meth:`prepare` was given beside them) and returns a
    :class:`PreparedModel`.  This is how ``glmer`` and ``clmm`` plug in (and
    R's ``ordinal::clmm`` as the ordinal fitter of the R engines).

    Examples
    --------
    >>> register_fitter("native", "gaussian", "nlpower.lmm.engine:native_gaussian")
    """
    check_choice("engine", engine, tuple(_ENGINES))
    if ":" not in target:
        raise InputError(f"target must be 'package.module:callable'; got {target!r}.")
    _FITTERS[(engine, family)] = target


def _fitter(engine: str, family: Family) -> Fitter:
    target = _FITTERS.get((engine, family.name))
    if target is None:
        have = sorted(f for e, f in _FITTERS if e == engine)
        raise InputError(
            f"engine={engine!r} has no fitter for the {family.name} family (it fits: "
            f"{', '.join(have)}). Use another engine or family.")
    module, _, name = target.partition(":")
    return cast(Fitter, getattr(importlib.import_module(module), name))


class NativeGaussianModel(SimulatesGaussian, NativeModel):
    """:class:`~nlpower.lmm.native.NativeModel` in the protocol: family slot, Kenward-Roger df.

    The fitter of ``("native", "gaussian")``; its :meth:`fit` adds
    ``coef_table(ddf="kenward-roger")`` to the fit.
    """

    family: Family = Gaussian()

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> LmmFit:
        """:meth:`NativeModel.fit`, with Kenward-Roger df on the result."""
        fit = super().fit(y, REML=REML, start=start, control=control, checkconv=checkconv)
        kr = kenward_roger_fn(self.spec, fit.theta, fit.sigma, fit.fixef.to_numpy(), REML=fit.REML)
        return replace(fit, kr_fn=kr, _cache={})


def native_gaussian(spec: ModelSpec, *, data: Any = None, family: Family | None = None
                    ) -> NativeGaussianModel:
    """The native engine's Gaussian fitter (``data`` is not needed: the spec has it all)."""
    return NativeGaussianModel(spec)


class _Engine:
    """An engine: a name and the fitters registered for it."""

    name: AnyEngine
    #: the balanced closed-form fits of :mod:`nlpower.powersim.balanced_fit` give this
    #: engine's numbers, so ``power(method="auto")`` may use them instead of refits
    balanced_shortcut: bool = False

    def prepare(self, spec: ModelSpec, *, data: Any = None,
                family: Family | str | None = None, **options: Any) -> PreparedModel:
        """A :class:`PreparedModel` of ``spec`` for ``family`` (``None``: Gaussian).

        ``data``: the user's data frame behind ``spec`` (as given to
        :func:`~nlpower.lmm.frame.model_frame`); R-backed fitters send it to R
        unchanged, native ones ignore it.  ``options``: what the family's
        fitters take beside the structure, the same for every engine (GLMMs:
        ``weights=``, ``offset=``).

        Raises
        ------
        InputError
            No fitter for ``family`` on this engine, or a bad structure.
        """
        fam = get_family(family)
        return _fitter(self.name, fam)(spec, data=data, family=fam, **options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class NativeEngine(_Engine):
    """The embedded engine (no R)."""

    name: AnyEngine = "native"
    balanced_shortcut = True


class Lme4Engine(_Engine):
    """R's lme4 through rpy2 (optional extra ``nlpower[r]``); R starts on the first fit."""

    name: AnyEngine = "lme4"


class OrdinalREngine(_Engine):
    """R's ``ordinal`` package through rpy2 (``clmm(engine="ordinal")``, the ordinal reference).

    It fits the ordinal family only (:mod:`nlpower.ordinal.rclmm`).
    """

    name: AnyEngine = "ordinal"


@runtime_checkable
class Engine(Protocol):
    """A fitter family: builds :class:`PreparedModel` objects from model structures."""

    name: AnyEngine
    balanced_shortcut: bool

    def prepare(self, spec: ModelSpec, *, data: Any = None,
                family: Family | str | None = None, **options: Any) -> PreparedModel:
        ...


_ENGINES: dict[str, Engine] = {"native": NativeEngine(), "lme4": Lme4Engine(),
                               "ordinal": OrdinalREngine()}


def get_engine(name: AnyEngine) -> Engine:
    """The engine called ``name``: ``"native"``, ``"lme4"`` or ``"ordinal"``.

    ``"native"`` and ``"lme4"`` fit every family (:data:`nlpower._choices.EngineName`,
    what ``lmer``, ``glmer``, ``power`` and ``fit_ratings`` take); ``"ordinal"``
    (R's ``ordinal`` package) fits the ordinal family only (``clmm``).

    Raises
    ------
    InputError
        Unknown name (the message lists ``"native"`` and ``"lme4"``).

    Examples
    --------
    >>> get_engine("native").name
    'native'
    """
    engine = _ENGINES.get(name) if isinstance(name, str) else None
    # an unknown name: the message lists the engines that fit every family (lmer's choices)
    return engine if engine is not None else _ENGINES[check_choice("engine", name, EngineName)]


def warn_diagnostics(fit: Any, *, where: str = "lmer", singular: bool = True,
                     stacklevel: int = 3) -> None:
    """Warn about a fit that did not converge or (``singular=True``) is singular.

    :func:`~nlpower.lmm.checkconv.report_convergence` without the Hessian
    findings; engines never warn, the diagnostics are in the result (STYLE 6).
    """
    from .checkconv import CheckConvControl, report_convergence
    report_convergence(fit, CheckConvControl(singular="warning" if singular else "ignore",
                                             hess="ignore"),
                       where=where, stacklevel=stacklevel + 1)
