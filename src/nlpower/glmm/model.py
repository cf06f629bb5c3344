"""``GlmmModel``: the native GLMM engine's prepared model (lme4's ``glmer`` semantics).

Pipeline (lme4's ``glFormula -> mkGlmerDevfun -> optimizeGlmer`` twice ->
``checkConv -> mkMerMod``): :class:`~nlpower.lmm.structure.ModelSpec` ->
lme4's ``theta`` layout and grouping blocks (shared with the LMM engine) ->
:class:`~nlpower.glmm.pirls.Pirls` (conditional modes, Laplace deviance) ->

1. stage 1 (lme4's ``nAGQ = 0``): ``beta`` updated inside PIRLS with ``u``,
   optimised over ``theta`` -- L-BFGS on the analytic gradient
   (:mod:`.gradient`, canonical links) or BOBYQA;
2. stage 2: ``(theta, beta)`` on the Laplace (or adaptive Gauss-Hermite)
   deviance, PIRLS over ``u`` only, from stage 1's optimum: Newton's method
   on a Hessian from differences of the analytic gradient
   (:meth:`GlmmModel._newton_gradient`) or of the deviance
   (:meth:`GlmmModel._newton_stage`), updated by BFGS; L-BFGS or BOBYQA when
   that fails; then the derivatives at the optimum (lme4's ``vcov`` and
   ``checkConv`` input).

The gradient stages run without bounds on ``theta`` and map the result back
(:meth:`GlmmModel.canonical`).  :meth:`GlmmModel.refit` is the power
replicates' light path: stage 2 only when a warm start is given, the
fixed-effects covariance from the PIRLS factor (lme4's ``use.hessian =
FALSE``), no Hessian at the optimum.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from .._choices import LaplaceWeights, allowed
from .._validation import check_choice
from ..errors import FitError, InputError
from ..lmm.checkconv import CheckConvControl, ConvCheck, check_conv
from ..lmm.engine import LikelihoodOnly
from ..lmm.family import Family
from ..lmm.structure import ModelSpec
from ..mixed.layout import theta_layout
from ..mixed.native._blas import single_threaded
from ..mixed.native.blocks import group_blocks
from .agq import agq_deviance
from .gradient import LaplaceGradient
from .optim import bobyqa, fd_derivatives, gradient_hessian, lbfgsb, newton, newton_step
from .pirls import Mode, Pirls
from .response import check_response
from .result import GlmmCore, GlmmFit, build_fit, check_vcov, start_parts

SINGULAR_TOL = 1e-4
#: BOBYQA settings of the two stages without the analytic gradient (tighter than lme4's)
STAGE1 = {"xtol_abs": 1e-2, "ftol_abs": 1e-4, "maxeval": 5000, "step": 0.25}
#: ... when stage 1 is the fit (nAGQ = 0)
STAGE1_FINAL = {"xtol_abs": 1e-6, "ftol_abs": 1e-8, "maxeval": 5000, "step": 0.25}
STAGE2 = {"xtol_abs": 1e-5, "ftol_abs": 1e-7, "maxeval": 20000, "step": 0.1}
#: L-BFGS-B's projected-gradient tolerance of stage 1 (only a start for stage 2) and when
#: stage 1 is the fit (nAGQ = 0); of stage 2's fallback
STAGE1_GTOL = 1e-2
STAGE1_FINAL_GTOL = 1e-6
STAGE2_GTOL = 1e-6
#: stage 1 starts PIRLS at the first-order predicted (u, beta) after steps in theta up to this
PREDICT_STEP = 0.1
#: Newton steps after stage 2 without the gradient, until max|gradient| is below
NEWTON_STEPS = 4
NEWTON_GTOL = 1e-4
#: ... or the last step gained less than this and max|gradient| is below 1e-2 (finite
#: differences of a deviance known to ~1e-9 leave a gradient noise of ~1e-5)
NEWTON_FTOL = 1e-7
#: Newton (chord) steps of stage 2 before falling back to BOBYQA (no gradient)
NEWTON_MAXIT = 12


def _check_nAGQ(nAGQ: Any) -> int:
    if isinstance(nAGQ, bool) or not isinstance(nAGQ, int | np.integer) or nAGQ < 0 or nAGQ > 100:
        raise InputError(f"nAGQ must be an integer from 0 to 100; got {nAGQ!r}.")
    return int(nAGQ)


class GlmmModel(LikelihoodOnly):
    """A GLMM structure prepared once; responses are swapped per fit.

    Parameters
    ----------
    spec : ModelSpec
        The design (:func:`nlpower.lmm.frame.model_frame`; for the binomial,
        ``spec.y`` holds 0/1 or proportions).
    family : Family
        :class:`~nlpower.lmm.family.Binomial` or :class:`~nlpower.lmm.family.Poisson`.
    weights, offset : array, optional
        Prior weights (binomial: numbers of trials) and the linear predictor's offset.
    data : ignored
        The engine protocol passes the user's data frame; the native fitter needs only ``spec``.
    nAGQ, laplace : as :func:`nlpower.glmm.glmer` (``laplace``: the Laplace approximation's
        weights, lme4's expected information or glmmTMB's observed information).

    Examples
    --------
    >>> import pandas as pd
    >>> from nlpower.lmm.frame import model_frame
    >>> from nlpower.lmm.family import Binomial
    >>> d = pd.read_csv("tests/reference/data/cbpp.csv", dtype={"period": str, "herd": str})
    >>> m = GlmmModel(model_frame("prop ~ period + (1 | herd)", d), Binomial(), weights=d["size"])
    >>> round(m.fit().loglik, 2)
    -92.03
    """

    engine = "native"

    def __init__(self, spec: ModelSpec, family: Family, *, weights: Any = None, offset: Any = None,
                 data: Any = None, nAGQ: int = 1, laplace: LaplaceWeights = "expected"):
        if not family.is_glm:
            raise InputError(f"GlmmModel fits the GLM families (binomial and Poisson, negative "
                             f"binomial); got {family!r}. Use lmer for Gaussian responses.")
        if not spec.re_terms:
            raise InputError(f"formula {spec.formula!r} has no random-effects terms; a GLMM needs "
                             "at least one term like (1 | worker). For a GLM use statsmodels.")
        n = spec.n
        self.spec = spec
        self.family = family
        #: the default of ``refit`` and ``fit`` (the protocol fixes family options at prepare)
        self.nAGQ = _check_nAGQ(nAGQ)
        self.wt = np.ones(n) if weights is None else np.asarray(weights, dtype=float).ravel()
        self.offset = np.zeros(n) if offset is None else np.asarray(offset, dtype=float).ravel()
        for name, arr in (("weights", self.wt), ("offset", self.offset)):
            if arr.shape != (n,) or not np.all(np.isfinite(arr)):
                raise InputError(f"{name} must be {n} finite values (one per row of the model); "
                                 f"got shape {arr.shape}.")
        if np.any(self.wt < 0):
            raise InputError("weights must be non-negative (numbers of trials).")
        self.layout = theta_layout(spec.re_terms)
        self.blocks = group_blocks(self.layout)
        X = np.ascontiguousarray(spec.X, dtype=float)
        y = np.asarray(spec.y, dtype=float)
        check_response(family, y, self.wt, spec.response)
        self.pirls = Pirls(X, self.blocks, self.layout.size, family, y, self.wt, self.offset)
        #: the Laplace approximation's weights (``"expected"``: lme4's; ``"observed"``: glmmTMB's)
        self.laplace = check_choice("laplace", laplace, allowed(LaplaceWeights))
        self.pirls.observed = self.laplace == "observed"
        self.k = self.layout.size
        self.p = spec.p
        self.lower = np.concatenate([self.layout.lower, np.full(self.p, -np.inf)])
        self.free = np.full(self.k + self.p, -np.inf)
        # the columns of each term's factor: flipping one's sign leaves Lambda Lambda' unchanged
        self._columns = []
        for t, off in zip(self.layout.terms, self.layout.term_offsets, strict=True):
            for j in range(t.q):
                self._columns.append((off, t.q - j))
                off += t.q - j
        self.grad = LaplaceGradient(self.pirls, self.k)
        self._u: np.ndarray | None = None
        self._last: Mode | None = None
        self._anchor: tuple[np.ndarray, Mode] | None = None
        self._pending: np.ndarray | None = None     # Newton's next step after stage 2
        self._restart: np.ndarray | None = None     # where stage 2's fallback starts
        self._beta = np.zeros(self.p)
        self._maxeval = int(STAGE2["maxeval"])
        self._batched: Any = None                   # BatchedLaplace, built by refit_many
        self._scalar_single = len(self.layout.terms) == 1 and self.layout.terms[0].q == 1

    # -- objectives -----------------------------------------------------------------
    def _mode(self, theta: np.ndarray, beta: np.ndarray, update_beta: bool) -> Mode:
        mode = self.pirls.run(theta, beta, self._u, update_beta=update_beta)
        if mode.ok and math.isfinite(mode.deviance):
            self._u = mode.u
            if update_beta:
                self._beta = mode.beta
        self._last = mode
        return mode

    def deviance(self, theta: Any, beta: Any = None, *, nAGQ: int = 1) -> float:
        """lme4's deviance ``-2 logLik`` at ``theta`` and ``beta`` (``beta=None``: PIRLS's, nAGQ=0)."""
        th = np.asarray(theta, dtype=float).ravel()
        if th.shape != (self.k,):
            raise InputError(f"theta must have {self.k} values ({', '.join(self.layout.names)}).")
        if beta is None:
            return self._mode(th, self._beta, True).deviance
        b = np.asarray(beta, dtype=float).ravel()
        mode = self._mode(th, b, False)
        if nAGQ > 1 and mode.ok:
            return agq_deviance(self.pirls, mode, nAGQ)
        return mode.deviance

    def _analytic(self, nAGQ: int) -> bool:
        """Whether the analytic gradient is used (canonical link, Laplace or nAGQ = 0)."""
        return self.grad.ok and nAGQ <= 1

    def _f2(self, nAGQ: int) -> Any:
        k = self.k

        def f(x: np.ndarray) -> float:
            return self.deviance(x[:k], x[k:], nAGQ=nAGQ)
        return f

    def _fu(self, nAGQ: int, gradient: bool = False) -> Any:
        """``(x, u_start) -> (deviance, gradient or None, mode)``: the stage-2 objective."""
        k = self.k

        def fu(x: np.ndarray, u_start: np.ndarray | None
               ) -> tuple[float, np.ndarray | None, np.ndarray | None]:
            anchor = self._anchor if gradient else None
            if anchor is not None:     # the mode predicted from the last evaluation's
                self._u = self.grad.predict_u(anchor[1], x - anchor[0])
            elif u_start is not None:
                self._u = u_start
            v = self.deviance(x[:k], x[k:], nAGQ=nAGQ)
            g = None
            if gradient and math.isfinite(v):
                g = self.grad(self._last, True)
                if u_start is None and g is not None and self._last is not None:
                    self._anchor = (x.copy(), self._last)   # not a difference step
            return v, g, self._u
        return fu

    def _fu1(self) -> Any:
        """Stage 1's objective (``beta`` in PIRLS) with its gradient over ``theta``."""
        anchor: list[Any] = []

        def fu(th: np.ndarray, u_start: np.ndarray | None
               ) -> tuple[float, np.ndarray | None, np.ndarray | None]:
            if anchor and np.max(np.abs(th - anchor[0])) < PREDICT_STEP:
                # (u, beta) predicted from the last evaluation's mode (a short step: first order)
                ub = self.grad.predict_u(anchor[1], th - anchor[0])
                self._u, self._beta = ub[:self.pirls.q], ub[self.pirls.q:]
            v = self.deviance(th)
            g = self.grad(self._last, False) if math.isfinite(v) else None
            if g is not None and self._last is not None:
                anchor[:] = [th.copy(), self._last]
            return v, g, self._u
        return fu

    def canonical(self, x: np.ndarray) -> np.ndarray:
        """``x`` with every factor column whose diagonal is negative negated (lme4's bounds).

        The deviance depends on ``theta`` only through ``Lambda Lambda'``, which
        a column's sign does not change: the gradient-based stages optimise
        without bounds (a projected method stalls at a diagonal of 0, where
        the gradient vanishes by this symmetry) and map the result back.
        """
        out = x.copy()
        for start, length in self._columns:
            if out[start] < 0:
                out[start:start + length] *= -1.0
        return out

    # -- stages ---------------------------------------------------------------------
    def _stage1(self, theta0: np.ndarray, final: bool = False) -> tuple[np.ndarray, float, int]:
        self._u = None
        self._anchor = None
        self._beta = np.zeros(self.p)
        self._mode(np.zeros(self.k), self._beta, True)         # the GLM fit: the start for beta
        self._u = None
        if self._analytic(0):
            th, fv, n, _, _ = lbfgsb(self._fu1(), theta0, self.free[:self.k],
                                     STAGE1_FINAL_GTOL if final else STAGE1_GTOL, 5000)
            th = self.canonical(th)
        else:
            ctl = STAGE1_FINAL if final else STAGE1          # stage 2's Newton steps finish it
            th, fv, n, _, _ = bobyqa(self.deviance, theta0, self.layout.lower,
                                     np.full(self.k, ctl["step"]), ctl)
        self.deviance(th)                                        # leave beta and u at the optimum
        return th, fv, n + 2

    def _stage2(self, x0: np.ndarray, nAGQ: int, step: np.ndarray | None = None
                ) -> tuple[np.ndarray, float, int, bool, str]:
        if self._analytic(nAGQ):
            # off a saddle: a diagonal of exactly 0 has a zero gradient by symmetry
            x1 = np.where((self.lower == 0) & (np.abs(x0) < 1e-8), 1e-2, x0)
            x, fv, n, ok, msg = lbfgsb(self._fu(nAGQ, True), x1, self.free, STAGE2_GTOL,
                                       self._maxeval)
            return self.canonical(x), fv, n, ok, msg
        if step is None:
            se = self._se_rx(x0)
            step = np.concatenate([np.full(self.k, STAGE2["step"]), np.maximum(0.2 * se, 1e-3)])
        return bobyqa(self._f2(nAGQ), x0, self.lower, step, {**STAGE2, "maxeval": self._maxeval})

    def _se_rx(self, x: np.ndarray) -> np.ndarray:
        return np.sqrt(np.diag(self.vcov_rx(x)))

    def vcov_rx(self, x: np.ndarray, mode: Mode | None = None) -> np.ndarray:
        """Covariance of ``beta`` from the PIRLS factor at ``x = (theta, beta)`` (no Hessian)."""
        if mode is None:
            mode = self._mode(x[:self.k], x[self.k:], False)
        Lx = self.pirls.factor(mode.at, mode.w, True).Lx
        assert Lx is not None
        Li = np.linalg.inv(Lx)
        return Li.T @ Li

    def _start(self, start: Any, nAGQ: int) -> tuple[np.ndarray, int, bool]:
        """``(theta, beta)`` to start stage 2 from; runs stage 1 unless a full start is given."""
        if start is not None:
            th, be = start_parts(start)
            theta = self.layout.check_start(th)
            if be is not None and nAGQ > 0:
                b = np.asarray(be, dtype=float).ravel()
                if b.shape != (self.p,) or not np.all(np.isfinite(b)):
                    raise InputError(f"start beta must be {self.p} finite values "
                                     f"({', '.join(self.spec.fixef_names)}); got {be!r}.")
                return np.concatenate([theta, b]), 0, True
        else:
            theta = self.layout.start.copy()
        th, _, n = self._stage1(theta, final=nAGQ == 0)   # nAGQ = 0 always optimises theta here
        return np.concatenate([th, self._beta]), n, False

    def set_response(self, y: Any, weights: Any = None) -> np.ndarray:
        """Swap the response (checked), and the prior weights if given; the structure is kept."""
        yv = np.asarray(y, dtype=float).ravel()
        if yv.shape != (self.spec.n,):
            raise InputError(f"y must have {self.spec.n} values (one per row); got shape {yv.shape}.")
        if weights is not None:
            wt = np.asarray(weights, dtype=float).ravel()
            if wt.shape != (self.spec.n,) or not np.all(np.isfinite(wt)) or np.any(wt < 0):
                raise InputError(f"weights must be {self.spec.n} finite values >= 0 (one per "
                                 f"row); got shape {wt.shape}.")
            self.wt = wt
        check_response(self.family, yv, self.wt, "y")
        self.pirls.set_response(yv, self.wt, self.offset)
        self._u = None
        self._anchor = None
        return yv

    # -- fits -----------------------------------------------------------------------
    def _optimize(self, nAGQ: int, start: Any) -> tuple[np.ndarray, float, int, bool, str, bool]:
        if nAGQ > 1 and not self._scalar_single:
            raise InputError(
                f"nAGQ={nAGQ} (adaptive Gauss-Hermite quadrature) needs a single scalar "
                "random-effects term such as (1 | herd), as lme4; use nAGQ=1 (Laplace).")
        self._pending = self._restart = None
        x0, n1, warm = self._start(start, nAGQ)
        if nAGQ == 0:
            fv = self.deviance(x0[:self.k])
            return x0, fv, n1, True, "stage 1 (nAGQ = 0)", warm
        newton_res = (self._newton_gradient(x0, nAGQ) if self._analytic(nAGQ)
                      else self._newton_stage(x0, nAGQ))
        if newton_res is not None:
            x, fv, n2 = newton_res
            return x, fv, n1 + n2, True, "converged", warm
        step = None
        if warm and not self._analytic(nAGQ):
            step = np.concatenate([np.full(self.k, 0.05), np.maximum(0.1 * self._se_rx(x0), 1e-3)])
        if self._restart is not None:
            x0, self._restart = self._restart, None
        x, fv, n2, ok, msg = self._stage2(x0, nAGQ, step)
        return x, fv, n1 + n2, ok, msg, warm

    def _newton_gradient(self, x0: np.ndarray, nAGQ: int) -> tuple[np.ndarray, float, int] | None:
        """Stage 2 by Newton's method on the analytic gradient (Hessian: its differences at x0)."""
        fu = self._fu(nAGQ, True)
        fv, g, u0 = fu(x0, None)
        if not math.isfinite(fv) or g is None:
            return None
        H, n = gradient_hessian(fu, x0, u0, forward=g)
        self._u = u0
        res = newton(fu, x0, fv, g, H, self.free)
        if res is None:
            return None
        x, fv, g, H, m, ok = res
        if not ok:                        # L-BFGS from the best point so far
            self._restart = self.canonical(x)
            return None
        st = newton_step(x, g, H, self.free)
        self._pending = None if st is None else self.canonical(st[0])
        return self.canonical(x), fv, n + m + 2

    def _newton_stage(self, x0: np.ndarray, nAGQ: int) -> tuple[np.ndarray, float, int] | None:
        """Stage 2 by Newton steps on one finite-difference Hessian (from stage 1's optimum).

        Stage 1's optimum is close to stage 2's, so a few steps suffice; each step is halved until
        the deviance decreases, and the Hessian is updated by BFGS from the
        gradients.  ``None`` when that fails or the Hessian is not
        positive definite -- then BOBYQA runs (:meth:`_stage2`).
        """
        f, fu = self._f2(nAGQ), self._fu(nAGQ)
        x, fv = x0.copy(), f(x0)
        if not math.isfinite(fv):
            return None
        g, H, n = fd_derivatives(fu, x, fv, self._u)
        assert H is not None
        n += 1
        try:
            np.linalg.cholesky(H)
        except np.linalg.LinAlgError:
            return None
        gained = math.inf
        for _ in range(NEWTON_MAXIT):
            at_bound = (self.lower == 0) & (x <= 0) & (g > 0)
            gmax = float(np.max(np.abs(np.where(at_bound, 0.0, g))))
            if gmax < NEWTON_GTOL or (gained < NEWTON_FTOL and gmax < 1e-2):
                return x, fv, n
            st = newton_step(x, g, H, self.lower, max_step=1.0)
            if st is None:
                return None
            x2 = st[0]
            for _ in range(8):
                f2 = f(x2)
                n += 1
                if f2 < fv:
                    break
                x2 = x + 0.5 * (x2 - x)
            else:
                return None
            g2 = fd_derivatives(fu, x2, f2, self._u, hessian=False)[0]
            n += 2 * x.size
            sv, yv = x2 - x, g2 - g                  # BFGS update of the Hessian
            Hs = H @ sv
            if float(yv @ sv) > 1e-12 and float(sv @ Hs) > 1e-12:
                H = H + np.outer(yv, yv) / float(yv @ sv) - np.outer(Hs, Hs) / float(sv @ Hs)
            x, fv, g, gained = x2, f2, g2, fv - f2
        return None

    def refit(self, y: Any, *, REML: bool = False, start: Any = None, nAGQ: int | None = None,
              weights: Any = None, vcov: str = "hessian") -> GlmmCore:
        """Fit a new response on the same structure: the light core (power replicates).

        ``start``: the truth or a previous fit (anything with ``theta`` and
        ``beta``, or a dict); then stage 1 is skipped and Newton's method
        starts there (the same optimum as the two stages reach from lme4's
        start).  ``weights``: new prior weights (e.g. 0 for excluded rows).
        ``vcov``: ``"hessian"`` (default), glmer's: from the deviance's Hessian over
        ``(theta, beta)`` (``use.hessian = TRUE``); ``"rx"``: the PIRLS factor's (smaller).
        """
        self.check_REML(REML)
        nAGQ = self.nAGQ if nAGQ is None else _check_nAGQ(nAGQ)
        vcov = check_vcov(vcov)
        self.set_response(y, weights)
        with single_threaded():          # small dense factors: BLAS threads only cost
            x, fv, n, ok, msg, _ = self._optimize(nAGQ, start)
            mode = None
            if self._pending is not None:    # Newton's last (predicted) step, where vcov is taken
                x2 = self._pending
                mode = self._mode(x2[:self.k], x2[self.k:], False)
                n += 1
                if mode.ok and mode.deviance <= fv:
                    x, fv = x2, mode.deviance
                else:
                    mode = None
            if vcov == "hessian" and nAGQ > 0:
                H, m = self._refit_hessian(x, fv, nAGQ)
                if H is not None:
                    V, how = self._vcov_hess(H, x)
                    return replace(self._core(x, fv, n + m, ok, msg, V),
                                   hessian=H if how == "hessian" else None)
            return self._core(x, fv, n, ok, msg, self.vcov_rx(x, mode))

    def _refit_hessian(self, x: np.ndarray, fv: float, nAGQ: int) -> tuple[np.ndarray | None, int]:
        """The deviance's Hessian at the optimum ``x`` (glmer's ``vcov``), and its evaluations."""
        if self._analytic(nAGQ):                 # forward differences of the gradient
            fu, self._anchor = self._fu(nAGQ, True), None
            _, g, u0 = fu(x, None)
            return (None, 1) if g is None else gradient_hessian(fu, x, u0, forward=g)
        fu = self._fu(nAGQ)
        self.deviance(x[:self.k], x[self.k:], nAGQ=nAGQ)
        _, H2, m = fd_derivatives(fu, x, fv, self._u)
        return H2, m + 1

    def refit_many(self, Y: Any, *, REML: bool = False, start: Any = None,
                   vcov: str = "hessian") -> list[Any]:
        """:meth:`refit` for every row of ``Y`` at once (:func:`nlpower.glmm.batched.refit_many`)."""
        from .batched import refit_many
        self.check_REML(REML)
        return refit_many(self, Y, start=start, vcov=vcov)   # builds self._batched on first use

    def _core(self, x: np.ndarray, fv: float, n: int, ok: bool, msg: str, vcov: np.ndarray,
              check: ConvCheck | None = None) -> GlmmCore:
        theta, beta = x[:self.k], x[self.k:]
        if not math.isfinite(fv):
            raise FitError("the GLMM deviance is not finite at the optimum; the model cannot be "
                           "fitted to these data (check for complete separation).")
        singular = bool(np.any(theta[self.layout.diag] < SINGULAR_TOL))
        conv = ok and (check is None or check.ok or check.singular)
        return GlmmCore(theta=theta.copy(), beta=beta.copy(), vcov_beta=vcov, deviance=fv,
                        converged=conv, singular=singular, n_evals=n, message=msg)

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None, nAGQ: int | None = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> GlmmFit:
        """Fit (``y=None``: ``spec.y``) and build the full :class:`GlmmFit` (never warns).

        After stage 2, lme4's derivatives at the optimum: the Hessian gives
        ``vcov`` (lme4's default for GLMMs) and ``checkConv``'s gradient and
        Hessian checks; Newton steps are taken while they lower the deviance.
        """
        self.check_REML(REML)
        nAGQ = self.nAGQ if nAGQ is None else _check_nAGQ(nAGQ)
        if control:
            bad = set(control) - {"maxeval"}
            if bad:
                raise InputError(f"control keys {sorted(bad)} are not known; use 'maxeval'.")
            maxeval = control["maxeval"]
            if not isinstance(maxeval, int | np.integer) or maxeval < 10:
                raise InputError(f"control['maxeval'] must be an integer >= 10; got {maxeval!r}.")
            self._maxeval = int(maxeval)
        else:
            self._maxeval = int(STAGE2["maxeval"])
        ctl = CheckConvControl.coerce(checkconv)
        self.set_response(self.spec.y if y is None else y)   # nothing of an earlier fit is kept
        with single_threaded():          # small dense factors: BLAS threads only cost
            return self._fit(int(nAGQ), start, ctl)

    def _fit(self, nAGQ: int, start: Any, ctl: CheckConvControl) -> GlmmFit:
        x, fv, n, ok, msg, _ = self._optimize(nAGQ, start)
        if nAGQ == 0:
            return build_fit(self, self._core(x, fv, n, ok, msg, self.vcov_rx(x)), nAGQ, None, "rx")
        f = self._f2(nAGQ)
        if self._analytic(nAGQ):
            x, fv, g, H, m = self._final_gradient(x, fv, nAGQ)
        else:
            x, fv, g, H, m = self._final_fd(x, nAGQ)
        n += m
        f(x)                                                     # modes at the optimum
        check = check_conv(f, x, fv, self.lower, ctl, given_gradient=g, given_hessian=H)
        vcov, how = self._vcov_hess(H, x)
        return build_fit(self, self._core(x, fv, n, ok, msg, vcov, check), nAGQ, check, how, ctl=ctl)

    def _final_gradient(self, x: np.ndarray, fv: float, nAGQ: int
                        ) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, int]:
        """The Hessian at the optimum from central differences of the gradient (a Newton
        step first when the gradient is not yet small)."""
        fu = self._fu(nAGQ, True)
        g = None
        n = 1
        if self._pending is not None:    # Newton's last step (predicted to gain < 1e-8)
            f2, g, u0 = fu(self._pending, None)
            if g is not None and f2 <= fv:
                x, fv = self._pending, f2
            else:
                g = None
                n += 1
        if g is None:
            fv, g, u0 = fu(x, None)
        assert g is not None
        H, m = gradient_hessian(fu, x, u0)
        n += m
        res = newton(fu, x, fv, g, H, self.free, maxit=3)
        if res is not None and res[4] > 0 and res[1] <= fv:
            x, m = self.canonical(res[0]), res[4]
            fv, g, u0 = fu(x, None)
            assert g is not None
            H, m2 = gradient_hessian(fu, x, u0)
            n += m + m2 + 1
        return x, fv, g, H, n

    def _final_fd(self, x: np.ndarray, nAGQ: int
                  ) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, int]:
        """lme4's derivatives at the optimum by differences of the deviance (``deriv12``)."""
        f, fu = self._f2(nAGQ), self._fu(nAGQ)
        fv = f(x)                                    # the mode at the optimum: the centre
        g, H, n = fd_derivatives(fu, x, fv, self._u)
        assert H is not None
        n += 1
        for _ in range(NEWTON_STEPS):                # finish BOBYQA's loose optimum
            if np.max(np.abs(g)) < NEWTON_GTOL:
                break
            st = newton_step(x, g, H, self.lower, max_step=0.1)
            if st is None:
                break
            f2 = f(st[0])
            n += 1
            if not f2 < fv:
                break
            x, fv = st[0], f2
            g = fd_derivatives(fu, x, fv, self._u, hessian=False)[0]   # the Hessian barely moves
            n += 2 * x.size
        return x, fv, g, H, n

    def _vcov_hess(self, H: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, str]:
        """lme4's Hessian-based ``vcov``: ``2 H^{-1}``'s fixed-effects block; PIRLS's if not PD."""
        k = self.k
        try:
            np.linalg.cholesky(H)
            Hi = np.linalg.inv(H)
            V = Hi[k:, k:] + Hi[k:, k:].T
            if np.all(np.isfinite(V)) and np.all(np.diag(V) > 0):
                return V, "hessian"
        except np.linalg.LinAlgError:
            pass
        return self.vcov_rx(x), "rx"

    # -- simulation -----------------------------------------------------------------
    def simulate(self, n: int = 1, *, rng: Any, params: Any = None, **legacy: Any
                 ) -> np.ndarray:
        """``n`` new responses drawn from the model at ``params`` (shape ``(n, nobs)``).

        ``params``: a fit, a core or ``{"theta": ..., "beta": ...}``
        (:func:`~nlpower.lmm.simparams.sim_params`).  New random effects each
        time (lme4's ``simulate(use.u = FALSE)``); binomial responses are
        proportions of ``weights`` trials (the family's ``draw``); the family's own
        parameter (negative binomial ``theta``) is ``params``'s ``dispersion``, or the family's.
        """
        from .draws import simulate
        return simulate(self, n, rng=rng, params=params, legacy=legacy)

    def simulate_each(self, gens: Any, *, params: Any) -> np.ndarray:
        """Row ``i``: ``simulate(1, rng=gens[i], params=params)[0]`` (a batch of replicates)."""
        from .draws import simulate_each
        return simulate_each(self, gens, params=params)
