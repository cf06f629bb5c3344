"""Finite-difference gradients and Hessians at an optimum, shared by every engine.

Two sources of differences:

* **values** of the objective (:func:`value_gradient`, :func:`value_hessian`):
  the gradient and the Hessian's diagonal are central differences (lme4's
  ``deriv12``); the off-diagonal elements take one of two rules,

  - ``"central"`` -- lme4's four-point ``(f(++) - f(+-) - f(-+) + f(--)) / (4 h^2)``,
    ``2k + 2k(k-1)`` evaluations, an ``O(h^2)`` error.  The convergence check
    (:mod:`nlpower.lmm.checkconv`) uses it: a forward rule's ``O(h)`` error
    produced spurious negative eigenvalues on the flat ridges of ``(f || g)``
    terms, flipping lme4's Hessian verdict;
  - ``"forward"`` -- ``(f(x + h e_i + h e_j) - f(x + h e_i) - f(x + h e_j) + f(x)) / h^2``,
    ``2k + k(k-1)/2`` evaluations.  glmer's stage 2 without an analytic
    gradient uses it: each evaluation is a PIRLS solve, and the ``O(h)`` error
    is a relative ``1e-4`` on the standard errors;

* **an analytic gradient** (:func:`gradient_hessian`): central differences
  (``2k`` calls, ``O(h^2)``) or forward differences from the gradient at
  ``x`` (``k`` calls, ``O(h)``, enough for Newton's method), symmetrised.
  :func:`forward_hessian` is the same forward rule for gradients computed
  elsewhere -- vectorised over replicates, with :func:`forward_shifts` giving
  the shifted points of many rows at once (the batched GLMM refits);

* **Richardson extrapolation** (:func:`richardson_hessian`,
  :func:`richardson_jacobian`): numDeriv's ``hessian`` (``genD``) and
  ``jacobian`` with the settings lmerTest's Satterthwaite df use -- ``r = 4``
  levels, the step halved at each (``v = 2``) -- and a first step
  ``RICHARDSON_STEP * max(|x|, 1)`` (numDeriv's ``d |x|`` gives steps of
  ``1e-6`` for a correlation parameter near ``0.01``: noise-dominated
  curvatures).  Both take one point ``(k,)`` or a batch of rows ``(R, k)``,
  whose objective maps ``(R, k)`` to ``(R, ...)``: the same arithmetic either
  way, so a replicate's derivatives do not depend on its batch.

Objectives that solve for conditional modes are *warm*: ``f(x, start) ->
(value, mode)``, ``start`` a starting mode or ``None``.  Given the mode
``mode`` at ``x``, the shifted points start from modes extrapolated linearly
from those already found (``2 u0 - u(x + h e_i)`` at ``x - h e_i``,
``u(x + h e_i) + u(x + h e_j) - u0`` at ``x + h e_i + h e_j``), so one inner
step usually converges.  :func:`cold` makes a plain ``fn(x) -> value``
warm.  Points are always evaluated in the same order (for objectives whose
inner solver starts where the last evaluation left it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

__all__ = ["DERIV_STEP", "RICHARDSON_LEVELS", "RICHARDSON_RATIO", "RICHARDSON_STEP", "cold",
           "forward_hessian", "forward_shifts", "gradient_hessian", "richardson",
           "richardson_hessian", "richardson_jacobian", "richardson_steps", "value_gradient",
           "value_hessian"]

#: lme4's ``deriv12`` step
DERIV_STEP = 1e-4
#: Richardson rules: first step relative to ``max(|x|, 1)``, levels, step ratio between levels
RICHARDSON_STEP = 1e-3
RICHARDSON_LEVELS = 4
RICHARDSON_RATIO = 2.0

Warm = Callable[[np.ndarray, Any], tuple[Any, Any]]


def cold(fn: Callable[[np.ndarray], Any]) -> Warm:
    """A warm objective from a plain ``fn(x)``: ``(fn(x), None)`` whatever the start."""
    return lambda x, start: (fn(x), None)


def _shift(x: np.ndarray, i: int, h: float) -> np.ndarray:
    out = x.copy()
    out[i] += h
    return out


def _shift2(x: np.ndarray, i: int, hi: float, j: int, hj: float) -> np.ndarray:
    out = x.copy()
    out[i] += hi
    out[j] += hj
    return out


def _lin(a: Any, b: Any, c: Any) -> Any:
    """``a + b - c`` when all are known, else ``None`` (a start extrapolated from modes)."""
    if a is None or b is None or c is None:
        return None
    return a + b - c


def value_gradient(f: Warm, x: np.ndarray, h: float = DERIV_STEP, *, mode: Any = None,
                   fx: float | None = None, lower: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Any], int]:
    """Central-difference gradient of a warm objective: ``(g, f(x+h e), f(x-h e), modes, n)``.

    ``modes[i]`` is the mode at ``x + h e_i``; ``n`` counts evaluations.  With
    ``lower`` (and ``fx = f(x)``), a component where ``x - h`` would cross its
    bound is a forward difference and ``f(x - h e_i)`` is left ``nan``.

    Examples
    --------
    >>> g = value_gradient(cold(lambda t: float(t[0] ** 2 + 3 * t[1])), np.array([1.0, 2.0]))[0]
    >>> np.round(g, 8).tolist()
    [2.0, 3.0]
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    fp, fm = np.empty(k), np.full(k, np.nan)
    modes: list[Any] = []
    n = 0
    for i in range(k):
        fp[i], ui = f(_shift(x, i, h), mode)
        modes.append(ui)
        n += 1
        if lower is not None and x[i] - h < lower[i]:
            continue
        fm[i], _ = f(_shift(x, i, -h), _lin(mode, mode, ui))
        n += 1
    g = (fp - fm) / (2.0 * h)
    if lower is not None:
        fwd = np.isnan(fm)
        if np.any(fwd):
            assert fx is not None
            g[fwd] = (fp[fwd] - fx) / h
    return g, fp, fm, modes, n


def value_hessian(f: Warm, x: np.ndarray, fx: float, h: float = DERIV_STEP, *,
                  cross: Literal["central", "forward"] = "central", mode: Any = None
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """Gradient and Hessian from values of a warm objective: ``(g, H, evaluations)``.

    ``cross``: the off-diagonal rule (the module docstring); ``fx = f(x)``.

    Examples
    --------
    >>> fn = lambda t: float(t[0] ** 2 + t[0] * t[1] + 3 * t[1] ** 2)
    >>> x = np.array([0.3, -0.2])
    >>> g, H, n = value_hessian(cold(fn), x, fn(x))
    >>> np.round(H, 6).tolist(), n
    ([[2.0, 1.0], [1.0, 6.0]], 8)
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    g, fp, fm, modes, n = value_gradient(f, x, h, mode=mode)
    H = np.empty((k, k))
    H[np.diag_indices(k)] = (fp - 2.0 * fx + fm) / (h * h)
    for j in range(k):                    # pairs (i < j), j the outer index
        for i in range(j):
            if cross == "forward":
                xx = _shift2(x, i, h, j, h)
                v = f(xx, _lin(modes[i], modes[j], mode))[0]
                H[i, j] = H[j, i] = (v - fp[j] - fp[i] + fx) / (h * h)
                n += 1
                continue
            vals = [f(_shift2(x, i, si * h, j, sj * h), mode)[0]
                    for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
            H[i, j] = H[j, i] = (vals[0] - vals[1] - vals[2] + vals[3]) / (4.0 * h * h)
            n += 4
    return g, H, n


def forward_hessian(G: np.ndarray, g: np.ndarray, h: Any = DERIV_STEP) -> np.ndarray:
    """The symmetrised forward-difference Hessian from gradients ``G[..., j, :]`` at ``x + h_j e_j``.

    ``g[..., :]`` is the gradient at ``x``; ``h`` one step, one per coordinate
    (``(..., k)``) or one per row and coordinate.  Leading axes are replicates.

    Examples
    --------
    >>> G = np.array([[2.1, 1.0], [1.2, 6.0]]); g = np.array([2.0, 0.4])
    >>> forward_hessian(G, g, 0.1).round(6).tolist()
    [[1.0, -1.0], [-1.0, 56.0]]
    """
    h = np.asarray(h, dtype=float)
    D = (np.asarray(G) - np.asarray(g, dtype=float)[..., None, :]) / (h[..., None] if h.ndim
                                                                        else h)
    H = np.swapaxes(D, -1, -2)
    return np.asarray(0.5 * (H + np.swapaxes(H, -1, -2)))


def forward_shifts(x: np.ndarray, h: float = DERIV_STEP
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` forward-shifted copies of every row of ``x`` (``(n, k)``), stacked shift-major.

    Stacked point ``j * n + i`` is row ``i`` plus ``h (1 + |x_ij|)`` along
    coordinate ``j``.  Returns ``(rows, dx, steps)``: the row of ``x`` behind
    each stacked point, the shifts ``(k n, k)`` and the steps ``(k n,)``; the
    gradients at ``x[rows] + dx``, reshaped ``(k, n, k)`` and swapped to
    ``(n, k, k)``, are :func:`forward_hessian`'s ``G`` (with
    ``steps.reshape(k, n).T``).

    Examples
    --------
    >>> rows, dx, steps = forward_shifts(np.array([[0.0, 1.0]]), 0.1)
    >>> rows.tolist(), dx.tolist()
    ([0, 0], [[0.1, 0.0], [0.0, 0.2]])
    """
    n, k = x.shape
    rows = np.tile(np.arange(n), k)
    coord = np.repeat(np.arange(k), n)
    steps = h * (1.0 + np.abs(x[rows, coord]))
    dx = np.zeros((k * n, k), dtype=x.dtype)
    dx[np.arange(k * n), coord] = steps
    return rows, dx, steps


def gradient_hessian(grad: Warm, x: np.ndarray, h: float = DERIV_STEP, *,
                     g: np.ndarray | None = None, mode: Any = None) -> tuple[np.ndarray, int]:
    """Hessian by differences of a warm analytic gradient ``grad(x, start) -> (gradient, mode)``.

    Central differences (``2k`` calls); forward differences from ``g``, the
    gradient at ``x``, when it is given (``k`` calls).  Returns ``(H, calls)``,
    symmetrised.

    Examples
    --------
    >>> grad = cold(lambda t: np.array([2 * t[0] + t[1], t[0] + 6 * t[1]]))
    >>> H, n = gradient_hessian(grad, np.array([0.3, -0.2]))
    >>> np.round(H, 6).tolist(), n
    ([[2.0, 1.0], [1.0, 6.0]], 4)
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    H = np.empty((k, k))
    for i in range(k):
        gp, ui = grad(_shift(x, i, h), mode)
        if g is not None:
            H[:, i] = (gp - g) / h
            continue
        gm = grad(_shift(x, i, -h), _lin(mode, mode, ui))[0]
        H[:, i] = (gp - gm) / (2.0 * h)
    return 0.5 * (H + H.T), k if g is not None else 2 * k


# -- Richardson extrapolation (numDeriv's rules), one point or rows of points ------------
def richardson_steps(x: np.ndarray, d: float = RICHARDSON_STEP) -> np.ndarray:
    """The first steps of the Richardson rules: ``d * max(|x|, 1)``, elementwise."""
    return d * np.maximum(np.abs(x), 1.0)


def richardson(a: np.ndarray, r: int = RICHARDSON_LEVELS, v: float = RICHARDSON_RATIO
               ) -> np.ndarray:
    """Richardson extrapolation over the last axis (``r`` levels, step divided by ``v`` each).

    Examples
    --------
    >>> h = 0.1 / 2.0 ** np.arange(4)
    >>> float(np.round(richardson(1.0 + 3.0 * h ** 2 + h ** 4), 12))   # the h -> 0 limit
    1.0
    """
    a = np.array(a, dtype=float)
    for m in range(1, r):
        f = v ** (2 * m)
        a = (a[..., 1:] * f - a[..., :-1]) / (f - 1.0)
    return a[..., 0]


def richardson_hessian(f: Callable[[np.ndarray], Any], x: np.ndarray, *,
                       r: int = RICHARDSON_LEVELS, v: float = RICHARDSON_RATIO) -> np.ndarray:
    """numDeriv's ``hessian`` (``genD``, Richardson extrapolation) of ``f`` at ``x``.

    ``x``: one point ``(k,)`` (``f`` returns a float; the result is
    ``(k, k)``) or rows ``(R, k)`` (``f`` returns ``(R,)``; the result is
    ``(R, k, k)``).  The diagonal from ``f(x +- h e_i)``, the off-diagonal
    elements from ``f(x +- (h_i e_i + h_j e_j))`` less the diagonal's terms;
    ``2 r k^2`` evaluations in all (``2 r k`` for the diagonal, ``r k (k-1)``
    for the pairs) plus ``f(x)``.

    Examples
    --------
    >>> fn = lambda t: t[..., 0] ** 2 + t[..., 0] * t[..., 1] + 3 * t[..., 1] ** 2
    >>> np.round(richardson_hessian(fn, np.array([0.3, -0.2])), 8).tolist()
    [[2.0, 1.0], [1.0, 6.0]]
    >>> richardson_hessian(fn, np.zeros((5, 2))).shape
    (5, 2, 2)
    """
    x = np.asarray(x, dtype=float)
    k = x.shape[-1]
    f0 = f(x)
    h0 = richardson_steps(x)
    H = np.zeros(x.shape[:-1] + (k, k))
    at = _indexer(x.ndim)
    for i in range(k):
        a = np.empty(x.shape[:-1] + (r,))
        h = h0[at(i)]                     # one point: a scalar (cheaper than a 0-d array)
        for m in range(r):
            e = np.zeros(x.shape)
            e[at(i)] = h
            a[at(m)] = (f(x + e) - 2.0 * f0 + f(x - e)) / (h * h)
            h = h / v
        H[at(i, i)] = richardson(a, r, v)
    for i in range(k):
        for j in range(i):
            a = np.empty(x.shape[:-1] + (r,))
            hi, hj = h0[at(i)], h0[at(j)]
            hii, hjj = H[at(i, i)], H[at(j, j)]
            for m in range(r):
                e = np.zeros(x.shape)
                e[at(i)], e[at(j)] = hi, hj
                a[at(m)] = ((f(x + e) - 2.0 * f0 + f(x - e) - hii * hi ** 2
                             - hjj * hj ** 2) / (2.0 * hi * hj))
                hi, hj = hi / v, hj / v
            H[at(i, j)] = H[at(j, i)] = richardson(a, r, v)
    return H


def _indexer(ndim: int) -> Callable[..., tuple[Any, ...]]:
    """Index of the last axes (``at(i)``: ``[..., i]``), as plain integers for one point."""
    if ndim == 1:
        return lambda *ix: ix
    return lambda *ix: (Ellipsis, *ix)


def richardson_jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, *,
                        r: int = RICHARDSON_LEVELS, v: float = RICHARDSON_RATIO) -> np.ndarray:
    """numDeriv's ``jacobian`` (central differences, Richardson extrapolation) of an array ``f``.

    One point ``(k,)``: the result is ``(k, *f(x).shape)``; rows ``(R, k)``
    with ``f`` returning ``(R, ...)``: ``(R, k, ...)``.

    Examples
    --------
    >>> fn = lambda t: np.stack([t[..., 0] * t[..., 1], np.exp(t[..., 0])], axis=-1)
    >>> np.round(richardson_jacobian(fn, np.array([0.0, 2.0])), 8).tolist()
    [[2.0, 1.0], [0.0, 0.0]]
    """
    x = np.asarray(x, dtype=float)
    k = x.shape[-1]
    h0 = richardson_steps(x)
    at = _indexer(x.ndim)
    out = []
    for i in range(k):
        h = h0[at(i)]
        vals = []
        for _ in range(r):
            e = np.zeros(x.shape)
            e[at(i)] = h
            d = f(x + e) - f(x - e)
            vals.append(d / (2.0 * h if x.ndim == 1 else
                             (2.0 * h).reshape(h.shape + (1,) * (d.ndim - h.ndim))))
            h = h / v
        out.append(richardson(np.stack(vals, axis=-1), r, v))
    return np.stack(out, axis=x.ndim - 1)
