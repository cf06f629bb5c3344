"""Optional ``engine="lme4"``: fit with R's lme4 through rpy2.

A thin adapter.  The model frame is validated and built by nlpower's own
formula layer (:func:`nlpower.lmm.frame.model_frame`, so bad input raises the
same errors as with the native engine); the columns the formula uses are then
sent to an embedded R session, with factors carrying nlpower's level order
(pandas categorical order, else sorted unique values), fitted there with
``lme4::lmer`` and returned as the same :class:`~nlpower.lmm.result.LmmFit`
the native engine gives.  Everything statistical happens in lme4.

rpy2 and R are imported lazily, on the first fit: ``import nlpower`` never
needs R.  When rpy2, R or lme4 is missing the fit raises
:class:`~nlpower.errors.EngineUnavailableError` with install instructions
(see ``docs/lme4.md``).

Embedded R is single-threaded; fits are serialised with a lock.  Use the
native engine for parallel power simulations.

Checked against lme4 1.1-31 (R 4.2.2) with rpy2 3.5.17.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import (
    ConvergenceWarning,
    EngineUnavailableError,
    FitError,
    InputError,
    SingularFitWarning,
)
from .result import LmmFit, VarTerm

INSTALL_HINT = (
    "engine='lme4' needs R with the lme4 package and the Python package rpy2 (>=3.5,<3.6 for "
    "R 4.2). Install R and lme4 first (Debian/Ubuntu: apt-get install r-base-core r-cran-lme4; "
    "elsewhere: install R, then in R install.packages('lme4')), then rpy2 with "
    "pip install 'nlpower[r]'. Or use engine='native' (no R needed)."
)

_FIT_HINT = ("Check the control settings and the model against lme4's documentation "
             "(?lmer, ?lmerControl), or fit with engine='native'.")

_LOCK = threading.RLock()
_R: dict[str, Any] = {}

# R side of the adapter: fit, then flatten everything into plain vectors so the
# Python side needs no rpy2 converters (matrices travel as vectors + dims).
_R_FIT = r"""
function(data, formula, REML, contrasts, control) {
  ctr <- NULL
  if (length(contrasts)) {
    ctr <- lapply(names(contrasts), function(v) {
      k <- contrasts[[v]]
      if (k == "treatment") "contr.treatment"
      else if (k == "sum") "contr.sum"
      else contr.sum(nlevels(data[[v]])) / 2          # "half"
    })
    names(ctr) <- names(contrasts)
  }
  msgs <- character(0); warns <- character(0)
  fit <- tryCatch(withCallingHandlers(
    lme4::lmer(stats::as.formula(formula), data = data, REML = REML, contrasts = ctr,
               control = do.call(lme4::lmerControl, control)),
    message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") },
    warning = function(w) { warns <<- c(warns, conditionMessage(w)); invokeRestart("muffleWarning") }),
    error = function(e) e)
  if (inherits(fit, "error")) return(list(error = conditionMessage(fit)))
  V <- as.matrix(stats::vcov(fit))
  vc <- lme4::VarCorr(fit)
  cnms <- fit@cnms
  grp <- make.unique(names(cnms))
  re <- lme4::ranef(fit)
  conv <- fit@optinfo$conv$lme4
  list(
    fixef = lme4::fixef(fit), fixef_names = names(lme4::fixef(fit)),
    vcov = as.vector(V),
    theta = unname(lme4::getME(fit, "theta")), theta_names = names(lme4::getME(fit, "theta")),
    sigma = stats::sigma(fit),
    objective = if (REML) lme4::REMLcrit(fit) else stats::deviance(fit),
    loglik = as.numeric(stats::logLik(fit)),
    nobs = stats::nobs(fit),
    ngrps = as.integer(lme4::ngrps(fit)), ngrps_names = names(lme4::ngrps(fit)),
    singular = lme4::isSingular(fit),
    term_group = names(cnms), term_grp = grp,
    term_cnames = lapply(cnms, as.character),
    term_cov = lapply(seq_along(cnms), function(i) as.vector(as.matrix(vc[[i]]))),
    ranef_names = names(re),
    ranef_levels = lapply(re, rownames),
    ranef_cols = lapply(re, colnames),
    ranef_values = lapply(re, function(d) as.vector(as.matrix(d))),
    residuals = unname(stats::residuals(fit)),
    optimizer = as.character(fit@optinfo$optimizer),
    feval = as.integer(fit@optinfo$feval),
    opt_message = as.character(if (is.null(fit@optinfo$message)) "" else fit@optinfo$message),
    conv_messages = as.character(if (is.null(conv$messages)) character(0) else conv$messages),
    conv_code = as.integer(if (is.null(conv$code)) 0L else conv$code),
    opt_warnings = as.character(unlist(fit@optinfo$warnings)),
    messages = msgs, warnings = warns,
    lme4_version = format(utils::packageVersion("lme4")),
    R_version = R.version.string
  )
}
"""


def _r() -> dict[str, Any]:
    """Import rpy2, start R, load lme4 (once); EngineUnavailableError otherwise."""
    if _R:
        return _R
    try:
        import rpy2  # noqa: F401
    except ImportError as exc:
        raise EngineUnavailableError(f"rpy2 is not installed ({exc}). {INSTALL_HINT}") from exc
    # rpy2 prepends R's library directories to LD_LIBRARY_PATH when it starts
    # R.  That only matters to child processes, where it breaks extension
    # modules of a Python built against other system libraries (a Dask
    # worker failed to import ``ssl``), so the variable is put back as it was.
    saved = os.environ.get("LD_LIBRARY_PATH")
    try:
        ro = _start_r()
    finally:
        if saved is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = saved
    _R.update(ro=ro, fit=ro.r(_R_FIT))
    return _R


def _start_r() -> Any:
    """Start embedded R through rpy2 and check that lme4 loads."""
    try:
        import rpy2.robjects as ro
    except ImportError as exc:
        raise EngineUnavailableError(f"rpy2 could not load R ({exc}). {INSTALL_HINT}") from exc
    except Exception as exc:  # rpy2 raises ValueError ("r_home is None") / RRuntimeError
        raise EngineUnavailableError(
            f"rpy2 is installed but cannot start R ({type(exc).__name__}: {exc}). {INSTALL_HINT}"
        ) from exc
    try:
        ok = bool(ro.r('isTRUE(suppressPackageStartupMessages(requireNamespace("lme4", quietly = TRUE)))')[0])
    except Exception as exc:
        raise EngineUnavailableError(f"R failed to start ({exc}). {INSTALL_HINT}") from exc
    if not ok:
        raise EngineUnavailableError(f"R is available but the lme4 package is not. {INSTALL_HINT}")
    return ro


def available() -> tuple[bool, str]:
    """``(True, "lme4 x.y-z")`` if the lme4 engine can be used, else ``(False, reason)``."""
    try:
        r = _r()
    except EngineUnavailableError as exc:
        return False, str(exc)
    version = r["ro"].r('format(packageVersion("lme4"))')[0]
    return True, f"lme4 {version}"


_SCALAR = (bool, int, float, str)


def _check_control(control: Any) -> dict[str, Any]:
    """lmerControl arguments: scalars, or dicts of scalars (``optCtrl``)."""
    if control is None:
        return {}
    if not isinstance(control, Mapping) or not all(isinstance(k, str) for k in control):
        raise InputError(
            "control for engine='lme4' must be a dict of lme4::lmerControl() arguments, "
            f"e.g. {{'optimizer': 'bobyqa', 'optCtrl': {{'maxfun': 10000}}}}; got {control!r}."
        )
    for key, value in control.items():
        ok = isinstance(value, _SCALAR) or (
            isinstance(value, Mapping)
            and all(isinstance(k, str) and isinstance(v, _SCALAR) for k, v in value.items()))
        if not ok:
            raise InputError(
                f"control[{key!r}] for engine='lme4' must be a bool, number, string or a dict of "
                f"those (passed to lme4::lmerControl); got {value!r} ({type(value).__name__})."
            )
    return dict(control)


def _r_value(value: Any, ro: Any) -> Any:
    if isinstance(value, Mapping):
        return ro.ListVector({k: _r_value(v, ro) for k, v in value.items()})
    if isinstance(value, bool):
        return ro.BoolVector([value])
    if isinstance(value, int):
        return ro.IntVector([value])
    if isinstance(value, float):
        return ro.FloatVector([value])
    return ro.StrVector([value])


def _r_frame(frame: pd.DataFrame, ro: Any) -> Any:
    """The model columns as an R data.frame (factors with nlpower's level order)."""
    from .frame import _as_factor, _is_numeric

    cols: dict[str, Any] = {}
    for name in frame.columns:
        col = frame[name]
        if _is_numeric(col):
            cols[str(name)] = ro.FloatVector(col.to_numpy(dtype=float))
        else:
            fac = _as_factor(col)
            labels = np.asarray(fac.levels, dtype=object)[fac.codes]
            cols[str(name)] = ro.FactorVector(ro.StrVector(list(labels)),
                                              levels=ro.StrVector(list(fac.levels)))
    return ro.DataFrame(cols)


def _vec(x: Any) -> np.ndarray:
    return np.asarray(list(x), dtype=float)


def _strs(x: Any) -> list[str]:
    return [str(v) for v in x]


def lmer(formula: str, data: Any, *, REML: bool = True,
         contrasts: dict[str, str] | None = None,
         control: dict[str, Any] | None = None) -> LmmFit:
    """Fit ``formula`` to ``data`` with ``lme4::lmer`` in embedded R.

    Called by :func:`nlpower.lmm.lmer` for ``engine="lme4"``; same arguments
    and result type as the native engine.

    Parameters
    ----------
    formula : str
        lme4 syntax.
    data : pandas.DataFrame
    REML : bool, default True
    contrasts : dict, optional
        ``{"system": "sum"}``; ``"treatment"``, ``"sum"`` (``contr.sum``) or
        ``"half"`` (``contr.sum / 2``), as for the native engine.
    control : dict, optional
        Arguments of ``lme4::lmerControl`` (e.g. ``{"optimizer": "bobyqa"}``).

    Returns
    -------
    LmmFit
        With ``engine="lme4"``.  Satterthwaite df are not available
        (``coef_table(ddf="normal")`` works; ``summary()`` falls back to it).

    Raises
    ------
    EngineUnavailableError
        rpy2, R or lme4 is not installed (the message says how to install them).
    FitError
        lme4 stopped with an error (its message is included).
    """
    from .frame import model_frame

    ctrl = _check_control(control)
    spec = model_frame(formula, data, contrasts=contrasts)   # validation, same errors as native
    used = [c for c in data.columns if str(c) in set(spec.data_columns)]
    frame = data.loc[:, used].dropna()
    with _LOCK:
        r = _r()
        ro = r["ro"]
        rdata = _r_frame(frame, ro)
        rctr = ro.ListVector({k: v for k, v in spec.contrasts.items()}) if spec.contrasts \
            else ro.ListVector({})
        rctrl = _r_value(ctrl, ro)
        try:
            res = r["fit"](rdata, formula, bool(REML), rctr, rctrl)
        except Exception as exc:  # rpy2's RRuntimeError
            raise FitError(f"lme4::lmer failed for {formula!r}: {str(exc).strip()}. "
                           f"{_FIT_HINT}") from exc
        out = {name: res.rx2(name) for name in res.names}
        if "error" in out:
            raise FitError(f"lme4::lmer failed for {formula!r}: "
                           f"{_strs(out['error'])[0].strip()}. {_FIT_HINT}")
        return _build_fit(out, formula, bool(REML), dict(spec.contrasts))


def _build_fit(out: dict[str, Any], formula: str, REML: bool, contrasts: dict[str, str]) -> LmmFit:
    names = _strs(out["fixef_names"])
    p = len(names)
    beta = _vec(out["fixef"])
    V = _vec(out["vcov"]).reshape((p, p), order="F")
    sigma = float(out["sigma"][0])
    objective = float(out["objective"][0])
    loglik = float(out["loglik"][0])
    var_terms = []
    for i, (group, grp) in enumerate(zip(_strs(out["term_group"]), _strs(out["term_grp"]),
                                         strict=True)):
        cn = tuple(_strs(out["term_cnames"][i]))
        q = len(cn)
        cov = _vec(out["term_cov"][i]).reshape((q, q), order="F")
        var_terms.append(VarTerm(grp=grp, group=group, cnames=cn, cov=cov))
    ranef: dict[str, pd.DataFrame] = {}
    for i, g in enumerate(_strs(out["ranef_names"])):
        levels = _strs(out["ranef_levels"][i])
        cols = _strs(out["ranef_cols"][i])
        vals = _vec(out["ranef_values"][i]).reshape((len(levels), len(cols)), order="F")
        ranef[g] = pd.DataFrame(vals, index=pd.Index(levels, name=g), columns=cols)
    conv_messages = _strs(out["conv_messages"])
    opt_warnings = _strs(out["opt_warnings"])
    warns = _strs(out["warnings"])
    msgs = [m.strip() for m in _strs(out["messages"])]
    singular = bool(out["singular"][0])
    converged = int(out["conv_code"][0]) == 0 and not any(
        "converge" in m for m in conv_messages + warns)
    optinfo = {
        "optimizer": f"lme4 {_strs(out['optimizer'])[0]}",
        "n_evals": int(out["feval"][0]),
        "message": _strs(out["opt_message"])[0] if len(out["opt_message"]) else "",
        "converged": converged,
        "conv_messages": conv_messages,
        "warnings": list(dict.fromkeys(warns + opt_warnings)),
        "messages": msgs,
        "lme4_version": _strs(out["lme4_version"])[0],
        "R_version": _strs(out["R_version"])[0],
    }
    ngrps = dict(zip(_strs(out["ngrps_names"]), (int(v) for v in out["ngrps"]), strict=True))
    fit = LmmFit(
        formula=formula, REML=REML, engine="lme4",
        fixef=pd.Series(beta, index=names, name="estimate"),
        vcov=pd.DataFrame(V, index=names, columns=names),
        theta=_vec(out["theta"]), theta_names=tuple(_strs(out["theta_names"])),
        sigma=sigma, loglik=loglik, deviance=objective,
        reml_criterion=objective if REML else None,
        nobs=int(out["nobs"][0]), ngrps=ngrps,
        converged=converged, singular=singular, optinfo=optinfo,
        contrasts=contrasts, var_terms=tuple(var_terms), ranef_tables=ranef,
        residuals=_vec(out["residuals"]), df_fn=None,
    )
    if not converged:
        why = "; ".join(dict.fromkeys(conv_messages + warns))
        warnings.warn(
            f"lmer (lme4): the optimiser did not converge ({why}); the estimates may be "
            "inaccurate. Try another optimiser or more evaluations, e.g. control={'optimizer': "
            "'bobyqa', 'optCtrl': {'maxfun': 100000}}, or rescale predictors.",
            ConvergenceWarning, stacklevel=3)
    if singular:
        warnings.warn(
            "lmer (lme4): boundary (singular) fit -- a variance component is estimated as (near) "
            "zero; see fit.varcorr(). Consider simplifying the random-effects structure.",
            SingularFitWarning, stacklevel=3)
    return fit


__all__ = ["INSTALL_HINT", "available", "lmer"]
