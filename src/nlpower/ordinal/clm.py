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
from .cumulative import cumulative_parts
from .thresholds import Thresholds

__all__ = ["clm_newton"]


def clm_newton(link: Link, thr: Thresholds, y: np.ndarray, X: np.ndarray, *, maxit: int = 100,
               tol: float = 1e-12, design: tuple[np.ndarray, ...] | None = None,
               parts_out: list[Any] | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """Maximum-likelihood ``(alpha, beta)`` of a cumulative link model; ``converged``.

    ``y``: category codes ``0 .. K-1``; ``X``: fixed design without intercept;
    ``design``: ``(Ju, Jl, Bu, Bl)`` of ``y`` when the caller has them (a
    :class:`~.model.ClmmModel` does), else built here.  ``parts_out``: a list that
    receives the :class:`~.cumulative.CumulativeParts` at the returned point.
    """
    J = thr.jacobian
    K1 = J.shape[0]
    n = X.shape[0]
    top, bottom = y == K1, y == 0
    cum = np.cumsum(np.bincount(y, minlength=K1 + 1))[:-1] / n
    if design is not None:
        Ju, Jl, Bu, Bl = design
    else:
        Ju, Jl = J[np.minimum(y, K1 - 1)], J[np.maximum(y - 1, 0)]
        Bu = np.where(top[:, None], 0.0, np.hstack([Ju, -X]))
        Bl = np.where(bottom[:, None], 0.0, np.hstack([Jl, -X]))
    # start: thresholds from the marginal cumulative proportions, beta = 0
    cuts = link.linkfun(np.clip(cum, 1e-3, 1 - 1e-3))
    cuts = np.maximum.accumulate(cuts + 1e-3 * np.arange(K1))
    alpha = cuts if thr.kind == "flexible" else thr.alpha_from_theta(cuts)
    beta = np.zeros(X.shape[1])
    a = alpha.size

    def parts(psi: np.ndarray):  # type: ignore[no-untyped-def]
        xb = X @ psi[a:]
        up = np.where(top, np.inf, Ju @ psi[:a] - xb)
        lo = np.where(bottom, -np.inf, Jl @ psi[:a] - xb)
        return cumulative_parts(link, up, lo)

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

