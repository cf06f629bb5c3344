"""Linear mixed models with lme4 semantics: :func:`lmer` and the engine protocol.

``lmer(formula, data)`` builds the model frame (:mod:`nlpower.lmm.frame`),
prepares it with an engine from :func:`get_engine` (``"native"``, default, or
``"lme4"``, optional) and returns an :class:`~nlpower.lmm.result.LmmFit`.
Code that fits many responses on one structure (power simulations) uses the
engine protocol directly (:mod:`nlpower.lmm.engine`)::

    model = get_engine("native").prepare(spec)
    core = model.refit(y, REML=False, start=theta0)
    df = model.satterthwaite_df(core, L)

The helpers the power layer needs from the native engine are public here:
:func:`theta_layout` (lme4's order of the random-effects terms and ``theta``)
and :func:`single_threaded` (small dense linear algebra without BLAS threads).
"""

from __future__ import annotations

from typing import Any

from .._choices import EngineName
from ..errors import InputError
from .engine import Engine, PreparedModel, get_engine, warn_diagnostics
from .frame import model_frame
from .native import ThetaLayout, single_threaded, theta_layout
from .result import FitCore, LmmFit
from .structure import ModelSpec, ReTerm


def lmer(formula: str, data: Any, *, REML: bool = True, engine: EngineName = "native",
         contrasts: dict[str, str] | None = None,
         control: dict[str, Any] | None = None) -> LmmFit:
    """Fit a linear mixed model, like lme4's ``lmer``.

    Parameters
    ----------
    formula : str
        lme4 syntax, e.g. ``"rating ~ system + (1 + system || worker) + (1 | item)"``.
    data : pandas.DataFrame
        One row per observation.
    REML : bool, default True
        REML (lme4's default) or maximum likelihood (``False``; Card et al.
        2020's power simulations use ML).
    engine : {"native", "lme4"}
        ``"native"``: the pure-Python engine (blocked Cholesky profiled
        deviance + NLopt BOBYQA, checked against lme4 1.1-31);
        ``"lme4"``: R's lme4 through rpy2 (optional).  See :func:`get_engine`.
    contrasts : dict, optional
        Coding of factors in the fixed part, e.g. ``{"system": "sum"}``.
    control : dict, optional
        Native engine: optimiser settings ``xtol_abs``, ``ftol_abs``,
        ``ftol_rel``, ``maxeval``, ``boundary_tol``, ``restart_edge``,
        ``initial_step`` (defaults: lme4's ``nloptwrap``).  lme4 engine:
        arguments of ``lme4::lmerControl``.

    Returns
    -------
    LmmFit

    Warns
    -----
    ConvergenceWarning
        The optimiser stopped before meeting its tolerances.
    SingularFitWarning
        A variance component is (near) zero (lme4's ``isSingular``).

    Examples
    --------
    >>> fit = lmer("Reaction ~ Days + (Days | Subject)", sleepstudy)   # doctest: +SKIP
    >>> fit.fixef                                                       # doctest: +SKIP
    """
    eng = get_engine(engine)
    if not isinstance(REML, bool):
        raise InputError(f"REML must be True or False; got {REML!r}.")
    spec = model_frame(formula, data, contrasts=contrasts)
    options = {"data": data} if eng.name == "lme4" else {}
    fit = eng.prepare(spec, **options).fit(REML=REML, control=control)
    warn_diagnostics(fit, where="lmer", stacklevel=3)
    return fit

__all__ = [
    "Engine",
    "FitCore",
    "LmmFit",
    "ModelSpec",
    "PreparedModel",
    "ReTerm",
    "ThetaLayout",
    "get_engine",
    "lmer",
    "model_frame",
    "single_threaded",
    "theta_layout",
]
