"""The Laplace and adaptive Gauss-Hermite likelihood of a cumulative link mixed model.

For fixed parameters the conditional modes ``u*`` maximise the penalised
log-likelihood ``h(u) = sum_i log p_i(u) - |u|^2 / 2`` (concave: the latent
densities are log-concave), found by Newton steps with step halving; each
step factors ``H = A' W A + I`` (:meth:`~.structure.ReStructure.factor`), in the
Newton loop every family shares (:func:`nlpower.mixed.modes.newton_modes`).
The Laplace log-likelihood is ``h(u*) - log det(H) / 2`` (``ordinal``'s
``getNLA``: the ``2 pi`` of the prior and of the Gaussian integral cancel).

With one scalar random-effect term the integral factorises over levels and
``nAGQ > 1`` evaluates each one-dimensional integral by adaptive
Gauss-Hermite quadrature centred at the mode with scale ``H_ll^{-1/2}``
(``ordinal``'s ``nAGQ > 1``; ``nAGQ = 1`` is the Laplace approximation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lmm.family import Link
from ..mixed.blocked import Factor
from ..mixed.modes import Direction, newton_modes
from .cumulative import CumulativeParts, cumulative_parts
from .structure import ReStructure

__all__ = ["InnerResult", "conditional_modes"]


@dataclass(frozen=True, eq=False)
class InnerResult:
    u: np.ndarray
    h: float                   # penalised log-likelihood at u
    logdet: float              # log det H at u
    factor: Factor
    parts: CumulativeParts
    converged: bool
    iterations: int


def _chord_steps(rs: ReStructure, link: Link, up0: np.ndarray, lo0: np.ndarray, u: np.ndarray,
                 parts: CumulativeParts, h: float, fac0: Any, tol: float, maxit: int = 12
                 ) -> tuple[np.ndarray, CumulativeParts, float]:
    """Newton steps with the factor ``fac0`` of a nearby point's ``H`` (no factorisation).

    They converge linearly, at the rate of the relative change of ``H``
    (tiny within a line search or a Hessian's differences); they stop at the
    decrement ``tol``, when a step does not raise ``h``, or when the decrement
    falls by less than 10x a step (then Newton proper takes over).
    """
    prev = math.inf
    for _ in range(maxit):
        g = rs.At(parts.d1) - u
        du = fac0.solve(g)
        dec = float(g @ du)
        if not np.isfinite(dec) or dec < tol or dec > 0.1 * prev:
            break
        prev = dec
        un = u + du
        ea = rs.eta(un)
        pn = cumulative_parts(link, up0 - ea, lo0 - ea)
        hn = float(np.sum(pn.logp) - 0.5 * un @ un)
        if not hn >= h - 1e-13 * abs(h):
            break
        u, parts, h = un, pn, hn
    return u, parts, h


def conditional_modes(rs: ReStructure, link: Link, up0: np.ndarray, lo0: np.ndarray,
                      u0: np.ndarray, *, tol: float = 1e-15, maxit: int = 60,
                      factor0: Any = None) -> InnerResult:
    """Newton iterations for ``u*`` given fixed offsets ``up0 = theta_y - x b``, ``lo0``.

    Stops when the Newton decrement ``g' H^{-1} g`` is below ``tol``.
    ``factor0``: the factor of ``H`` at a nearby point (the previous
    evaluation's); steps with it come first, so that usually only the
    factorisation at the mode (for ``log det H``) is left.
    """
    u = u0.copy()
    ea = rs.eta(u)
    parts = cumulative_parts(link, up0 - ea, lo0 - ea)
    h = float(np.sum(parts.logp) - 0.5 * u @ u)
    if factor0 is not None:
        u, parts, h = _chord_steps(rs, link, up0, lo0, u, parts, h, factor0, tol)

    def direction(u: np.ndarray, parts: CumulativeParts) -> Direction | None:
        g = rs.At(parts.d1) - u
        fac = rs.factor(parts.w)
        du = fac.solve(g)
        dec = float(g @ du)
        if not np.isfinite(dec):
            return None
        return Direction(du, dec < tol, fac)

    def evaluate(un: np.ndarray) -> tuple[float, CumulativeParts]:
        ea = rs.eta(un)
        pn = cumulative_parts(link, up0 - ea, lo0 - ea)
        return -float(np.sum(pn.logp) - 0.5 * un @ un), pn      # minimised: -h

    run = newton_modes(u, -h, parts, direction, evaluate, maxit=maxit, max_halvings=40,
                       slack=1e-13)
    converged = run.status == "converged"
    fac = run.payload if converged else rs.factor(run.state.w)
    return InnerResult(run.x, -run.value, fac.logdet, fac, run.state, converged, run.iterations)
