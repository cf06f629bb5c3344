"""The Laplace likelihood and its gradient for one scalar random-effect term.

``rating ~ x + (1 | judge)`` -- ``wine``, ``soup`` and most single-grouping
fits -- has ``H = A' W A + I`` diagonal (one random effect per level), so
the conditional modes are ``L`` independent one-dimensional Newton problems
and every sum over a level is a ``bincount``.  The formulas are those of
:mod:`.laplace` and :mod:`.gradient` with ``A = s z`` (``s`` the SD, ``z``
the term's column) written out for a diagonal ``H``; this module only
spends fewer numpy calls on them (tiny fits are dominated by per-call
overhead), and evaluates many parameter points at once
(:func:`batch_nll_grad`: the points of a Hessian by differences).  Checked
against the general path in ``tests/ordinal/test_gradient.py`` and
``tests/ordinal/test_small_fit_speed_paths.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..lmm.family import Link
from ..mixed.modes import level_newton
from .clm import stacked_bounds
from .cumulative import CumulativeParts, bounds_parts, logit_gap
from .gradient import _partials

__all__ = ["ScalarTerm", "batch_modes", "batch_nll_grad", "laplace_grad"]


@dataclass(frozen=True, eq=False)
class ScalarInner:
    """Conditional modes of a scalar term (fields as :class:`~.laplace.InnerResult`).

    ``H``: the diagonal of ``H = A' W A + I`` at the modes (one random effect
    per level: the factor is its square root, never formed).
    """

    u: np.ndarray
    h: float
    logdet: float
    H: np.ndarray
    parts: CumulativeParts
    converged: bool
    iterations: int
    a: np.ndarray            # s z: the non-zero of each row of A


class ScalarTerm:
    """Level codes and column ``z`` of the one scalar term."""

    def __init__(self, codes: np.ndarray, z: np.ndarray, L: int):
        self.codes = np.asarray(codes, dtype=np.intp)
        self.z = np.asarray(z, dtype=float)
        self.L = L
        self._flat: dict[Any, np.ndarray] = {}

    def sums(self, v: np.ndarray) -> np.ndarray:
        """Sums of ``v`` (``(m, n)``: ``m`` points) over each level's observations: ``(m, L)``."""
        m = v.shape[0]
        if m == 1:
            return np.bincount(self.codes, weights=v[0], minlength=self.L)[None]
        flat = self._flat.get(m)
        if flat is None:              # level codes of point j shifted by j L, flattened
            flat = (self.codes + self.L * np.arange(m)[:, None]).ravel()
            self._flat[m] = flat
        return np.bincount(flat, weights=v.ravel(), minlength=m * self.L).reshape(m, self.L)

    def node_sums(self, v: np.ndarray) -> np.ndarray:
        """Sums of ``v`` (``(m, n, K)``: ``K`` quadrature nodes) over each level: ``(m, L, K)``."""
        m, n, K = v.shape
        flat = self._flat.get((m, K))
        if flat is None:              # (point, level, node) of each value, flattened
            flat = ((np.arange(m)[:, None, None] * self.L + self.codes[None, :, None]) * K
                    + np.arange(K)).ravel()
            self._flat[(m, K)] = flat
        return np.bincount(flat, weights=v.ravel(), minlength=m * self.L * K).reshape(m, self.L, K)

    def modes(self, link: Link, B: np.ndarray, s: float, u0: np.ndarray, *,
              tol: float = 1e-15, maxit: int = 60) -> ScalarInner:
        """Newton steps for the ``L`` conditional modes, each level's halved on its own.

        ``B``: ``[upper, lower]`` without the random effect (``(2, n)``); the
        loop is :func:`nlpower.mixed.modes.level_newton`'s.
        """
        a = s * self.z
        a2 = a * a
        c, L = self.codes, self.L
        gap = logit_gap(B) if link.name == "logit" else None
        neg_a = -a

        def evaluate(u: np.ndarray) -> tuple[np.ndarray, CumulativeParts]:
            parts = bounds_parts(link, B - a * u.take(c), gap=gap)
            return 0.5 * u * u - np.bincount(c, weights=parts.logp, minlength=L), parts   # -h_l

        def direction(u: np.ndarray, parts: CumulativeParts) -> tuple[np.ndarray, bool] | None:
            r = (parts.f_up - parts.f_lo) / parts.p      # -d log p / d eta; w = r^2 - g2 / p
            g = np.bincount(c, weights=neg_a * r, minlength=L) - u
            w = np.maximum(r * r - (parts.df_up - parts.df_lo) / parts.p, 0.0)
            H = np.bincount(c, weights=a2 * w, minlength=L) + 1.0
            du = g / H
            dec = float(g @ du)
            if not np.isfinite(dec):
                return None
            held[0] = H
            return du, dec < tol

        held: list[np.ndarray] = [np.empty(0)]
        u0 = u0.copy()
        f0, parts0 = evaluate(u0)
        run = level_newton(u0, f0, parts0, direction, evaluate, maxit=maxit, max_halvings=40,
                           slack=1e-13)
        converged = run.status == "converged"
        parts = run.state
        H = held[0] if converged else np.bincount(c, weights=a2 * parts.w, minlength=L) + 1.0
        return ScalarInner(run.x, -float(run.values.sum()), float(np.log(H).sum()), H, parts,
                           converged, run.iterations, a)

    def gradient(self, link: Link, up: np.ndarray, lo: np.ndarray, Bu: np.ndarray,
                 Bl: np.ndarray, inner: ScalarInner) -> np.ndarray:
        """Gradient of the Laplace log-likelihood over ``(alpha, beta, s)``.

        ``up``/``lo``: the bounds at the modes; ``Bu``/``Bl``: their derivatives in
        ``(alpha, beta)`` at fixed ``u`` (as :func:`~.gradient.laplace_gradient`).
        """
        return laplace_grad(self, link, up[None], lo[None], inner.parts, inner.a[None],
                            inner.u[None], inner.H[None], Bu, Bl)[0]


def _partials_scaled(link: Link, up: np.ndarray, lo: np.ndarray, cp: CumulativeParts
                     ) -> tuple[np.ndarray, ...]:
    """``f_up / p``, ``f_lo / p`` and :func:`~.gradient._partials` (fewer calls for the logit).

    The logistic density's second derivative is ``f (1 - 6 f)`` (``f = F (1 - F)``,
    ``f' = f (1 - 2 F)``), zero at the open ends as ``f`` is.
    """
    if link.name != "logit":
        p = cp.p
        return (cp.f_up / p, cp.f_lo / p, *_partials(link, up, lo, cp))
    p = cp.p
    fu_p, fl_p = cp.f_up / p, cp.f_lo / p
    dfu_p, dfl_p = cp.df_up / p, cp.df_lo / p
    r = fu_p - fl_p
    s = dfu_p - dfl_p
    r_up = dfu_p - r * fu_p
    r_lo = r * fl_p - dfl_p
    s_up = fu_p * (1.0 - 6.0 * cp.f_up) - s * fu_p
    s_lo = s * fl_p - fl_p * (1.0 - 6.0 * cp.f_lo)
    return fu_p, fl_p, r, r_up, r_lo, 2.0 * r * r_up - s_up, 2.0 * r * r_lo - s_lo


def laplace_grad(term: ScalarTerm, link: Link, up: np.ndarray, lo: np.ndarray,
                 parts: CumulativeParts, a: np.ndarray, u: np.ndarray, H: np.ndarray,
                 Bu: np.ndarray, Bl: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
    """The Laplace gradient over ``(alpha, beta, s)`` at ``m`` points at once (``(m, k)``).

    ``up``, ``lo``, ``a`` (``s z``) and ``parts``: ``(m, n)`` at the modes ``u``
    (``(m, L)``), ``H`` the diagonal of ``A' W A + I`` there (``(m, L)``);
    ``Bu``/``Bl``: ``d up / d (alpha, beta)`` at fixed ``u`` (``(n, k - 1)``);
    ``w``: ``parts.w`` when the caller has it.

    :func:`~.gradient.laplace_gradient` with ``H`` diagonal and the
    derivative of the modes contracted before it is expanded: with
    ``lev = a^2 / H[c]``, ``R = H^{-1} sum_level(lev (W_up + W_lo) a)`` and
    ``q = R[c] a``, the gradient is ``cu' D_up + cl' D_lo`` minus the SD's
    trace terms, where ``cu = f_up/p - (lev W_up + q r_up)/2``, ``cl = -f_lo/p
    - (lev W_lo + q r_lo)/2`` and ``D = [B, -z u[c]]`` -- per-observation
    arrays and two products with ``B``, no ``(n, k)`` temporaries per point.
    """
    c, z = term.codes, term.z
    fu_p, fl_p, r, r_up, r_lo, W_up, W_lo = _partials_scaled(link, up, lo, parts)
    Hinv = 1.0 / H
    v = a * Hinv.take(c, axis=1)                 # H^{-1} a_i at the observation's own level
    lev = a * v
    R = Hinv * term.sums(lev * (W_up + W_lo) * a)
    Rc = R.take(c, axis=1)
    q = Rc * a
    cu = fu_p - 0.5 * (lev * W_up + q * r_up)
    cl = -fl_p - 0.5 * (lev * W_lo + q * r_lo)
    g = np.empty((up.shape[0], Bu.shape[1] + 1))
    g[:, :-1] = cu @ Bu + cl @ Bl
    if w is None:
        w = parts.w
    # d(upper) / ds at fixed u is -z u[c]; the trace term 2 tr(H^{-1} A' W dA) / 2 is w z v
    g[:, -1] = -(((cu + cl) * u.take(c, axis=1) + 0.5 * Rc * r + w * v) @ z)
    return g


def batch_nll_grad(model: Any, xs: np.ndarray, *, tol: float = 1e-15, maxit: int = 60,
                   u0: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``-loglik`` and its gradient at the ``m`` points ``xs`` (``(m, k)``) of a scalar-term fit.

    The points' conditional modes are found together (Newton steps over an
    ``(m, L)`` array of modes, warm-started from the model's current ones)
    and the gradients are those of :meth:`ScalarTerm.gradient` with a leading
    axis over the points: what a Hessian by differences of the gradient
    needs, in the numpy calls of about two single evaluations.  Returns
    ``(f, grad, u)``: ``(m,)``, ``(m, k)`` and the modes ``(m, L)``; ``None``
    when a point is outside the parameter space (the caller then evaluates
    one point at a time).  The model's state (modes, cached point) is left
    as it was.
    """
    res = batch_modes(model, xs, tol=tol, maxit=maxit, u0=u0)
    if res is None:
        return None
    _, a, u, H, bnd, parts, hl, w = res
    term: ScalarTerm = model._scalar
    f = 0.5 * np.log(H).sum(axis=1) - hl.sum(axis=1)
    grad = laplace_grad(term, model.link, bnd[0], bnd[1], parts, a, u, H, model.Bu, model.Bl, w)
    if not (np.isfinite(f).all() and np.isfinite(grad).all()):
        return None
    return f, -grad, u


def batch_modes(model: Any, xs: np.ndarray, *, tol: float = 1e-15, maxit: int = 60,
                u0: np.ndarray | None = None) -> tuple[Any, ...] | None:
    """The conditional modes of a scalar-term fit at the ``m`` points ``xs`` (``(m, k)``).

    Newton steps over an ``(m, L)`` array of modes, warm-started from ``u0``
    (``(m, L)``; default: the model's current modes for every point)
    (:func:`batch_nll_grad`'s first half).  Returns ``(B, a, u, H, bnd,
    parts, hl, w)``: the bounds ``[upper, lower]`` without and with the
    random effect (``(2, m, n)``), ``a = s z`` (``(m, n)``), the modes and the
    diagonal of ``H`` at them (``(m, L)``), the parts there, the levels'
    ``h_l`` and the weights ``w``; ``None`` when a point is outside the
    parameter space.
    """
    term: ScalarTerm = model._scalar
    link = model.link
    xs = np.atleast_2d(np.asarray(xs, dtype=float))
    m = xs.shape[0]
    na, p = model.n_alpha, model.p
    alpha, beta, s = xs[:, :na], xs[:, na:na + p], xs[:, na + p]
    cuts = alpha @ model.thr.jacobian.T
    if (cuts[:, 1:] <= cuts[:, :-1]).any():
        return None
    B = stacked_bounds(model.JJ, model.open, alpha, beta @ model.X.T)  # (2, m, n) [upper, lower]
    c = term.codes
    a = s[:, None] * term.z                              # (m, n)
    neg_a = -a
    a2 = a * a
    gap = logit_gap(B) if link.name == "logit" else None
    held: list[np.ndarray] = []

    # (method calls rather than np.sum / np.all: a tiny fit is dominated by per-call overhead)
    def evaluate(u: np.ndarray) -> tuple[np.ndarray, CumulativeParts]:
        parts = bounds_parts(link, B - a * u.take(c, axis=1), gap=gap)
        return 0.5 * u * u - term.sums(parts.logp), parts                  # -h_l

    def direction(u: np.ndarray, parts: CumulativeParts
                  ) -> tuple[np.ndarray, np.ndarray] | None:
        r = (parts.f_up - parts.f_lo) / parts.p          # -d log p / d eta
        g = term.sums(neg_a * r) - u
        w = np.maximum(r * r - (parts.df_up - parts.df_lo) / parts.p, 0.0)
        H = term.sums(a2 * w) + 1.0
        du = g / H
        dec = (g * du).sum(axis=1)
        if not np.isfinite(dec).all():
            return None
        held[:] = [H, w]
        return du, dec < tol

    u = np.repeat(model._state.u[None], m, axis=0) if u0 is None else u0
    f0, st0 = evaluate(u)
    run = level_newton(u, f0, st0, direction, evaluate, maxit=maxit, max_halvings=40,
                       slack=1e-13)
    if run.status != "converged":
        return None
    u, parts, hl = run.x, run.state, -run.values
    H, w = held
    bnd = B - a * u.take(c, axis=1)                      # the bounds at the modes
    return B, a, u, H, bnd, parts, hl, w
