"""The Hessian of a one-scalar-term ordinal model by differences of its batched gradient.

Above both :mod:`.scalar` (Laplace) and :mod:`.agq` (adaptive Gauss-Hermite):
the shifted points are evaluated in one batch by the model's own
approximation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..mixed.fdiff import forward_hessian
from .agq import batch_agq_nll_grad
from .scalar import batch_nll_grad

__all__ = ["batch_hessian", "fd_hessian"]


def fd_hessian(model: Any, x: np.ndarray, g: np.ndarray, *, free: np.ndarray | None = None,
               scale: float = 1.0, delta: float = 1e-4) -> np.ndarray | None:
    """Hessian of ``scale * -loglik`` over ``x[free]`` by forward differences of its gradient.

    ``g``: that gradient at ``x`` (over ``free``); the model's modes must be
    ``x``'s.  The same differences as
    :func:`~nlpower.mixed.fdiff.forward_hessian` (step ``delta``,
    symmetrised), the ``k`` shifted points evaluated in one batch
    (:func:`batch_nll_grad`).  ``None`` when the model is not a Laplace fit
    of one scalar term or a shifted point cannot be evaluated in the batch.
    """
    if getattr(model, "_scalar", None) is None:
        return None
    x = np.asarray(x, dtype=float)
    idx = np.flatnonzero(np.ones(x.size, dtype=bool) if free is None else free)
    res = _batch(model, x, idx, delta, center=False)
    if res is None:
        return None
    return forward_hessian(scale * res[1][:, idx], g, delta)   # row j: the gradient at x + delta e_j


def batch_hessian(model: Any, x: np.ndarray, *, delta: float = 1e-4
                  ) -> tuple[float, np.ndarray, np.ndarray] | None:
    """``-loglik``, its gradient and Hessian (forward differences) at ``x``: ``x`` and its shifts
    in one batch (``None`` when a point cannot be evaluated); the modes become ``x``'s."""
    res = _batch(model, x, np.arange(x.size), delta, center=True)
    if res is None or not np.isfinite(res[0][0]):
        return None
    g = res[1][0]
    return float(res[0][0]), g, forward_hessian(res[1][1:], g, delta)


def _batch(model: Any, x: np.ndarray, idx: np.ndarray, delta: float, center: bool
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``x`` (when ``center``; else its modes are the model's) and ``x + delta e_j`` in one batch.

    With ``center`` (a Newton step's batch) the points' modes start from their
    first-order prediction by the fit's anchor (:class:`~.model.FitState`: a
    point, its modes and their derivatives), and the batch becomes the next
    anchor, at ``x``, and the model's modes.  The differences Hessian starts
    from the model's modes and sets no anchor: evaluations started from such a
    prediction stop their modes' Newton steps at the first check (decrement
    under 1e-15) with the modes within ~1e-8 and the value within ~3e-9
    through ``log det H`` (measured on ``sim1``); from the last modes they
    take a step more and end tighter.
    """
    st = model._state
    xs = np.tile(x, (idx.size + center, 1))
    xs[np.arange(center, idx.size + center), idx] += delta
    a = st.anchor
    u0 = None
    if center and a is not None and a[2].shape == (st.u.size, x.size):
        base = a[1] + a[2] @ (x - a[0])
        u0 = np.vstack((base, base + delta * a[2][:, idx].T))
    res = (batch_nll_grad if model.nAGQ == 1 else batch_agq_nll_grad)(model, xs, u0=u0)
    if res is None or not center:
        return res
    U = res[2]
    st.u = U[0].copy()                     # warm start of the next batch and line search
    if idx.size == x.size:
        st.anchor = (x.copy(), st.u, ((U[1:] - st.u) / delta).T)
    return res
