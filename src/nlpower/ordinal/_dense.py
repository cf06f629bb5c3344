"""Small dense linear algebra through LAPACK directly (a few parameters, many calls).

A small ordinal fit solves, factors and inverts its ``k x k`` Hessian (``k``
about 5-30) a dozen times; ``numpy.linalg`` spends 4-7 us of checks and
error-state handling on each call around a LAPACK call of under 1 us.  These
call LAPACK (scipy's wrappers) and raise :class:`numpy.linalg.LinAlgError`
where ``numpy.linalg`` would.  Checked against ``numpy.linalg`` in
``tests/ordinal/test_small_fit_speed_paths.py``.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack

__all__ = ["cho_solve", "cholesky", "floored", "floored_solve", "inv_and_cond", "solve"]


def cholesky(A: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of symmetric ``A`` (upper triangle 0); ``LinAlgError`` if not PD.

    ``scipy.linalg.cholesky``'s checks cost 20 us around a 1 us factorisation of
    the workers' 10 x 10 Schur complement, factored twice per evaluation.
    """
    c, info = lapack.dpotrf(A, lower=1, clean=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    return np.asarray(c)


def cho_solve(c: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^{-1} b`` from the lower Cholesky factor ``c`` of ``A`` (:func:`cholesky`)."""
    x, info = lapack.dpotrs(c, b, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrs: illegal value in argument {-info}")
    return np.asarray(x)


def solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``A^{-1} b`` by LU (``numpy.linalg.solve``); ``LinAlgError`` for a singular ``A``."""
    _, _, x, info = lapack.dgesv(A, b)
    if info != 0:
        raise np.linalg.LinAlgError("Singular matrix")
    return np.asarray(x)


def floored(H: np.ndarray) -> np.ndarray:
    """The symmetric part of ``H`` with its eigenvalues floored at ``1e-6 max(|eigenvalue|, 1)``.

    A Newton step with it always descends.  Where ``Hs - 1e-6 max(||Hs||_F, 1) I``
    has a Cholesky factor no eigenvalue is below the floor (the Frobenius norm
    bounds the largest |eigenvalue|) and ``Hs`` itself is returned, without
    the eigen-decomposition.
    """
    Hs = 0.5 * (H + H.T)
    bound = 1e-6 * max(float(np.sqrt((Hs * Hs).sum())), 1.0)
    if lapack.dpotrf(Hs - bound * np.eye(Hs.shape[0]), lower=1)[1] == 0:
        return Hs
    ev, V = np.linalg.eigh(Hs)
    floor = 1e-6 * max(float(np.max(np.abs(ev))), 1.0)
    return np.asarray((V * np.maximum(ev, floor)) @ V.T)


def floored_solve(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``floored(H)^{-1} g`` (by its Cholesky factor: the floored matrix is positive definite)."""
    c, x, info = lapack.dposv(floored(H), g, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError("floored Hessian is not positive definite")
    return np.asarray(x)


def inv_and_cond(H: np.ndarray) -> tuple[np.ndarray, float]:
    """The inverse of symmetric ``H`` and its condition number ``ev_max / ev_min``.

    One eigen-decomposition gives both (``ordinal``'s ``cond.H``: ``inf``
    when the smallest eigenvalue is not positive).  ``LinAlgError`` when
    ``H`` is singular (an eigenvalue exactly 0) or not finite.
    """
    if not np.isfinite(H).all():
        raise np.linalg.LinAlgError("Hessian is not finite")
    w, V, info = lapack.dsyevd(H, compute_v=1, lower=1)
    if info != 0 or np.any(w == 0.0):
        raise np.linalg.LinAlgError("Singular matrix")
    return np.asarray((V / w) @ V.T), float(w[-1] / w[0]) if w[0] > 0 else float("inf")
