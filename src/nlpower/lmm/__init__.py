"""Linear mixed models with lme4 semantics: :func:`lmer` and its engines.

``lmer(formula, data)`` builds the model frame (:mod:`nlpower.lmm.frame`),
fits it with the native engine (:class:`nlpower.lmm.native.NativeModel`,
default) or with R's lme4 (``engine="lme4"``, optional) and returns an
:class:`~nlpower.lmm.result.LmmFit`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from .._validation import check_choice
from ..errors import ConvergenceWarning, InputError, SingularFitWarning
from .result import FitCore, LmmFit

ENGINES = ("native", "lme4")


def lmer(formula: str, data: Any, *, REML: bool = True, engine: str = "native",
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
        ``"lme4"``: R's lme4 through rpy2 (optional).
    contrasts : dict, optional
        Coding of factors in the fixed part, e.g. ``{"system": "sum"}``.
    control : dict, optional
        Optimiser settings for the native engine: ``xtol_abs``, ``ftol_abs``,
        ``ftol_rel``, ``maxeval``, ``boundary_tol``, ``restart_edge``,
        ``initial_step`` (defaults: lme4's ``nloptwrap``).

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
    check_choice("engine", engine, ENGINES)
    if not isinstance(REML, bool):
        raise InputError(f"REML must be True or False; got {REML!r}.")
    if engine == "lme4":
        mod = importlib.import_module("nlpower.lmm.lme4")
        fit: LmmFit = mod.lmer(formula, data, REML=REML, contrasts=contrasts, control=control)
        return fit
    from .frame import model_frame
    from .native import NativeModel

    spec = model_frame(formula, data, contrasts=contrasts)
    fit = NativeModel(spec).fit(REML=REML, control=control)
    if not fit.converged:
        warnings.warn(
            f"lmer: the optimiser did not converge ({fit.optinfo['message']}); "
            "the estimates may be inaccurate. Try control={'maxeval': ...} or rescale predictors.",
            ConvergenceWarning, stacklevel=2,
        )
    if fit.singular:
        warnings.warn(
            "lmer: boundary (singular) fit -- a variance component is estimated as (near) zero; "
            "see fit.varcorr(). Consider simplifying the random-effects structure.",
            SingularFitWarning, stacklevel=2,
        )
    return fit


__all__ = ["ENGINES", "FitCore", "LmmFit", "lmer"]
