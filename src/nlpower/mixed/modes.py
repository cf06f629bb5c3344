"""Conditional modes: one Newton loop with step halving for every family's inner problem.

For fixed parameters the conditional modes minimise a penalised objective
(GLMM: the penalised deviance ``-2 log p(y | u) + ||u||^2``, PIRLS;
cumulative links: ``-h(u)``, minus the penalised log-likelihood).  Each
iteration asks the family side for a Newton direction at the current point
(which factors the weighted ``Lambda'Z'WZ Lambda + I``,
:mod:`nlpower.mixed.blocked`), then halves the step until the objective does
not rise by more than a relative ``slack`` (rounding), and asks whether the
modes have converged.  The response-specific parts -- working weights,
derivatives of the conditional log-likelihood, the convergence rule -- are
the callables :func:`newton_modes` takes; the loop holds no state.

When the objective is a sum of independent per-level terms (one scalar
random-effect term: ``H`` diagonal, each level its own one-dimensional
problem), :func:`level_newton` halves each level's step on its own, and
runs many parameter points at once (the modes an ``(m, L)`` array).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

__all__ = ["Direction", "LevelRun", "NewtonRun", "level_newton", "newton_modes"]

Status = Literal["converged", "stalled", "failed", "maxit"]


@dataclass(frozen=True, eq=False)
class Direction:
    """A Newton direction ``delta``; ``done``: converged at the point already (no step).

    ``payload``: what the family side computed on the way (e.g. the factor),
    handed back in :attr:`NewtonRun.payload` when ``done``.
    """

    delta: np.ndarray
    done: bool = False
    payload: Any = None


@dataclass(frozen=True, eq=False)
class NewtonRun:
    """The end of a Newton run: the point, its objective and the family's state there.

    ``status``: ``"converged"`` (by the direction's ``done`` or the
    ``converged`` rule), ``"stalled"`` (no step decreased the objective: at
    the mode to rounding), ``"failed"`` (no direction: a factor failed or was
    not finite) or ``"maxit"``.
    """

    x: np.ndarray
    value: float
    state: Any
    iterations: int
    status: Status
    payload: Any = None


def newton_modes(x0: np.ndarray, value0: float, state0: Any,
                 direction: Callable[[np.ndarray, Any], Direction | None],
                 evaluate: Callable[[np.ndarray], tuple[float, Any]], *,
                 converged: Callable[[float, float, float, np.ndarray, np.ndarray], bool] | None = None,
                 maxit: int, max_halvings: int, slack: float) -> NewtonRun:
    """Minimise by Newton steps with step halving.

    Parameters
    ----------
    x0, value0, state0 : the start, its objective and the family's state there
        (what ``evaluate(x0)`` returns).
    direction : ``(x, state) -> Direction`` (``None``: no direction, the run fails).
    evaluate : ``x -> (objective, state)``; a non-finite objective rejects the step.
    converged : ``(old, new, step, delta, x_new) -> bool``, asked after each accepted step.
    maxit, max_halvings : iterations, and halvings of one step before the run stalls.
    slack : a step is accepted when the objective is at most ``old + slack |old|``.
    """
    x, f, state = x0, value0, state0
    it = 0
    for it in range(1, maxit + 1):  # noqa: B007  (it: reported in the run)
        d = direction(x, state)
        if d is None:
            return NewtonRun(x, f, state, it, "failed")
        if d.done:
            return NewtonRun(x, f, state, it, "converged", d.payload)
        step = 1.0
        for _ in range(max_halvings):
            xc = x + step * d.delta
            fc, sc = evaluate(xc)
            if math.isfinite(fc) and fc <= f + slack * abs(f):
                break
            step *= 0.5
        else:
            return NewtonRun(x, f, state, it, "stalled")
        done = converged is not None and converged(f, fc, step, d.delta, xc)
        x, f, state = xc, fc, sc
        if done:
            return NewtonRun(x, f, state, it, "converged")
    return NewtonRun(x, f, state, it, "maxit")


class LevelRun(NamedTuple):
    """The end of a per-level Newton run (:func:`level_newton`).

    ``x``, ``values``: the modes and the levels' objectives (the start's
    shape); ``state``: the family's state there; ``status`` as
    :class:`NewtonRun`'s (``"converged"`` only when every point converged).
    A named tuple: it is made once per likelihood evaluation of a tiny fit.
    """

    x: np.ndarray
    values: np.ndarray
    state: Any
    iterations: int
    status: Status


def level_newton(x0: np.ndarray, values0: np.ndarray, state0: Any,
                 direction: Callable[[np.ndarray, Any], tuple[np.ndarray, Any] | None],
                 evaluate: Callable[[np.ndarray], tuple[np.ndarray, Any]], *,
                 maxit: int, max_halvings: int, slack: float) -> LevelRun:
    """Minimise a sum of per-level objectives by Newton steps halved level by level.

    Parameters
    ----------
    x0, values0, state0 : the start (``(L,)``, or ``(m, L)`` for ``m``
        points), its per-level objectives (same shape) and the family's
        state there (what ``evaluate(x0)`` returns).
    direction : ``(x, state) -> (delta, done)``: the Newton step of every
        level and whether the point is converged already (a Python bool, or a
        boolean array, one per point; a converged point does not move); ``None``: no direction (a
        derivative not finite), the run fails.
    evaluate : ``x -> (values, state)``.
    maxit, max_halvings : iterations, and halvings of one level's step before the run stalls.
    slack : a level's step is accepted when its objective is not above
        ``old + slack |old|`` (a NaN objective is not above it).

    Examples
    --------
    Two independent quadratics ``(x_l - c_l)^2``, one Newton step each:

    >>> import numpy as np
    >>> c = np.array([1.0, -2.0])
    >>> ev = lambda x: ((x - c) ** 2, None)
    >>> run = level_newton(np.zeros(2), ev(np.zeros(2))[0], None,
    ...                    lambda x, s: (c - x, bool(np.all(x == c))), ev,
    ...                    maxit=5, max_halvings=10, slack=0.0)
    >>> run.x.tolist(), run.status
    ([1.0, -2.0], 'converged')
    """
    x, f, state = x0, values0, state0
    it = 0
    for it in range(1, maxit + 1):  # noqa: B007  (it: reported in the run)
        d = direction(x, state)
        if d is None:
            return LevelRun(x, f, state, it, "failed")
        delta, done = d
        if done is True:
            return LevelRun(x, f, state, it, "converged")
        if done is not False:                        # one per point (a method call: the
            if done.all():                           # loop runs per likelihood evaluation)
                return LevelRun(x, f, state, it, "converged")
            delta[done] = 0.0
        bound = f + slack * np.abs(f)
        xn = x + delta                               # the full step first
        step: np.ndarray | None = None
        for _ in range(max_halvings):
            fn, sn = evaluate(xn)
            bad = fn > bound
            if not bad.any():
                break
            step = np.where(bad, 0.5, 1.0) if step is None else np.where(bad, 0.5 * step, step)
            xn = x + step * delta
        else:
            return LevelRun(x, f, state, it, "stalled")
        x, f, state = xn, fn, sn
    return LevelRun(x, f, state, it, "maxit")
