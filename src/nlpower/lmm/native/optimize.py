"""Minimise the profiled deviance over ``theta``: nlopt BOBYQA, as lme4.

lme4 1.1-31's default optimiser for ``lmer`` is ``nloptwrap``: NLopt's
``NLOPT_LN_BOBYQA`` with ``xtol_abs = 1e-8``, ``ftol_abs = 1e-8``,
``maxeval = 1e5`` (``environment(lme4:::nloptwrap)$defaultControl``).
After the optimiser, lme4's ``optimizeLmer`` (i) restarts once when a
parameter sits on its bound but the one-sided finite-difference gradient
there points inwards (``restart_edge``), and (ii) sets parameters within
``boundary.tol = 1e-5`` of their bound to the bound when that does not
increase the deviance (``check.boundary``).  Both are reproduced here.

With many parameters and the analytic gradient (``descent_first``), the
optimiser is gradient-based: a quasi-Newton descent on the log scale of the
diagonal, then L-BFGS-B under the bounds to convergence (or Newton steps,
``newton_finish``); BOBYQA (and ``restart_edge``) only where that stalls with
a projected gradient above ``GRADIENT_GTOL``.  Across the validation corpus
this reaches the deviance of the BOBYQA path (within 1e-8) with 40-90 %
fewer calls.

On top of lme4's steps (``robust=1``, the default), two safeguards make the
native optimum at least as good as lme4's whatever the level order, coding or
response scale (checked by ``benchmarks/validation_corpus.py``):

* **Newton steps or polish**: when the projected gradient at BOBYQA's
  optimum exceeds ``POLISH_GTOL``, :func:`newton` steps (small interior
  problems with a positive definite Hessian from differences of the analytic
  gradient) or else :func:`polish`, L-BFGS-B under the bounds with the
  gradient ``fg`` -- analytic (:mod:`.gradient`) or central differences
  (step ``POLISH_STEP``; one-sided at a bound).  BOBYQA can stop short of
  the optimum on the flat ridges of ``(f || g)`` terms (intercept and
  per-level variances trade off); the polish stops after two iterations
  that each gain less than ``POLISH_FTOL``.
* **unfold restart**: when a diagonal element of a *multi-column* term's
  ``Lambda`` is at its bound, the fit may sit on a spurious optimum of the
  Cholesky parametrisation (a zero pivot freezes the columns after it).  A
  quasi-Newton descent restarts from ``chol(Lambda Lambda' + delta I)`` and
  the better optimum is kept; other fits pay nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import nlopt
import numpy as np

from ...mixed.fdiff import cold, value_gradient
from ..checkconv import DERIV_STEP, check_hessian, hessian_from_gradient
from .stages import StageCounter, ValueGrad

DEFAULT_CONTROL: dict[str, float] = {
    "xtol_abs": 1e-8,
    "ftol_abs": 1e-8,
    "ftol_rel": 0.0,
    "maxeval": 100000,
    "boundary_tol": 1e-5,
    "restart_edge": 1,
    "initial_step": 0.0,   # 0: NLopt's default; > 0: BOBYQA's initial trust-region radius
    "robust": 1,           # 1: polish + unfold restarts (see the module docstring); 0: lme4 only
    "polish_gtol": 1e-3,   # polish when the projected gradient exceeds this (POLISH_GTOL)
}

POLISH_STEP = 1e-6      # central-difference step of the polish gradient (theta is O(1))
POLISH_GTOL = 1e-3      # polish when the projected gradient exceeds this (fits)
REPLICATE_POLISH_GTOL = 2e-3   # power replicates: only past lme4's gradient tolerance
NEWTON_MAX_K = 12       # Newton steps (instead of the polish) up to this many parameters
NEWTON_ITER = 3         # Newton steps at most
NEWTON_MAX_GAIN = 1e-2  # ... only where the predicted gain is below this (near the optimum)
NEWTON_GAIN_TOL = 1e-6  # no further step after one that was predicted to gain less
NEWTON_SKIP_GAIN = 1e-8  # no first step when predicted to gain less (lme4's ftol_abs)
UNFOLD_DELTA = 0.05     # relative ridge added to a singular term's Lambda Lambda'
UNFOLD_TOL = 1e-4       # a diagonal theta below this counts as on the bound (lme4's isSingular)
MAX_ROUNDS = 3          # polish/unfold rounds at most (a new round only after an unfold gain)
POLISH_FTOL = 1e-9      # polish stops after two iterations that each gain less (deviance units)
POLISH_MAXITER = 100    # quasi-Newton iterations at most (each costs one gradient)
POLISH_MAXCOR = 30      # L-BFGS-B curvature pairs kept (scipy's default 10; the (f || g) ridges
                        # of 20-60 parameters converge in fewer iterations with more)
UNFOLD_MAXITER = 1000   # ... from an unfolded start (a descent from a new point)
DESCENT_STEP = 0.01     # BOBYQA's initial trust-region radius after a first descent
DESCENT_MAXITER = 60    # the first descent only brings BOBYQA near: at most this many
DESCENT_FTOL = 1e-6     # iterations, stopping after two that each gain less than this
DESCENT_ZERO = 0.05     # ... or once a diagonal theta is below this (L-BFGS-B takes it to 0)
GRADIENT_MAXITER = 200  # after the descent: L-BFGS-B under the bounds, at most this many
GRADIENT_GTOL = 1e-2    # ... iterations; BOBYQA runs when its projected gradient exceeds this

_STATUS = {nlopt.SUCCESS: "NLOPT_SUCCESS: optimisation stopped successfully",
           nlopt.STOPVAL_REACHED: "NLOPT_STOPVAL_REACHED",
           nlopt.FTOL_REACHED: "NLOPT_FTOL_REACHED: optimisation stopped because ftol_abs was reached",
           nlopt.XTOL_REACHED: "NLOPT_XTOL_REACHED: optimisation stopped because xtol_abs was reached",
           nlopt.MAXEVAL_REACHED: "NLOPT_MAXEVAL_REACHED: stopped because maxeval was reached",
           nlopt.MAXTIME_REACHED: "NLOPT_MAXTIME_REACHED"}




@dataclass(frozen=True, eq=False)
class OptResult:
    theta: np.ndarray
    fval: float
    n_evals: int
    converged: bool
    message: str
    steps: tuple[str, ...] = ()          # what ran after BOBYQA, with the deviance it reached
    # the last Newton step's (theta, gradient there, where the Hessian was computed, Hessian)
    derivatives: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    # per stage, in order: (name, deviance evaluations, gradient calls, seconds)
    stages: tuple[tuple[str, int, int, float], ...] = ()
    gradient: np.ndarray | None = None    # at theta, when the optimiser computed it there


def bobyqa(fn: Callable[[np.ndarray], float], x0: np.ndarray, lower: np.ndarray,
           control: dict[str, float], f0: float | None = None) -> OptResult:
    """One BOBYQA run; never raises for a non-convergence (it is reported).

    ``f0``: ``fn(x0)``, if known: BOBYQA's first evaluation, at ``x0``, returns
    it (the same value, so the same path, one evaluation fewer).
    """
    k = x0.size
    count = [0]
    best_f = [math.inf]
    best_x = [x0.copy()]
    known = [] if f0 is None or not math.isfinite(f0) else [(np.array(x0, dtype=float), f0)]

    def f(x: np.ndarray, grad: np.ndarray) -> float:
        if known:
            (xk, fk), = known
            known.clear()                  # only BOBYQA's first point can be x0
            if np.array_equal(x, xk):
                v = fk
                if v < best_f[0]:
                    best_f[0] = v
                    best_x[0] = x.copy()
                return v
        count[0] += 1
        v = fn(x)
        if not math.isfinite(v):
            v = 1e300
        if v < best_f[0]:
            best_f[0] = v
            best_x[0] = x.copy()
        return v

    opt = nlopt.opt(nlopt.LN_BOBYQA, k)
    opt.set_min_objective(f)
    lo = np.where(np.isfinite(lower), lower, -np.inf)
    opt.set_lower_bounds(lo)
    opt.set_xtol_abs(float(control["xtol_abs"]))
    opt.set_ftol_abs(float(control["ftol_abs"]))
    if control.get("ftol_rel", 0.0):
        opt.set_ftol_rel(float(control["ftol_rel"]))
    opt.set_maxeval(int(control["maxeval"]))
    x0 = np.maximum(np.asarray(x0, dtype=float), lo)
    step = float(control.get("initial_step", 0.0))
    if step > 0:
        opt.set_initial_step(np.full(k, step))
    try:
        x = opt.optimize(x0)
        status = opt.last_optimize_result()
        fval = opt.last_optimum_value()
        msg = _STATUS.get(status, f"NLopt status {status}")
        converged = status in (nlopt.SUCCESS, nlopt.FTOL_REACHED, nlopt.XTOL_REACHED,
                               nlopt.STOPVAL_REACHED)
    except nlopt.RoundoffLimited:
        x, fval = best_x[0], best_f[0]
        msg = "NLOPT_ROUNDOFF_LIMITED: roundoff limited progress (best point kept)"
        converged = True
    except (RuntimeError, ValueError) as exc:
        x, fval = best_x[0], best_f[0]
        msg = f"NLopt failure: {exc}"
        converged = False
    if best_f[0] < fval:
        x, fval = best_x[0], best_f[0]
    return OptResult(np.asarray(x, dtype=float), float(fval), count[0], converged, msg)


def _fd_gradient(fn: Callable[[np.ndarray], float], x: np.ndarray, fx: float,
                 lower: np.ndarray, h: float = POLISH_STEP) -> tuple[np.ndarray, int]:
    """Central differences; forward differences where ``x - h`` would cross the bound."""
    g, _, _, _, n = value_gradient(cold(fn), x, h, fx=fx, lower=lower)
    return g, n


def projected_gradient(g: np.ndarray, x: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """The gradient with components that push against an active bound set to 0 (KKT)."""
    pg = g.copy()
    pg[(x <= lower) & (g > 0)] = 0.0
    return pg


def fd_value_and_gradient(fn: Callable[[np.ndarray], float], lower: np.ndarray) -> ValueGrad:
    """``x -> (f(x), gradient, evaluations)`` by :func:`_fd_gradient` (no analytic gradient)."""

    def fg(x: np.ndarray) -> tuple[float, np.ndarray, int]:
        fx = fn(x)
        if not math.isfinite(fx):
            return fx, np.zeros_like(x), 1
        g, n = _fd_gradient(fn, x, fx, lower)
        return fx, g, 1 + n

    return fg


def polish(fg: ValueGrad, x0: np.ndarray, f0: float, lower: np.ndarray,
           maxiter: int = POLISH_MAXITER, ftol: float = POLISH_FTOL,
           stop: Callable[[np.ndarray], bool] | None = None) -> tuple[np.ndarray, float, int]:
    """L-BFGS-B under the lower bounds from ``fg``; best point kept; ``stop(best x)``: stop."""
    count = [0]
    best_x = [x0.copy()]
    best_f = [f0]
    lo = np.maximum(lower, -1e300)

    def fgrad(x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.maximum(x, lo)
        fx, g, n = fg(x)
        count[0] += n
        if not math.isfinite(fx):
            return 1e300, np.zeros_like(x)
        if fx < best_f[0]:
            best_x[0], best_f[0] = x.copy(), fx
        return fx, g

    bounds = [(float(v), None) if math.isfinite(v) else (None, None) for v in lower]
    last = [f0]
    stalls = [0]

    def stop_when_stalled(xk: np.ndarray) -> None:
        # L-BFGS-B's own ftol is relative to |f|; with a deviance of 1e5 (InstEval) it sits
        # at rounding level and the iterations crawl on a noisy gradient: stop after two
        # iterations that each gained less than POLISH_FTOL deviance units
        stalls[0] = stalls[0] + 1 if last[0] - best_f[0] < ftol else 0
        last[0] = best_f[0]
        if stalls[0] >= 2 or (stop is not None and stop(best_x[0])):
            raise StopIteration

    from scipy.optimize import minimize  # only large fits polish: keep the import off a first fit

    try:
        minimize(fgrad, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                 callback=stop_when_stalled,
                 options={"ftol": ftol / max(abs(f0), 1.0), "gtol": 1e-7,
                          "maxiter": maxiter, "maxcor": POLISH_MAXCOR})
    except (ValueError, FloatingPointError):       # pragma: no cover - numerical failure
        pass
    return best_x[0], float(best_f[0]), count[0]


def log_descent(fg: ValueGrad, x0: np.ndarray, f0: float, lower: np.ndarray,
                zero: np.ndarray | None = None) -> tuple[np.ndarray, float, int]:
    """A quasi-Newton descent with the bounded (diagonal) parameters on the log scale.

    ``theta_i = exp(phi_i)`` where ``lower_i = 0``: no bounds, and a gradient
    that vanishes towards 0, so on the flat ridge of ``(f || g)`` terms the
    descent does not run into a zero variance that BOBYQA from lme4's start
    would not reach (a spurious "singular" fit).  A variance that is really 0
    only halves per iteration on the log scale: the descent stops once an
    element of the mask ``zero`` (scalar terms' SDs: not a pivot of a
    multi-column factor, behind which L-BFGS-B crawls) is below
    ``DESCENT_ZERO``, and L-BFGS-B under the bounds takes it to 0.  Returns
    ``(theta, f, evaluations)``.
    """
    pos = lower == 0
    if np.any(x0[pos] <= 0):
        return x0, f0, 0
    free = np.full(x0.size, -np.inf)

    def to_theta(phi: np.ndarray) -> np.ndarray:
        th = phi.copy()
        th[pos] = np.exp(np.minimum(phi[pos], 50.0))
        return th

    def fg_log(phi: np.ndarray) -> tuple[float, np.ndarray, int]:
        th = to_theta(phi)
        fx, g, n = fg(th)
        g = g.copy()
        g[pos] *= th[pos]
        return fx, g, n

    phi0 = x0.copy()
    phi0[pos] = np.log(x0[pos])
    z = pos if zero is None else pos & zero
    low = math.log(DESCENT_ZERO)
    phi, fx, n = polish(fg_log, phi0, f0, free, DESCENT_MAXITER, DESCENT_FTOL,
                        lambda phi: bool(np.any(phi[z] < low)) if zero is not None else False)
    return to_theta(phi), fx, n


def newton(fg: ValueGrad, x: np.ndarray, fx: float, g: np.ndarray, lower: np.ndarray,
           finish: bool = False) -> tuple[bool, np.ndarray, float, int,
                      tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None]:
    """Newton steps from an interior optimum of a well-conditioned problem.

    At an interior point of a small problem (at most ``NEWTON_MAX_K``
    parameters, every diagonal element off its bound) with a positive definite
    Hessian: at most ``NEWTON_ITER`` steps (each ``k + 1`` gradient calls, the
    Hessian by forward differences).  ``done`` is False -- and the polish runs
    instead -- when the problem is larger, on a bound, not positive definite
    (an ``(f || g)`` ridge) or the predicted gain exceeds ``NEWTON_MAX_GAIN``.
    A first step predicted to gain less than ``NEWTON_SKIP_GAIN`` is not taken
    (``k`` calls), unless ``finish`` (Newton replaces L-BFGS-B; the Hessian is
    then :func:`~nlpower.lmm.checkconv.check_hessian`'s).  Also returns ``(x,
    gradient at x, where the Hessian was computed, Hessian)`` for the check.
    """
    n = 0
    if x.size > NEWTON_MAX_K or np.any(x - lower < UNFOLD_TOL):
        return False, x, fx, n, None
    derivs = None
    for _ in range(NEWTON_ITER):
        if finish:
            H, m = check_hessian(lambda t: fg(t)[1], x, g)
        else:
            H, m = hessian_from_gradient(lambda t: fg(t)[1], x, DERIV_STEP, g), x.size
        n += m
        xH = x.copy()
        try:
            R = np.linalg.cholesky(H)
            step = np.linalg.solve(R.T, np.linalg.solve(R, g))
        except np.linalg.LinAlgError:
            return False, x, fx, n, None
        gain = 0.5 * float(g @ step)
        if not 0.0 <= gain <= NEWTON_MAX_GAIN:
            return False, x, fx, n, None
        if gain < NEWTON_SKIP_GAIN and derivs is None and not finish:
            # the optimiser's point is within BOBYQA's ftol_abs: no step (InstEval: 5e-10)
            derivs = (x.copy(), g, xH, H)
            break
        x2 = np.maximum(x - step, lower)
        f2, g2, m = fg(x2)
        n += m
        if not f2 < fx:
            derivs = (x.copy(), g, xH, H)
            break
        x, fx, g = x2, f2, g2
        derivs = (x.copy(), g, xH, H)
        if gain < NEWTON_GAIN_TOL:
            break
    return True, x, fx, n, derivs


def _trailing_zero(L: np.ndarray) -> bool:
    """Whether ``L``'s zero pivots are its last columns, zero throughout (within ``UNFOLD_TOL``).

    Then the Cholesky parametrisation is open at ``L``: every covariance near
    ``L L'`` has a factor near ``L`` (the leading pivots are positive, and the
    trailing Schur complement, 0 at ``L``, has a small factor when it is small),
    so an optimum in ``theta`` is one in the covariance and no column's loading
    is frozen behind a zero pivot: nothing for the unfold restart to find.
    """
    piv = np.flatnonzero(np.diag(L) < UNFOLD_TOL)
    t = int(piv[0])
    return bool(np.all(np.diag(L)[t:] < UNFOLD_TOL) and np.all(np.abs(L[t:, t:]) < UNFOLD_TOL))


def unfold(theta: np.ndarray, terms: tuple[tuple[int, int], ...], delta: float) -> np.ndarray | None:
    """``theta`` of ``chol(Lambda Lambda' + delta * s I)`` for every singular multi-column term.

    ``terms``: ``(offset, q)`` of each term's lower triangle in ``theta``
    (column-major).  ``s`` is the term's mean relative variance (at least
    0.01).  ``None`` when no multi-column term is singular, or when each
    singular one has only zero trailing columns (:func:`_trailing_zero`).
    """
    out = theta.copy()
    changed = False
    for off, q in terms:
        if q < 2:
            continue
        L = np.zeros((q, q))
        idx = [(i, j) for j in range(q) for i in range(j, q)]
        for m, (i, j) in enumerate(idx):
            L[i, j] = theta[off + m]
        if np.min(np.diag(L)) >= UNFOLD_TOL or _trailing_zero(L):
            continue
        S = L @ L.T
        s = max(float(np.trace(S)) / q, 0.01)
        L2 = np.linalg.cholesky(S + delta * s * np.eye(q))
        for m, (i, j) in enumerate(idx):
            out[off + m] = L2[i, j]
        changed = True
    return out if changed else None


def optimize_theta(fn: Callable[[np.ndarray], float], x0: np.ndarray, lower: np.ndarray,
                   control: dict[str, float] | None = None, *,
                   terms: tuple[tuple[int, int], ...] = (),
                   fg: ValueGrad | None = None, descent_first: bool = False,
                   gradient_path: bool = True, f0: float | None = None,
                   newton_finish: bool = False, descent_zero: np.ndarray | None = None
                   ) -> OptResult:
    """BOBYQA plus lme4's ``restart_edge`` and ``check.boundary`` steps, then the safeguards.

    ``terms``: ``(offset, q)`` of each random-effects term's slice of
    ``theta`` (for the unfold restart; without it only the polish runs).
    ``fg``: ``x -> (f, gradient, evaluations)``, the analytic gradient of
    :mod:`.gradient` (then Newton steps may replace the polish); default:
    central differences of ``fn``.  ``descent_first`` (with ``fg``): a
    quasi-Newton descent from ``x0`` first, and BOBYQA from where it stops
    with the initial trust-region radius ``DESCENT_STEP`` (unless the control
    sets one) -- with many parameters BOBYQA needs hundreds of evaluations to
    travel from lme4's start, the gradient a few dozen calls.  With
    ``gradient_path`` (the default) the descent is followed by L-BFGS-B
    under the bounds (:func:`polish`, at most ``GRADIENT_MAXITER``
    iterations) and BOBYQA runs only when the projected gradient there still
    exceeds ``GRADIENT_GTOL`` (then ``OptResult.message`` is NLopt's; else it
    says that BOBYQA was not needed).  The safeguards follow either way.
    ``OptResult.stages`` counts evaluations and gradient calls per stage.
    ``f0``: ``fn(x0)`` when the caller has evaluated it (the start's
    criterion); neither the descent nor BOBYQA evaluates it again.
    ``newton_finish``: where the descent stops interior and near (gradient
    within ``GRADIENT_GTOL``, at most ``NEWTON_MAX_K`` parameters) Newton steps
    (:func:`newton`, ``finish``) replace L-BFGS-B; their Hessian is the check's.
    """
    analytic = fg is not None
    sc = StageCounter(fn)
    fn = sc.fn
    fg = sc.counting(fg if fg is not None else fd_value_and_gradient(fn, lower))
    ctl = dict(DEFAULT_CONTROL)
    if control:
        ctl.update(control)
    steps: list[str] = []
    n_evals = 0
    res: OptResult | None = None
    if descent_first and analytic:
        x0, res, n_evals = _descent_stage(fg, sc, x0, f0, lower, ctl, steps, gradient_path,
                                          newton_finish, descent_zero)
        f0 = None                           # x0 is the descent's point now
    if res is None:
        res = _lme4_steps(fn, x0, lower, ctl, f0)
        steps.append(f"bobyqa {res.fval:.10g} ({res.n_evals} evaluations)")
        sc.mark("bobyqa")
    theta, fval = res.theta, res.fval
    n_evals += res.n_evals
    derivs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
    if ctl.get("robust", 1):
        for _ in range(MAX_ROUNDS):
            _, g, n = fg(theta)
            n_evals += n
            sc.mark("gradient")
            if np.max(np.abs(projected_gradient(g, theta, lower))) > ctl["polish_gtol"]:
                done, kind, n = False, "polish", 0
                if analytic:                # a Hessian from 2k gradients (not 4k^2 values)
                    done, th2, f2, n, derivs = newton(fg, theta, fval, g, lower, newton_finish)
                    kind = "newton"
                if not done:
                    th2, f2, n2 = polish(fg, theta, fval, lower)
                    n, kind = n + n2, "polish"
                n_evals += n
                steps.append(f"{kind} {f2:.10g} ({n} evaluations)")
                sc.mark(kind)
                if f2 < fval:
                    theta, fval = th2, f2
            start = unfold(theta, terms, UNFOLD_DELTA)
            if start is None:
                break
            # a descent from the unfolded start: every pivot is away from 0 there, so the
            # gradient is analytic and a quasi-Newton run is far cheaper than BOBYQA
            f_start = fn(start)
            th2, f2, n = polish(fg, start, f_start, lower, UNFOLD_MAXITER)
            n_evals += n + 1
            steps.append(f"unfold {f2:.10g} ({n + 1} evaluations)")
            sc.mark("unfold")
            if not f2 < fval - 1e-9:
                break
            theta, fval = th2, f2
    theta, fval, n = _check_boundary(fn, theta, fval, lower, ctl)
    n_evals += n
    sc.mark("check_boundary")
    stages = tuple(st for st in sc.stages if st[1] or st[2])
    return OptResult(theta, fval, n_evals, res.converged, res.message, tuple(steps), derivs,
                     stages, sc.gradient_at(theta))


def _descent_stage(fg: ValueGrad, sc: StageCounter, x0: np.ndarray, f0: float | None,
                   lower: np.ndarray, ctl: dict[str, float], steps: list[str],
                   gradient_path: bool, newton_finish: bool, descent_zero: np.ndarray | None
                   ) -> tuple[np.ndarray, OptResult | None, int]:
    """:func:`optimize_theta`'s descent and its finish: ``(x, result if converged, evaluations)``.

    Sets ``ctl``'s initial BOBYQA step and, for a Newton finish, its polish
    tolerance; appends to ``steps``.
    """
    fn = sc.fn
    n_evals = 0
    res: OptResult | None = None
    known = f0 is not None
    x0, f_d, n = log_descent(fg, x0, f0 if f0 is not None else fn(x0), lower, descent_zero)
    n_evals += n + (not known)
    steps.append(f"descent {f_d:.10g} ({n + (not known)} evaluations)")
    sc.mark("descent")
    if not ctl.get("initial_step"):
        ctl["initial_step"] = DESCENT_STEP
    g = sc.gradient_at(x0)
    if newton_finish and g is not None and x0.size <= NEWTON_MAX_K and np.all(
            x0 - lower >= UNFOLD_TOL) and np.max(np.abs(g)) <= GRADIENT_GTOL:
        res = OptResult(x0, f_d, 0, True, "descent with the analytic gradient converged "
                        "(gradient within GRADIENT_GTOL; Newton steps; no BOBYQA)")
        ctl["polish_gtol"] = 0.0                # the Newton steps below finish
    elif gradient_path:
        # finish under the bounds with the gradient; BOBYQA only where that stalls
        x0, f_d, n = polish(fg, x0, f_d, lower, GRADIENT_MAXITER)
        n_evals += n
        steps.append(f"lbfgsb {f_d:.10g} ({n} evaluations)")
        sc.mark("lbfgsb")
        _, g, n = fg(x0)
        n_evals += n
        if np.max(np.abs(projected_gradient(g, x0, lower))) <= GRADIENT_GTOL:
            res = OptResult(x0, f_d, 0, True, "L-BFGS-B with the analytic gradient converged "
                            "(projected gradient within GRADIENT_GTOL; no BOBYQA)")
    return x0, res, n_evals


def _lme4_steps(fn: Callable[[np.ndarray], float], x0: np.ndarray, lower: np.ndarray,
                ctl: dict[str, float], f0: float | None = None) -> OptResult:
    """BOBYQA and lme4's ``restart_edge`` (``f0``: ``fn(x0)``, if known)."""
    res = bobyqa(fn, x0, lower, ctl, f0)
    n_evals = res.n_evals
    theta, fval = res.theta, res.fval
    finite_lower = np.isfinite(lower)
    if ctl["restart_edge"]:
        on_bound = np.flatnonzero(finite_lower & (theta == lower))
        if on_bound.size:
            btol = 1e-5
            grads = []
            for i in on_bound:
                th = theta.copy()
                th[i] = lower[i] + btol
                grads.append((fn(th) - fval) / btol)
                n_evals += 1
            if min(grads) < 0:
                res2 = bobyqa(fn, theta, lower, ctl)
                n_evals += res2.n_evals
                if res2.fval <= fval:
                    res = res2
                    theta, fval = res2.theta, res2.fval
    return OptResult(theta, fval, n_evals, res.converged, res.message)


def _check_boundary(fn: Callable[[np.ndarray], float], theta: np.ndarray, fval: float,
                    lower: np.ndarray, ctl: dict[str, float]) -> tuple[np.ndarray, float, int]:
    """lme4's ``check.boundary``: snap parameters within ``boundary_tol`` of 0 when no worse."""
    btol = float(ctl["boundary_tol"])
    if btol > 0:
        bdiff = theta - lower
        edge = np.isfinite(lower) & (bdiff < btol) & (bdiff > 0)
        if edge.any():
            th = theta.copy()
            th[edge] = lower[edge]
            dev = fn(th)
            if dev < fval:
                return th, dev, 1
            return theta, fval, 1
    return theta, fval, 0
