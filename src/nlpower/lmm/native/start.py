"""Where the native optimiser starts, and where its log-scale descent may stop early.

:func:`moment_start`: a start for ``theta`` from moments of the least-squares
residuals (used where an evaluation is costly, :meth:`.model.NativeModel._scaled_start`).
:func:`descent_zero_mask`: the ``theta`` elements whose fall below
``optimize.DESCENT_ZERO`` ends the log-scale descent (:func:`.optimize.log_descent`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .ridge import find_ridges

MOMENT_FLOOR = 0.05     # the moment start's relative SDs are at least this (off the bound)
MOMENT_ITER = 20        # fixed-point iterations between the residual and the components


def moment_start(X: np.ndarray, y: np.ndarray, layout: Any) -> np.ndarray:
    """A start for ``theta`` from moments of the least-squares residuals (diagonal only).

    For each random-effects column ``z`` of a term with grouping codes
    ``g``: the per-level regression of the residuals ``r`` on ``z``,
    ``b_l = sum(z r) / sum(z^2)`` over level ``l``, has variance about
    ``s_j^2 + sigma^2 mean(1 / sum(z^2))`` (crossed terms add to it; it is a
    start, not an estimate); with ``var(r) = sigma^2 + sum_j s_j^2 mean(z^2)``
    that is a fixed point for ``(sigma^2, s_j^2)``.  ``theta``'s diagonal is
    ``max(s_j / sigma, MOMENT_FLOOR)``, its off-diagonal 0.  One ``O(n)`` pass
    per column; no deviance evaluation.

    Examples
    --------
    >>> from nlpower import CrossedDesign, presets, simulate
    >>> from nlpower.lmm.frame import model_frame
    >>> from nlpower.mixed.layout import theta_layout
    >>> df = simulate(CrossedDesign(30, 200), presets.high_variance(0.1), rng=3)
    >>> spec = model_frame("rating ~ x + (1 | worker) + (1 | item)", df)
    >>> bool(np.all(moment_start(spec.X, spec.y, theta_layout(spec.re_terms)) > 0))
    True
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n, p = X.shape
    r = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    var_r = float(r @ r) / (n - p)
    if not var_r > 0:                    # fitted exactly by X: nothing to apportion
        return layout.start.copy()
    cols = []                            # (theta index, var(b), mean 1/sum z^2, mean z^2)
    for t, off in zip(layout.terms, layout.term_offsets, strict=True):
        Z = np.asarray(t.Z, dtype=float)
        for j in range(t.q):
            z = Z[:, j]
            w = np.bincount(t.codes, z * z, minlength=t.n_levels)
            ok = w > 0
            if ok.sum() < 2:
                continue
            b = np.bincount(t.codes, z * r, minlength=t.n_levels)[ok] / w[ok]
            cols.append((off + j * t.q - j * (j - 1) // 2, float(np.var(b)),
                         float(np.mean(1.0 / w[ok])), float(np.mean(z * z))))
    s2 = var_r
    comps = [0.0] * len(cols)
    for _ in range(MOMENT_ITER):
        comps = [max(v - s2 * iw, 0.0) for _, v, iw, _ in cols]
        s2 = max(var_r - sum(c * z2 for c, (*_, z2) in zip(comps, cols, strict=True)),
                 0.05 * var_r)
    theta = np.where(layout.diag, MOMENT_FLOOR, 0.0)
    for c, (i, *_) in zip(comps, cols, strict=True):
        theta[i] = max(math.sqrt(c / s2), MOMENT_FLOOR)
    return theta


def descent_zero_mask(re_terms: Any, term_slices: tuple[tuple[int, int], ...]) -> np.ndarray:
    """Diagonal ``theta`` elements that L-BFGS-B may take to 0 once they are small.

    On the log scale a variance on its way to 0 only halves per iteration.
    Under the bounds, L-BFGS-B takes it there in a few steps -- where that
    leaves the rest of the model as it was: the SD of a scalar term that is
    not the intercept of an ``(f || g)`` ridge, and the *last* pivot of a
    multi-column term (its zero frees every covariance near the factor,
    ``optimize._trailing_zero``).  Not a ridge's intercept (its variance moves
    into the multi-column term along the flat ridge) nor an earlier pivot
    (the columns after a zero pivot are frozen): there L-BFGS-B crawls, and
    the descent goes on (a sparse 4-system crowd design: stopped at any small
    SD, 93 -> 266 gradient calls to a deviance 2e-6 higher; at scalar terms'
    SDs, a ridge's intercept among them, 104 calls and 7e-6 higher).

    Examples
    --------
    >>> from nlpower.lmm.structure import ReTerm
    >>> codes = np.array([0, 0, 1, 1])
    >>> one = ReTerm("w", codes, ("a", "b"), np.ones((4, 1)), ("(Intercept)",))
    >>> sys = ReTerm("w", codes, ("a", "b"), np.array([[1., 0], [0, 1], [1, 0], [0, 1]]),
    ...              ("systemA", "systemB"))
    >>> descent_zero_mask((one, sys), ((0, 1), (1, 2))).tolist()   # ridge intercept: no
    [False, False, False, True]
    >>> descent_zero_mask((one,), ((0, 1),)).tolist()
    [True]
    """
    size = max((off + q * (q + 1) // 2 for off, q in term_slices), default=0)
    mask = np.zeros(size, dtype=bool)
    ridge_scalars = {id(r.scalar) for r in find_ridges(tuple(re_terms))}
    for t, (off, q) in zip(re_terms, term_slices, strict=True):
        if q == 1 and id(t) not in ridge_scalars:
            mask[off] = True
        elif q > 1:
            mask[off + q * (q + 1) // 2 - 1] = True
    return mask
