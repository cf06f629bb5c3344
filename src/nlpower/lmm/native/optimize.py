"""Minimise the profiled deviance over ``theta``: nlopt BOBYQA, as lme4.

lme4 1.1-31's default optimiser for ``lmer`` is ``nloptwrap``: NLopt's
``NLOPT_LN_BOBYQA`` with ``xtol_abs = 1e-8``, ``ftol_abs = 1e-8``,
``maxeval = 1e5`` (``environment(lme4:::nloptwrap)$defaultControl``).
After the optimiser, lme4's ``optimizeLmer`` (i) restarts once when a
parameter sits on its bound but the one-sided finite-difference gradient
there points inwards (``restart_edge``), and (ii) sets parameters within
``boundary.tol = 1e-5`` of their bound to the bound when that does not
increase the deviance (``check.boundary``).  Both are reproduced here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import nlopt
import numpy as np

DEFAULT_CONTROL: dict[str, float] = {
    "xtol_abs": 1e-8,
    "ftol_abs": 1e-8,
    "ftol_rel": 0.0,
    "maxeval": 100000,
    "boundary_tol": 1e-5,
    "restart_edge": 1,
    "initial_step": 0.0,   # 0: NLopt's default; > 0: BOBYQA's initial trust-region radius
}

_STATUS = {
    nlopt.SUCCESS: "NLOPT_SUCCESS: optimisation stopped successfully",
    nlopt.STOPVAL_REACHED: "NLOPT_STOPVAL_REACHED",
    nlopt.FTOL_REACHED: "NLOPT_FTOL_REACHED: optimisation stopped because ftol_abs was reached",
    nlopt.XTOL_REACHED: "NLOPT_XTOL_REACHED: optimisation stopped because xtol_abs was reached",
    nlopt.MAXEVAL_REACHED: "NLOPT_MAXEVAL_REACHED: stopped because maxeval was reached",
    nlopt.MAXTIME_REACHED: "NLOPT_MAXTIME_REACHED",
}


@dataclass(frozen=True, eq=False)
class OptResult:
    theta: np.ndarray
    fval: float
    n_evals: int
    converged: bool
    message: str


def bobyqa(fn: Callable[[np.ndarray], float], x0: np.ndarray, lower: np.ndarray,
           control: dict[str, float]) -> OptResult:
    """One BOBYQA run; never raises for a non-convergence (it is reported)."""
    k = x0.size
    count = [0]
    best_f = [math.inf]
    best_x = [x0.copy()]

    def f(x: np.ndarray, grad: np.ndarray) -> float:
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


def optimize_theta(fn: Callable[[np.ndarray], float], x0: np.ndarray, lower: np.ndarray,
                   control: dict[str, float] | None = None) -> OptResult:
    """BOBYQA plus lme4's ``restart_edge`` and ``check.boundary`` steps."""
    ctl = dict(DEFAULT_CONTROL)
    if control:
        ctl.update(control)
    res = bobyqa(fn, x0, lower, ctl)
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
    btol = float(ctl["boundary_tol"])
    if btol > 0:
        bdiff = theta - lower
        edge = finite_lower & (bdiff < btol) & (bdiff > 0)
        if edge.any():
            th = theta.copy()
            th[edge] = lower[edge]
            dev = fn(th)
            n_evals += 1
            if dev < fval:
                theta, fval = th, dev
    return OptResult(theta, fval, n_evals, res.converged, res.message)
