"""The convergence check in the identified parameters, and one Newton step there.

A model with an exact ``(f || g)`` ridge (:mod:`.ridge`) or a nested term
(:func:`.ridge.nested_terms`: each level has rows in one column only, items
nested in systems) has parameters the likelihood does not see: the split of a
ridge's covariance ``M = s0^2 J + Sigma`` and, for a nested term, the
off-diagonal of ``M``.  lme4's check in the user's ``theta`` then finds a
singular Hessian or the sign of finite-difference noise.  Here the check runs
on the reduced model (no ridge's intercept) with each nested term diagonal
(its off-diagonal ``theta`` held at 0, :class:`_Pinned`), at
:func:`to_identified_theta` of the optimum; :func:`identified_finish` first
takes one Newton step with the Hessian the check computes anyway.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...mixed.layout import ThetaLayout
from ..checkconv import CheckConvControl, ConvCheck
from .ridge import (
    Identified,
    _identified,
    _jacobian,
    _newton_step,
    _reduced_model,
    _tril,
    ridge_check,
    ridge_notes,
)

__all__ = ["check_on_ridge", "identified_finish", "identified_free", "to_identified_theta"]


def to_identified_theta(theta: np.ndarray, ident: Identified, layout: ThetaLayout,
                        full: ThetaLayout) -> np.ndarray:
    """The full model's ``theta`` as the reduced model's (``layout``): ``chol(M)`` of each
    term's ``M = Sigma (+ s0^2 11')``, ``diag(sqrt(M_jj))`` for a nested term.

    Examples
    --------
    >>> from nlpower.mixed.layout import theta_layout
    >>> from nlpower.lmm.native.ridge import find_ridges
    >>> from nlpower.lmm.structure import ReTerm
    >>> codes = np.array([0, 0, 1, 1])
    >>> one = ReTerm("i", codes, ("a", "b"), np.ones((4, 1)), ("(Intercept)",))
    >>> sys = ReTerm("i", codes, ("a", "b"), np.array([[1., 0], [1, 0], [0, 1], [0, 1]]),
    ...              ("systemA", "systemB"))
    >>> ident = Identified(find_ridges((one, sys)), (sys,))
    >>> th = np.array([1.0, 1.0, 0.5, 1.0])        # s0 = 1, L = [[1, 0], [0.5, 1]]
    >>> (to_identified_theta(th, ident, theta_layout((sys,)), theta_layout((one, sys))) ** 2
    ...  ).round(12).tolist()                        # M_11 = 2, M_22 = 2.25
    [2.0, 0.0, 2.25]
    """
    return _identified_rows(np.asarray(theta, dtype=float)[None], ident, layout, full)[0]


def _identified_rows(thetas: np.ndarray, ident: Identified, layout: ThetaLayout,
                     full: ThetaLayout) -> np.ndarray:
    """:func:`to_identified_theta` of each row of ``thetas`` (batched small factors)."""
    full_off = {id(t): o for t, o in zip(full.terms, full.term_offsets, strict=True)}
    scalar = {id(r.term): r.scalar for r in ident.ridges}
    nested = {id(t) for t in ident.nested}
    out = np.zeros((thetas.shape[0], layout.size))
    for t, off in zip(layout.terms, layout.term_offsets, strict=True):
        rows, cols = _tril(t.q)
        L: np.ndarray = np.zeros((thetas.shape[0], t.q, t.q))
        L[:, rows, cols] = thetas[:, full_off[id(t)]:full_off[id(t)] + rows.size]
        if id(t) in scalar or id(t) in nested:
            M = L @ np.swapaxes(L, 1, 2)
            if id(t) in scalar:
                M += thetas[:, full_off[id(scalar[id(t)])], None, None] ** 2
            if id(t) in nested:
                L = np.zeros_like(L)
                L[:, np.arange(t.q), np.arange(t.q)] = np.sqrt(np.diagonal(M, axis1=1, axis2=2))
            else:
                L = np.linalg.cholesky(M)
        out[:, off:off + rows.size] = L[:, rows, cols]
    return out


def identified_free(ident: Identified, layout: ThetaLayout) -> np.ndarray:
    """Which entries of the reduced ``theta`` vary: all but the nested terms' off-diagonal."""
    nested = {id(t) for t in ident.nested}
    free = np.ones(layout.size, dtype=bool)
    for t, off in zip(layout.terms, layout.term_offsets, strict=True):
        if id(t) in nested:
            rows, cols = _tril(t.q)
            free[off:off + rows.size] = rows == cols
    return free


class _Pinned:
    """The reduced model on the ``free`` entries of its ``theta``, the others at 0: what
    the check, the Newton step and the Hessian see (the model's own ``_check``)."""

    def __init__(self, red: Any, free: np.ndarray):
        self.red, self.free = red, free
        self._analytic = red._analytic
        self.layout = _FreeLayout(red.layout.lower[free], red.layout.diag[free])

    def _full(self, x: np.ndarray) -> np.ndarray:
        th = np.zeros(self.free.size)
        th[self.free] = x
        return th

    def ev(self, x: np.ndarray, REML: bool) -> float:
        return float(self.red.ev(self._full(x), REML))

    def value_and_gradient(self, x: np.ndarray, REML: bool) -> tuple[float, np.ndarray, int]:
        f, g, n = self.red.value_and_gradient(self._full(x), REML)
        return f, g[self.free], n

    def _check(self, res: Any, REML: bool, ctl: CheckConvControl) -> ConvCheck:
        return type(self.red)._check(self, res, REML, ctl)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class _FreeLayout:
    lower: np.ndarray
    diag: np.ndarray

    @property
    def size(self) -> int:
        return self.lower.size


def _identified_model(model: Any) -> Any:
    """The reduced model in the identified parameters (itself where no term is nested)."""
    ident = _identified(model)
    red = _base_model(model)
    if not ident.nested:
        return red
    return _Pinned(red, identified_free(ident, red.layout))


def _base_model(model: Any) -> Any:
    """The reduced model, or ``model`` itself where it has no ridge (a nested term only)."""
    return _reduced_model(model) if _identified(model).ridges else model


def check_on_ridge(model: Any, res: Any, REML: bool, ctl: CheckConvControl) -> ConvCheck | None:
    """The convergence check of a full-model fit on an exact ridge or with a nested term
    (:func:`nested_terms`), in the identified parameters.

    :func:`ridge_check` of the identified model's check at
    :func:`to_identified_theta` of the optimum.  ``None`` (the ordinary check
    applies) without a ridge or nested term, or at a singular fit (lme4 then
    checks no derivatives).
    """
    out = _identified_check(model, res, REML, ctl, step=False)
    return None if out is None else out[0]


def identified_finish(model: Any, res: Any, REML: bool, ctl: CheckConvControl
                      ) -> tuple[ConvCheck, Any] | None:
    """:func:`check_on_ridge` after one Newton step in the identified parameters.

    The check's Hessian (forward differences of the identified model's
    gradient) gives the step at the cost of one gradient call (and one
    evaluation of the full model); the quasi-Newton stages stop within
    ``GRADIENT_GTOL``, 1e-10 to 1e-9 deviance units from the optimum.  The
    step ``d`` maps back to the user's ``theta`` as the least-norm ``J^+ d``
    (``J`` the Jacobian of :func:`to_identified_theta`: the split along the
    ridge is kept) and is kept only where the full model's deviance is lower.
    Returns ``(check, result)``, the result's ``stages`` with ``newton`` and
    ``checkconv``; ``None`` as :func:`check_on_ridge`.
    """
    t0 = time.perf_counter()
    out = _identified_check(model, res, REML, ctl, step=True)
    if out is None:
        return None
    chk, res2 = out
    t_newton = sum(st[3] for st in res2.stages[len(res.stages):])
    return chk, replace(res2, stages=(*res2.stages, ("checkconv", 0, chk.n_evals,
                                                     time.perf_counter() - t0 - t_newton)))


def _identified_check(model: Any, res: Any, REML: bool, ctl: CheckConvControl, step: bool
                      ) -> tuple[ConvCheck, Any] | None:
    ident = _identified(model)
    if not ident.ridges and not ident.nested:
        return None
    if np.any(res.theta[model.layout.diag] < ctl.singular_tol):
        return None
    notes = ridge_notes(model)
    if ctl.grad == "ignore" and ctl.hess == "ignore":
        return ConvCheck(False, 0, (), math.nan, notes=notes), res
    base = _base_model(model)
    if base is not model:
        base._set_y(model.blocks.y)
    red = _identified_model(model)
    layout = base.layout
    free = identified_free(ident, layout)

    def to_red(th: np.ndarray) -> np.ndarray:       # one theta or rows of them
        return (_identified_rows(np.atleast_2d(th), ident, layout, model.layout)[:, free]
                .reshape(*np.shape(th)[:-1], -1))

    th_r = to_red(res.theta)
    if np.any(th_r[red.layout.diag] < ctl.singular_tol):
        return None
    # the deviance is the same at both points; differences of deviances need the reduced one
    fval = res.fval if red._analytic else red.ev(th_r, REML)
    res_r = replace(res, theta=th_r, fval=fval, derivatives=None, gradient=None)
    if step and red._analytic:
        res, res_r = _identified_step(model, red, to_red, res, res_r, REML)
    chk = red._check(res_r, REML, ctl)
    g = None if chk.gradient is None else _jacobian(to_red, res.theta).T @ chk.gradient
    return ridge_check(g, chk, notes), res


def _identified_step(model: Any, red: Any, to_red: Any, res: Any, res_r: Any, REML: bool
                     ) -> tuple[Any, Any]:
    """:func:`_newton_step` of the identified model mapped to the full model's ``theta``:
    ``(full result, identified result for the check)``."""
    t0 = time.perf_counter()
    new_r, n = _newton_step(red, res_r, REML)
    x, x2, n_ev = res_r.theta, new_r.theta, 0
    if not np.array_equal(x, x2):
        d = np.linalg.lstsq(_jacobian(to_red, res.theta), x2 - x, rcond=None)[0]
        theta2 = np.maximum(res.theta + d, model.layout.lower)
        f2, n_ev = model.ev(theta2, REML), 1
        if f2 < res.fval:
            res = replace(res, theta=theta2, fval=f2, derivatives=None, gradient=None,
                          steps=(*res.steps, f"newton {f2:.10g} (identified parameters)"))
            # the gradient at x2 is not the one at the mapped point: the check's own call
            new_r = replace(new_r, theta=to_red(theta2), fval=f2, gradient=None)
        else:                               # the check at x, with the Hessian there
            new_r = replace(res_r, derivatives=new_r.derivatives)
    res = replace(res, n_evals=res.n_evals + n + n_ev,
                  stages=(*res.stages, ("newton", n_ev, n, time.perf_counter() - t0)))
    return res, new_r
