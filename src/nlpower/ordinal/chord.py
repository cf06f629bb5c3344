"""Refits of many responses on one structure: quasi-Newton steps from a reference Hessian.

A power simulation refits the same model to a thousand responses drawn from
the same parameters.  Their Hessians at the optimum differ little, so the
Hessian of one reference response at the true parameters
(:func:`reference_hessian`, computed once per structure from a fixed seed,
so no replicate depends on another) serves every replicate as the matrix of
first quasi-Newton step ``x <- x - H_ref^{-1} g(x)``; BFGS updates with the
analytic gradient correct it where the curvature differs (near an SD of 0 it
does): a handful of gradient calls from the truth instead of an L-BFGS-B
run from a unit matrix.  The fit is then finished as any other (:meth:`ClmmModel._finish
<nlpower.ordinal.model.ClmmModel._finish>`: the replicate's own Hessian by
differences of the gradient -- the Wald SE needs it -- and Newton polish).

Random-effect SDs may cross 0 during the steps: the Laplace likelihood is
unchanged when a column of a relative factor ``Lambda`` changes sign (``u``
and ``-u`` are equally likely), so the end point is mapped back to
non-negative diagonals (:func:`canonical_theta`).  Where the chord steps do
not converge (a fit on the boundary, a replicate far from the truth) the
regular optimiser takes over from where they stopped.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..lmm.checkconv import hessian_from_gradient
from ..lmm.native._blas import single_threaded
from ..mixed.fdiff import forward_hessian
from ._dense import floored, floored_solve
from .hessian import fd_hessian
from .scalar import batch_nll_grad

if TYPE_CHECKING:
    from .model import ClmmCore, ClmmModel

__all__ = ["BATCH_LIMIT", "canonical_theta", "chord_refit", "newton_steps", "reference_hessian"]


#: largest observations x (parameters + 1) for which a one-scalar-term fit takes
#: Newton steps with batched Hessians (beyond it a batch costs as much as the
#: points one at a time, and BFGS needs fewer of them)
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


def start_hessian(model: ClmmModel, x0: np.ndarray) -> np.ndarray:
    """Hessian of ``-loglik`` at ``x0`` for the current response (differences of the gradient)."""
    f, g = model.nll_grad(x0)
    H = fd_hessian(model, x0, g)                 # one scalar term: the k points in one batch
    if H is None:
        H = hessian_from_gradient(lambda x: model.nll_grad(x)[1], x0, delta=1e-4, g=g)
    return floored(H)


def reference_hessian(model: ClmmModel, x0: np.ndarray, *, rng: Any = 0) -> np.ndarray:
    """Hessian of ``-loglik`` at ``x0`` for one response simulated at ``x0`` (seed ``rng``).

    Eigenvalues are floored at a small positive value so the steps always
    descend.  The model's current response is restored.
    """
    y_keep = model.y
    with single_threaded():
        ysim = model.simulate(1, rng=rng, params=x0)[0]
        if np.unique(ysim).size < len(model.levels):      # keep every category present
            ysim[:len(model.levels)] = np.arange(len(model.levels))
        model.set_response(ysim)          # (a new fit state: modes from 0)
        try:
            return start_hessian(model, x0)
        finally:
            model.set_response(y_keep)


def bfgs_steps(model: ClmmModel, x: np.ndarray, H: np.ndarray, *, maxit: int = 25,
               gtol: float = 1e-3
               ) -> tuple[np.ndarray, bool, tuple[float, np.ndarray, None] | None]:
    """BFGS on ``-loglik`` from ``x`` with first Hessian ``H``.

    Returns the end point, whether ``max |grad| < gtol`` there, and ``(-loglik,
    gradient, None)`` there (``None`` where it did not converge).
    """
    x = np.asarray(x, dtype=float).copy()
    f, g = model.nll_grad(x)
    B0 = np.linalg.inv(H)
    B = B0.copy()                         # inverse Hessian, updated by BFGS
    if not np.isfinite(f):
        return x, False, None
    for _ in range(maxit):
        step = -B @ g
        slope = float(g @ step)
        if slope >= 0:                    # not a descent direction: restart from H
            B = B0.copy()
            step = -B @ g
            slope = float(g @ step)
        t = 1.0
        for _ in range(12):
            xn = x + t * step
            fn, gn = model.nll_grad(xn)
            if np.isfinite(fn) and fn <= f + 1e-4 * t * slope:
                break
            t *= 0.5
        else:
            return x, False, None
        sx, sy = xn - x, gn - g
        x, f, g = xn, fn, gn
        if np.max(np.abs(g)) < gtol:
            return x, True, (f, g, None)
        sys_ = float(sx @ sy)
        if sys_ > 1e-12:
            rho = 1.0 / sys_
            Bsy = B @ sy
            B = (B - rho * (np.outer(sx, Bsy) + np.outer(Bsy, sx))
                 + (rho * rho * float(sy @ Bsy) + rho) * np.outer(sx, sx))
    return x, False, None


def newton_steps(model: ClmmModel, x: np.ndarray, *, maxit: int = 10, gtol: float = 1e-3,
                 delta: float = 1e-4
                 ) -> tuple[np.ndarray, bool, tuple[float, np.ndarray, np.ndarray] | None]:
    """Newton steps on ``-loglik`` of a one-scalar-term Laplace fit, Hessians by differences.

    Each step evaluates the point and its ``k`` shifts in one batch
    (:func:`~.scalar.batch_nll_grad`: the gradient and the forward-difference
    Hessian of :func:`start_hessian`), floors the Hessian's eigenvalues and
    halves the step until ``-loglik`` falls enough.  Where one batch costs a
    few single evaluations (small data) this converges in fewer of them than
    BFGS from the same first Hessian, and ends with the Hessian at its end
    point, which :meth:`ClmmModel._finish <nlpower.ordinal.model.ClmmModel._finish>`
    reuses.  Returns the end point, whether ``max |grad| < gtol`` there, and
    ``-loglik``, its gradient and Hessian there (``None`` when a batch could not
    be evaluated).
    """
    x = np.asarray(x, dtype=float).copy()
    k = x.size
    shift = np.arange(k)
    model.nll(x)                               # the modes the batch starts from
    step: np.ndarray | None = None
    f = slope = math.nan
    for _ in range(maxit):
        # the full step's point and its shifts in one batch; a step that does not lower
        # -loglik enough is halved (one point at a time) and the batch evaluated there
        xt = x if step is None else x + step
        res = _newton_batch(model, xt, shift, delta)
        if step is not None and (res is None or not res[0] <= f + 1e-4 * slope):
            res = None                 # outside the parameter space, or not low enough
            t = 0.5
            for _ in range(11):
                fn = model.nll(x + t * step)
                if np.isfinite(fn) and fn <= f + 1e-4 * t * slope:
                    xt = x + t * step
                    res = _newton_batch(model, xt, shift, delta)
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


def _newton_batch(model: ClmmModel, x: np.ndarray, shift: np.ndarray, delta: float
                  ) -> tuple[float, np.ndarray, np.ndarray] | None:
    """``-loglik``, its gradient and Hessian by forward differences at ``x`` (one batch).

    The points' modes start from their first-order prediction by the model's
    anchor (the last batch's point, its modes and their derivatives, the
    differences of its shifts' modes), which leaves one Newton step fewer
    where the step from there is small (near the optimum); the batch then
    becomes the anchor (also for the single evaluations that follow: step
    halving, the polish in :meth:`ClmmModel._finish
    <nlpower.ordinal.model.ClmmModel._finish>`).
    """
    k = x.size
    xs = np.repeat(x[None], k + 1, axis=0)
    xs[1 + shift, shift] += delta
    st = model._state
    anchor = st.anchor
    u0 = None
    if anchor is not None and anchor[1].size == st.u.size and anchor[2].shape[1] == k:
        base = anchor[1] + anchor[2] @ (x - anchor[0])
        u0 = np.vstack((base, base + delta * anchor[2][:, shift].T))
    res = batch_nll_grad(model, xs, u0=u0)
    if res is None or not np.isfinite(res[0][0]):
        return None
    U = res[2]
    st.u = U[0].copy()                     # warm start of the next batch and line search
    if shift.size == k:
        st.anchor = (x.copy(), st.u, ((U[1 + shift] - U[0]) / delta).T)
    g = res[1][0]
    return float(res[0][0]), g, forward_hessian(res[1][1:], g, delta)


def chord_refit(model: ClmmModel, y: np.ndarray, start: np.ndarray, H: np.ndarray, *,
                maxit: int = 25, gtol: float = 1e-3, control: dict[str, Any] | None = None,
                hessian: bool = True) -> ClmmCore:
    """Fit response ``y`` from ``start`` by BFGS steps whose first Hessian is ``H``."""
    with single_threaded():
        model.set_response(np.asarray(y))     # (a new fit state: modes from 0)
        model.n_evals = 0
        x, ok, end = bfgs_steps(model, start, H, maxit=maxit, gtol=gtol)
    if not ok or end is None:   # hand over to the regular optimiser from where the steps stopped
        return model.refit(None, start=canonical_theta(model, x), control=control,
                           hessian=hessian)
    at = (x.copy(), *end)
    x = canonical_theta(model, x)
    with single_threaded():
        return model._finish(x, True, "quasi-Newton steps", None, hessian, at)
