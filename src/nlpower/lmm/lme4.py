"""Optional ``engine="lme4"``: fit with R's lme4 through rpy2.

A thin adapter (:class:`Lme4Model`, made by ``get_engine("lme4").prepare``).
The model frame is validated and built by nlpower's own formula layer
(:func:`nlpower.lmm.frame.model_frame`, so bad input raises the same errors
as with the native engine).  A full fit of the user's data sends the columns
the formula uses to an embedded R session, with factors carrying nlpower's
level order (pandas categorical order, else sorted unique values), fits them
there with ``lme4::lmer`` and returns the same
:class:`~nlpower.lmm.result.LmmFit` the native engine gives.  Refits (power
replicates) use ``lme4::refit``.  Everything statistical happens in lme4,
except the Satterthwaite df of :meth:`Lme4Model.satterthwaite_df` (lmerTest's
formula evaluated at lme4's estimates by the native code).

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
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..errors import EngineUnavailableError, FitError, InputError
from .checkconv import fit_converged, lmer_control_checks
from .columns import as_factor, is_numeric
from .ddf import kenward_roger_fn
from .draw import SimulatesGaussian
from .family import Family, Gaussian
from .names import from_lme4
from .native import NativeModel, make_unique, theta_layout
from .result import FitCore, LmmFit, VarTerm
from .structure import ModelSpec

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
function(data, formula, REML, contrasts, control, start) {
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
               control = do.call(lme4::lmerControl, control), start = start),
    message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") },
    warning = function(w) { warns <<- c(warns, conditionMessage(w)); invokeRestart("muffleWarning") }),
    error = function(e) e)
  if (inherits(fit, "error")) return(list(error = conditionMessage(fit)))
  c(.core(fit, REML, msgs, warns), .details(fit))
}
"""

# lme4::refit(fit, newresp): the structure stays in R; only the response changes.
# ``start`` (optional) replaces the previous fit's theta as the starting point.
# lme4 1.1-31's refit() rebuilds the response module with REML = isREML(fit), i.e.
# TRUE = 1 instead of the number of fixed effects, so a REML refit optimises the
# wrong criterion when p > 1; REML fits are therefore redone with lmer() on the
# fit's model frame (nothing sent from Python but y), from the previous theta.
_R_REFIT = r"""
function(fit, y, start) {
  REML <- lme4::isREML(fit)
  if (is.null(start)) start <- lme4::getME(fit, "theta")
  msgs <- character(0); warns <- character(0)
  new <- tryCatch(withCallingHandlers(
    if (REML) {
      fr <- stats::model.frame(fit)
      fr[[1L]] <- y
      lme4::lmer(stats::formula(fit), data = fr, REML = TRUE, start = start,
                 control = lme4::lmerControl(calc.derivs = FALSE))
    } else {
      pp <- fit@pp$copy(); pp$setTheta(start); fit@pp <- pp
      lme4::refit(fit, newresp = y)
    },
    message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") },
    warning = function(w) { warns <<- c(warns, conditionMessage(w)); invokeRestart("muffleWarning") }),
    error = function(e) e)
  if (inherits(new, "error")) return(list(error = conditionMessage(new)))
  .core(new, lme4::isREML(new), msgs, warns)
}
"""

# shared R helpers: the light core of a fit, and the details an LmmFit needs
_R_HELPERS = r"""
.core <- function(fit, REML, msgs, warns) {
  conv <- fit@optinfo$conv$lme4
  list(
    object = fit,
    fixef = lme4::fixef(fit), fixef_names = names(lme4::fixef(fit)),
    vcov = as.vector(as.matrix(stats::vcov(fit))),
    theta = unname(lme4::getME(fit, "theta")), theta_names = names(lme4::getME(fit, "theta")),
    sigma = stats::sigma(fit),
    objective = if (REML) lme4::REMLcrit(fit) else stats::deviance(fit),
    singular = lme4::isSingular(fit),
    feval = as.integer(fit@optinfo$feval),
    opt_message = as.character(if (is.null(fit@optinfo$message)) "" else fit@optinfo$message),
    conv_messages = as.character(if (is.null(conv$messages)) character(0) else conv$messages),
    conv_code = as.integer(if (is.null(conv$code)) 0L else conv$code),
    messages = msgs, warnings = warns
  )
}
.details <- function(fit) {
  vc <- lme4::VarCorr(fit)
  cnms <- fit@cnms
  grp <- make.unique(names(cnms))
  re <- lme4::ranef(fit)
  list(
    loglik = as.numeric(stats::logLik(fit)),
    nobs = stats::nobs(fit),
    ngrps = as.integer(lme4::ngrps(fit)), ngrps_names = names(lme4::ngrps(fit)),
    term_group = names(cnms), term_grp = grp,
    term_cnames = lapply(cnms, as.character),
    term_cov = lapply(seq_along(cnms), function(i) as.vector(as.matrix(vc[[i]]))),
    ranef_names = names(re),
    ranef_levels = lapply(re, rownames),
    ranef_cols = lapply(re, colnames),
    ranef_values = lapply(re, function(d) as.vector(as.matrix(d))),
    residuals = unname(stats::residuals(fit)),
    optimizer = as.character(fit@optinfo$optimizer),
    opt_warnings = as.character(unlist(fit@optinfo$warnings)),
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
        import rpy2  # noqa: F401  (deliberately lazy: rpy2 is the optional extra nlpower[r])
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
    # each function is a closure over the helpers (nothing is added to R's global env)
    _R.update(ro=ro, fit=ro.r(f"local({{{_R_HELPERS}\n{_R_FIT}}})"),
              refit=ro.r(f"local({{{_R_HELPERS}\n{_R_REFIT}}})"))
    return _R


def _start_r() -> Any:
    """Start embedded R through rpy2 and check that lme4 loads."""
    try:
        import rpy2.robjects as ro  # deliberately lazy: importing it starts R
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
    cols: dict[str, Any] = {}
    for name in frame.columns:
        col = frame[name]
        if is_numeric(col):
            cols[str(name)] = ro.FloatVector(col.to_numpy(dtype=float))
        else:
            fac = as_factor(col)
            labels = np.asarray(fac.levels, dtype=object)[fac.codes]
            cols[str(name)] = ro.FactorVector(ro.StrVector(list(labels)),
                                              levels=ro.StrVector(list(fac.levels)))
    return ro.DataFrame(cols)


def _vec(x: Any) -> np.ndarray:
    return np.asarray(list(x), dtype=float)


def _strs(x: Any) -> list[str]:
    return [str(v) for v in x]


def _by_level(out: dict[str, Any], aliases: Mapping[str, str]) -> dict[str, Any]:
    """lme4's own column names (a fit of the user's formula) as nlpower names them:
    a sum-coded factor's columns by level (``system1`` -> ``system[A]``; names.py)."""
    if not aliases:
        return out
    out = dict(out)
    out["fixef_names"] = [from_lme4(n, aliases) for n in _strs(out["fixef_names"])]
    for key in ("term_cnames", "ranef_cols"):
        out[key] = [[from_lme4(c, aliases) for c in _strs(cn)] for cn in out[key]]
    return out


class Lme4Model(SimulatesGaussian):
    """A model structure prepared for lme4 (the engine protocol's ``PreparedModel``).

    Made by ``get_engine("lme4").prepare(spec, data=None)``.  R starts on the
    first fit, not here.

    * :meth:`fit` with ``y=None`` and the user's ``data``: the formula and
      those columns go to ``lme4::lmer`` unchanged (lme4's own names and
      contrasts, ``factor`` levels in nlpower's order).  Otherwise the model
      is sent as its matrices -- ``y ~ 0 + X1 + ... + (0 + Z1_1 + ... | G1) + ...``
      with the columns of ``X``, each term's ``Z`` and its grouping codes --
      which lme4 fits identically (same terms, same ``theta`` order); the
      result is renamed to the structure's names.
    * :meth:`refit`: the first call per ``REML`` fits with ``lme4::lmer``,
      later ML calls use ``lme4::refit(fit, newresp = y)`` (no model rebuilt
      in R).  lme4 1.1-31's ``refit`` optimises the wrong criterion for REML
      fits with more than one fixed effect (it rebuilds the response module
      with ``REML = TRUE``, i.e. 1, instead of ``p``), so REML refits call
      ``lme4::lmer`` again on the previous fit's model frame with the new
      response.  ``start`` sets the starting ``theta`` (default: the previous
      fit's ``theta``, as ``refit`` does).
    * :meth:`satterthwaite_df`: lmerTest's formula (:mod:`nlpower.lmm.satterthwaite`)
      evaluated by the native engine at lme4's estimates (``theta``,
      ``sigma``) and the same response -- the df are a function of those
      alone, so this is lmerTest's df without a second R round trip
      (lmerTest's ``as_lmerModLmerTest`` re-evaluates the model call, which
      would see the original response, not the refitted one).
    """

    engine = "lme4"
    family: Family = Gaussian()

    def __init__(self, spec: ModelSpec, *, data: Any = None, family: Family | None = None):
        if data is not None and not isinstance(data, pd.DataFrame):
            raise InputError(f"data must be the pandas DataFrame the model was built from; got "
                             f"{type(data).__name__}.")
        self.spec = spec
        self.data = data
        self.layout = theta_layout(spec.re_terms)
        self._base: dict[bool, Any] = {}            # REML -> R merMod to refit
        self._last: tuple[int, np.ndarray] | None = None
        self._native: NativeModel | None = None

    def __repr__(self) -> str:
        return f"Lme4Model({self.spec.formula!r}, n={self.spec.n})"

    # -- full fits ----------------------------------------------------------------
    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> LmmFit:
        """Fit with ``lme4::lmer``; the same :class:`LmmFit` as the native engine (no warnings).

        ``control``: arguments of ``lme4::lmerControl`` (e.g.
        ``{"optimizer": "bobyqa"}``).  ``checkconv``: the policies of
        :class:`~nlpower.lmm.checkconv.CheckConvControl`, sent as
        ``lmerControl``'s ``check.conv.grad``, ``check.conv.hess`` and
        ``check.conv.singular`` (``"ignore"`` skips a check; ``"warning"``
        and ``"error"`` record its findings in ``fit.optsum.check_messages``,
        the caller warns or raises); a ``check.conv.*`` key in ``control``
        wins.  The result has Satterthwaite df (lmerTest's formula at lme4's
        estimates, see the class docstring) and, for REML fits, Kenward-Roger
        df (``coef_table(ddf=...)``).

        Raises
        ------
        EngineUnavailableError
            rpy2, R or lme4 is not installed (the message says how to install them).
        FitError
            lme4 stopped with an error (its message is included).
        """
        ctrl = lmer_control_checks(_check_control(control), checkconv)
        REML = bool(REML)
        if y is None and start is None and self.data is not None:
            spec = self.spec
            used = [c for c in self.data.columns if str(c) in set(spec.data_columns)]
            frame = self.data.loc[:, used].dropna()
            with _LOCK:
                r = _r()
                ro = r["ro"]
                rdata = _r_frame(frame, ro)
                rctr = ro.ListVector(dict(spec.contrasts.items())) if spec.contrasts \
                    else ro.ListVector({})
                out = _call(r["fit"], spec.formula, rdata, spec.formula, REML, rctr,
                            _r_value(ctrl, ro), ro.NULL)
            return self._with_ddf(_build_fit(_by_level(out, spec.aliases), spec.formula, REML,
                                             dict(spec.contrasts)), out, REML, spec.y)
        yv = self.spec.y if y is None else _check_response(y, self.spec.n)
        th = self._start(start)
        with _LOCK:
            out = self._fit_matrices(yv, REML, th, ctrl)
        return self._with_ddf(_build_fit(self._rename(out), self.spec.formula, REML,
                                         dict(self.spec.contrasts)), out, REML, yv)

    def _with_ddf(self, fit: LmmFit, out: dict[str, Any], REML: bool, y: np.ndarray) -> LmmFit:
        """The fit with Satterthwaite and Kenward-Roger df at lme4's estimates (built lazily)."""
        core = _core(out, REML)
        holder: dict[str, NativeModel] = {}

        def df_fn(L: np.ndarray) -> float:
            if "m" not in holder:
                holder["m"] = NativeModel(self.spec.with_response(y))
            return float(holder["m"].satterthwaite_df(core, L))

        kr = kenward_roger_fn(self.spec.with_response(y), core.theta, core.sigma, core.beta,
                              REML=REML)
        return replace(fit, df_fn=df_fn, kr_fn=kr, _cache={})

    def _fit_matrices(self, y: np.ndarray, REML: bool, start: np.ndarray | None,
                      ctrl: dict[str, Any]) -> dict[str, Any]:
        r = _r()
        ro = r["ro"]
        rdata, formula = _matrix_frame(self.spec, y, ro)
        rstart = ro.NULL if start is None else ro.FloatVector(start)
        return _call(r["fit"], self.spec.formula, rdata, formula, REML, ro.ListVector({}),
                     _r_value(ctrl, ro), rstart)

    def _rename(self, out: dict[str, Any]) -> dict[str, Any]:
        """Synthetic names (``X1``, ``Z1_2``, ``G1``) -> the structure's names."""
        spec = self.spec
        fixef = {f"X{j + 1}": n for j, n in enumerate(spec.fixef_names)}
        cols: dict[str, str] = {}
        groups: dict[str, str] = {}
        gid = _group_ids(spec)
        for t_i, t in enumerate(spec.re_terms):
            groups[f"G{gid[t.group]}"] = t.group
            for j, c in enumerate(t.cnames):
                cols[f"Z{t_i + 1}_{j + 1}"] = c
        out = dict(out)
        out["fixef_names"] = [fixef[n] for n in _strs(out["fixef_names"])]
        out["theta_names"] = list(self.layout.names)
        out["term_group"] = [groups[g] for g in _strs(out["term_group"])]
        out["term_grp"] = make_unique(out["term_group"])
        out["term_cnames"] = [[cols[c] for c in _strs(cn)] for cn in out["term_cnames"]]
        out["ranef_names"] = [groups[g] for g in _strs(out["ranef_names"])]
        out["ranef_cols"] = [[cols[c] for c in _strs(cn)] for cn in out["ranef_cols"]]
        levels = {t.group: t.levels for t in spec.re_terms}
        out["ranef_levels"] = [[levels[g][int(v)] for v in _strs(lv)]
                               for g, lv in zip(out["ranef_names"], out["ranef_levels"],
                                                strict=True)]
        out["ngrps_names"] = [groups[g] for g in _strs(out["ngrps_names"])]
        return out

    def _start(self, start: Any) -> np.ndarray | None:
        return None if start is None else self.layout.check_start(start)

    # -- the power replicate's path -------------------------------------------------
    def refit(self, y: Any, *, REML: bool = False, start: Any = None) -> FitCore:
        """Fit response ``y``: ``lme4::refit`` of this model's previous lme4 fit."""
        yv = _check_response(y, self.spec.n)
        REML = bool(REML)
        th = self._start(start)
        with _LOCK:
            r = _r()
            ro = r["ro"]
            base = self._base.get(REML)
            if base is None:
                out = self._fit_matrices(yv, REML, th, {})
            else:
                rstart = ro.NULL if th is None else ro.FloatVector(th)
                out = _call(r["refit"], self.spec.formula, base, ro.FloatVector(yv), rstart)
            self._base[REML] = out["object"]
        core = _core(out, REML)
        self._last = (id(core), yv)
        return core

    def satterthwaite_df(self, core: FitCore, L: Any) -> float | np.ndarray:
        """lmerTest's df at ``core`` (this model's latest :meth:`refit`), see the class docstring."""
        if self._last is None or self._last[0] != id(core):
            raise InputError("satterthwaite_df needs the FitCore returned by this model's latest "
                             "refit(); refit the response first.")
        if self._native is None:
            self._native = NativeModel(self.spec)
        return self._native.satterthwaite_df(core, L, y=self._last[1])


def _check_response(y: Any, n: int) -> np.ndarray:
    yv = np.asarray(y, dtype=float)
    if yv.shape != (n,) or not np.all(np.isfinite(yv)):
        raise InputError(f"y must be a 1-D array of {n} finite values (one per row of the "
                         f"design); got shape {yv.shape}.")
    return yv


def _group_ids(spec: ModelSpec) -> dict[str, int]:
    ids: dict[str, int] = {}
    for t in spec.re_terms:
        ids.setdefault(t.group, len(ids) + 1)
    return ids


def _matrix_frame(spec: ModelSpec, y: np.ndarray, ro: Any) -> tuple[Any, str]:
    """The model as plain columns and lme4's formula over them."""
    cols: dict[str, Any] = {"y": ro.FloatVector(y)}
    for j in range(spec.p):
        cols[f"X{j + 1}"] = ro.FloatVector(np.ascontiguousarray(spec.X[:, j], dtype=float))
    gid = _group_ids(spec)
    for t in spec.re_terms:
        g = f"G{gid[t.group]}"
        if g not in cols:
            cols[g] = ro.FactorVector(ro.StrVector([str(int(c)) for c in t.codes]),
                                      levels=ro.StrVector([str(i) for i in range(t.n_levels)]))
    terms = []
    for t_i, t in enumerate(spec.re_terms):
        zs = []
        for j in range(t.q):
            name = f"Z{t_i + 1}_{j + 1}"
            cols[name] = ro.FloatVector(np.ascontiguousarray(t.Z[:, j], dtype=float))
            zs.append(name)
        terms.append(f"(0 + {' + '.join(zs)} | G{gid[t.group]})")
    fixed = " + ".join(f"X{j + 1}" for j in range(spec.p)) or "1"
    return ro.DataFrame(cols), f"y ~ 0 + {fixed} + {' + '.join(terms)}"


def _call(fn: Any, what: str, *args: Any) -> dict[str, Any]:
    """Call an R function of this module; FitError with lme4's message when it fails."""
    try:
        res = fn(*args)
    except Exception as exc:  # rpy2's RRuntimeError
        raise FitError(f"lme4::lmer failed for {what!r}: {str(exc).strip()}. {_FIT_HINT}") from exc
    out = {name: res.rx2(name) for name in res.names}
    if "error" in out:
        raise FitError(f"lme4::lmer failed for {what!r}: {_strs(out['error'])[0].strip()}. "
                       f"{_FIT_HINT}")
    return out


def _converged(out: dict[str, Any]) -> bool:
    """:func:`~nlpower.lmm.checkconv.fit_converged` on lme4's findings and R's warnings."""
    return fit_converged(True, _strs(out["conv_messages"]) + _strs(out["warnings"]))


def _core(out: dict[str, Any], REML: bool) -> FitCore:
    beta = _vec(out["fixef"])
    p = beta.size
    return FitCore(
        theta=_vec(out["theta"]), beta=beta, sigma=float(out["sigma"][0]),
        vcov_beta=_vec(out["vcov"]).reshape((p, p), order="F"),
        deviance=float(out["objective"][0]), REML=REML, converged=_converged(out),
        singular=bool(out["singular"][0]), n_evals=int(out["feval"][0]),
        message=_strs(out["opt_message"])[0] if len(out["opt_message"]) else "",
    )


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
    converged = _converged(out)
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
    return fit


__all__ = ["INSTALL_HINT", "Lme4Model", "available"]
