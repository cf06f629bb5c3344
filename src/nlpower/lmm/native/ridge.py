"""The exact ridge of ``(f || g)`` terms with a factor ``f``, and a fit that profiles it out.

lme4 expands ``(system || g)`` with a factor ``system`` to ``(1 | g) + (0 +
system | g)``.  Every row has exactly one system indicator equal to 1, so the
intercept column of ``g`` is the sum of the indicator columns, and the model
depends on the two terms only through ``M = Sigma + s0^2 11'`` (the
covariance of the per-system effects of a level of ``g``): the deviance is
exactly constant along ``(s0^2 - t, Sigma + t 11')``.

:func:`find_ridges` detects this from the model matrices alone -- a scalar
term whose column equals, on every row, the sum of the columns of a
multi-column term of the same grouping factor -- whatever the names.  The
reduced model drops the scalar terms (``M`` is any covariance of the
multi-column term, so nothing is lost); its optimum maps back to the user's
parametrisation by the rule of :func:`split_covariance`: of the admissible
intercept variances ``t`` in ``[0, t_max]``, ``t_max = 1 / (1' M^{-1} 1)``
(``Sigma = M - t 11'`` positive semidefinite), the midpoint ``t_max / 2``,
where both terms are non-singular (where ``M`` is singular, ``t = 0``).

:func:`nested_terms` finds the multi-column terms whose levels each use one
column (items nested in systems): of their ``M`` only the diagonal is
identified.  The convergence check in the identified parameters is
:mod:`.identified`.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...errors import FitError
from ...mixed.layout import ThetaLayout
from ..checkconv import DERIV_STEP, SINGULAR_TOL, CheckConvControl, ConvCheck, check_hessian
from ..structure import ModelSpec, ReTerm

__all__ = ["Identified", "Ridge", "exact_ridges", "find_ridges", "full_gradient",
           "nested_terms", "reduced_spec", "ridge_check", "ridge_fit", "ridge_notes",
           "ridges_that_pay", "split_covariance", "to_full_theta", "to_reduced_theta"]

_SUM_TOL = 1e-12        # |z0 - sum of the columns| below this times max|z0|: the same column


@dataclass(frozen=True, eq=False)
class Ridge:
    """A scalar term ``scalar`` whose column is the row sum of ``term``'s columns."""

    scalar: ReTerm
    term: ReTerm


def _same_factor(a: ReTerm, b: ReTerm) -> bool:
    return a.group == b.group and a.n_levels == b.n_levels and np.array_equal(a.codes, b.codes)


def find_ridges(re_terms: tuple[ReTerm, ...]) -> tuple[Ridge, ...]:
    """Every (scalar term, multi-column term) pair of one grouping factor that forms a ridge.

    Examples
    --------
    >>> codes = np.array([0, 0, 1, 1])
    >>> one = ReTerm("w", codes, ("a", "b"), np.ones((4, 1)), ("(Intercept)",))
    >>> sys = ReTerm("w", codes, ("a", "b"), np.array([[1., 0], [0, 1], [1, 0], [0, 1]]),
    ...              ("systemA", "systemB"))
    >>> [r.term.cnames for r in find_ridges((one, sys))]
    [('systemA', 'systemB')]
    """
    out: list[Ridge] = []
    used: set[int] = set()
    for s in re_terms:
        if s.q != 1:
            continue
        z0 = np.asarray(s.Z, dtype=float)[:, 0]
        tol = _SUM_TOL * max(float(np.max(np.abs(z0), initial=0.0)), 1.0)
        for t in re_terms:
            if t.q < 2 or id(t) in used or not _same_factor(s, t):
                continue
            if float(np.max(np.abs(np.asarray(t.Z, dtype=float).sum(axis=1) - z0))) <= tol:
                out.append(Ridge(s, t))
                used.add(id(t))
                break
    return tuple(out)


def ridges_that_pay(spec: ModelSpec, N2: int) -> tuple[Ridge, ...]:
    """:func:`find_ridges` where fitting without them pays (``RIDGE_MIN_N2``,
    ``RIDGE_MAX_SHRINK``), else ``()``."""
    if N2 < RIDGE_MIN_N2:
        return ()
    ridges = find_ridges(spec.re_terms)
    cols = sum(t.n_levels * t.q for t in spec.re_terms)
    drop = sum(r.scalar.n_levels for r in ridges)
    return ridges if ridges and cols - drop <= RIDGE_MAX_SHRINK * cols else ()


def reduced_spec(spec: ModelSpec, ridges: tuple[Ridge, ...]) -> ModelSpec:
    """``spec`` without the ridges' scalar terms (the same likelihood, fewer parameters)."""
    drop = {id(r.scalar) for r in ridges}
    return replace(spec, re_terms=tuple(t for t in spec.re_terms if id(t) not in drop))


def nested_terms(re_terms: tuple[ReTerm, ...]) -> tuple[ReTerm, ...]:
    """Multi-column terms each of whose levels has rows in one column only (items nested in
    systems under ``(0 + system | item)``): the covariances between their columns never
    enter the likelihood, only each column's variance.

    Examples
    --------
    >>> codes = np.array([0, 0, 1, 1])
    >>> sys = ReTerm("i", codes, ("a", "b"), np.array([[1., 0], [1, 0], [0, 1], [0, 1]]),
    ...              ("systemA", "systemB"))
    >>> [t.cnames for t in nested_terms((sys,))]
    [('systemA', 'systemB')]
    """
    out = []
    for t in re_terms:
        nz = np.asarray(t.Z) != 0
        if t.q < 2 or np.any(nz.sum(axis=1) > 1):
            continue
        rows = nz.any(axis=1)
        used = np.unique(t.codes[rows] * t.q + nz.argmax(axis=1)[rows])   # (level, column)
        if np.unique(used // t.q).size == used.size:
            out.append(t)
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Identified:
    """The model in its identified parameters: the reduced model (no ridge's scalar term)
    with each nested term's (:func:`nested_terms`) covariance diagonal -- its off-diagonal
    ``theta`` held at 0, where the deviance's gradient in them is 0 -- so only the
    ``free`` entries of the reduced ``theta`` vary."""

    ridges: tuple[Ridge, ...]
    nested: tuple[ReTerm, ...]


def split_covariance(M: np.ndarray) -> tuple[float, np.ndarray] | None:
    """``(t, Sigma)`` with ``Sigma + t 11' = M`` and ``t = t_max / 2``; ``None`` if ``M`` is
    not positive definite (then no split leaves both terms non-singular).

    Examples
    --------
    >>> t, S = split_covariance(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> float(t), S.tolist()
    (0.75, [[1.25, 0.25], [0.25, 1.25]])
    """
    try:
        c = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        return None
    w = np.linalg.solve(c, np.ones(M.shape[0]))
    t = 0.5 / float(w @ w)
    return t, M - t * np.ones_like(M)


@functools.lru_cache(maxsize=16)
def _tril(q: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the lower triangle in column-major order (lme4's)."""
    rows, cols = np.tril_indices(q)
    order = np.lexsort((rows, cols))
    return rows[order], cols[order]


def _lower(theta: np.ndarray, off: int, q: int) -> np.ndarray:
    L = np.zeros((q, q))
    rows, cols = _tril(q)
    L[rows, cols] = theta[off:off + rows.size]
    return L


def _put(theta: np.ndarray, off: int, L: np.ndarray) -> None:
    rows, cols = _tril(L.shape[0])
    theta[off:off + rows.size] = L[rows, cols]


def to_reduced_theta(theta: np.ndarray, reduced: ThetaLayout, full: ThetaLayout,
                     ridges: tuple[Ridge, ...]) -> np.ndarray:
    """The full model's ``theta`` as the reduced model's (``chol(Sigma + s0^2 11')``).

    Examples
    --------
    >>> from nlpower.mixed.layout import theta_layout
    >>> codes = np.array([0, 0, 1, 1])
    >>> one = ReTerm("w", codes, ("a", "b"), np.ones((4, 1)), ("(Intercept)",))
    >>> sys = ReTerm("w", codes, ("a", "b"), np.array([[1., 0], [0, 1], [1, 0], [0, 1]]),
    ...              ("systemA", "systemB"))
    >>> rid = find_ridges((one, sys))
    >>> full, red = theta_layout((one, sys)), theta_layout((sys,))
    >>> th = to_full_theta(np.array([1.0, 0.5, 1.0]), red, full, rid)
    >>> to_reduced_theta(th, red, full, rid).round(12).tolist()
    [1.0, 0.5, 1.0]
    """
    full_off = {id(t): o for t, o in zip(full.terms, full.term_offsets, strict=True)}
    scalar = {id(r.term): r.scalar for r in ridges}
    out = np.zeros(reduced.size)
    for t, off in zip(reduced.terms, reduced.term_offsets, strict=True):
        L = _lower(theta, full_off[id(t)], t.q)
        if id(t) in scalar:
            s0 = theta[full_off[id(scalar[id(t)])]]
            L = np.linalg.cholesky(L @ L.T + s0 * s0 * np.ones((t.q, t.q)))
        _put(out, off, L)
    return out


def full_gradient(g_red: np.ndarray, theta: np.ndarray, reduced: ThetaLayout, full: ThetaLayout,
                  ridges: tuple[Ridge, ...], h: float = 1e-6) -> np.ndarray:
    """The gradient in the full ``theta`` by the chain rule: ``J' g_red`` with ``J`` the
    Jacobian of :func:`to_reduced_theta` (central differences: a few small Cholesky
    factors, no deviance evaluation)."""
    def rows(ths: np.ndarray) -> np.ndarray:
        return np.array([to_reduced_theta(th, reduced, full, ridges) for th in ths])

    return _jacobian(rows, theta, h).T @ g_red


def _jacobian(to_red: Any, theta: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The Jacobian of ``to_red`` at ``theta`` by central differences (``to_red`` maps the
    rows of a ``(2k, k)`` array at once)."""
    E = h * np.eye(theta.size)
    k = theta.size
    R = to_red(np.vstack([theta + E, theta - E]))
    return (R[:k] - R[k:]).T / (2.0 * h)


def to_full_theta(theta_red: np.ndarray, reduced: ThetaLayout, full: ThetaLayout,
                  ridges: tuple[Ridge, ...]) -> np.ndarray:
    """The reduced model's ``theta`` as ``theta`` of the full model (:func:`split_covariance`).

    Where a ridge's covariance ``M`` is singular (a zero pivot of the reduced
    factor) the fit is singular whatever the split, and the split is
    ``t = 0``: the intercept's ``theta`` 0 and the reduced factor as it is
    (the only admissible split when ``1`` is not in the range of ``M``).
    """
    red_off = {id(t): o for t, o in zip(reduced.terms, reduced.term_offsets, strict=True)}
    by_term = {id(r.term): r for r in ridges}
    by_scalar = {id(r.scalar): r for r in ridges}
    out = np.zeros(full.size)
    for t, off in zip(full.terms, full.term_offsets, strict=True):
        if id(t) in by_scalar:
            continue                        # filled with its multi-column term
        Lr = _lower(theta_red, red_off[id(t)], t.q)
        if id(t) in by_term:
            split = split_covariance(Lr @ Lr.T) if np.all(np.diag(Lr) > 0) else None
            tv, L = 0.0, Lr
            if split is not None:
                try:
                    tv, L = split[0], np.linalg.cholesky(split[1])
                except np.linalg.LinAlgError:
                    tv, L = 0.0, Lr
            _put(out, off, L)
            s = by_term[id(t)].scalar
            out[full.term_offsets[full.terms.index(s)]] = np.sqrt(tv)
        else:
            _put(out, off, Lr)
    return out


# -- the fit ---------------------------------------------------------------------------
# the reduced fit is used where a gradient call's cost is the dense rest: from this many
# rest columns (2 systems, 80 annotators: 243 -> 163 columns, 0.27 -> 0.18 s CPU); below
# it a call is numpy overhead and the reduced model saves nothing (3 systems, 4 reviewers)
RIDGE_MIN_N2 = 200
# ... and where it drops at least 30 % of the random-effects columns (2 systems: a third).
# With 4 systems (a fifth) the per-call saving is smaller and the reduced fit can need the
# unfold restart: a sparse 4-system crowd design (225 workers) took 0.56 -> 2.7 s
RIDGE_MAX_SHRINK = 0.7
RIDGE_TOL = 1e-8        # the full model's deviance at the mapped theta: at most this above


def ridge_notes(model: Any) -> tuple[str, ...]:
    """The structural facts, once per term: the split of a ridge's covariance is not
    identified; nor are the covariances between the columns of a nested term."""
    ident = _identified(model)
    nested = {id(t) for t in ident.nested}
    out = []
    for r in ident.ridges:
        t = r.term
        cols = f"(0 + {' + '.join(t.cnames)} | {t.group})"
        if id(t) in nested:
            out.append(f"flat ridge, nested levels: each {t.group} has ratings in one column of "
                       f"{cols} only, so of the {t.group} covariance only the diagonal of s0^2 J "
                       f"+ Sigma is identified (each column's total variance), neither the split "
                       f"between (1 | {t.group}) and {cols} nor the covariances between the "
                       "columns; convergence is checked in the identified parameters")
        else:
            out.append(f"flat ridge: the split of the {t.group} covariance between (1 | "
                       f"{t.group}) and {cols} is not identified (only s0^2 J + Sigma is); "
                       "convergence is checked in the identified parameters")
    ridged = {id(r.term) for r in ident.ridges}
    for t in ident.nested:
        if id(t) not in ridged:
            out.append(f"nested levels: each {t.group} has ratings in one column of (0 + "
                       f"{' + '.join(t.cnames)} | {t.group}) only, so the covariances between "
                       "the columns are not identified (only their variances); convergence is "
                       "checked in the identified parameters")
    return tuple(out)


def exact_ridges(model: Any) -> tuple[Ridge, ...]:
    """:func:`find_ridges` of ``model``'s terms, whether or not the reduced fit pays (cached)."""
    ridges = getattr(model, "_exact_ridges", None)
    if ridges is None:
        ridges = model._ridges or find_ridges(model.spec.re_terms)
        model._exact_ridges = ridges
    return ridges  # type: ignore[no-any-return]


def _reduced_model(model: Any) -> Any:
    """The model without the ridges' scalar terms, built once (with the analytic descent
    where the full model has the analytic gradient)."""
    red = getattr(model, "_ridge_red", None)
    if red is None:
        red = model._ridge_red = type(model)(reduced_spec(model.spec, exact_ridges(model)))
        red._analytic = bool(model._analytic)
        red._descent = True
    return red


def _identified(model: Any) -> Identified:
    """The ridges and nested terms of ``model`` (cached)."""
    ident = getattr(model, "_ident", None)
    if ident is None:
        ridges = exact_ridges(model)
        ident = model._ident = Identified(
            ridges, nested_terms(reduced_spec(model.spec, ridges).re_terms))
    return ident  # type: ignore[no-any-return]


def ridge_check(g: np.ndarray | None, reduced: ConvCheck, notes: tuple[str, ...]) -> ConvCheck:
    """lme4's ``checkConv`` of the reduced model, reported for the full model.

    At an interior point of an exact ridge the full Hessian is singular by
    construction (the ridge's direction is a null vector), so lme4's check in
    the user's ``theta`` always reports "unable to evaluate scaled gradient"
    and a zero (or, by finite-difference noise, negative) eigenvalue.  The
    deviance depends on ``theta`` only through the reduced model's ``theta``
    (:func:`to_reduced_theta`); at a stationary point the full Hessian
    restricted to the identified directions is the reduced Hessian (chain
    rule), so the reduced check's findings -- a non-stationary point, a
    saddle, a near-unidentifiable model -- are the genuine ones and are kept
    as they are; the structural fact goes into ``notes``, not ``messages``.
    ``g``: the gradient in the full ``theta`` (:func:`full_gradient`).
    """
    return replace(reduced, gradient=g, hessian=None, notes=notes)


def _newton_step(red: Any, res: Any, REML: bool) -> tuple[Any, int]:
    """One Newton step from the reduced optimum, with the Hessian the check needs anyway.

    Without the ridge the Hessian is positive definite at an interior
    optimum, and the step removes what the quasi-Newton stages left (their
    stopping rule: 1e-10 to 1e-9 deviance units on 2,000-4,000 ratings).
    The Hessian (:func:`~nlpower.lmm.checkconv.check_hessian` at the
    optimiser's point, as the native check computes it) and the
    gradient at the new point are handed on to the check, which then costs
    nothing more.  No step where the Hessian is not positive definite or
    the step does not lower the deviance.  Returns the result and the gradient calls spent.
    """
    lower = red.layout.lower
    x = res.theta
    if res.derivatives is not None and np.array_equal(res.derivatives[0], x):
        return res, 0                     # the optimiser's Newton steps ended here
    if np.any(x[lower == 0] < SINGULAR_TOL):
        return res, 0

    def fg(th: np.ndarray) -> tuple[float, np.ndarray, int]:
        return red.value_and_gradient(th, REML)

    g = res.gradient if res.gradient is not None else fg(x)[1]
    H, n = check_hessian(lambda th: fg(th)[1], x, g)     # forward where they decide
    n += res.gradient is None
    try:
        R = np.linalg.cholesky(H)
        step = np.linalg.solve(R.T, np.linalg.solve(R, g))
    except np.linalg.LinAlgError:
        return replace(res, derivatives=(x, g, x, H), gradient=g), n
    if float(np.max(np.abs(step))) > DERIV_STEP:
        # not the last digits of a quadratic model: no step (the check reuses H at x)
        return replace(res, derivatives=(x, g, x, H), gradient=g), n
    x2 = np.maximum(x - step, lower)
    f2, g2, _ = fg(x2)
    if not f2 < res.fval:
        return replace(res, derivatives=(x, g, x, H), gradient=g), n + 1
    return replace(res, theta=x2, fval=f2, derivatives=(x2, g2, x, H), gradient=g2,
                   steps=(*res.steps, f"newton {f2:.10g} (reduced)")), n + 1


def ridge_fit(model: Any, REML: bool, ctl: CheckConvControl) -> tuple[Any, Any, ConvCheck] | None:
    """Fit ``model`` (a :class:`~.model.NativeModel` with ridges) through its reduced model.

    Returns ``(optimiser result, factor, check)`` at the mapped ``theta``, or
    ``None`` when the full model's deviance at the mapped point is not the
    reduced one (then the caller fits as usual).  A singular reduced optimum
    maps to a singular point (:func:`to_full_theta`), checked as lme4 checks
    singular fits (no derivatives).
    """
    red = _reduced_model(model)          # built once, with the analytic descent
    red._set_y(model.blocks.y)
    try:
        res, _ = red._optimize(REML, None, None)
    except (FitError, np.linalg.LinAlgError):
        return None                      # the ordinary fit says what is wrong, if anything
    t0 = time.perf_counter()
    res, n = _newton_step(red, res, REML)
    res = replace(res, stages=(*res.stages, ("newton", 0, n, time.perf_counter() - t0)))
    t0 = time.perf_counter()
    theta = to_full_theta(res.theta, red.layout, model.layout, model._ridges)
    fac = model.ev.factor_once(theta)       # not the grouped products: read once
    fval = model.ev.objective(fac, REML) if fac.ok else math.inf
    if not fval <= res.fval + RIDGE_TOL:
        return None
    if np.any(theta[model.layout.diag] < ctl.singular_tol):
        # lme4 checks no derivatives at a singular fit (nor does check_conv: no calls)
        check = model._check(replace(res, theta=theta, derivatives=None, gradient=None), REML,
                             ctl)
    else:
        chk = red._check(res, REML, ctl)
        g = None if chk.gradient is None else full_gradient(chk.gradient, theta, red.layout,
                                                              model.layout, model._ridges)
        check = ridge_check(g, chk, ridge_notes(model))
    n_grad = check.n_evals
    res = replace(res, theta=theta, fval=fval, derivatives=None, gradient=None,
                  steps=(*res.steps, f"ridge {fval:.10g} ({red.layout.size} -> "
                                     f"{model.layout.size} parameters)"),
                  stages=(*res.stages, ("checkconv", 0, n_grad, time.perf_counter() - t0)))
    return res, fac, check
