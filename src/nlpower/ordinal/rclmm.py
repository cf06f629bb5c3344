"""``engine="ordinal"``: R's ``ordinal::clmm`` (and ``clm``) through rpy2, the reference.

The engine registry's fitter of the ordinal family on the R engines
(``("ordinal", "ordinal")``, which ``clmm(engine="ordinal")`` names, and
``("lme4", "ordinal")``, which ``fit_ratings(family="ordinal",
engine="lme4")`` names; :mod:`nlpower.lmm.engine`): :func:`r_ordinal`
returns an :class:`RClmmModel`, a prepared model like the native
:class:`~.model.ClmmModel`.

The formula, link, threshold and nAGQ go to R unchanged, and the factor
codings (``contrasts``) as the lme4 adapter sends them (``sum``:
``contr.sum``, ``half``: ``contr.sum / 2``); the data go as the model's
columns with the response as an ordered factor of the used categories.  The result is the same :class:`~.result.ClmmFit` as the native
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
from ..formula import parse
from ..lmm.engine import LikelihoodOnly
from ..lmm.family import Ordinal
from ..lmm.structure import ModelSpec
from .api import native_ordinal
from .model import ClmmCore, ClmmModel
from .response import OrdinalResponse
from .result import ClmmFit

__all__ = ["RClmmModel", "r_ordinal"]

_R_FIT = r"""
function(d, formula, link, threshold, nAGQ, ctrl, contrasts) {
  suppressPackageStartupMessages(library(ordinal))
  f <- as.formula(formula)
  mixed <- length(lme4::findbars(f)) > 0
  ctr <- NULL                                   # nlpower's codings, as lme4.py sends them
  if (length(contrasts)) {
    ctr <- lapply(names(contrasts), function(v) {
      k <- contrasts[[v]]
      if (k == "treatment") "contr.treatment"
      else if (k == "sum") "contr.sum"
      else contr.sum(nlevels(d[[v]])) / 2          # "half"
    })
    names(ctr) <- names(contrasts)
  }
  t0 <- proc.time()[["elapsed"]]
  fm <- if (mixed) do.call(clmm, c(list(f, data = d, link = link, threshold = threshold,
                                         nAGQ = nAGQ, contrasts = ctr),
                                    if (length(ctrl)) list(control = do.call(clmm.control, ctrl))))
        else do.call(clm, c(list(f, data = d, link = link, threshold = threshold, contrasts = ctr),
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


def r_ordinal(spec: ModelSpec, *, data: Any = None, family: Ordinal | None = None,
              nAGQ: int = 1, response: OrdinalResponse | None = None) -> RClmmModel:
    """The R engines' fitter for the ordinal family: an :class:`RClmmModel`.

    Takes what the native fitter takes (:func:`~.api.native_ordinal`); ``data``
    is required: the formula's columns of the rows in ``spec`` (R refits the
    formula on them).

    Raises
    ------
    InputError
        ``data`` missing or not one row per observation of ``spec``.
    """
    if not isinstance(data, pd.DataFrame) or len(data) != spec.n:
        got = f"{len(data)} rows" if isinstance(data, pd.DataFrame) else type(data).__name__
        raise InputError(
            f"R's ordinal::clmm refits the formula on the data: pass data= the rows behind the "
            f"model ({spec.n} rows; nlpower.ordinal.api.ordinal_frame gives them); got {got}.")
    return RClmmModel(native_ordinal(spec, data=data, family=family, nAGQ=nAGQ,
                                     response=response))


class RClmmModel(LikelihoodOnly):
    """An ordinal model prepared for R's ``ordinal::clmm`` (``clm`` without random terms).

    Holds the native :class:`~.model.ClmmModel` of the same structure (category
    labels, thresholds, random-effect layout; the conditional modes at R's
    estimates come from it) and its data.  ``fit``/``refit`` send the formula
    and the rows to R; ``start`` and ``checkconv`` are not sent (R chooses its
    start and runs its own checks: ``fit.converged`` is its convergence code).
    """

    engine = "ordinal"

    def __init__(self, model: ClmmModel) -> None:
        self.model = model
        self.spec = model.spec
        self.family = model.family
        # the native model's coefficient names (no intercept) and thresholds: a power study
        # reads its tests' contrasts and the likelihood ratio's df from them
        self.fixef_names = model.fixef_names
        self.n_alpha = model.n_alpha
        self._sent: tuple[Any, str, dict[str, Any]] | None = None    # what R fits (_r_model)

    def __repr__(self) -> str:
        return f"RClmmModel({self.spec.formula!r}, {self.family!r}, n={self.spec.n})"

    def refit(self, y: Any = None, *, REML: bool = False, start: Any = None, control: Any = None,
              checkconv: Any = None) -> ClmmCore:
        """Fit response ``y`` (category codes; ``None``: the current one) with R; the core.

        ``control``: arguments of ``clmm.control()`` (``clm.control()`` without
        random terms), e.g. ``{"maxIter": 500}``.

        Raises
        ------
        EngineUnavailableError
            rpy2, R or the ``ordinal`` package missing.
        FitError
            ``clmm`` stopped with an error (e.g. "optimizer nlminb failed to converge").
        """
        self.check_REML(REML)
        model = self.model
        if y is not None:
            model.set_response(np.asarray(y))
        fn = _fit_fn()
        ro = _FN["ro"]
        from ..lmm.lme4 import _r_frame
        resp = self.spec.response
        data, formula, contrasts = self._r_model()
        rf = _r_frame(data.drop(columns=[resp]), ro)
        labels = np.asarray(model.levels, dtype=object)[model.y]
        rf = ro.r("function(d, name, y, lev) { d[[name]] <- factor(y, levels = lev, "
                  "ordered = TRUE); d }")(
            rf, resp, ro.StrVector(list(labels)), ro.StrVector(list(model.levels)))
        try:
            out = fn(rf, formula, self.family.link.name, self.family.threshold,
                     int(model.nAGQ), _control(control, ro), ro.ListVector(contrasts))
        except Exception as exc:           # rpy2's RRuntimeError: clmm's own stop()
            raise FitError(f"ordinal::clmm failed: {str(exc).strip()}") from exc
        return _core(model, {k: out.rx2(k) for k in out.names})

    def _r_model(self) -> tuple[Any, str, dict[str, Any]]:
        """The rows, formula and codings R fits.  A model whose fixed part lost a column (the
        null model of a one-df likelihood ratio) is sent as its model-matrix columns, since the
        formula would bring the column back."""
        model, spec = self.model, self.spec
        if self._sent is not None:
            return self._sent
        f = parse(spec.formula)
        if model.X.shape[1] == len(_formula_columns(spec, model.data)):
            self._sent = (model.data, spec.formula, dict(spec.contrasts.items()))
            return self._sent
        data = model.data.copy()
        cols = [f"nlpower_x{j + 1}" for j in range(model.X.shape[1])]
        for j, c in enumerate(cols):
            data[c] = model.X[:, j]
        fixed = " + ".join(cols) or "1"
        formula = " + ".join([f"{spec.response} ~ {fixed}", *(f"({t})" for t in f.random)])
        self._sent = (data, formula, {})
        return self._sent

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None, control: Any = None,
            checkconv: Any = None) -> ClmmFit:
        """:meth:`refit` and the full :class:`~.result.ClmmFit` (its ``engine``: ``"ordinal"``)."""
        return ClmmFit.from_core(self.model, self.refit(y, control=control), engine="ordinal")

    def simulate(self, n: int = 1, *, rng: Any, params: Any = None) -> np.ndarray:
        """New responses from the model (the native model's :meth:`~.model.ClmmModel.simulate`)."""
        return self.model.simulate(n, rng=rng, params=params)


def _core(model: ClmmModel, res: dict[str, Any]) -> ClmmCore:
    """R's estimates as a :class:`ClmmCore` (theta: the Cholesky factors of R's VarCorr)."""
    alpha = np.array(res["alpha"], dtype=float)  # a copy: R may reuse its memory
    beta = np.array(res["beta"], dtype=float)
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
    return ClmmCore(alpha=alpha, thresholds=model.thr.theta(alpha), beta=beta, theta=th,
                    vcov=vcov, loglik=loglik, converged=code == 0,
                    singular=bool(np.any(th[model.lower[a:] == 0.0] < 1e-4)) if th.size else False,
                    n_evals=_int0(res["niter"]),
                    message=f"ordinal::clmm convergence code {code} "
                            f"({float(np.asarray(res['seconds'])[0]):.3g} s in R)",
                    u=u, cond_H=math.nan)


def _int0(v: Any) -> int:
    a = np.asarray(v, dtype=float)
    return int(a[0]) if a.size and np.isfinite(a[0]) else 0


def _formula_columns(spec: ModelSpec, data: Any) -> tuple[str, ...]:
    """The fixed-effect columns (no intercept) the formula itself gives on ``data``."""
    from ..lmm.frame import model_frame
    rows = data.assign(**{spec.response: np.arange(len(data), dtype=float)})  # any number
    names = model_frame(spec.formula, rows, dict(spec.contrasts.items()) or None).fixef_names
    return tuple(n for n in names if n != "(Intercept)")
