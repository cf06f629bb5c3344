"""The optimiser's coordinates: a Hessian near the start made the unit matrix.

L-BFGS-B starts from a unit matrix: in the fitter's coordinates (first
threshold, log increments, fixed effects, random-effect parameters) a small
one-scalar-term fit (``wine``: 7 parameters) spends ~20 gradient calls
learning the curvature.  Given a Hessian ``H`` near the start -- the start's
own by differences where the model evaluates its ``k`` shifted points in
one batch (one scalar term, Laplace or quadrature:
:func:`~.hessian.fd_hessian`, the price of about two gradient calls), or a
power replicate's reference Hessian (:func:`reference_hessian`) -- the
optimiser runs in coordinates ``w`` with ``z = z0 + c T w`` in which ``H``
is ``c^2`` times the unit matrix (its threshold and fixed-effect block; the
random-effect block keeps its coordinates, each divided by its curvature
given the others, so that the bound ``SD >= 0`` stays a bound on one
coordinate of ``w``)::

    T = [[A, -Haa^{-1} Hat D],      A = chol(Haa)^{-T},
         [0,  D             ]]      D = diag(S)^{-1/2},  S = Htt - Hta Haa^{-1} Hat

so ``T' H T = [[I, 0], [0, D S D]]``, unit for one scalar term.  L-BFGS-B's
first trial step has length ``min(1, 1 / |g_w|)`` along ``-g_w``.  With a
given Hessian ``c = max(|T' g_z|, 1)`` makes it ``H``'s Newton step (unless
the projected gradient path ``-t c g_w``, ``t <= 1``, meets an SD's bound
first): a replicate starts at the truth, where its reference Hessian's step
is good.  With the start's own Hessian ``c = 1``: the start (from ``clm``)
can be far, and a full Newton step from it too long (``sim1`` with the
cloglog link: 67 evaluations against 54).  Elsewhere (crossed or vector
terms without a reference Hessian) the ``k`` gradient calls of that Hessian
cost more than they save (measured, docs/engine.md) and the coordinates are
the fitter's own (``T`` is ``None``: no arithmetic on ``z`` at all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.linalg import lapack

from ..lmm.checkconv import hessian_from_gradient
from ..mixed.native._blas import single_threaded
from ._dense import cho_solve, cholesky, floored
from .hessian import fd_hessian

if TYPE_CHECKING:
    from .model import ClmmModel

__all__ = ["Coordinates", "HandOff", "reference_hessian", "start_scaling"]


class Coordinates:
    """``z = z0 + c T w`` (:func:`start_scaling`), or ``z = w`` when ``T`` is ``None``."""

    def __init__(self, z0: np.ndarray, T: np.ndarray | None = None, c: float = 1.0):
        self.z0, self.T, self.c = z0, None if T is None else c * T, c

    def to_z(self, w: np.ndarray) -> np.ndarray:
        return w if self.T is None else self.z0 + self.T @ w

    def from_z(self, z: np.ndarray) -> np.ndarray:
        if self.T is None:
            return z
        _, _, w, info = lapack.dgesv(self.T, z - self.z0)
        return np.asarray(w)

    def start(self) -> np.ndarray:
        return self.z0 if self.T is None else np.zeros_like(self.z0)

    def gradient(self, gz: np.ndarray) -> np.ndarray:
        """The gradient over ``w`` from the gradient over ``z``."""
        return gz if self.T is None else self.T.T @ gz

    def bounds(self, lower_sd: np.ndarray) -> list[tuple[float | None, None]]:
        """L-BFGS-B's bounds over ``w``: ``z_j >= 0`` for the random-effect SDs ``lower_sd``."""
        k, kt = self.z0.size, lower_sd.size
        out: list[tuple[float | None, None]] = [(None, None)] * (k - kt)
        for j, sd in enumerate(lower_sd):
            if not sd:
                out.append((None, None))
            elif self.T is None:
                out.append((0.0, None))
            else:
                i = k - kt + j
                out.append((-self.z0[i] / self.T[i, i], None))
        return out


class HandOff:
    """L-BFGS-B callback in scaled coordinates: stop where the finish's Newton steps take over.

    Once ``H``'s Newton step ``c T g_w / c^2`` from the last point (its
    gradient ``g_w`` as :meth:`seen`) is under ``1e-4`` everywhere, the finish
    (:meth:`ClmmModel._finish <nlpower.ordinal.model.ClmmModel._finish>`: the
    Hessian there, Newton steps reusing it for steps under ``1e-3``) ends the
    fit in one or two value-and-gradient calls, where L-BFGS-B would take two
    to four more (at ``1e-4`` the standard errors stay within a relative
    ``1.3e-5`` of those at L-BFGS-B's own end on the agreement cases; at
    ``1e-3``, ``3e-4``).  Not
    while an SD is under ``1e-2`` (Newton steps cannot cross its bound).
    """

    def __init__(self, co: Coordinates, k0: int, sd: np.ndarray):
        self.co, self.k0, self.sd, self.stopped = co, k0, np.asarray(sd), False
        self.w, self.gw = np.zeros(0), np.zeros(0)

    def seen(self, w: np.ndarray, gw: np.ndarray) -> None:
        self.w, self.gw = w.copy(), gw

    def __call__(self, intermediate_result: Any) -> None:
        w, co = np.asarray(intermediate_result.x), self.co
        if co.T is None or not np.array_equal(w, self.w) or np.any(
                co.to_z(w)[self.k0:][self.sd] < 1e-2):
            return
        if np.max(np.abs(co.T @ self.gw)) < 1e-4 * co.c * co.c:
            self.stopped = True
            raise StopIteration


def start_scaling(model: ClmmModel, z0: np.ndarray, Hx: np.ndarray | None = None
                  ) -> Coordinates:
    """The optimiser's :class:`Coordinates` from ``z0``, scaled by ``Hx`` or the start's Hessian.

    ``Hx``: a Hessian over ``x`` (a power replicate's reference Hessian);
    else the one at ``z0`` by forward differences of the gradient in one
    batch (one scalar term; unscaled coordinates for other models).  The
    Hessian over ``z`` is ``J' H_x J`` plus, on each log increment ``z_j`` of
    flexible thresholds, its own gradient (``d^2 alpha_i / d z_j^2 = e^{z_j}
    = d alpha_i / d z_j`` for ``i >= j``), eigenvalues floored.
    """
    plain, given = Coordinates(z0), Hx is not None
    if Hx is None and getattr(model, "_scalar", None) is None:
        return plain
    x0 = model._from_opt(z0)
    f, g = model.nll_grad(x0)
    if not (np.isfinite(f) and np.isfinite(g).all()):
        return plain
    if Hx is None:
        Hx = fd_hessian(model, x0, g)
        if Hx is None:
            return plain
    k, a = z0.size, model.n_alpha
    J = np.eye(k)
    extra = np.zeros(k)
    if model.thr.kind == "flexible" and a >= 2:
        e = np.exp(np.minimum(z0[1:a], 50.0))
        J[:a, 0] = 1.0                             # alpha_i = z_0 + sum_{1 <= j <= i} e^{z_j}
        J[:a, 1:a] = np.tril(np.ones((a, a - 1)), -1) * e
        extra[1:a] = model._grad_to_opt(z0, g)[1:a]
    H = floored(J.T @ Hx @ J + np.diag(extra))
    kt = model.n_theta
    ka = k - kt
    try:
        L = cholesky(H[:ka, :ka])
    except np.linalg.LinAlgError:
        return plain
    Hat = H[:ka, ka:]
    HiHat = cho_solve(L, Hat)
    S = H[ka:, ka:] - Hat.T @ HiHat
    D = 1.0 / np.sqrt(np.maximum(np.diag(S), 1e-12))
    T = np.zeros((k, k))
    # A = L^{-T}: the inverse of the upper triangular L'
    Ainv, info = lapack.dtrtri(L.T, lower=0)
    if info != 0:
        return plain
    T[:ka, :ka] = Ainv
    T[:ka, ka:] = -HiHat * D
    T[ka:, ka:] = np.diag(D)
    if not given:                 # the start's own Hessian: a unit first step where |g_w| > 1
        return Coordinates(z0, T)
    return Coordinates(z0, T, max(float(np.linalg.norm(T.T @ model._grad_to_opt(z0, g))), 1.0))


def reference_hessian(model: ClmmModel, x0: np.ndarray, *, rng: Any = 0) -> np.ndarray:
    """Hessian of ``-loglik`` at ``x0`` for one response simulated at ``x0`` (seed ``rng``).

    Power replicates refit one structure to responses drawn from the same
    parameters, whose Hessians differ little: this one, computed once per
    structure (a fixed seed: no replicate depends on another), scales every
    replicate's optimiser (``refit(..., curvature=H)``).  By differences of
    the gradient; eigenvalues floored; the model's response is restored.
    """
    y_keep = model.y
    with single_threaded():
        ysim = model.simulate(1, rng=rng, params=x0)[0]
        if np.unique(ysim).size < len(model.levels):      # keep every category present
            ysim[:len(model.levels)] = np.arange(len(model.levels))
        model.set_response(ysim)          # (a new fit state: modes from 0)
        try:
            f, g = model.nll_grad(x0)
            H = fd_hessian(model, x0, g)
            if H is None:
                H = hessian_from_gradient(lambda x: model.nll_grad(x)[1], x0, delta=1e-4, g=g)
            return floored(H)
        finally:
            model.set_response(y_keep)
