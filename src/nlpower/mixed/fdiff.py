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
  elsewhere (e.g. in one batch).

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

__all__ = ["DERIV_STEP", "cold", "forward_hessian", "gradient_hessian", "value_gradient",
           "value_hessian"]

#: lme4's ``deriv12`` step
DERIV_STEP = 1e-4

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


def forward_hessian(G: np.ndarray, g: np.ndarray, h: float = DERIV_STEP) -> np.ndarray:
    """The symmetrised forward-difference Hessian from gradients ``G[j]`` at ``x + h e_j``.

    Examples
    --------
    >>> G = np.array([[2.1, 1.0], [1.2, 6.0]]); g = np.array([2.0, 0.4])
    >>> forward_hessian(G, g, 0.1).round(6).tolist()
    [[1.0, -1.0], [-1.0, 56.0]]
    """
    H = (np.asarray(G) - np.asarray(g, dtype=float)).T / h
    return np.asarray(0.5 * (H + H.T))


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
