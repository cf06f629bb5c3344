"""The optimisers of the two stages and the derivatives at the optimum.

Two kinds of objective: with the analytic gradient of the Laplace deviance
(:mod:`.gradient`; canonical links, ``nAGQ <= 1``) stage 1 is L-BFGS-B over
``theta`` and stage 2 Newton's method on a Hessian from differences of the
gradient (updated by BFGS between steps); without it (probit, cloglog,
adaptive quadrature) the deviance alone is used: BOBYQA for stage 1,
Newton's method on a finite-difference Hessian (lme4's ``deriv12``
differences) for stage 2, BOBYQA when that fails.

Every objective here is ``fu(x, u_start) -> (value, gradient or None, mode)``:
PIRLS started at ``u_start`` (``None``: where the last evaluation left it).
The differences start PIRLS from modes extrapolated linearly from those
already found, so one PIRLS step usually converges.
"""

from __future__ import annotations

import math
from typing import Any

import nlopt
import numpy as np
from scipy import optimize

from ..mixed.fdiff import DERIV_STEP, value_gradient, value_hessian
from ..mixed.fdiff import gradient_hessian as _gradient_hessian

#: Newton's method stops when the predicted decrease g'H^{-1}g / 2 of the deviance is below
#: this (the step left is then ~1e-4 in the Hessian's norm: ~1e-5 SEs), or the step is below
#: NEWTON_XTOL (analytic gradient)
NEWTON_DECREMENT = 1e-8
NEWTON_XTOL = 1e-7
#: steps of Newton's method before the fallback (L-BFGS-B, or BOBYQA without a gradient)
NEWTON_MAXIT = 25


def fd_derivatives(fu: Any, x: np.ndarray, fx: float, u0: np.ndarray | None,
                   hessian: bool = True, h: float = DERIV_STEP
                   ) -> tuple[np.ndarray, np.ndarray | None, int]:
    """Gradient and Hessian of the deviance alone by finite differences: ``(g, H, evaluations)``.

    :func:`~nlpower.mixed.fdiff.value_hessian` with the forward off-diagonal
    rule (``2k + k(k-1)/2`` PIRLS solves instead of ``deriv12``'s ``2k^2``, a
    relative ``1e-4`` on the SEs); PIRLS starts from modes extrapolated from
    ``u0``, the mode at ``x``.
    """
    f = _warm(fu)
    if not hessian:
        g, _, _, _, n = value_gradient(f, x, h, mode=u0)
        return g, None, n
    return value_hessian(f, x, fx, h, cross="forward", mode=u0)


def gradient_hessian(fu: Any, x: np.ndarray, u0: np.ndarray | None, h: float = DERIV_STEP,
                     forward: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """The Hessian from differences of the analytic gradient: ``(H, evaluations)``.

    Central differences (``2k`` evaluations, ``O(h^2)``); forward differences
    from the gradient ``forward`` at ``x`` (``k``, ``O(h)``: enough to start
    Newton's method) -- :func:`~nlpower.mixed.fdiff.gradient_hessian`.
    """
    return _gradient_hessian(lambda t, s: fu(t, s)[1:], x, h, g=forward, mode=u0)


def _warm(fu: Any) -> Any:
    """``fu(x, u) -> (value, gradient, mode)`` as a warm objective ``(value, mode)``."""
    def f(t: np.ndarray, start: Any) -> tuple[float, Any]:
        v, _, u = fu(t, start)
        return v, u
    return f


def newton_step(x: np.ndarray, g: np.ndarray, H: np.ndarray, lower: np.ndarray,
                max_step: float = math.inf) -> tuple[np.ndarray, float] | None:
    """A projected Newton step: ``(x_new, predicted decrease)``, or ``None``.

    Elements at their bound (0 for a diagonal ``theta``) whose gradient
    pushes them out stay there; the step is solved on the others.
    """
    free = ~((lower == 0) & (x <= 1e-10) & (g > 0))
    if not np.any(free):
        return None
    try:
        c = np.linalg.cholesky(H[np.ix_(free, free)])
        step = np.linalg.solve(c.T, np.linalg.solve(c, g[free]))
    except np.linalg.LinAlgError:
        return None
    if not np.all(np.isfinite(step)) or np.max(np.abs(step)) > max_step:
        return None
    out = x.copy()
    out[free] -= step
    return np.maximum(out, lower), 0.5 * float(g[free] @ step)


def newton(fu: Any, x: np.ndarray, fx: float, g: np.ndarray, H: np.ndarray,
           lower: np.ndarray, maxit: int = NEWTON_MAXIT
           ) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, int, bool] | None:
    """Newton's method with step halving and BFGS updates: ``(x, f, g, H, evaluations, ok)``.

    ``ok``: the predicted decrease fell below ``NEWTON_DECREMENT`` or the
    step below ``NEWTON_XTOL``; not ok when the steps stall (the predicted
    decrease not falling 3x in three steps, e.g. towards a singular optimum,
    where L-BFGS does better), a step cannot be found or ``maxit`` is
    reached -- ``x`` is then the best point so far.  ``None`` when the
    Hessian at the start is not positive definite.
    """
    n = 0
    decs: list[float] = []
    for it in range(maxit):
        st = newton_step(x, g, H, lower)
        if st is None:
            return None if it == 0 else (x, fx, g, H, n, False)
        x2, dec = st
        if dec < NEWTON_DECREMENT or float(np.max(np.abs(x2 - x))) < NEWTON_XTOL:
            return x, fx, g, H, n, True
        decs.append(dec)
        if len(decs) > 3 and dec > decs[-4] / 3.0:
            return x, fx, g, H, n, False
        for _ in range(30):
            f2, g2, _ = fu(x2, None)
            n += 1
            if math.isfinite(f2) and f2 <= fx + 1e-12 * abs(fx):
                break
            x2 = x + 0.5 * (x2 - x)
        else:
            return x, fx, g, H, n, False
        s, yv = x2 - x, g2 - g                    # BFGS update of the Hessian
        Hs = H @ s
        if float(yv @ s) > 1e-12 and float(s @ Hs) > 1e-12:
            H = H + np.outer(yv, yv) / float(yv @ s) - np.outer(Hs, Hs) / float(s @ Hs)
        x, fx, g = x2, f2, g2
    return x, fx, g, H, n, False


def lbfgsb(fu: Any, x0: np.ndarray, lower: np.ndarray, gtol: float, maxeval: int
           ) -> tuple[np.ndarray, float, int, bool, str]:
    """L-BFGS-B with the analytic gradient (stage 1, and stage 2's fallback)."""
    count = [0]
    best: list[Any] = [math.inf, x0.copy()]

    def f(x: np.ndarray) -> tuple[float, np.ndarray]:
        count[0] += 1
        v, g, _ = fu(x, None)
        if not math.isfinite(v) or g is None:
            return 1e300, np.zeros_like(x)
        if v < best[0]:
            best[0], best[1] = v, x.copy()
        return float(v), g

    bounds = [(lo if math.isfinite(lo) else None, None) for lo in lower]
    res = optimize.minimize(f, np.maximum(x0, lower), jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"gtol": gtol, "ftol": 1e-15, "maxfun": maxeval,
                                     "maxcor": 20})
    ok = bool(res.success) or res.status == 2      # 2: no further progress (at rounding)
    msg = "converged" if ok else f"L-BFGS-B: {res.message}"
    return np.asarray(best[1], dtype=float), float(best[0]), count[0], ok, msg


def bobyqa(fn: Any, x0: np.ndarray, lower: np.ndarray, step: np.ndarray,
           ctl: dict[str, float]) -> tuple[np.ndarray, float, int, bool, str]:
    """NLopt BOBYQA (best point kept on round-off); never raises for non-convergence."""
    best_f, best_x = [math.inf], [x0.copy()]
    count = [0]

    def f(x: np.ndarray, grad: np.ndarray) -> float:
        count[0] += 1
        v = fn(x)
        if not math.isfinite(v):
            return 1e300
        if v < best_f[0]:
            best_f[0], best_x[0] = v, x.copy()
        return float(v)

    opt = nlopt.opt(nlopt.LN_BOBYQA, x0.size)
    opt.set_min_objective(f)
    opt.set_lower_bounds(lower)
    opt.set_xtol_abs(ctl["xtol_abs"])
    opt.set_ftol_abs(ctl["ftol_abs"])
    opt.set_maxeval(int(ctl["maxeval"]))
    opt.set_initial_step(step)
    converged, msg = True, "converged"
    try:
        opt.optimize(np.maximum(x0, lower))
        status = opt.last_optimize_result()
        if status == nlopt.MAXEVAL_REACHED:
            converged, msg = False, "maximum number of evaluations reached"
    except nlopt.RoundoffLimited:
        msg = "roundoff limited (best point kept)"
    except (RuntimeError, ValueError) as exc:
        converged, msg = False, f"NLopt failure: {exc}"
    return np.asarray(best_x[0], dtype=float), float(best_f[0]), count[0], converged, msg
