"""Batched refits of a GLMM: many responses on one structure at once (power replicates).

:meth:`GlmmModel.refit <nlpower.glmm.model.GlmmModel.refit>` fits one
response; a power study fits thousands on the same design.  For the models
power studies use most -- every random-effects term a scalar ``(1 | g)`` on
its own grouping factor (one term, or crossed ``(1 | worker) + (1 | item)``)
and a canonical link (logit binomial, log Poisson) -- :func:`refit_many`
runs the same Laplace fit (lme4's ``nAGQ = 1``) vectorised over the
replicates (``R`` of them):

1. PIRLS for the conditional modes ``u``: Newton's method on the penalised
   deviance, every replicate at once (:mod:`.laplace_batch`: the blocked
   factor of ``Lambda'Z'WZ Lambda + I``).
2. The analytic gradient of the Laplace deviance over ``(theta, beta)``
   (the formula of :mod:`.gradient`, its ``M^{-1}`` entries from the same
   blocks) and a Hessian from forward differences of it -- at the common
   start, the mean of ``SHARED_H`` rows' Hessians serves every row.
3. Newton's method over ``(theta, beta)`` per replicate -- BFGS updates of
   that Hessian, a fresh one after a halved step or when the predicted
   decrease falls slowly (towards a singular optimum), the absolute values
   of its eigenvalues where it is not positive definite, each step shortened
   to move ``theta`` by at most ``STEP_THETA`` and the linear predictor by
   at most ``STEP_ETA`` (a near-flat direction would otherwise send the
   first trial points, and PIRLS at them, far off) -- unbounded in
   ``theta`` (the
   deviance depends on a scalar term's ``theta`` through ``theta^2``),
   whose sign is dropped at the end (:meth:`GlmmModel.canonical`).
4. ``vcov_beta`` from the PIRLS factor with ``X`` (as ``refit``),
   ``singular`` by lme4's ``isSingular`` rule.

Replicates the batch does not bring to convergence, and every replicate of a
model outside that class, are fitted by ``GlmmModel.refit``: the result is
the same fit either way (to optimiser tolerance).  Replicates are fitted
in chunks of ``CHUNK`` (bounded memory).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import FitError, InputError
from ..lmm.native import single_threaded
from .laplace_batch import BatchedLaplace, _Modes
from .response import check_response
from .result import GlmmCore, start_parts

if TYPE_CHECKING:
    from .model import GlmmModel

__all__ = ["BatchedLaplace", "refit_many"]

#: forward-difference step of the Hessian (differences of the analytic gradient)
H_STEP = 1e-5
#: Newton over (theta, beta) stops when the predicted decrease is below this
DECREMENT = 1e-12
OUTER_MAXIT = 50
#: a theta this close to 0 at the start is moved off the saddle there
THETA_NUDGE = 1e-2
SINGULAR_TOL = 1e-4
#: fits beyond these (SDs of 10 on the link scale, linear predictors of 30) have no finite
#: optimum -- the deviance falls on towards infinity -- and are left to refit
THETA_MAX = 10.0
ETA_MAX = 30.0
#: replicates fitted together: CHUNK, or more while CHUNK_VALUES fill a (replicates, nobs) array
CHUNK = 128
CHUNK_VALUES = 1 << 17
#: rows whose Hessians at the common start are averaged into every row's first Hessian
SHARED_H = 8
#: the Hessian is recomputed when a step's predicted decrease fell by less than this factor
SLOW = 0.3
#: a step moves theta by at most STEP_THETA and the linear predictor by at most STEP_ETA (a
#: flat direction of the Hessian would otherwise send PIRLS to extreme points first)
STEP_THETA = 3.0
STEP_ETA = 3.0




def _set_rows(dst: _Modes, idx: np.ndarray, src: _Modes, take: np.ndarray | None = None) -> None:
    """Copy ``src``'s rows (``take`` of them) into ``dst``'s rows ``idx``."""
    for name in ("U", "mu", "w", "D0", "Cr", "Sinv", "dev", "iters"):
        val = getattr(src, name)
        getattr(dst, name)[idx] = val if take is None else val[take]


def _sub(md: _Modes, idx: np.ndarray) -> _Modes:
    return _Modes(md.U[idx], md.mu[idx], md.w[idx], md.D0[idx], md.Cr[idx], md.Sinv[idx],
                  md.dev[idx], md.iters[idx])


def _direction(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Newton steps and predicted decreases per replicate (``|eigenvalues|`` of ``H``)."""
    H = 0.5 * (H + np.swapaxes(H, 1, 2))
    lam, V = np.linalg.eigh(H)
    top = np.max(np.abs(lam), axis=1, keepdims=True)
    lam = np.maximum(np.abs(lam), np.maximum(1e-8 * top, 1e-12))
    c = np.einsum("rji,rj->ri", V, g) / lam
    step = -np.einsum("rij,rj->ri", V, c)
    dec = 0.5 * np.einsum("ri,ri->r", c * lam, c)
    return step, dec


class _Newton:
    """Newton's method over ``(theta, beta)``, vectorised over replicates.

    The Hessian: forward differences of the analytic gradient at the start
    (and again after a step that had to be halved), BFGS updates after
    every other step.
    """

    def __init__(self, bl: BatchedLaplace, Y: np.ndarray, x0: np.ndarray):
        self.bl, self.k = bl, bl.k
        self.Yw = Y * bl.wt
        self.const = bl.constants(Y)
        self.x = x0.copy()
        self.md = bl.pirls(x0[:, :self.k], x0[:, self.k:], self.Yw, self.const, None)
        self.g = np.zeros_like(x0)
        ok = np.flatnonzero(np.isfinite(self.md.dev))
        self.g[ok] = bl.gradient(x0[ok, :self.k], self.Yw[ok], _sub(self.md, ok))
        self.evals = self.md.iters.copy()
        R, d = x0.shape
        self.H = np.zeros((R, d, d))
        self.need_h = np.ones(R, dtype=bool)
        self.last_dec = np.full(R, np.inf)
        self.done = np.zeros(R, dtype=bool)
        self.failed = ~np.isfinite(self.md.dev) | ~np.all(np.isfinite(self.g), axis=1)
        if SHARED_H and R > 2 * SHARED_H:
            # every row starts at the same point: the mean Hessian of a few rows there is every
            # row's first (BFGS) Hessian; a row whose first step must be halved gets its own
            few = np.flatnonzero(~self.failed)[:SHARED_H]
            if few.size:
                self.hessian(few)
                self.H[:] = self.H[few].mean(axis=0)
                self.need_h[:] = False

    def _eval(self, idx: np.ndarray, x: np.ndarray, U0: np.ndarray | None
              ) -> tuple[_Modes, np.ndarray]:
        bl, k = self.bl, self.k
        md = bl.pirls(x[:, :k], x[:, k:], self.Yw[idx], self.const[idx], U0)
        self.evals[idx] += md.iters
        return md, bl.gradient(x[:, :k], self.Yw[idx], md)

    def hessian(self, idx: np.ndarray) -> None:
        """Forward differences of the gradient at the current points of ``idx``."""
        bl, x, md = self.bl, self.x[idx], _sub(self.md, idx)
        d = x.shape[1]
        H = np.empty((idx.size, d, d))
        for j in range(d):
            h = H_STEP * (1.0 + np.abs(x[:, j]))
            dx = np.zeros_like(x)
            dx[:, j] = h
            U0 = bl.predict_u(x[:, :self.k], self.Yw[idx], md, dx)
            _, gj = self._eval(idx, x + dx, U0)
            H[:, :, j] = (gj - self.g[idx]) / h[:, None]
        bad = ~np.all(np.isfinite(H), axis=(1, 2))
        self.failed[idx[bad]] = True
        self.H[idx] = 0.5 * (H + np.swapaxes(H, 1, 2))
        self.need_h[idx] = False

    def _bfgs(self, rows: np.ndarray, s: np.ndarray, yv: np.ndarray) -> None:
        H = self.H[rows]
        Hs = np.einsum("rij,rj->ri", H, s)
        ys, sHs = np.einsum("ri,ri->r", yv, s), np.einsum("ri,ri->r", s, Hs)
        ok = (ys > 1e-12) & (sHs > 1e-12)
        ys, sHs = np.where(ok, ys, 1.0), np.where(ok, sHs, 1.0)
        upd = yv[:, :, None] * yv[:, None, :] / ys[:, None, None] \
            - Hs[:, :, None] * Hs[:, None, :] / sHs[:, None, None]
        self.H[rows] = H + np.where(ok[:, None, None], upd, 0.0)

    def _cap(self, st: np.ndarray) -> np.ndarray:
        """Per row, the factor (at most 1) that keeps a step within STEP_THETA and STEP_ETA."""
        k = self.k
        dth = np.max(np.abs(st[:, :k]), axis=1)
        deta = np.max(np.abs(st[:, k:] @ self.bl.X.T), axis=1)
        with np.errstate(divide="ignore"):
            return np.minimum(1.0, np.minimum(STEP_THETA / dth, STEP_ETA / deta))

    def step(self) -> bool:
        """One Newton iteration on the replicates still running; False when none are."""
        act = np.flatnonzero(~self.done & ~self.failed)
        if act.size == 0:
            return False
        need = act[self.need_h[act]]
        if need.size:
            self.hessian(need)
            act = act[~self.failed[act]]
        st, dec = _direction(self.H[act], self.g[act])
        conv = dec < DECREMENT
        self.done[act[conv]] = True
        # BFGS converging slowly (towards a singular optimum, linearly): a fresh Hessian next
        slow = dec > SLOW * self.last_dec[act]
        self.need_h[act[slow]] = True
        self.last_dec[act] = dec
        act, st, dec = act[~conv], st[~conv], dec[~conv]
        st = st * self._cap(st)[:, None]
        scale = np.ones(act.size)
        f0 = self.md.dev[act]
        md0 = _sub(self.md, act)
        for _ in range(30):
            if act.size == 0:
                break
            dx = scale[:, None] * st
            U0 = self.bl.predict_u(self.x[act, :self.k], self.Yw[act], md0, dx)
            x2 = self.x[act] + dx
            md2, g2 = self._eval(act, x2, U0)
            good = (md2.dev <= f0 + 1e-12 * np.abs(f0)) & np.all(np.isfinite(g2), axis=1)
            if good.any():
                rows = act[good]
                self._bfgs(rows, dx[good], g2[good] - self.g[rows])
                self.need_h[rows[scale[good] < 1.0]] = True     # a poor model: a fresh Hessian
                self.x[rows], self.g[rows] = x2[good], g2[good]
                _set_rows(self.md, rows, md2, good)
            keep = ~good
            # no decrease along a step predicted to gain little: at the optimum to rounding
            tiny = keep & (dec * scale < 1e-9)
            self.done[act[tiny]] = True
            keep &= ~tiny
            act, st, dec, f0, scale = act[keep], st[keep], dec[keep], f0[keep], 0.5 * scale[keep]
            md0 = _sub(md0, np.flatnonzero(keep))
        self.failed[act] = True
        return True


def _check_Y(model: GlmmModel, Y: Any) -> np.ndarray:
    Yv = np.asarray(Y, dtype=float)
    if Yv.ndim == 1:
        Yv = Yv[None, :]
    n = model.spec.n
    if Yv.ndim != 2 or Yv.shape[1] != n:
        raise InputError(f"Y must be an array of shape (n_replicates, {n}) (one response per row); "
                         f"got shape {np.shape(Y)}.")
    return Yv


def _row_errors(model: GlmmModel, Y: np.ndarray, out: list[Any]) -> None:
    """``refit``'s response checks, row by row: a row it would refuse gets the error."""
    for i, y in enumerate(Y):
        try:
            check_response(model.family, y, model.wt, "y")
        except InputError as err:
            out[i] = err


def refit_many(model: GlmmModel, Y: Any, *, start: Any = None) -> list[GlmmCore | Exception]:
    """Fit every row of ``Y`` on ``model``'s structure: ``model.refit(y, start=start)`` for each.

    Parameters
    ----------
    model : GlmmModel
        The prepared model (its prior weights and offset are used for every row).
    Y : array of shape (n_replicates, nobs)
        The responses (binomial: proportions of ``weights`` trials).
    start : fit, core or dict, optional
        ``theta`` and ``beta`` to start every fit from (the truth in a power
        study).  Without it every row is fitted by ``model.refit``.

    Returns
    -------
    list of GlmmCore or Exception
        Per row, the fit -- the same optimum as ``model.refit`` (Laplace
        deviance to ~1e-7, ``theta`` and ``beta`` to ~1e-5; ``vcov_beta``
        PIRLS's, ``converged``, ``singular`` by lme4's rule) -- or the error
        ``model.refit`` raised for that row (:class:`~nlpower.errors.FitError`, ...).

    Notes
    -----
    Rows are fitted together (module docstring) when the random effects are
    scalar terms on distinct grouping factors and the link is canonical;
    rows the batch does not bring to convergence, and every row otherwise,
    go through ``model.refit``.

    Examples
    --------
    >>> import pandas as pd
    >>> from nlpower.lmm.frame import model_frame
    >>> from nlpower.lmm.family import Binomial
    >>> from nlpower.glmm.model import GlmmModel
    >>> d = pd.read_csv("tests/reference/data/cbpp.csv", dtype={"period": str, "herd": str})
    >>> m = GlmmModel(model_frame("prop ~ period + (1 | herd)", d), Binomial(), weights=d["size"])
    >>> fit = m.fit()
    >>> Y = m.simulate(3, rng=1, params=fit)
    >>> cores = refit_many(m, Y, start=fit)
    >>> [round(c.deviance, 4) == round(m.refit(y, start=fit).deviance, 4) for c, y in zip(cores, Y)]
    [True, True, True]
    """
    Yv = _check_Y(model, Y)
    out: list[GlmmCore | Exception | None] = [None] * len(Yv)
    _row_errors(model, Yv, out)
    batch = start is not None and BatchedLaplace.supports(model)
    if batch:
        th, be = start_parts(start)
        batch = be is not None
    if batch:
        theta = model.layout.check_start(th)
        beta = np.asarray(be, dtype=float).ravel()
        if beta.shape != (model.p,) or not np.all(np.isfinite(beta)):
            raise InputError(f"start beta must be {model.p} finite values "
                             f"({', '.join(model.spec.fixef_names)}); got {be!r}.")
        theta = np.where(np.abs(theta) < 1e-8, THETA_NUDGE, theta)   # off the saddle at 0
        rows = np.array([i for i, r in enumerate(out) if r is None], dtype=np.intp)
        with single_threaded(), np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            size = max(CHUNK, CHUNK_VALUES // model.spec.n)
            for lo in range(0, rows.size, size):
                _batched(model, Yv, rows[lo:lo + size], np.concatenate([theta, beta]), out)
    for i, res in enumerate(out):
        if res is None:
            try:
                out[i] = model.refit(Yv[i], start=start)
            except (FitError, ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
                out[i] = err
    return [r for r in out if r is not None]


def _batched(model: GlmmModel, Y: np.ndarray, rows: np.ndarray, x0: np.ndarray,
             out: list[GlmmCore | Exception | None]) -> None:
    """Fit ``Y[rows]`` together; the converged fits go into ``out``."""
    bl = model._batched if model._batched is not None else BatchedLaplace(model)
    model._batched = bl
    nt = _Newton(bl, Y[rows], np.tile(x0, (rows.size, 1)))
    for _ in range(OUTER_MAXIT):
        if not nt.step():
            break
    ok = np.flatnonzero(nt.done & ~nt.failed)
    if ok.size == 0:
        return
    k = bl.k
    md = _sub(nt.md, ok)
    V = bl.vcov(nt.x[ok, :k], md)
    for j, i in enumerate(ok):
        theta = np.abs(nt.x[i, :k])
        if not (math.isfinite(md.dev[j]) and np.all(np.isfinite(V[j]))) \
                or np.max(theta) > THETA_MAX or np.max(np.abs(model.pirls.X @ nt.x[i, k:])) > ETA_MAX:
            continue                     # no finite optimum (separation): refit's answer
        out[rows[i]] = GlmmCore(theta=theta, beta=nt.x[i, k:].copy(), vcov_beta=V[j],
                                deviance=float(md.dev[j]), converged=True,
                                singular=bool(np.any(theta < SINGULAR_TOL)),
                                n_evals=int(nt.evals[i]), message="converged (batched Newton)")
