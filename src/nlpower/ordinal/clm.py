"""Cumulative link model without random effects (``ordinal::clm``) by Newton steps.

The log-likelihood is concave in ``(alpha, beta)`` for the log-concave
links; each observation contributes through ``upper = J[y] alpha - x b``
and ``lower = J[y-1] alpha - x b``, so with ``B_u = [J[y], -x]`` and
``B_l = [J[y-1], -x]`` (rows zero at the open ends)::

    grad = sum (f_u B_u - f_l B_l) / p
    hess = sum (f'_u B_u B_u' - f'_l B_l B_l') / p - grad_i grad_i'

Used for models without random terms and as the start of ``clmm``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..lmm.family import Link
from ._dense import solve
from .cumulative import bounds_parts
from .thresholds import Thresholds

__all__ = ["bound_derivatives", "clm_newton", "stacked_bounds", "stacked_design"]

#: the open ends' bounds: an upper bound of +inf (top category), a lower one of -inf (bottom)
_OPEN = np.array([[np.inf], [-np.inf]])


def stacked_design(J: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(JJ, open)`` of category codes ``y``: the bounds as a linear map of ``alpha``.

    ``JJ[0]``/``JJ[1]`` hold the rows of the threshold Jacobian ``J`` for each
    observation's upper/lower bound (``(2, n, n_alpha)``); ``open`` marks the
    infinite ones (``(2, n)``: the top category's upper, the bottom's lower).
    """
    K1 = J.shape[0]
    rows = np.stack((y, y - 1))               # the thresholds above and below each category
    open_ = (rows == K1) | (rows < 0)
    return J.take(np.clip(rows, 0, K1 - 1), axis=0), open_


def bound_derivatives(JJ: np.ndarray, open_: np.ndarray,
                      X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Bu, Bl)``: ``d upper / d (alpha, beta)`` and ``d lower / d (alpha, beta)``.

    Rows ``[J row, -x]``, zero at the open ends (``(n, n_alpha + p)`` each).
    """
    BB = np.concatenate((JJ, np.broadcast_to(-X, (2, *X.shape))), axis=2)
    Bu, Bl = np.where(open_[:, :, None], 0.0, BB)
    return Bu, Bl


def stacked_bounds(JJ: np.ndarray, open_: np.ndarray, alpha: np.ndarray,
                   xb: np.ndarray) -> np.ndarray:
    """``[upper, lower] = J alpha - x'beta`` (``+-inf`` at the open ends), stacked.

    ``alpha``: ``(n_alpha,)`` with ``xb`` ``(n,)`` gives ``(2, n)``; ``(m, n_alpha)``
    with ``(m, n)`` (``m`` parameter points) gives ``(2, m, n)``.
    """
    if alpha.ndim == 1:
        return np.where(open_, _OPEN, JJ @ alpha - xb)
    return np.where(open_[:, None, :], _OPEN[:, :, None], alpha @ JJ.transpose(0, 2, 1) - xb)


def clm_newton(link: Link, thr: Thresholds, y: np.ndarray, X: np.ndarray, *, maxit: int = 100,
               tol: float = 1e-12, design: tuple[np.ndarray, ...] | None = None,
               parts_out: list[Any] | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """Maximum-likelihood ``(alpha, beta)`` of a cumulative link model; ``converged``.

    ``y``: category codes ``0 .. K-1``; ``X``: fixed design without intercept;
    ``design``: ``(JJ, open, Bu, Bl)`` of ``y`` (:func:`stacked_design`; ``Bu``/``Bl``
    the bounds' derivatives in ``(alpha, beta)``) when the caller has them (a
    :class:`~.model.ClmmModel` does), else built here.  ``parts_out``: a list that
    receives the :class:`~.cumulative.CumulativeParts` at the returned point.
    """
    J = thr.jacobian
    K1 = J.shape[0]
    n = X.shape[0]
    cum = np.cumsum(np.bincount(y, minlength=K1 + 1))[:-1] / n
    if design is not None:
        JJ, open_, Bu, Bl = design
    else:
        JJ, open_ = stacked_design(J, y)
        Bu, Bl = bound_derivatives(JJ, open_, X)
    # start: thresholds from the marginal cumulative proportions, beta = 0
    cuts = link.linkfun(np.clip(cum, 1e-3, 1 - 1e-3))
    cuts = np.maximum.accumulate(cuts + 1e-3 * np.arange(K1))
    alpha = cuts if thr.kind == "flexible" else thr.alpha_from_theta(cuts)
    beta = np.zeros(X.shape[1])
    a = alpha.size

    def parts(psi: np.ndarray):  # type: ignore[no-untyped-def]
        return bounds_parts(link, stacked_bounds(JJ, open_, psi[:a], X @ psi[a:]))

    psi = np.concatenate([alpha, beta])
    cp = parts(psi)
    ll = float(np.sum(cp.logp))
    for _ in range(maxit):
        gi = (cp.f_up[:, None] * Bu - cp.f_lo[:, None] * Bl) / cp.p[:, None]
        g = gi.sum(axis=0)
        H = ((Bu * (cp.df_up / cp.p)[:, None]).T @ Bu - (Bl * (cp.df_lo / cp.p)[:, None]).T @ Bl
             - gi.T @ gi)
        try:
            step = solve(-H, g)
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(-H, g, rcond=None)[0]
        dec = float(g @ step)
        if dec < tol:
            if parts_out is not None:
                parts_out.append(cp)
            return psi[:a], psi[a:], True
        t = 1.0
        for _ in range(40):
            new = psi + t * step
            th = thr.theta(new[:a])
            if np.all(th[1:] > th[:-1]):
                cn = parts(new)
                lln = float(np.sum(cn.logp))
                if lln >= ll - 1e-12 * abs(ll):
                    break
            t *= 0.5
        else:
            break
        psi, cp, ll = new, cn, lln
    if parts_out is not None:
        parts_out.append(cp)
    return psi[:a], psi[a:], False

