"""Analytic gradient of the Laplace log-likelihood of a cumulative link mixed model.

``l(phi) = h(u*, phi) - log det H(u*, phi) / 2`` with ``H = A' W A + I``.
For a parameter ``phi`` (threshold, fixed effect or an element of a
relative factor ``Lambda``) let ``d_up``, ``d_lo`` be the changes of
``upper = theta_y - eta`` and ``lower`` at fixed ``u``.  Then (envelope
theorem for ``h``; implicit differentiation of ``A' d1 - u = 0`` for the
modes)::

    dh        = sum r_i d_i                      (r = (f_u - f_l)/p, d = d_up = d_lo
                                                  for RE parameters; f_u d_up - f_l d_lo)/p)
    du*       = H^{-1} [ dA' d1 - A' (r_up d_up + r_lo d_lo) ]
    dW_i      = W_up (d_up - A du*)_i + W_lo (d_lo - A du*)_i
    dlogdet H = sum_i lev_i dW_i + 2 tr(H^{-1} A' W dA)

with ``lev_i = a_i' H^{-1} a_i`` and the trace from the same selected
elements of ``H^{-1}`` (the blocks on the sparsity pattern of ``A``, from the
blocked factor: :meth:`nlpower.mixed.blocked.BlockedFactor.selected`).  ``r_up``,
``W_up`` ... are partial derivatives in ``upper``/``lower``; they need the
density's second derivative ``f''``.  Checked against central differences
in ``tests/ordinal/test_gradient.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..lmm.family import Link
from .cumulative import CumulativeParts, density_d2
from .structure import ReStructure

if TYPE_CHECKING:
    from .laplace import InnerResult

__all__ = ["laplace_gradient", "selected_inverse_rows"]


def selected_inverse_rows(rs: ReStructure, inner: InnerResult) -> list[np.ndarray]:
    """``v_ib``: the entries of ``H^{-1} a_i`` at observation ``i``'s own random effects.

    One ``(n, q_b)`` array per block.
    """
    v = inner.factor.selected(rs.Avals)
    if len(rs.blocks) == 1:
        return [v]
    out, start = [], 0
    for b in rs.blocks:
        out.append(v[:, start:start + b.q])
        start += b.q
    return out


def _partials(link: Link, up: np.ndarray, lo: np.ndarray, cp: CumulativeParts
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    p = cp.p
    r = (cp.f_up - cp.f_lo) / p
    s = (cp.df_up - cp.df_lo) / p
    ddu, ddl = density_d2(link, up), density_d2(link, lo)
    r_up = cp.df_up / p - r * cp.f_up / p
    r_lo = -cp.df_lo / p + r * cp.f_lo / p
    s_up = ddu / p - s * cp.f_up / p
    s_lo = -ddl / p + s * cp.f_lo / p
    return r, r_up, r_lo, 2.0 * r * r_up - s_up, 2.0 * r * r_lo - s_lo


def laplace_gradient(rs: ReStructure, link: Link, up: np.ndarray, lo: np.ndarray,
                     Bu: np.ndarray, Bl: np.ndarray, inner: InnerResult,
                     theta_index: list[tuple[int, int, int]], *, want_du: bool = False
                     ) -> Any:
    """Gradient of the Laplace log-likelihood over ``(alpha, beta, theta)``.

    ``up``/``lo``: the bounds at the modes; ``Bu``/``Bl``: ``d up / d psi`` and ``d lo /
    d psi`` for ``psi = (alpha, beta)`` (``(n, m)``, zero rows at open ends);
    ``theta_index``: for each ``theta`` element its (block, row, column) in ``Lambda_b``.
    All parameters at once: one multi-column solve with ``H`` and two sparse products.
    ``want_du``: also return ``d u* / d (alpha, beta, theta)`` (``(n_u, k)``; the
    conditional modes' first-order change, a predictor for the next Newton start).
    """
    cp = inner.parts
    r, r_up, r_lo, W_up, W_lo = _partials(link, up, lo, cp)
    w = cp.w
    d1 = -r
    v = selected_inverse_rows(rs, inner)
    lev = np.einsum("ij,ij->i", rs.Avals, np.concatenate(v, axis=1))
    ub = rs.split(inner.u)
    m = Bu.shape[1]
    k = len(theta_index)
    # changes of (upper, lower) at fixed u: Bu/Bl for (alpha, beta); -dA u for theta
    delta = np.empty((rs.n, k))
    dAt_d1 = np.zeros((rs.n_u, k))
    trace = np.zeros(m + k)
    for t, (b, row, col) in enumerate(theta_index):
        blk = rs.blocks[b]
        z = blk.Z[:, row]
        delta[:, t] = -z * ub[b][blk.codes, col]
        pos = rs.offsets[b] + np.arange(blk.L) * blk.q + col
        dAt_d1[pos, t] = np.bincount(blk.codes, weights=z * d1, minlength=blk.L)
        trace[m + t] = 2.0 * float(np.sum(w * z * v[b][:, col]))
    Du = np.hstack([Bu, delta])
    Dl = np.hstack([Bl, delta])
    dh = (cp.f_up / cp.p) @ Du - (cp.f_lo / cp.p) @ Dl
    rhs = rs.At(-(r_up[:, None] * Du + r_lo[:, None] * Dl))
    rhs[:, m:] += dAt_d1
    du = inner.factor.solve(rhs)
    adu = rs.eta(du)
    dW = W_up[:, None] * (Du - adu) + W_lo[:, None] * (Dl - adu)
    g = np.asarray(dh - 0.5 * (lev @ dW + trace))
    return (g, du) if want_du else g
