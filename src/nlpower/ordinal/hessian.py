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
    """
    if getattr(model, "_scalar", None) is None:
        return None
    x = np.asarray(x, dtype=float)
    idx = np.flatnonzero(np.ones(x.size, dtype=bool) if free is None else free)
    xs = np.tile(x, (idx.size, 1))
    xs[np.arange(idx.size), idx] += delta
    if model.nAGQ == 1:
        res = batch_nll_grad(model, xs)
    else:                                         # adaptive Gauss-Hermite: the same differences
        res = batch_agq_nll_grad(model, xs)
    if res is None:
        return None
    G = scale * res[1][:, idx]                    # row j: the gradient at x + delta e_j
    return forward_hessian(G, g, delta)
