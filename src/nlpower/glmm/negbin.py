"""The negative binomial GLMM: the GLMM fit at a fixed dispersion, profiled over the dispersion.

A negative binomial response (:class:`~nlpower.lmm.family.NegativeBinomial`,
``Var = mu + mu^2 / theta``) is a GLM family with one parameter of its own,
the dispersion ``theta``.  For a fixed ``theta`` the model is fitted by the
GLMM machinery unchanged (:class:`~nlpower.glmm.model.GlmmModel`: PIRLS
with the family's working weights, the Laplace deviance, the two stages).
:class:`NegBinModel` fits the model at a first ``theta`` (the family's, a
start's, or a moment estimate), then minimises the deviance over
``(theta_re, beta, log theta)`` jointly by Newton's method on a
finite-difference Hessian (BFGS-updated, as the GLMM's stage 2 without an
analytic gradient); if that fails, Brent's method on the profile deviance
over ``log theta``, each fit warm-started at the best so far -- lme4's
``glmer.nb`` (which alternates ``optimize`` over ``theta`` with ``glmer``
refits) carried to convergence.  The Laplace deviance is lme4's: PIRLS's
expected (Fisher) weights at the mode, as every non-canonical link.

Standard errors of the fixed effects are those at the estimated ``theta``
held fixed (lme4's ``vcov`` of a ``glmer.nb`` fit); ``loglik`` counts
``theta`` among the parameters (``df``, AIC, BIC).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from .._choices import LaplaceWeights
from ..errors import FitError, InputError
from ..lmm.checkconv import CheckConvControl
from ..lmm.family import NegativeBinomial
from ..lmm.structure import ModelSpec
from ..mixed.native._blas import single_threaded
from .model import STAGE2, GlmmModel, _check_nAGQ, start_parts
from .optim import fd_derivatives
from .result import GlmmCore, GlmmFit, check_vcov

__all__ = ["NegBinModel"]

#: log theta is searched in [LOG_LO, LOG_HI] (theta from 1e-4 to 1e7: beyond, the counts are
#: Poisson to rounding); Brent's relative tolerance on log theta
LOG_LO, LOG_HI = math.log(1e-4), math.log(1e7)
LOG_TOL = 1e-6
MAXITER = 60
#: joint Newton's method: steps, and it stops when max|gradient| is below GTOL (or the last
#: step gained less than FTOL with max|gradient| below 1e-2: difference noise)
NEWTON_MAXIT = 30
#: ... or when the Newton step (of a positive definite Hessian) predicts a smaller decrease
DECREMENT = 1e-8
#: the largest change of any element of (theta, beta, log theta_nb) in one Newton step
MAX_STEP = 1.0
GTOL = 1e-4
FTOL = 1e-8


def moment_theta(y: np.ndarray) -> float:
    """A first ``theta`` from the marginal mean and variance of the counts (``m^2 / (v - m)``)."""
    m, v = float(np.mean(y)), float(np.var(y))
    return float(np.clip(m * m / (v - m), 0.05, 100.0)) if v > m * 1.01 else 100.0


def _start_dispersion(start: Any) -> float | None:
    if isinstance(start, dict):
        val = start.get("dispersion")
    else:
        val = getattr(start, "dispersion", None)
    return None if val is None else float(val)


class NegBinModel(GlmmModel):
    """A negative binomial GLMM prepared once; ``theta`` (the dispersion) is estimated per fit.

    Parameters
    ----------
    spec : ModelSpec
        The design (:func:`nlpower.lmm.frame.model_frame`), counts in ``spec.y``.
    family : NegativeBinomial
        Its ``theta``, when set, is where the estimation starts and what
        :meth:`simulate` draws with (the truth of a power study).
    weights, offset, data, nAGQ, laplace :
        As :class:`~nlpower.glmm.model.GlmmModel` (``laplace="expected"``: lme4's
        ``glmer.nb``; ``"observed"``: glmmTMB's ``nbinom2``).

    Examples
    --------
    >>> import pandas as pd
    >>> from nlpower.lmm.frame import model_frame
    >>> d = pd.read_csv("tests/reference/data/negbin_crossed.csv")
    >>> m = NegBinModel(model_frame("errors ~ system + (1 | worker) + (1 | item)", d),
    ...                 NegativeBinomial())
    >>> fit = m.fit()
    >>> round(fit.dispersion, 2), round(fit.loglik, 1)
    (2.38, -2176.6)
    """

    def __init__(self, spec: ModelSpec, family: NegativeBinomial, *, weights: Any = None,
                 offset: Any = None, data: Any = None, nAGQ: int = 1,
                 laplace: LaplaceWeights = "expected"):
        if not isinstance(family, NegativeBinomial):
            raise InputError(f"NegBinModel fits the negative binomial family; got {family!r}.")
        y = np.asarray(spec.y, dtype=float)
        working = family if family.theta is not None else family.with_dispersion(1.0)
        super().__init__(spec, working, weights=weights, offset=offset, data=data, nAGQ=nAGQ,
                         laplace=laplace)
        #: the family as given (its theta: the start and the truth of ``simulate``)
        self.family = family
        self._theta0 = family.theta if family.theta is not None else moment_theta(y)

    # -- the joint fit ---------------------------------------------------------------------
    def _set_dispersion(self, t: float) -> None:
        if self.pirls.family.dispersion != t:
            self.pirls.set_family(self.family.with_dispersion(t))

    def _fz(self, nAGQ: int) -> Any:
        """``(z, u_start) -> (deviance, None, mode)`` over ``z = (theta, beta, log theta_nb)``."""
        k = self.k

        def fz(z: np.ndarray, u_start: np.ndarray | None) -> tuple[float, None, np.ndarray | None]:
            if not LOG_LO - 5.0 <= z[-1] <= LOG_HI + 5.0:
                return math.inf, None, self._u
            self._set_dispersion(math.exp(z[-1]))
            if u_start is not None:
                self._u = u_start
            return self.deviance(z[:k], z[k:-1], nAGQ=nAGQ), None, self._u
        return fz

    def _joint(self, nAGQ: int, x0: np.ndarray, s0: float) -> tuple[np.ndarray, float, int] | None:
        """Newton's method over ``(theta, beta, log theta_nb)`` from a fit at ``theta_nb = e^s0``.

        Unbounded in ``theta`` (the deviance depends on a factor column's sign
        not at all; :meth:`canonical` maps back), a diagonal near 0 moved off
        the saddle there first; steps along the Hessian's eigenvectors scaled
        by the absolute eigenvalues (a descent direction where it is not
        positive definite), at most ``MAX_STEP`` in any element, halved until
        the deviance falls; BFGS updates of the Hessian after a step that went
        as the quadratic model predicted, a fresh one otherwise (a halved step,
        an indefinite Hessian, less than half the predicted decrease).  ``None`` when no step is found.
        """
        fz = self._fz(nAGQ)
        z = np.concatenate([x0, [s0]])
        diag = np.flatnonzero(self.lower == 0)
        z[diag] = np.where(np.abs(z[diag]) < 1e-2, 0.1, z[diag])
        fv = fz(z, None)[0]
        if not math.isfinite(fv):
            return None
        g, H, n = fd_derivatives(fz, z, fv, self._u)
        gained = math.inf
        for _ in range(NEWTON_MAXIT):
            gmax = float(np.max(np.abs(g)))
            if gmax < GTOL or (gained < FTOL and gmax < 1e-2):
                return z, fv, n
            assert H is not None
            lam, V = np.linalg.eigh(0.5 * (H + H.T))
            convex = bool(lam[0] > 0)
            lam = np.maximum(np.abs(lam), 1e-8 * max(float(np.max(np.abs(lam))), 1e-8))
            c = (V.T @ g) / lam
            step = -V @ c
            big = float(np.max(np.abs(step)))
            shrink = min(1.0, MAX_STEP / big) if big > 0 else 1.0
            step *= shrink
            predicted = shrink * (1.0 - 0.5 * shrink) * float(c @ (lam * c))
            if convex and predicted < DECREMENT:   # within ~1e-8 of the minimum
                return z, fv, n
            z2, halved = z + step, 0
            for halved in range(20):  # noqa: B007  (halved: whether to renew the Hessian)
                f2 = fz(z2, None)[0]
                n += 1
                if f2 <= fv:
                    break
                z2 = z + 0.5 * (z2 - z)
            else:
                return None
            if halved or not convex or fv - f2 < 0.5 * predicted:   # the quadratic model was poor
                g2, H2, m = fd_derivatives(fz, z2, f2, self._u)
                n += m
            else:
                g2, _, m = fd_derivatives(fz, z2, f2, self._u, hessian=False)
                n += m
                sv, yv = z2 - z, g2 - g                  # BFGS update of the Hessian
                Hs = H @ sv
                H2 = H
                if float(yv @ sv) > 1e-12 and float(sv @ Hs) > 1e-12:
                    H2 = H + np.outer(yv, yv) / float(yv @ sv) - np.outer(Hs, Hs) / float(sv @ Hs)
            z, fv, g, H, gained = z2, f2, g2, H2, fv - f2
        return None

    def _estimate(self, nAGQ: int, start: Any) -> tuple[np.ndarray, float, int, bool, str, float]:
        """``(x, deviance, evaluations, ok, message, theta_nb)`` at the joint optimum."""
        t0 = _start_dispersion(start) if start is not None else None
        s0 = min(max(math.log(t0 if t0 is not None else self._theta0), LOG_LO), LOG_HI)
        self._set_dispersion(math.exp(s0))
        th, be = start_parts(start) if start is not None else (None, None)
        if th is not None and be is not None and nAGQ > 0:   # a full start: straight to Newton
            x0 = np.concatenate([self.layout.check_start(th), np.asarray(be, dtype=float).ravel()])
            n0 = 0
            if x0.size != self.k + self.p or not np.all(np.isfinite(x0)):
                raise InputError(f"start beta must be {self.p} finite values "
                                 f"({', '.join(self.spec.fixef_names)}); got {be!r}.")
            self._u = None
        else:
            x0, _, n0, _, _, _ = self._optimize(nAGQ, start)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            res = self._joint(nAGQ, x0, s0)
        if res is not None and LOG_LO <= res[0][-1] <= LOG_HI:
            z, fv, n = res
            x = self.canonical(z[:-1])
            t = math.exp(z[-1])
            self._set_dispersion(t)
            return x, fv, n0 + n, True, "converged", t
        start = {"theta": x0[:self.k], "beta": x0[self.k:], "dispersion": math.exp(s0)}
        x, fv, n, ok, msg, t = self._profile(nAGQ, start)
        return x, fv, n0 + n, ok, msg, t

    # -- the profile over theta ---------------------------------------------------------

    def _profile(self, nAGQ: int, start: Any) -> tuple[np.ndarray, float, int, bool, str, float]:
        """Brent's method on the profile deviance over ``log theta``; the best fit found."""
        t0 = _start_dispersion(start) if start is not None else None
        s0 = math.log(t0 if t0 is not None else self._theta0)
        s0 = min(max(s0, LOG_LO), LOG_HI)
        best: dict[str, Any] = {"fv": math.inf}
        evals = [0]

        def f(s: float) -> float:
            sc = min(max(s, LOG_LO), LOG_HI)
            self._set_dispersion(math.exp(sc))
            st = {"theta": best["x"][:self.k], "beta": best["x"][self.k:]} if "x" in best else start
            try:
                x, fv, n, ok, msg, _ = self._optimize(nAGQ, st)
            except (FitError, ArithmeticError, ValueError, np.linalg.LinAlgError):
                return math.inf
            evals[0] += n
            if math.isfinite(fv) and fv < best["fv"]:
                best.update(fv=fv, x=x.copy(), ok=ok, msg=msg, s=sc)
            # outside the search range: the nearest end plus a slope back in
            return fv + 1e3 * (s - sc) ** 2 if math.isfinite(fv) else math.inf

        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            f(s0)
            if "x" not in best:
                raise FitError("the negative binomial GLMM could not be fitted at any dispersion "
                               "tried; check the counts and the model.")
            minimize_scalar(f, bracket=(s0, s0 + 0.25), tol=LOG_TOL,
                            options={"maxiter": MAXITER})
        t = math.exp(best["s"])
        self._set_dispersion(t)
        return best["x"], best["fv"], evals[0], best["ok"], best["msg"], t

    # -- fits ---------------------------------------------------------------------------
    def refit(self, y: Any, *, REML: bool = False, start: Any = None, nAGQ: int | None = None,
              weights: Any = None, vcov: str = "hessian") -> GlmmCore:
        """A new response on the same structure, ``theta`` estimated: the light core.

        ``start``: the truth or a previous fit (``theta``, ``beta`` and
        ``dispersion``; a dict or anything with those attributes); without a
        dispersion the family's ``theta`` is the start.  ``vcov``: as
        ``GlmmModel.refit`` (the
        Hessian's at the estimated dispersion, held fixed, as ``glmer.nb``).
        """
        self.check_REML(REML)
        nAGQ = self.nAGQ if nAGQ is None else _check_nAGQ(nAGQ)
        vcov = check_vcov(vcov)
        self.set_response(y, weights)
        if start is not None and _start_dispersion(start) is None and self.family.dispersion is not None:
            th, be = start_parts(start)
            start = {"theta": th, "beta": be, "dispersion": self.family.dispersion}
        with single_threaded():
            x, fv, n, ok, msg, t = self._estimate(nAGQ, start)
            H = self._refit_hessian(x, fv, nAGQ)[0] if vcov == "hessian" and nAGQ > 0 else None
            V, how = self._vcov_hess(H, x) if H is not None else (self.vcov_rx(x), "rx")
            core = self._core(x, fv, n, ok, msg, V)
        return replace(core, dispersion=t, hessian=H if how == "hessian" else None)

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None, nAGQ: int | None = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> GlmmFit:
        """Fit (``y=None``: ``spec.y``), ``theta`` estimated; the full :class:`GlmmFit`.

        The derivatives at the optimum (``vcov``, lme4's ``checkConv``) are
        those at the estimated ``theta``, held fixed.
        """
        self.check_REML(REML)
        nAGQ = self.nAGQ if nAGQ is None else _check_nAGQ(nAGQ)
        self._maxeval = int(STAGE2["maxeval"])
        if control:
            bad = set(control) - {"maxeval"}
            if bad:
                raise InputError(f"control keys {sorted(bad)} are not known; use 'maxeval'.")
            self._maxeval = int(control["maxeval"])
        ctl = CheckConvControl.coerce(checkconv)
        self.set_response(self.spec.y if y is None else y)   # nothing of an earlier fit is kept
        with single_threaded():
            x, _, n, _, _, t = self._estimate(nAGQ, start)
            fit = self._fit(nAGQ, {"theta": x[:self.k], "beta": x[self.k:]}, ctl)
        info = {**fit.optinfo, "dispersion_evals": n}
        if math.log(t) >= LOG_HI - 1e-6:
            info["dispersion_note"] = (
                f"the negative binomial dispersion theta reached its upper bound ({t:.3g}): "
                "the counts show no overdispersion beyond the random effects, and the model "
                "is the Poisson GLMM; fit family='poisson'.")
        return replace(fit, dispersion=t, optinfo=info)

    def refit_many(self, Y: Any, *, REML: bool = False, start: Any = None,
                   vcov: str = "hessian") -> list[Any]:
        """:meth:`refit` for every row of ``Y`` (one at a time; errors returned, not raised)."""
        self.check_REML(REML)
        vcov = check_vcov(vcov)
        out: list[Any] = []
        for y in np.asarray(Y, dtype=float):
            try:
                out.append(self.refit(y, start=start, vcov=vcov))
            except (FitError, InputError, ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
                out.append(err)
        return out
