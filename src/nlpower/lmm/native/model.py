"""``NativeModel``: the pure-Python LMM engine with lme4 semantics.

Pipeline (lme4's ``lFormula -> mkLmerDevfun -> optimizeLmer -> mkMerMod``):
:class:`~nlpower.lmm.structure.ModelSpec` -> :func:`blocks.build_blocks`
(cross-products, once) -> :class:`deviance.DevianceEvaluator` (profiled
deviance) -> :func:`optimize.optimize_theta` (BOBYQA) -> :class:`FitCore` /
:class:`~nlpower.lmm.result.LmmFit`.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from ..._validation import check_choice
from ...errors import FitError, InputError
from ...mixed.layout import theta_layout
from ...mixed.native._blas import single_threaded
from ...mixed.native.blocks import build_blocks
from ...mixed.native.deviance import DevianceEvaluator, Factor
from ..checkconv import DERIV_STEP, CheckConvControl, ConvCheck, check_conv
from ..result import FitCore, LmmFit, VarTerm
from ..satterthwaite import SatterthwaiteState, satterthwaite_state
from ..structure import ModelSpec
from .gradient import theta_gradient
from .identified import identified_finish
from .optimize import DEFAULT_CONTROL, REPLICATE_POLISH_GTOL, optimize_theta
from .ridge import ridge_fit, ridges_that_pay
from .stages import stage_counts
from .start import descent_zero_mask, moment_start

SINGULAR_TOL = 1e-4   # lme4's isSingular(tol = 1e-4)
# an evaluation factors a dense rest of this many columns or more: "costly"
COSTLY_N2 = 500
# the analytic gradient from this many theta parameters (or for costly evaluations)
ANALYTIC_MIN_K = 8
# costly models with at most SCALED_START_MAX_K parameters start from the best of
# START_SCALES * lme4's start (_scaled_start)
START_SCALES = (1.0, 0.5, 0.25, 0.125)
SCALED_START_MAX_K = 4
# ... unless the moment start (moment_start) is better than lme4's: then BOBYQA starts there
# with this initial trust-region radius (InstEval: 29 evaluations instead of 4 + 57)
MOMENT_STEP = 0.02
SCALED_STEP = 0.2       # ... else the scaled start's radius is this x max|start| (minqa's rhobeg)
SINGULAR_PIVOT = 1e-7   # a zero pivot is raised to this for its term's gradient
# BOBYQA's initial trust-region radius for warm starts in refit_core
WARM_START_STEP = 0.1
# below this many dense columns, BLAS threads cost more than they bring
_SINGLE_THREAD_N2 = 1_000_000


def _check_finite(name: str, a: np.ndarray, what: str) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        rows = np.flatnonzero(bad.reshape(a.shape[0], -1).any(axis=1))
        shown = ", ".join(str(int(r)) for r in rows[:5]) + (" ..." if rows.size > 5 else "")
        raise InputError(
            f"{name} contains {int(bad.sum())} missing or infinite value(s) ({what}; "
            f"rows {shown}). Drop or impute those rows before fitting."
        )


#: power replicates: lme4's gradient check (2k evaluations; the Hessian only when it fails)
REPLICATE_CHECKS = CheckConvControl(singular="ignore", grad="warning", hess="ignore")


def _message(message: str, check: ConvCheck | None) -> str:
    """The optimiser's message, plus the failed post-fit checks."""
    if check is None or check.ok:
        return message
    failed = [m for m in check.messages if not m.startswith("boundary")]
    return f"{message}; checkConv: {'; '.join(failed)}"


class NativeModel:
    """Profiled-deviance LMM fitter for one model structure.

    Builds the blocked cross-products of ``spec`` once; :meth:`refit_core`
    then fits a new response in time independent of ``n`` per deviance
    evaluation.  Method: Bates et al. (2015, JSS 67(1), sec. 3) with
    MixedModels.jl's blocked Cholesky; optimiser NLopt BOBYQA with lme4
    1.1-31's ``nloptwrap`` settings.  Checked against lme4 1.1-31.

    Parameters
    ----------
    spec : ModelSpec
        The design (from :func:`nlpower.lmm.frame.model_frame`).
    mode : {"auto", "dense", "sparse"}
        How the Schur complement against the largest grouping factor is
        formed (see ``docs/engine.md``); ``"auto"`` picks the cheaper one,
        and when few distinct ``Z1'Z1`` blocks occur (balanced designs) sums
        precomputed cross-products per group of equal levels instead;
        ``"dense"`` always works level by level.  All give the same numbers.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets, simulate
    >>> from nlpower.lmm.frame import model_frame
    >>> design, params = CrossedDesign(6, 20), presets.high_variance(0.1)
    >>> df = simulate(design, params, rng=1)
    >>> model = NativeModel(model_frame("rating ~ x + (1 | worker) + (1 | item)", df))
    >>> first = model.refit_core(df["rating"].to_numpy())
    >>> y_sim = simulate(design, params, rng=2)["rating"].to_numpy()
    >>> core = model.refit_core(y_sim, start=first.theta)   # a power replicate: warm start
    >>> core.converged, core.beta.shape
    (True, (2,))
    """

    engine = "native"

    def __init__(self, spec: ModelSpec, *, mode: str = "auto"):
        if not spec.re_terms:
            raise InputError(
                f"formula {spec.formula!r} has no random-effects terms; a mixed model needs at "
                "least one term like (1 | worker). For a fixed-effects-only model use ordinary "
                "least squares (e.g. statsmodels.OLS)."
            )
        X = np.asarray(spec.X, dtype=float)
        _check_finite("X (the fixed-effects model matrix)", X, "from the predictors")
        for t in spec.re_terms:
            _check_finite(f"the random-effects columns of ({' + '.join(t.cnames)} | {t.group})",
                          np.asarray(t.Z, dtype=float), "from the predictors")
        n, p = X.shape
        if n <= p:
            raise InputError(
                f"the data have {n} observations but the fixed part has {p} columns "
                f"({', '.join(spec.fixef_names)}); need more observations than fixed effects."
            )
        check_choice("mode", mode, ("auto", "dense", "sparse"))
        self.spec = spec
        self.layout = theta_layout(spec.re_terms)
        self._term_slices = tuple((off, t.q) for t, off in
                                  zip(self.layout.terms, self.layout.term_offsets, strict=True))
        y = self._check_y(spec.y, "y (the response " + repr(spec.response) + ")")
        self.blocks = build_blocks(spec.with_response(y) if y is not spec.y else spec, self.layout,
                                   mode)
        self._threads1 = self.blocks.N2 <= _SINGLE_THREAD_N2
        # the analytic gradient costs about two evaluations plus ~1 ms of set-up: worth it
        # over 2k differences for many parameters or costly evaluations
        self._analytic = self.layout.size >= ANALYTIC_MIN_K or self.blocks.N2 >= COSTLY_N2
        self._descent = False             # the descent below ANALYTIC_MIN_K too (a ridge's model)
        self._ridges = ridges_that_pay(spec, self.blocks.N2) if self._analytic else ()
        self._zero = descent_zero_mask(self.layout.terms, self._term_slices)
        self.ev = DevianceEvaluator(self.blocks, grouped=mode == "auto")
        self._y_id: int | None = id(spec.y)
        self._satt: tuple[int, SatterthwaiteState] | None = None

    # -- input ------------------------------------------------------------------
    def _check_y(self, y: Any, name: str = "y") -> np.ndarray:
        y = np.asarray(y, dtype=float)
        n = self.spec.n
        if y.shape != (n,):
            raise InputError(f"{name} must be a 1-D array of length {n} (one value per row "
                             f"of the design); got shape {y.shape}.")
        _check_finite(name, y, "in the response")
        if n > 0 and float(np.ptp(y)) == 0.0:
            raise InputError(
                f"{name} is constant (every value is {float(y[0])!r}); a mixed model cannot be fitted "
                "to a response without variation. Check the rating column."
            )
        return y

    def _set_y(self, y: np.ndarray) -> None:
        self.blocks.set_response(y)
        self._satt = None

    # -- deviance ----------------------------------------------------------------
    @property
    def theta_names(self) -> tuple[str, ...]:
        """lme4's names of ``theta`` (``names(getME(m, "theta"))``)."""
        return self.layout.names

    @property
    def lower(self) -> np.ndarray:
        """Lower bounds of ``theta`` (0 on diagonal elements, -inf elsewhere)."""
        return self.layout.lower.copy()

    def deviance(self, theta: Any, *, REML: bool = False) -> float:
        """Profiled ML deviance (or REML criterion) at ``theta`` for the current response.

        Bates et al. (2015) eq. 34 (ML) and 41 (REML); lme4's
        ``devfun(theta)``.  ``inf`` where the factorisation fails.
        """
        th = np.asarray(theta, dtype=float).ravel()
        if th.shape != (self.layout.size,):
            raise InputError(f"theta must have {self.layout.size} values "
                             f"({', '.join(self.layout.names)}); got shape {th.shape}.")
        return self.ev(th, REML)

    def value_and_gradient(self, theta: np.ndarray, REML: bool = False
                           ) -> tuple[float, np.ndarray, int]:
        """Criterion, its gradient in ``theta`` and the evaluations spent.

        Analytic (:func:`.gradient.theta_gradient`).  Where a term's formula
        needs its factor to be invertible (block 1 off the active-columns path,
        rest terms on factorisations that keep no unscaled Schur complement),
        a multi-column term with a zero pivot takes its components at the pivot
        raised to ``SINGULAR_PIVOT`` (the gradient is continuous: an
        ``O(1e-7)`` error, one more factorisation) -- the one-sided derivative
        at the bound; elsewhere the gradient is exact in one factorisation.

        Examples
        --------
        >>> from nlpower import CrossedDesign, presets, simulate
        >>> from nlpower.lmm.frame import model_frame
        >>> df = simulate(CrossedDesign(6, 20), presets.high_variance(0.1), rng=1)
        >>> m = NativeModel(model_frame("rating ~ x + (1 + x || worker) + (1 + x || item)", df))
        >>> th = np.array([0.5, 0.4, 0.3, 0.2])
        >>> f, g, n = m.value_and_gradient(th)
        >>> e = np.array([1e-6, 0, 0, 0])
        >>> bool(abs(g[0] - (m.deviance(th + e) - m.deviance(th - e)) / 2e-6) < 1e-4)
        True
        """
        f = self.ev.factor(theta)
        val = self.ev.objective(f, REML)
        if not math.isfinite(val):
            return val, np.zeros_like(theta), 1
        g, exact = theta_gradient(self.ev, f, REML)
        if exact.all():
            return val, g, 1
        lay = self.layout
        th = theta.copy()
        for off, q in self._term_slices:
            s = slice(off, off + q * (q + 1) // 2)
            if not exact[s].all():
                d = np.flatnonzero(lay.diag[s]) + off
                th[d] = np.maximum(th[d], SINGULAR_PIVOT)
        f2 = self.ev.factor(th)
        if f2.ok:
            g2, _ = theta_gradient(self.ev, f2, REML)
            g[~exact] = g2[~exact]
        return val, g, 2

    # -- fitting -------------------------------------------------------------------
    def _scaled_start(self, REML: bool) -> tuple[np.ndarray, float, float, int]:
        """The start (and the criterion there): lme4's, or a better one when costly.

        BOBYQA's evaluations grow with the distance from the start (InstEval:
        116 from lme4's ``theta = 1``, 57 from 0.25, 29 from
        :func:`moment_start` with a small first trust region).  Where one
        evaluation factors a dense rest of ``COSTLY_N2`` columns or more and
        there are at most ``SCALED_START_MAX_K`` parameters, the start is
        :func:`moment_start` when its criterion is below that at lme4's start
        (then BOBYQA's initial trust-region radius is ``MOMENT_STEP``), else
        the best of ``c * start`` for ``c`` in ``START_SCALES`` (radius
        ``SCALED_STEP`` times its largest element); elsewhere it is lme4's.  (With many parameters BOBYQA's path is not shortened:
        535 -> 808 evaluations on a 22-parameter 4-system model.)  Returns
        ``(start, criterion, initial step or 0, evaluations)``.
        """
        x0 = self.layout.start.copy()
        if self.blocks.N2 < COSTLY_N2 or x0.size > SCALED_START_MAX_K:
            return x0, self.ev(x0, REML), 0.0, 1
        xm = moment_start(self.spec.X, self.blocks.y, self.layout)
        fm, f1 = self.ev(xm, REML), self.ev(x0, REML)
        if math.isfinite(fm) and fm < f1:
            return xm, fm, MOMENT_STEP, 2
        vals = [f1] + [self.ev(c * x0, REML) for c in START_SCALES[1:]]   # START_SCALES[0] = 1
        best = int(np.argmin(vals))
        c = START_SCALES[best]     # max|lme4's start| is 1; a ridge's reduced model descends first
        return c * x0, vals[best], 0.0 if self._descent else SCALED_STEP * c, 1 + len(START_SCALES)

    def _optimize(self, REML: bool, start: Any, control: dict[str, Any] | None):
        t0 = time.perf_counter()
        step = 0.0
        if start is None:
            x0, f0, step, n0 = self._scaled_start(REML)
        else:
            x0 = self.layout.check_start(start)
            f0, n0 = self.ev(x0, REML), 1
        if not math.isfinite(f0):
            raise FitError(
                f"the {'REML criterion' if REML else 'deviance'} is not finite at the starting "
                f"theta {np.array2string(x0, precision=4)}; the model matrices may be "
                "degenerate (e.g. a predictor that is constant within every group, or a "
                "response that is fitted exactly)."
            )
        ctl = dict(DEFAULT_CONTROL)
        if control:
            unknown = set(control) - set(DEFAULT_CONTROL)
            if unknown:
                raise InputError(
                    f"control has unknown setting(s) {sorted(unknown)}; allowed: "
                    f"{', '.join(sorted(DEFAULT_CONTROL))}."
                )
            ctl.update(control)
        if step and not (control and control.get("initial_step")):
            ctl["initial_step"] = step
        t_start = time.perf_counter() - t0
        with single_threaded(self._threads1):
            fg = (lambda th: self.value_and_gradient(th, REML)) if self._analytic else None
            # many parameters: a gradient descent brings BOBYQA near the optimum first
            first = start is None and (self.layout.size >= ANALYTIC_MIN_K or self._descent)
            res = optimize_theta(lambda th: self.ev(th, REML), x0, self.layout.lower, ctl,
                                 terms=self._term_slices, fg=fg, descent_first=first, f0=f0,
                                 newton_finish=self._descent, descent_zero=self._zero)
            fac = self.ev.factor(res.theta)
        if not fac.ok or not math.isfinite(self.ev.objective(fac, REML)):
            raise FitError("the deviance is not finite at the optimum; the fit failed.")
        return replace(res, stages=(("start", n0, 0, t_start), *res.stages)), fac

    def _check(self, res: Any, REML: bool, control: CheckConvControl) -> ConvCheck:
        """lme4's ``checkConv`` at the optimum (:mod:`nlpower.lmm.checkconv`).

        With the analytic gradient the Hessian is forward differences of it
        (``k`` calls) where they decide lme4's verdicts, else central ones
        (``2k``; on the flat ridges of ``(f || g)`` terms the forward error
        hides the degenerate Hessian lme4 reports): ``check_hessian``.  The last
        Newton step's gradient and Hessian are reused when at the optimum.
        """
        grad = (lambda th: self.value_and_gradient(th, REML)[1]) if self._analytic else None
        g = H = None
        if res.derivatives is not None and grad is not None:
            # the last Newton step computed them at (or within DERIV_STEP of) the optimum
            x_g, g, x_h, H = res.derivatives
            if not np.array_equal(x_g, res.theta):
                g = None
            if np.max(np.abs(x_h - res.theta)) > DERIV_STEP:
                H = None
        if g is None and grad is not None:
            g = res.gradient                 # the optimiser's last gradient call, if at theta
        return check_conv(lambda th: self.ev(th, REML), res.theta, res.fval, self.layout.lower,
                          control, grad=grad, given_gradient=g, given_hessian=H, forward=True)

    def _core(self, res: Any, fac: Factor, REML: bool, check: ConvCheck | None = None) -> FitCore:
        n, p = self.blocks.n, self.blocks.p
        sigma2 = fac.r2 / (n - p if REML else n)
        beta = self.ev.beta(fac)
        Ri = self.ev.RXinv(fac)
        vcov = sigma2 * (Ri @ Ri.T)
        theta = res.theta
        singular = bool(np.any(theta[self.layout.diag] < SINGULAR_TOL))
        return FitCore(theta=theta, beta=beta, sigma=math.sqrt(sigma2), vcov_beta=vcov,
                       deviance=self.ev.objective(fac, REML), REML=REML,
                       converged=res.converged and (check is None or check.ok),
                       singular=singular,
                       n_evals=res.n_evals + (0 if check is None else check.n_evals),
                       message=_message(res.message, check))

    def refit_core(self, y: Any, *, REML: bool = False, start: Any = None,
                   control: dict[str, Any] | None = None) -> FitCore:
        """Fit a new response; the light result used by power simulations.

        Recomputes only ``Z'y, X'y, y'y`` (O(n)); never warns (diagnostics
        are in the returned :class:`FitCore`).  ``start``: a warm start for
        ``theta`` in lme4's order (e.g. the previous replicate's or the true
        ``theta``); with a warm start BOBYQA's initial trust-region radius is
        ``WARM_START_STEP`` (0.1) unless ``control`` sets ``initial_step``.
        Raises :class:`~nlpower.errors.FitError` when the deviance is not
        finite at the start.
        """
        y = self._check_y(y)
        self._set_y(y)
        if start is not None and not (control and "initial_step" in control):
            # a warm start is close: a small first trust region saves ~1/3 of the evaluations
            control = {**(control or {}), "initial_step": WARM_START_STEP}
        # a power replicate, like refit: polish only past lme4's gradient tolerance
        control = {"polish_gtol": REPLICATE_POLISH_GTOL, **(control or {})}
        # the whole fit single-threaded: switching OpenBLAS back to its threads between
        # the optimiser and the final small solves costs milliseconds per refit
        with single_threaded(self._threads1):
            res, fac = self._optimize(REML, start, control)
            return self._core(res, fac, REML, self._check(res, REML, REPLICATE_CHECKS))

    def refit(self, y: Any, *, REML: bool = False, start: Any = None) -> FitCore:
        """The engine protocol's light refit (:class:`nlpower.lmm.engine.PreparedModel`).

        :meth:`refit_core` with NLopt's default settings, for power replicates:
        ``y`` is checked with one ``min``/``max`` pass (the full checks and
        their messages run only when that finds a constant or non-finite
        response), nothing about the structure is re-validated.
        """
        yv = np.asarray(y, dtype=float)
        if yv.shape != (self.spec.n,):
            yv = self._check_y(yv)                  # raises with the full message
        lo, hi = yv.min(), yv.max()
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            yv = self._check_y(yv)
        self._set_y(yv)
        control = {"polish_gtol": REPLICATE_POLISH_GTOL}
        if start is not None:
            control["initial_step"] = WARM_START_STEP
        with single_threaded(self._threads1):
            res, fac = self._optimize(REML, start, control)
            return self._core(res, fac, REML, self._check(res, REML, REPLICATE_CHECKS))

    def fit(self, y: Any = None, *, REML: bool = False, start: Any = None,
            control: dict[str, Any] | None = None, checkconv: Any = None) -> LmmFit:
        """Fit and build the full :class:`~nlpower.lmm.result.LmmFit` (``y=None``: ``spec.y``).

        ``checkconv``: policies of lme4's post-fit checks
        (:class:`~nlpower.lmm.checkconv.CheckConvControl`, a dict, or one level
        for all); their outcome is ``fit.optinfo["checkconv"]`` and a failed
        gradient/Hessian check makes ``fit.converged`` False.  Never warns.
        """
        ctl = CheckConvControl.coerce(checkconv)
        y = self._check_y(self.spec.y if y is None else y,
                          "y" if y is not None else f"the response {self.spec.response!r}")
        self._set_y(y)
        with single_threaded(self._threads1):
            # an exact ridge of (f || g) terms: fitted without it (nlpower.lmm.native.ridge)
            out = ridge_fit(self, REML, ctl) if self._ridges and start is control is None else None
            if out is not None:
                res, fac, check = out
                return self._build_fit(self._core(res, fac, REML, check), fac, y, res, check, ctl)
            res, fac = self._optimize(REML, start, control)
            # an exact ridge or a nested term: a Newton step and the check in the identified
            # parameters (nlpower.lmm.native.identified)
            done = identified_finish(self, res, REML, ctl)
            if done is not None:
                check, res2 = done
                if res2.theta is not res.theta:
                    fac = self.ev.factor(res2.theta)
                res = res2
            else:
                t0 = time.perf_counter()
                check = self._check(res, REML, ctl)
                # check_conv counts gradient calls when it has the analytic gradient
                n_grad = check.n_evals if self._analytic else 0
                res = replace(res, stages=(*res.stages, ("checkconv", check.n_evals - n_grad,
                                                         n_grad, time.perf_counter() - t0)))
            core = self._core(res, fac, REML, check)
        return self._build_fit(core, fac, y, res, check, ctl)

    def _build_fit(self, core: FitCore, fac: Factor, y: np.ndarray, res: Any = None,
                   check: ConvCheck | None = None,
                   ctl: CheckConvControl | None = None) -> LmmFit:
        spec = self.spec
        lay = self.layout
        names = list(spec.fixef_names)
        theta = core.theta
        s2 = core.sigma ** 2
        # variance components per term (lme4 order)
        # lmm.draw imports this package (theta_layout): import its theta -> Lambda map here
        from ..draw import relative_factor

        var_terms = []
        for t, off, grp in zip(lay.terms, lay.term_offsets, lay.grp_names, strict=True):
            lam = relative_factor(theta[off:], t.q)      # the one theta -> Lambda map
            var_terms.append(VarTerm(grp=grp, group=t.group, cnames=tuple(t.cnames),
                                     cov=s2 * (lam @ lam.T)))
        # conditional modes and residuals
        modes = self.ev.modes(fac)
        fitted = spec.X @ core.beta
        ranef: dict[str, pd.DataFrame] = {}
        for blk, bm in zip(self.blocks.blocks, modes, strict=True):
            fitted = fitted + np.einsum("ij,ij->i", blk.Z, bm[blk.codes])
            cols = list(blk.cnames)
            # lme4 lists the group's columns in term order; one frame per grouping factor
            ranef[blk.group] = pd.DataFrame(bm, index=pd.Index(blk.levels, name=blk.group),
                                            columns=cols)
        order = []
        for t in lay.terms:
            if t.group not in order:
                order.append(t.group)
        ranef = {g: ranef[g] for g in order}
        ngrps = {g: len(ranef[g]) for g in order}
        n = spec.n
        if core.REML:
            loglik = -core.deviance / 2.0
            deviance = core.deviance
            reml = core.deviance
        else:
            loglik = -core.deviance / 2.0
            deviance = core.deviance
            reml = None
        gradient_only = res is not None and not any(st[0] == "bobyqa" for st in res.stages)
        optinfo: dict[str, Any] = {"optimizer": "scipy L-BFGS-B (analytic gradient)" if gradient_only
                   else "nlopt LN_BOBYQA", "n_evals": core.n_evals,
                   "message": core.message, "converged": core.converged,
                   "control": dict(DEFAULT_CONTROL)}
        if res is not None:
            optinfo["nlopt_converged"] = res.converged
            optinfo["nlopt_message"] = res.message
            optinfo["steps"] = list(res.steps)
            optinfo["stages"] = stage_counts(res.stages)
        if check is not None:
            optinfo["checkconv"] = check.to_dict()
            optinfo["checkconv_control"] = vars(ctl) if ctl is not None else None
        state_holder: dict[str, SatterthwaiteState] = {}

        def df_fn(L: np.ndarray) -> float:
            if "s" not in state_holder:
                state_holder["s"] = self._satterthwaite_state(core, y)
            return state_holder["s"].df(L)

        return LmmFit(
            formula=spec.formula, REML=core.REML, engine=self.engine,
            fixef=pd.Series(core.beta, index=names, name="estimate"),
            vcov=pd.DataFrame(core.vcov_beta, index=names, columns=names),
            theta=theta.copy(), theta_names=lay.names, sigma=core.sigma, loglik=loglik,
            deviance=deviance, reml_criterion=reml, nobs=n, ngrps=ngrps,
            converged=core.converged, singular=core.singular, optinfo=optinfo,
            contrasts=dict(spec.contrasts), var_terms=tuple(var_terms), ranef_tables=ranef,
            residuals=y - fitted, df_fn=df_fn, model=self,
        )

    # -- Satterthwaite --------------------------------------------------------------
    def _satterthwaite_state(self, core: FitCore, y: np.ndarray | None = None) -> SatterthwaiteState:
        if y is not None and self.blocks.y is not y:
            self._set_y(y)
        REML = core.REML
        ev = self.ev
        k = self.layout.size
        cache: dict[bytes, Factor] = {}

        def fac(theta: np.ndarray) -> Factor:
            key = theta.tobytes()
            f = cache.get(key)
            if f is None:
                f = ev.factor(theta.copy())
                cache[key] = f
            return f

        def dev_vp(vp: np.ndarray) -> float:
            f = fac(vp[:k])
            if not f.ok:
                return math.inf
            s2 = vp[k] * vp[k]
            n, p = self.blocks.n, self.blocks.p
            dev = f.ldL2 + f.r2 / s2 + n * math.log(2.0 * math.pi * s2)
            if REML:
                dev += f.ldRX2 - p * math.log(2.0 * math.pi * s2)
            return dev

        def cov_vp(vp: np.ndarray) -> np.ndarray:
            Ri = ev.RXinv(fac(vp[:k]))
            return vp[k] * vp[k] * (Ri @ Ri.T)

        varpar = np.concatenate([core.theta, [core.sigma]])
        with single_threaded(self._threads1):
            return satterthwaite_state(dev_vp, cov_vp, varpar)

    def satterthwaite_df(self, core: FitCore, L: Any, *, y: Any = None) -> float | np.ndarray:
        """Satterthwaite df of the contrast(s) ``L`` at the fit ``core``.

        ``core`` must come from this model's latest :meth:`refit` /
        :meth:`refit_core` (the current response), or ``y`` must be the
        response ``core`` was fitted to (e.g. by another engine: the df are
        then this formula evaluated at that engine's estimates).  ``L``: a
        vector (one df) or a matrix with one contrast per row (one df each).
        lmerTest's method, see :mod:`nlpower.lmm.satterthwaite`.
        """
        if y is not None:
            self._set_y(self._check_y(y))
        Lm = np.asarray(L, dtype=float)
        p = self.blocks.p
        if Lm.ndim not in (1, 2) or Lm.shape[-1] != p:
            raise InputError(f"L must have {p} columns (one per fixed effect: "
                             f"{', '.join(self.spec.fixef_names)}); got shape {Lm.shape}.")
        if self._satt is None or self._satt[0] != id(core):
            self._satt = (id(core), self._satterthwaite_state(core))
        st = self._satt[1]
        if Lm.ndim == 1:
            return st.df(Lm)
        return np.array([st.df(row) for row in Lm])
