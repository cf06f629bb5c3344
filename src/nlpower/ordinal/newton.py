"""Newton steps with batched Hessians: small one-scalar-term Laplace fits.

``rating ~ temp + contact + (1 | judge)`` on 72 ratings: the ``k`` shifted
points of a Hessian by differences cost about 1.5 single evaluations in one
batch (:func:`~.scalar.batch_nll_grad`), so Newton steps whose every point is
evaluated with its shifts (value, gradient and Hessian in one batch) reach
the optimum in three batches, and the last one is the Hessian the finish
needs.  The general path (L-BFGS-B in the start's scaled coordinates,
:mod:`.scaling`) takes about 1.3x the time of the whole ``wine`` fit (its
fixed cost, a few single evaluations more; docs/engine.md), so these steps
stay for observations x (parameters + 1) <= :data:`BATCH_LIMIT`.

Random-effect SDs may cross 0 during the steps: the Laplace likelihood is
unchanged when a column of a relative factor ``Lambda`` changes sign (``u``
and ``-u`` are equally likely), so the end point is mapped back to
non-negative diagonals (:func:`canonical_theta`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ._dense import floored_solve
from .hessian import batch_hessian

if TYPE_CHECKING:
    from .model import ClmmModel

__all__ = ["BATCH_LIMIT", "canonical_theta", "newton_steps"]


#: largest observations x (parameters + 1) for which a one-scalar-term fit takes
#: Newton steps with batched Hessians (beyond it a batch costs as much as the
#: points one at a time, and the general optimiser needs fewer of them)
BATCH_LIMIT = 2500


def canonical_theta(model: ClmmModel, x: np.ndarray) -> np.ndarray:
    """``x`` with every column of each term's ``Lambda`` signed so its diagonal is >= 0."""
    x = np.asarray(x, dtype=float).copy()
    if model.rs is None:
        return x
    base = model.n_alpha + model.p
    for k, t in enumerate(model.rs.terms):
        pos = base + model.rs.theta_slices[k].start
        for j in range(t.q):
            n_col = t.q - j                     # elements of column j (diagonal first)
            if x[pos] < 0.0:
                x[pos:pos + n_col] *= -1.0
            pos += n_col
    return x


def newton_steps(model: ClmmModel, x: np.ndarray, *, maxit: int = 10, gtol: float = 1e-3,
                 delta: float = 1e-4
                 ) -> tuple[np.ndarray, bool, tuple[float, np.ndarray, np.ndarray] | None]:
    """Newton steps on ``-loglik`` of a one-scalar-term Laplace fit, Hessians by differences.

    Each step evaluates the point and its ``k`` shifts in one batch
    (:func:`~.hessian.batch_hessian`), floors the Hessian's eigenvalues and
    halves the step until ``-loglik`` falls enough.  Where one batch costs a
    few single evaluations (small data) this converges in fewer of them than
    the general optimiser, and ends with the Hessian at its end
    point, which :meth:`ClmmModel._finish <nlpower.ordinal.model.ClmmModel._finish>`
    reuses.  Returns the end point, whether ``max |grad| < gtol`` there, and
    ``-loglik``, its gradient and Hessian there (``None`` when a batch could not
    be evaluated).
    """
    x = np.asarray(x, dtype=float).copy()
    model.nll(x)                               # the modes the batch starts from
    step: np.ndarray | None = None
    f = slope = math.nan
    for _ in range(maxit):
        # the full step's point and its shifts in one batch; a step that does not lower
        # -loglik enough is halved (one point at a time) and the batch evaluated there
        xt = x if step is None else x + step
        res = batch_hessian(model, xt, delta=delta)
        if step is not None and (res is None or not res[0] <= f + 1e-4 * slope):
            res = None                 # outside the parameter space, or not low enough
            t = 0.5
            for _ in range(11):
                fn = model.nll(x + t * step)
                if np.isfinite(fn) and fn <= f + 1e-4 * t * slope:
                    xt = x + t * step
                    res = batch_hessian(model, xt, delta=delta)
                    break
                t *= 0.5
        if res is None:
            return x, False, None
        x = xt
        f, g, H = res
        if np.max(np.abs(g)) < gtol:
            return x, True, res
        step = -floored_solve(H, g)
        big = float(np.max(np.abs(step)))
        if big > 2.0:                  # a floored eigenvalue (an SD near 0): cap the step
            step *= 2.0 / big
        slope = float(g @ step)
    return x, False, None
