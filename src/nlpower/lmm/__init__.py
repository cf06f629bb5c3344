"""Linear mixed models with lme4 semantics: :func:`lmer` and the engine protocol.

``lmer(formula, data)`` builds the model frame (:mod:`nlpower.lmm.frame`),
prepares it with an engine from :func:`get_engine` (``"native"``, default, or
``"lme4"``, optional) and returns an :class:`~nlpower.lmm.result.LmmFit`.
Code that fits many responses on one structure (power simulations) uses the
engine protocol directly (:mod:`nlpower.lmm.engine`)::

    model = get_engine("native").prepare(spec)        # family=None: Gaussian
    core = model.refit(y, REML=False, start=theta0)
    df = model.satterthwaite_df(core, L)

The helpers the power layer needs from the native engine are public here:
:func:`theta_layout` (lme4's order of the random-effects terms and ``theta``)
and :func:`single_threaded` (small dense linear algebra without BLAS threads).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._choices import EngineName
from ..errors import InputError
from .checkconv import CheckConvControl, ConvergenceError, report_convergence
from .engine import Engine, PreparedModel, get_engine, register_fitter, warn_diagnostics
from .family import Family, get_family
from .fitbase import MixedFit
from .frame import fitted_rows, model_frame
from .native import ThetaLayout, single_threaded, theta_layout
from .result import FitCore, LmmFit, OptSummary
from .structure import ModelSpec, ReTerm


def lmer(formula: str, data: Any, *, REML: bool = True, engine: EngineName = "native",
         contrasts: dict[str, str] | None = None,
         control: dict[str, Any] | None = None, checkconv: Any = None) -> LmmFit:
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
    checkconv : str, dict or CheckConvControl, optional
        lme4's post-fit convergence checks (scaled gradient, Hessian,
        singular fit; :mod:`nlpower.lmm.checkconv`) and what a failure does:
        ``"ignore"``, ``"warning"`` (default) or ``"error"``, for all three or
        per check, e.g. ``{"grad": "error", "hess": "ignore"}``.  Every engine
        takes it (lme4: mapped to ``lmerControl``'s ``check.conv.*``); the
        findings are ``fit.optsum.check_messages``.

    Returns
    -------
    LmmFit

    Warns
    -----
    ConvergenceWarning
        The optimiser stopped before meeting its tolerances.
    SingularFitWarning
        A variance component is (near) zero (lme4's ``isSingular``).

    Raises
    ------
    ConvergenceError
        A check whose ``checkconv`` policy is ``"error"`` failed.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets, simulate
    >>> df = simulate(CrossedDesign(6, 20), presets.high_variance(0.1), rng=1)
    >>> fit = lmer("rating ~ x + (1 | worker) + (1 | item)", df, REML=False)
    >>> fit.fixef.round(3).to_dict()
    {'(Intercept)': 0.461, 'x': 0.132}
    >>> fit.optsum.optimizer_converged
    True
    """
    eng = get_engine(engine)
    if not isinstance(REML, bool):
        raise InputError(f"REML must be True or False; got {REML!r}.")
    ctl = CheckConvControl.coerce(checkconv)
    spec = model_frame(formula, data, contrasts=contrasts)
    model = eng.prepare(spec, data=data)
    fit = model.fit(REML=REML, control=control, checkconv=ctl)
    fit = replace(fit, model=model, data=fitted_rows(data, spec))
    report_convergence(fit, ctl, where="lmer", stacklevel=3)
    return fit


__all__ = [
    "CheckConvControl",
    "ConvergenceError",
    "Engine",
    "FitCore",
    "LmmFit",
    "MixedFit",
    "ModelSpec",
    "PreparedModel",
    "ReTerm",
    "Family",
    "OptSummary",
    "ThetaLayout",
    "get_engine",
    "get_family",
    "register_fitter",
    "report_convergence",
    "lmer",
    "model_frame",
    "single_threaded",
    "theta_layout",
    "warn_diagnostics",
]
