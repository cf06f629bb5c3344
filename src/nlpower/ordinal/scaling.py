"""The optimiser's coordinates: the start's Hessian made the unit matrix where it is cheap.

L-BFGS-B starts from a unit matrix: in the fitter's coordinates (first
threshold, log increments, fixed effects, random-effect parameters) a small
one-scalar-term fit (``wine``: 7 parameters) spends ~20 gradient calls
learning the curvature.  When the model evaluates the ``k`` shifted points
of a Hessian by differences in one batch (one scalar term, Laplace or
quadrature: :func:`~.hessian.fd_hessian`, the price of about two gradient
calls), the optimiser runs in coordinates ``w`` with ``z = z0 + T w`` in
which that Hessian at the start is the unit matrix (its threshold and
fixed-effect block; the random-effect block keeps its coordinates, each
divided by its curvature given the others, so that the bound ``SD >= 0``
stays a bound on one coordinate of ``w``)::

    T = [[A, -Haa^{-1} Hat D],      A = chol(Haa)^{-T},
         [0,  D             ]]      D = diag(S)^{-1/2},  S = Htt - Hta Haa^{-1} Hat

so ``T' H T = [[I, 0], [0, D S D]]``, unit for one scalar term.  Elsewhere
(crossed or vector terms) the ``k`` gradient calls of that Hessian cost more
than they save (measured, docs/engine.md) and the coordinates are the
fitter's own (``T`` is ``None``: no arithmetic on ``z`` at all).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.linalg import lapack

from ._dense import cho_solve, cholesky, floored
from .hessian import fd_hessian

if TYPE_CHECKING:
    from .model import ClmmModel

__all__ = ["Coordinates", "start_scaling"]


class Coordinates:
    """``z = z0 + T w`` (``T`` from :func:`start_scaling`), or ``z = w`` when ``T`` is ``None``."""

    def __init__(self, z0: np.ndarray, T: np.ndarray | None):
        self.z0, self.T = z0, T

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


def start_scaling(model: ClmmModel, z0: np.ndarray) -> np.ndarray | None:
    """``T`` of :class:`Coordinates` at ``z0`` (``None``: no batched Hessian there).

    The Hessian of ``-loglik`` over ``z`` is ``J' H_x J`` plus, on each log
    increment ``z_j`` of flexible thresholds, its own gradient (``d^2
    alpha_i / d z_j^2 = e^{z_j} = d alpha_i / d z_j`` for ``i >= j``);
    ``H_x`` by forward differences of the gradient in one batch
    (:func:`~.hessian.fd_hessian`), eigenvalues floored.
    """
    if getattr(model, "_scalar", None) is None:
        return None
    x0 = model._from_opt(z0)
    f, g = model.nll_grad(x0)
    if not (np.isfinite(f) and np.isfinite(g).all()):
        return None
    Hx = fd_hessian(model, x0, g)
    if Hx is None:
        return None
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
        return None
    Hat = H[:ka, ka:]
    HiHat = cho_solve(L, Hat)
    S = H[ka:, ka:] - Hat.T @ HiHat
    D = 1.0 / np.sqrt(np.maximum(np.diag(S), 1e-12))
    T = np.zeros((k, k))
    # A = L^{-T}: the inverse of the upper triangular L'
    Ainv, info = lapack.dtrtri(L.T, lower=0)
    if info != 0:
        return None
    T[:ka, :ka] = Ainv
    T[:ka, ka:] = -HiHat * D
    T[ka:, ka:] = np.diag(D)
    return T
