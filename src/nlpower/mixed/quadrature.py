"""Adaptive Gauss-Hermite quadrature over the levels of one scalar random-effects term.

With one scalar term the marginal likelihood factorises by level ``l``:
``L_l = int exp(h_l(v)) dv / sqrt(2 pi)`` with ``h_l(v) = log p(y_l | v) -
v^2 / 2``.  Centred at the conditional mode ``u_l`` and scaled by
``s_l = (-h_l''(u_l))^{-1/2}`` (the Laplace scale), the ``K``-point rule
``(z_k, w_k)`` for the standard normal density gives nodes
``v_lk = u_l + s_l z_k`` and::

    log L_l ~ log s_l + logsumexp_k(h_l(v_lk) + log w_k + z_k^2 / 2)

(lme4's ``GHrule`` and ``glmerAGQ``; ``ordinal``'s ``nAGQ > 1``).  ``K = 1``
is the Laplace approximation.  glmer (:mod:`nlpower.glmm.agq`) and clmm
(:mod:`nlpower.ordinal.agq`) evaluate ``h_l`` at the nodes their own way and
combine them here.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.polynomial import hermite_e

__all__ = ["adaptive_nodes", "gh_rule", "level_logliks"]


@functools.lru_cache(maxsize=32)
def _rule(k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    z, w = hermite_e.hermegauss(k)
    w = w / w.sum()
    logw = np.log(w) + 0.5 * z * z
    for a in (z, w, logw):
        a.flags.writeable = False
    return z, w, logw


def gh_rule(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights (summing to 1) of the ``k``-point rule for the standard normal.

    Read-only arrays, computed once per ``k``.

    Examples
    --------
    >>> z, w = gh_rule(3)
    >>> np.round(z, 6).tolist(), round(float(w.sum()), 12)
    ([-1.732051, 0.0, 1.732051], 1.0)
    """
    z, w, _ = _rule(k)
    return z, w


def adaptive_nodes(u: np.ndarray, s: np.ndarray, k: int) -> np.ndarray:
    """The nodes ``u_l + s_l z_k`` (shape ``u.shape + (k,)``) at modes ``u`` and scales ``s``.

    Examples
    --------
    >>> adaptive_nodes(np.array([0.0, 1.0]), np.array([1.0, 0.5]), 3).round(4).tolist()
    [[-1.7321, 0.0, 1.7321], [0.134, 1.0, 1.866]]
    """
    z = _rule(k)[0]
    return np.asarray(u)[..., None] + np.asarray(s)[..., None] * z


def level_logliks(h: np.ndarray, s: np.ndarray, *, weights: bool = False
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """Each level's ``log L_l`` from ``h_l`` at its nodes (``(..., L, K)``) and scales ``s``.

    Returns ``(log L, pi)``, ``pi`` the nodes' posterior weights (softmax of
    ``h + log w + z^2 / 2`` over the nodes, for gradients) with ``weights``,
    else ``None``.

    Examples
    --------
    A Gaussian ``h`` is integrated exactly: ``h(v) = -v^2`` gives
    ``int exp(-v^2) dv / sqrt(2 pi) = 1 / sqrt(2)``.

    >>> s = np.array([np.sqrt(0.5)])
    >>> v = adaptive_nodes(np.zeros(1), s, 5)
    >>> float(np.exp(level_logliks(-v * v, s)[0][0])).__round__(12)
    0.707106781187
    """
    t = h + _rule(h.shape[-1])[2]
    mx = t.max(axis=-1, keepdims=True)
    e = np.exp(t - mx)
    tot = e.sum(axis=-1, keepdims=True)
    ll = (mx + np.log(tot))[..., 0] + np.log(s)
    return ll, (e / tot if weights else None)
