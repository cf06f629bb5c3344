"""Optional ``engine="lme4"`` for GLMMs: lme4's ``glmer`` through rpy2.

The model frame is built and validated by nlpower (the same errors as the
native engine); the model is sent to R as its matrices (``X``, each term's
``Z`` and grouping codes, the response, ``weights`` and ``offset``: the
formula ``y ~ 0 + X1 + ... + (0 + Z1_1 + ... | G1) + ...``, which lme4 fits
identically to the user's formula, same ``theta`` order) and fitted with
``lme4::glmer`` with its default ``glmerControl`` (two stages, bobyqa then
Nelder-Mead); a family with a dispersion (the negative binomial) with
``lme4::glmer.nb`` (no ``start``).  The result is the same :class:`~nlpower.glmm.result.GlmmFit`
the native engine returns.  R, rpy2 and lme4 are imported on the first fit;
missing pieces raise :class:`~nlpower.errors.EngineUnavailableError`
(helpers shared with :mod:`nlpower.lmm.lme4`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import FitError, InputError
from ..lmm import lme4 as _l
from ..lmm.checkconv import fit_converged, lmer_control_checks
from ..lmm.engine import LikelihoodOnly
from ..lmm.family import Family
from ..lmm.simparams import legacy_params
from ..lmm.structure import ModelSpec
from .model import GlmmModel, start_parts
from .result import GlmmCore, GlmmFit, var_terms_from_theta

__all__ = ["Lme4GlmmModel"]

_R_GLMER = r"""
function(data, formula, family, link, nAGQ, control, theta, beta, nb) {
  fam <- if (nb) NULL else get(family, mode = "function")(link = link)
  start <- if (is.null(theta)) NULL else if (is.null(beta)) list(theta = theta) else
    list(theta = theta, fixef = beta)
  msgs <- character(0); warns <- character(0)
  fit <- tryCatch(withCallingHandlers(
    if (nb) lme4::glmer.nb(stats::as.formula(formula), data = data, weights = .w,
                           offset = .off, nAGQ = nAGQ,
                           control = do.call(lme4::glmerControl, control))
    else lme4::glmer(stats::as.formula(formula), data = data, family = fam, weights = .w,
                     offset = .off, nAGQ = nAGQ, start = start,
                     control = do.call(lme4::glmerControl, control)),
    message = function(m) { msgs <<- c(msgs, conditionMessage(m)); invokeRestart("muffleMessage") },
    warning = function(w) { warns <<- c(warns, conditionMessage(w)); invokeRestart("muffleWarning") }),
    error = function(e) e)
  if (inherits(fit, "error")) return(list(error = conditionMessage(fit)))
  conv <- fit@optinfo$conv$lme4
  re <- lme4::ranef(fit)
  list(fixef = unname(lme4::fixef(fit)), vcov = as.vector(as.matrix(stats::vcov(fit))),
       theta = unname(lme4::getME(fit, "theta")), loglik = as.numeric(stats::logLik(fit)),
       eta = unname(stats::predict(fit, type = "link")), singular = lme4::isSingular(fit),
       feval = as.integer(fit@optinfo$feval),
       conv_messages = as.character(if (is.null(conv$messages)) character(0) else conv$messages),
       conv_code = as.integer(if (is.null(conv$code)) 0L else conv$code),
       warnings = warns, messages = msgs,
       ranef_names = names(re), ranef_cols = lapply(re, colnames),
       ranef_values = lapply(re, function(d) as.vector(as.matrix(d))),
       ranef_levels = lapply(re, rownames),
       nb_theta = if (nb) lme4::getME(fit, "glmer.nb.theta") else NULL)
}
"""


def _glmer_fn() -> Any:
    r = _l._r()
    if "glmer" not in r:
        r["glmer"] = r["ro"].r(_R_GLMER)
    return r


def _scalar_or_none(value: Any) -> float | None:
    """An R number, or None for R's NULL (a family without a dispersion)."""
    if value is None or type(value).__name__ == "NULLType":
        return None
    vals = _l._vec(value)
    return float(vals[0]) if vals.size else None


class Lme4GlmmModel(LikelihoodOnly):
    """A GLMM structure prepared for lme4's ``glmer`` (the engine protocol's prepared model).

    ``fit`` returns a :class:`GlmmFit`; ``refit`` the light :class:`GlmmCore`
    (``vcov_beta`` is lme4's ``vcov``); ``simulate`` draws from the model
    (nlpower's simulator: it does not depend on the engine).
    """

    engine = "lme4"

    def __init__(self, spec: ModelSpec, family: Family, *, weights: Any = None, offset: Any = None,
                 data: Any = None, nAGQ: int = 1, laplace: str = "expected"):
        if laplace != "expected":
            raise InputError(f"laplace={laplace!r}: lme4's glmer has only the expected-information "
                             "Laplace approximation; use engine='native' for laplace='observed'.")
        # the native fitter of the family (validates; simulates): the engine table's, not a branch
        from ..lmm.engine import get_engine
        self.native: GlmmModel = get_engine("native").prepare(  # type: ignore[assignment]
            spec, family=family, weights=weights, offset=offset, nAGQ=nAGQ)
        self.spec, self.family = spec, family
        self.layout = self.native.layout

    def __repr__(self) -> str:
        return f"Lme4GlmmModel({self.spec.formula!r}, {self.family!r}, n={self.spec.n})"

    def _run(self, y: np.ndarray, nAGQ: int, control: dict[str, Any] | None, start: Any
             ) -> dict[str, Any]:
        ctrl = _l._check_control(control)
        with _l._LOCK:
            r = _glmer_fn()
            ro = r["ro"]
            rdata, formula = _l._matrix_frame(self.spec, y, ro)
            cols = {name: rdata.rx2(name) for name in rdata.names}
            cols[".w"] = ro.FloatVector(self.native.wt)
            cols[".off"] = ro.FloatVector(self.native.offset)
            theta = beta = ro.NULL
            if start is not None:
                th, be = start_parts(start)
                theta = ro.FloatVector(np.asarray(th, dtype=float))
                if be is not None:
                    beta = ro.FloatVector(np.asarray(be, dtype=float))
            res = r["glmer"](ro.DataFrame(cols), formula, self.family.name, self.family.link.name,
                             int(nAGQ), _l._r_value(ctrl, ro), theta, beta,
                             self.family.has_dispersion)   # its own parameter: glmer.nb
            out = {name: res.rx2(name) for name in res.names}
        if "error" in out:
            raise FitError(f"lme4::glmer failed for {self.spec.formula!r}: "
                           f"{_l._strs(out['error'])[0].strip()}. Check the model, or use "
                           "engine='native'.")
        return out

    def refit(self, y: Any, *, REML: bool = False, start: Any = None, nAGQ: int | None = None
              ) -> GlmmCore:
        """``lme4::glmer`` on a new response (the structure is validated once)."""
        self.check_REML(REML)
        nAGQ = self.native.nAGQ if nAGQ is None else nAGQ
        yv = self.native.set_response(y)
        out = self._run(yv, nAGQ, None, start)
        return self._core(out)

    def _core(self, out: dict[str, Any]) -> GlmmCore:
        p = self.spec.p
        msgs = _l._strs(out["conv_messages"]) + _l._strs(out["warnings"])
        conv = fit_converged(True, msgs)
        return GlmmCore(theta=_l._vec(out["theta"]), beta=_l._vec(out["fixef"]),
                        vcov_beta=_l._vec(out["vcov"]).reshape(p, p),
                        deviance=-2.0 * float(out["loglik"][0]), converged=conv,
                        singular=bool(out["singular"][0]), n_evals=int(out["feval"][0]),
                        message="; ".join(msgs) or "converged",
                        dispersion=_scalar_or_none(out.get("nb_theta")))

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None, nAGQ: int | None = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> GlmmFit:
        """Fit with ``lme4::glmer``; ``control``: arguments of ``glmerControl``. Never warns."""
        self.check_REML(REML)
        nAGQ = self.native.nAGQ if nAGQ is None else nAGQ
        yv = self.native.set_response(self.spec.y if y is None else y)
        out = self._run(yv, nAGQ, lmer_control_checks(dict(control or {}), checkconv), start)
        core = self._core(out)
        names = list(self.spec.fixef_names)
        ranef = self._ranef(out)
        order = list(dict.fromkeys(t.group for t in self.layout.terms))
        return GlmmFit(
            formula=self.spec.formula, family=self.family.name, link=self.family.link.name,
            nAGQ=int(nAGQ), engine="lme4", fixef=pd.Series(core.beta, index=names, name="fixef"),
            vcov=pd.DataFrame(core.vcov_beta, index=names, columns=names), theta=core.theta,
            theta_names=self.layout.names, loglik=-core.deviance / 2.0, deviance=core.deviance,
            nobs=self.spec.n, ngrps={g: len(ranef[g]) for g in order}, converged=core.converged,
            singular=core.singular,
            optinfo={"optimizer": "lme4::glmer (bobyqa, Nelder_Mead)", "n_evals": core.n_evals,
                     "message": core.message, "converged": core.converged,
                     "conv_messages": _l._strs(out["conv_messages"]),
                     "warnings": _l._strs(out["warnings"]), "vcov": "lme4"},
            contrasts=dict(self.spec.contrasts),
            var_terms=var_terms_from_theta(self.layout, core.theta),
            ranef_tables={g: ranef[g] for g in order}, eta=_l._vec(out["eta"]), model=self,
            dispersion=core.dispersion)

    def _ranef(self, out: dict[str, Any]) -> dict[str, pd.DataFrame]:
        gid = _l._group_ids(self.spec)
        by_id = {f"G{i}": g for g, i in gid.items()}
        colname = {f"Z{t_i + 1}_{j + 1}": c for t_i, t in enumerate(self.spec.re_terms)
                   for j, c in enumerate(t.cnames)}
        levels = {t.group: t.levels for t in self.spec.re_terms}
        tables = {}
        for k, name in enumerate(_l._strs(out["ranef_names"])):
            g = by_id[name]
            cols = [colname[c] for c in _l._strs(out["ranef_cols"][k])]
            codes = [int(v) for v in _l._strs(out["ranef_levels"][k])]
            vals = _l._vec(out["ranef_values"][k]).reshape(len(cols), len(codes)).T
            idx = pd.Index([levels[g][c] for c in codes], name=g)
            tables[g] = pd.DataFrame(vals, index=idx, columns=cols)
        return tables

    def simulate(self, n: int = 1, *, rng: Any, params: Any = None, **legacy: Any
                 ) -> np.ndarray:
        """Responses drawn from the model (as :meth:`GlmmModel.simulate`)."""
        return self.native.simulate(n, rng=rng, params=legacy_params(
            params, legacy, allowed=("theta", "beta"), where="simulate"))
