"""The Laplace likelihood and its gradient for one scalar random-effect term.

``rating ~ x + (1 | judge)`` -- ``wine``, ``soup`` and most single-grouping
fits -- has ``H = A' W A + I`` diagonal (one random effect per level), so
the conditional modes are ``L`` independent one-dimensional Newton problems
and every sum over a level is a ``reduceat`` over the observations sorted
by level.  The formulas are those of :mod:`.laplace` and :mod:`.gradient`
with ``A = s z`` (``s`` the SD, ``z`` the term's column) written out for a
diagonal ``H``; this module only spends fewer numpy calls on them (tiny
fits are dominated by per-call overhead).  Checked against the general
path in ``tests/ordinal/test_gradient.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lmm.family import Link
from .cumulative import CumulativeParts, cumulative_parts
from .gradient import _partials

__all__ = ["DiagFactor", "ScalarTerm"]


@dataclass(frozen=True, eq=False)
class DiagFactor:
    """``H`` of a single scalar term: its diagonal (the protocol of :class:`~.structure.HFactor`)."""

    g1_diag: np.ndarray

    @property
    def logdet(self) -> float:
        return float(np.sum(np.log(self.g1_diag)))

    @property
    def Ginv_blocks(self) -> np.ndarray:
        return (1.0 / self.g1_diag)[:, None, None]

    chol2 = None
    dense = True

    def solve(self, r: np.ndarray) -> np.ndarray:
        return r / (self.g1_diag if r.ndim == 1 else self.g1_diag[:, None])


@dataclass(frozen=True, eq=False)
class ScalarInner:
    """Conditional modes of a scalar term (fields as :class:`~.laplace.InnerResult`)."""

    u: np.ndarray
    h: float
    logdet: float
    factor: DiagFactor
    parts: CumulativeParts
    converged: bool
    iterations: int
    a: np.ndarray            # s z: the non-zero of each row of A


class ScalarTerm:
    """Level codes and column ``z`` of the one scalar term, sorted for ``reduceat``."""

    def __init__(self, codes: np.ndarray, z: np.ndarray, L: int):
        self.codes = np.asarray(codes, dtype=np.intp)
        self.z = np.asarray(z, dtype=float)
        self.L = L
        self.order = np.argsort(self.codes, kind="stable")
        counts = np.bincount(self.codes, minlength=L)
        self.starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.empty = counts == 0

    def level_sum(self, v: np.ndarray) -> np.ndarray:
        """Sums of ``v`` (``(n,)`` or ``(n, m)``) over each level's observations."""
        if v.ndim == 1:
            return np.bincount(self.codes, weights=v, minlength=self.L)
        out = np.add.reduceat(v[self.order], self.starts, axis=0)
        if self.empty.any():
            out[self.empty] = 0.0
        return out

    def modes(self, link: Link, up0: np.ndarray, lo0: np.ndarray, s: float, u0: np.ndarray, *,
              tol: float = 1e-15, maxit: int = 60) -> ScalarInner:
        """Newton steps for the ``L`` conditional modes (step halving per level)."""
        a = s * self.z
        u = u0.copy()
        c = self.codes
        ea = a * u[c]
        parts = cumulative_parts(link, up0 - ea, lo0 - ea)
        hl = np.bincount(c, weights=parts.logp, minlength=self.L) - 0.5 * u * u
        converged = False
        it = 0
        for it in range(1, maxit + 1):  # noqa: B007
            d1 = (parts.f_lo - parts.f_up) / parts.p
            g = np.bincount(c, weights=a * d1, minlength=self.L) - u
            H = np.bincount(c, weights=a * a * parts.w, minlength=self.L) + 1.0
            du = g / H
            dec = float(g @ du)
            if not np.isfinite(dec):
                break
            if dec < tol:
                converged = True
                break
            step = np.ones(self.L)
            for _ in range(40):
                un = u + step * du
                ea = a * un[c]
                pn = cumulative_parts(link, up0 - ea, lo0 - ea)
                hn = np.bincount(c, weights=pn.logp, minlength=self.L) - 0.5 * un * un
                bad = hn < hl - 1e-13 * np.abs(hl)
                if not bad.any():
                    break
                step = np.where(bad, 0.5 * step, step)
            else:
                break
            u, parts, hl = un, pn, hn
        else:
            H = np.bincount(c, weights=a * a * parts.w, minlength=self.L) + 1.0
        if not converged:
            H = np.bincount(c, weights=a * a * parts.w, minlength=self.L) + 1.0
        fac = DiagFactor(H)
        return ScalarInner(u, float(np.sum(hl)), float(np.sum(np.log(H))), fac, parts,
                           converged, it, a)

    def gradient(self, link: Link, up: np.ndarray, lo: np.ndarray, Bu: np.ndarray,
                 Bl: np.ndarray, inner: ScalarInner) -> np.ndarray:
        """Gradient of the Laplace log-likelihood over ``(alpha, beta, s)``.

        ``up``/``lo``: the bounds at the modes; ``Bu``/``Bl``: their derivatives in
        ``(alpha, beta)`` at fixed ``u`` (as :func:`~.gradient.laplace_gradient`).
        """
        cp = inner.parts
        r, r_up, r_lo, W_up, W_lo = _partials(link, up, lo, cp)
        c, a, z = self.codes, inner.a, self.z
        Hinv = 1.0 / inner.factor.g1_diag
        v = a * Hinv[c]                        # H^{-1} a_i at the observation's own level
        lev = a * v
        delta = -z * inner.u[c]                # d(upper) / ds at fixed u
        Du = np.column_stack([Bu, delta])
        Dl = np.column_stack([Bl, delta])
        dh = (cp.f_up / cp.p) @ Du - (cp.f_lo / cp.p) @ Dl
        rhs = self.level_sum(a[:, None] * -(r_up[:, None] * Du + r_lo[:, None] * Dl))
        rhs[:, -1] += np.bincount(c, weights=-z * r, minlength=self.L)
        adu = a[:, None] * (rhs * Hinv[:, None])[c]
        dW = W_up[:, None] * (Du - adu) + W_lo[:, None] * (Dl - adu)
        g = dh - 0.5 * (lev @ dW)
        g[-1] -= float(np.sum(cp.w * z * v))   # the trace term, 2 tr(H^{-1} A' W dA) / 2
        return np.asarray(g)
