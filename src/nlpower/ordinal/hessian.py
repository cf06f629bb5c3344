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

__all__ = ["fd_hessian"]


def fd_hessian(model: Any, x: np.ndarray, g: np.ndarray, *, free: np.ndarray | None = None,
               scale: float = 1.0, delta: float = 1e-4) -> np.ndarray | None:
    """Hessian of ``scale * -loglik`` over ``x[free]`` by forward differences of its gradient.

    ``g``: that gradient at ``x`` (over ``free``); the model's modes must be
    ``x``'s.  The same differences as
    :func:`~nlpower.mixed.fdiff.forward_hessian` (step ``delta``,
    symmetrised), the ``k`` shifted points evaluated in one batch
    (:func:`batch_nll_grad`).  ``None`` when the model is not a Laplace fit
    of one scalar term or a shifted point cannot be evaluated in the batch.

    The shifted points' modes start from their first-order prediction by the
    fit's anchor (:class:`~.model.FitState`) when one is near, and the
    differences of their modes become the anchor at ``x`` (the modes'
    derivatives, which start the next evaluations' Newton steps nearer).
    """
    if getattr(model, "_scalar", None) is None:
        return None
    x = np.asarray(x, dtype=float)
    idx = np.flatnonzero(np.ones(x.size, dtype=bool) if free is None else free)
    xs = np.tile(x, (idx.size, 1))
    xs[np.arange(idx.size), idx] += delta
    st = model._state
    ux = st.u.copy()                              # the modes at x
    a = st.anchor
    u0 = None
    if a is not None and a[2].shape == (ux.size, x.size) and np.max(np.abs(x - a[0])) <= 1.0:
        u0 = ux + delta * a[2][:, idx].T
    if model.nAGQ == 1:
        res = batch_nll_grad(model, xs, u0=u0)
    else:                                         # adaptive Gauss-Hermite: the same differences
        res = batch_agq_nll_grad(model, xs, u0=u0)
    if res is None:
        return None
    if idx.size == x.size:
        st.anchor = (x.copy(), ux, ((res[2] - ux) / delta).T)
    G = scale * res[1][:, idx]                    # row j: the gradient at x + delta e_j
    return forward_hessian(G, g, delta)
