"""``engine="ordinal"``: R's ``ordinal::clmm`` (and ``clm``) through rpy2, the reference.

The formula, link, threshold and nAGQ go to R unchanged; the data go as the
model's columns with the response as an ordered factor of the used
categories.  The result is the same :class:`~.result.ClmmFit` as the native
engine's: estimates, log-likelihood and the threshold/fixed-effect block of
``vcov`` come from R; the conditional modes are recomputed at R's estimates
(they are a function of the parameters).  R starts on the first fit; a
missing rpy2/R/ordinal raises :class:`~nlpower.errors.EngineUnavailableError`.

``ordinal`` 2022.11-16 caveat (``tests/reference/clmm_reference.R``): its
``clmm`` maximises the loglog likelihood for ``link="cloglog"`` and the
reverse; this adapter passes the link through as given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..errors import EngineUnavailableError, FitError, InputError
from .api import prepare_clmm
from .model import ClmmCore
from .result import ClmmFit

__all__ = ["fit_rclmm"]

_R_FIT = r"""
function(d, formula, link, threshold, nAGQ, ctrl) {
  suppressPackageStartupMessages(library(ordinal))
  f <- as.formula(formula)
  mixed <- length(lme4::findbars(f)) > 0
  t0 <- proc.time()[["elapsed"]]
  fm <- if (mixed) do.call(clmm, c(list(f, data = d, link = link, threshold = threshold,
                                         nAGQ = nAGQ), if (length(ctrl)) list(control = do.call(clmm.control, ctrl))))
        else do.call(clm, c(list(f, data = d, link = link, threshold = threshold),
                            if (length(ctrl)) list(control = do.call(clm.control, ctrl))))
  secs <- proc.time()[["elapsed"]] - t0
  a <- length(fm$alpha); p <- length(fm$beta)
  V <- vcov(fm)[seq_len(a + p), seq_len(a + p), drop = FALSE]
  vc <- if (mixed) lapply(VarCorr(fm), function(m) unclass(m)[, , drop = FALSE]) else list()
  list(alpha = unname(fm$alpha), beta = unname(fm$beta), vcov = unname(V),
       loglik = as.numeric(logLik(fm)), vc = unname(vc), seconds = secs,
       convergence = if (mixed) fm$optRes$convergence else fm$convergence$code,
       niter = as.numeric(c(fm$niter, NA)[1]))
}
"""

_FN: dict[str, Any] = {}


def _fit_fn() -> Any:
    if "fit" in _FN:
        return _FN["fit"]
    from ..lmm.lme4 import _r
    ro = _r()["ro"]
    ok = bool(ro.r('isTRUE(requireNamespace("ordinal", quietly = TRUE))')[0])
    if not ok:
        raise EngineUnavailableError("R is available but the 'ordinal' package is not; install it "
                                     "with install.packages('ordinal') (Debian: r-cran-ordinal).")
    _FN["ro"] = ro
    _FN["fit"] = ro.r(_R_FIT)
    return _FN["fit"]


def _control(control: Any, ro: Any) -> Any:
    if control is None:
        return ro.ListVector({})
    if not isinstance(control, Mapping):
        raise InputError(f"control for engine='ordinal' must be a dict of clmm.control() "
                         f"arguments, e.g. {{'maxIter': 500}}; got {control!r}.")
    from ..lmm.lme4 import _r_value
    return ro.ListVector({str(k): _r_value(v, ro) for k, v in control.items()})


def fit_rclmm(formula: str, data: pd.DataFrame, *, link: str = "logit",
              threshold: str = "flexible", nAGQ: int = 1, control: Any = None,
              contrasts: Mapping[str, str] | None = None) -> ClmmFit:
    """Fit with R's ``ordinal::clmm`` (``clm`` without random terms); a :class:`ClmmFit`.

    Raises
    ------
    EngineUnavailableError
        rpy2, R or the ``ordinal`` package missing.
    FitError
        ``clmm`` stopped with an error (e.g. "optimizer nlminb failed to converge").
    """
    model = prepare_clmm(formula, data, link=link, threshold=threshold, nAGQ=nAGQ,
                         contrasts=contrasts)
    fn = _fit_fn()
    ro = _FN["ro"]
    from ..lmm.lme4 import _r_frame
    frame = model.data.copy()
    resp = model.spec.response
    frame = frame.drop(columns=[resp])
    rf = _r_frame(frame, ro)
    labels = np.asarray(model.levels, dtype=object)[model.y]
    rf = ro.r("function(d, name, y, lev) { d[[name]] <- factor(y, levels = lev, ordered = TRUE); d }")(
        rf, resp, ro.StrVector(list(labels)), ro.StrVector(list(model.levels)))
    try:
        out = fn(rf, formula, link, threshold, int(nAGQ), _control(control, ro))
    except Exception as exc:           # rpy2's RRuntimeError: clmm's own stop()
        raise FitError(f"ordinal::clmm failed: {str(exc).strip()}") from exc
    res = {k: out.rx2(k) for k in out.names}
    alpha = np.asarray(res["alpha"], dtype=float)
    beta = np.asarray(res["beta"], dtype=float)
    theta: list[float] = []
    if model.rs is not None:
        vcs = [np.asarray(m, dtype=float) for m in res["vc"]]
        for t, cov in zip(model.rs.terms, vcs, strict=False):
            cov = cov.reshape(t.q, t.q)
            try:
                L = np.linalg.cholesky(cov)
            except np.linalg.LinAlgError:
                L = np.diag(np.sqrt(np.maximum(np.diag(cov), 0.0)))
            theta += [float(L[i, j]) for j in range(t.q) for i in range(j, t.q)]
    th = np.asarray(theta)
    x = np.concatenate([alpha, beta, th])
    k = x.size
    vcov = np.full((k, k), np.nan)
    a = alpha.size + beta.size
    vcov[:a, :a] = np.asarray(res["vcov"], dtype=float).reshape(a, a)
    loglik = float(np.asarray(res["loglik"])[0])
    code = int(np.asarray(res["convergence"])[0])
    u = model.modes(x) if model.rs is not None else np.zeros(0)
    core = ClmmCore(alpha=alpha, thresholds=model.thr.theta(alpha), beta=beta, theta=th,
                    vcov=vcov, loglik=loglik, converged=code == 0,
                    singular=bool(np.any(th[model.lower[a:] == 0.0] < 1e-4)) if th.size else False,
                    n_evals=_int0(res["niter"]),
                    message=f"ordinal::clmm convergence code {code} "
                            f"({float(np.asarray(res['seconds'])[0]):.3g} s in R)",
                    u=u, cond_H=math.nan)
    return ClmmFit(core, model, engine="ordinal")


def _int0(v: Any) -> int:
    a = np.asarray(v, dtype=float)
    return int(a[0]) if a.size and np.isfinite(a[0]) else 0
