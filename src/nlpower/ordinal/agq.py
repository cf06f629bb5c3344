"""Adaptive Gauss-Hermite likelihood of one scalar random-effect term, and its gradient.

With one scalar term ``(1 | judge)`` the likelihood factorises over the
levels ``l``: ``L_l = int exp(h_l(v)) dv / sqrt(2 pi)`` with
``h_l(v) = sum_{i in l} log p_i(a_i v) - v^2 / 2`` (``a_i = s z_i``, ``s`` the
SD).  ``nAGQ = K`` nodes ``z_k`` of the standard normal rule, weights ``w_k``, are
centred at the conditional mode ``u_l`` and scaled by ``s_l = H_l^{-1/2}`` (``H_l`` the
curvature ``-h_l''(u_l)``): nodes ``v_lk = u_l + s_l z_k`` and::

    log L_l ~ log s_l + logsumexp_k(h_l(v_lk) + log w_k + z_k^2 / 2)

(``ordinal``'s ``nAGQ > 1``; the rule and the sum are
:mod:`nlpower.mixed.quadrature`, shared with glmer).  Its gradient in ``psi = (alpha, beta, s)``
follows every dependence: ``h_l`` at fixed nodes, the nodes through the
mode (``du_l / dpsi = H_l^{-1} dg_l / dpsi``, implicit differentiation of
the mode's equation as in the Laplace gradient) and through the scale
(``ds_l = -s_l^3 dH_l / 2``, with ``dH_l`` the Laplace gradient's
derivative of the curvature), and the ``log s_l`` term.  With ``pi_lk``
the softmax weights of the nodes and ``h'_lk = h_l'(v_lk)``::

    d log L_l = sum_k pi_lk (dh_l(v_lk) + h'_lk (du_l + z_k ds_l)) + ds_l / s_l

Checked against central differences of the log-likelihood in
``tests/ordinal/test_small_fit_speed_paths.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..lmm.family import Link
from ..mixed.blocked import BlockedFactor
from ..mixed.quadrature import adaptive_nodes, gh_rule, level_logliks
from .cumulative import CumulativeParts, bounds_parts, cumulative_parts, logit_gap

if TYPE_CHECKING:
    from .laplace import InnerResult
    from .scalar import ScalarTerm
    from .structure import ReStructure

__all__ = ["agq_gradient", "agq_loglik", "batch_agq", "batch_agq_nll_grad"]

def _level_node_sums(codes: np.ndarray, v: np.ndarray, L: int) -> np.ndarray:
    """Sums over each level of ``v`` (``(n, K)``): ``(L, K)``."""
    K = v.shape[1]
    idx = (codes[:, None] * K + np.arange(K)).ravel()
    return np.bincount(idx, weights=v.ravel(), minlength=L * K).reshape(L, K)


def _diag(inner: InnerResult) -> np.ndarray:
    """The diagonal of ``H`` of one scalar term at the modes (its factor's squares)."""
    L1 = inner.factor.L1 if isinstance(inner.factor, BlockedFactor) else np.zeros((0, 1, 1))
    return np.asarray(L1[:, 0, 0] ** 2)


def _nodes(inner: InnerResult, n_agq: int, L: int) -> tuple[np.ndarray, ...]:
    g = _diag(inner)
    if g.size != L:
        raise ValueError("adaptive Gauss-Hermite needs a single scalar random-effect term")
    s = 1.0 / np.sqrt(g)                                  # (L,)
    return gh_rule(n_agq)[0], s, adaptive_nodes(inner.u, s, n_agq)   # nodes (L, K)


def agq_loglik(rs: ReStructure, link: Link, up0: np.ndarray, lo0: np.ndarray,
               inner: InnerResult, n_agq: int) -> float:
    """Adaptive Gauss-Hermite log-likelihood for one scalar random-effect term."""
    blk = rs.blocks[0]
    _, s, nodes = _nodes(inner, n_agq, blk.L)
    zl = rs._ZL[0][:, 0]
    eta = zl[:, None] * nodes[blk.codes]                  # (n, K)
    parts = cumulative_parts(link, up0[:, None] - eta, lo0[:, None] - eta, derivatives=False)
    h = _level_node_sums(blk.codes, parts.logp, blk.L) - 0.5 * nodes ** 2
    return float(np.sum(level_logliks(h, s)[0]))


def agq_gradient(rs: ReStructure, link: Link, up0: np.ndarray, lo0: np.ndarray,
                 Bu: np.ndarray, Bl: np.ndarray, inner: InnerResult, n_agq: int) -> np.ndarray:
    """Gradient of :func:`agq_loglik` over ``(alpha, beta, s)`` (the module docstring).

    ``up0``/``lo0``: the bounds without the random effect; ``Bu``/``Bl``: their
    derivatives in ``(alpha, beta)`` (``(n, k - 1)``, zero rows at open ends);
    ``inner``: the conditional modes at these parameters.
    """
    from .gradient import _partials  # gradient imports laplace, which imports this module

    blk = rs.blocks[0]
    c, L = blk.codes, blk.L
    zl = rs._ZL[0][:, 0]                                  # a = s z: the term's column, scaled
    z = blk.Z[:, 0]
    x, s, nodes = _nodes(inner, n_agq, L)
    u = inner.u
    H = _diag(inner)
    # -- the mode and the curvature as functions of psi (as in the Laplace gradient)
    ea = zl * u[c]
    up, lo = up0 - ea, lo0 - ea
    cp = inner.parts
    r, r_up, r_lo, W_up, W_lo = _partials(link, up, lo, cp)
    delta = -z * u[c]                                     # d(upper) / ds at fixed u
    Du = np.column_stack([Bu, delta])
    Dl = np.column_stack([Bl, delta])
    rhs = _level_node_sums(c, zl[:, None] * -(r_up[:, None] * Du + r_lo[:, None] * Dl), L)
    rhs[:, -1] += np.bincount(c, weights=-z * r, minlength=L)
    du = rhs / H[:, None]                                 # (L, k): d u_l / d psi
    adu = zl[:, None] * du[c]
    dW = W_up[:, None] * (Du - adu) + W_lo[:, None] * (Dl - adu)
    dH = _level_node_sums(c, (zl * zl)[:, None] * dW, L)
    dH[:, -1] += np.bincount(c, weights=2.0 * zl * z * cp.w, minlength=L)
    ds = -0.5 * (s ** 3)[:, None] * dH                    # (L, k): d s_l / d psi
    # -- the integrand at the nodes
    eta = zl[:, None] * nodes[c]                          # (n, K)
    parts = cumulative_parts(link, up0[:, None] - eta, lo0[:, None] - eta)
    h = _level_node_sums(c, parts.logp, L) - 0.5 * nodes ** 2
    pi = level_logliks(h, s, weights=True)[1]             # (L, K): the nodes' weights
    assert pi is not None
    d1 = (parts.f_lo - parts.f_up) / parts.p              # d log p / d eta at the nodes
    hprime = _level_node_sums(c, zl[:, None] * d1, L) - nodes   # h_l'(v_lk)
    pic = pi[c]                                           # (n, K): each observation's level
    g = np.empty(Bu.shape[1] + 1)
    g[:-1] = ((pic * parts.f_up / parts.p).sum(axis=1) @ Bu
              - (pic * parts.f_lo / parts.p).sum(axis=1) @ Bl)
    g[-1] = float(np.sum(pic * d1 * (z[:, None] * nodes[c])))   # d eta / ds = z v at fixed v
    A = np.sum(pi * hprime, axis=1)                       # (L,)
    B = np.sum(pi * hprime * x[None, :], axis=1)
    g += A @ du + (B + 1.0 / s) @ ds
    return g


def batch_agq(term: ScalarTerm, link: Link, B: np.ndarray, a: np.ndarray,
              u: np.ndarray, H: np.ndarray, cp: CumulativeParts, Bu: np.ndarray,
              Bl: np.ndarray, n_agq: int, *, gradient: bool = True
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """``-loglik`` (adaptive Gauss-Hermite) and its gradient at ``m`` points at once.

    The quantities of :func:`agq_loglik` and :func:`agq_gradient` from a
    scalar term's batched modes (:func:`~.scalar.batch_modes`): ``B`` the
    bounds ``[upper, lower]`` without the random effect (``(2, m, n)``) and
    ``a = s z`` (``(m, n)``), the
    modes ``u`` and the curvature ``H`` there (``(m, L)``), ``cp`` the parts
    at the modes.  Returns ``(f, grad)``: ``(m,)`` and ``(m, k)`` (``None``
    without ``gradient``).
    """
    x = gh_rule(n_agq)[0]
    c, z = term.codes, term.z
    sc = 1.0 / np.sqrt(H)                                  # (m, L)
    nodes = adaptive_nodes(u, sc, n_agq)                   # (m, L, K)
    nc = nodes.take(c, axis=1)                             # (m, n, K)
    eta = a[:, :, None] * nc
    B4 = B[..., None]                                      # (2, m, n, 1): [upper, lower]
    gap = logit_gap(B4) if link.name == "logit" else None  # the same at every node
    parts = bounds_parts(link, B4 - eta, derivatives=gradient, gap=gap)
    ll, pi = level_logliks(term.node_sums(parts.logp) - 0.5 * nodes * nodes, sc,
                           weights=gradient)
    f = -ll.sum(axis=1)
    if pi is None:
        return f, None
    from .scalar import _partials_scaled  # scalar imports gradient, which imports laplace

    m, n = a.shape
    # -- the integrand at the nodes (fixed nodes)
    fu_n = parts.f_up / parts.p
    fl_n = parts.f_lo / parts.p
    d1 = fl_n - fu_n                                      # d log p / d eta at the nodes
    pic = pi.take(c, axis=1)                              # (m, n, K): each observation's level
    g = np.empty((m, Bu.shape[1] + 1))
    g[:, :-1] = (pic * fu_n).sum(axis=2) @ Bu - (pic * fl_n).sum(axis=2) @ Bl
    g[:, -1] = (pic * d1 * nc).sum(axis=2) @ z            # d eta / ds = z v at fixed v
    ph = pi * (term.node_sums(a[:, :, None] * d1) - nodes)  # pi_lk h_l'(v_lk)
    A = ph.sum(axis=2)                                    # coefficient of d u_l
    gam = -0.5 * sc ** 3 * ((ph * x).sum(axis=2) + 1.0 / sc)   # of d H_l
    # -- through the mode and the curvature (agq_gradient's du = rhs / H and dH, contracted
    # with their coefficients before they are expanded: per-observation weights times B)
    uc = u.take(c, axis=1)
    bnd = B - a * uc                                      # the bounds at the modes
    r, r_up, r_lo, W_up, W_lo = _partials_scaled(link, bnd[0], bnd[1], cp)[2:]
    a2 = a * a
    kap = (A - gam * term.sums(a2 * a * (W_up + W_lo))) / H     # coefficient of rhs_l
    kc, gc = kap.take(c, axis=1), gam.take(c, axis=1)
    cu = gc * a2 * W_up - kc * a * r_up
    cl = gc * a2 * W_lo - kc * a * r_lo
    g[:, :-1] += cu @ Bu + cl @ Bl
    g[:, -1] += (2.0 * gc * a * cp.w - (cu + cl) * uc - kc * r) @ z
    return f, -g


def batch_agq_nll_grad(model: Any, xs: np.ndarray, *, u0: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """:func:`~.scalar.batch_nll_grad` for ``nAGQ > 1``: ``-loglik``, gradient, modes at ``xs``."""
    from .scalar import batch_modes

    res = batch_modes(model, xs, u0=u0)
    if res is None:
        return None
    B, a, u, H, _, parts, _, _ = res
    f, g = batch_agq(model._scalar, model.link, B, a, u, H, parts, model.Bu, model.Bl,
                     model.nAGQ)
    assert g is not None
    if not (np.isfinite(f).all() and np.isfinite(g).all()):
        return None
    return f, g, u


def scalar_agq(model: Any, inner: Any, B: np.ndarray, *,
               gradient: bool = False) -> tuple[float, Any]:
    """``-loglik`` (and its gradient) at one point from a scalar term's modes ``inner``.

    ``B``: the bounds ``[upper, lower]`` without the random effect (``(2, n)``).
    """
    f, g = batch_agq(model._scalar, model.link, B[:, None], inner.a[None],
                     inner.u[None], inner.H[None],
                     CumulativeParts(*(v[None] for v in inner.parts)), model.Bu,
                     model.Bl, model.nAGQ, gradient=gradient)
    return float(f[0]), None if g is None else g[0]
