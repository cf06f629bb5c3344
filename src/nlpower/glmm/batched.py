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
from ..mixed.fdiff import forward_hessian, forward_shifts
from ..mixed.native._blas import single_threaded
from .laplace_batch import BatchedLaplace, _Modes
from .response import check_response
from .result import GlmmCore, check_vcov, start_parts

if TYPE_CHECKING:
    from .model import GlmmModel

__all__ = ["BatchedLaplace", "refit_many", "refit_nested"]

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
#: with ``vcov="hessian"``, a row whose predicted decrease falls below this gets a fresh
#: Hessian (differences of the gradient, no BFGS updates after it): its last Newton steps
#: converge quadratically and the Hessian, taken ~1e-3 SEs from the optimum, gives ``vcov``
EXACT_DEC = 1e-6
#: a step moves theta by at most STEP_THETA and the linear predictor by at most STEP_ETA (a
#: flat direction of the Hessian would otherwise send PIRLS to extreme points first)
STEP_THETA = 3.0
STEP_ETA = 3.0




_FIELDS = ("U", "mu", "w", "dev", "iters")

def _rows(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``a[idx]`` for sorted distinct row indices; ``a`` itself when they are all the rows."""
    return a if idx.size == a.shape[0] else a[idx]


def _set_rows(dst: _Modes, idx: np.ndarray, src: _Modes, take: np.ndarray | None = None) -> None:
    """Copy ``src``'s rows (``take`` of them) into ``dst``'s rows ``idx`` (sorted, distinct)."""
    if idx.size == dst.dev.shape[0] and (take is None or take.all()):
        for name in _FIELDS:                     # every row: take src's arrays
            setattr(dst, name, getattr(src, name))
        dst.fac = src.fac
        return
    for name in _FIELDS:
        val = getattr(src, name)
        getattr(dst, name)[idx] = val if take is None else val[take]
    dst.fac.put(idx, src.fac if take is None else src.fac.rows(take))


def _sub(md: _Modes, idx: np.ndarray) -> _Modes:
    """The rows ``idx`` (sorted, distinct) of ``md``; ``md`` itself when they are all (read only)."""
    return md if idx.size == md.dev.shape[0] else _gather(md, idx)


def _gather(md: _Modes, idx: np.ndarray) -> _Modes:
    """The rows ``idx`` of ``md`` (any indices, repeated ones too), copied."""
    return _Modes(md.U[idx], md.mu[idx], md.w[idx], md.fac.rows(idx), md.dev[idx], md.iters[idx])


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

    def __init__(self, bl: BatchedLaplace, Y: np.ndarray, x0: np.ndarray, exact: bool = False,
                 H0: np.ndarray | None = None):
        self.bl, self.k = bl, bl.k
        #: whether the last steps use (and keep) a Hessian from differences near the optimum
        self.want_exact = exact
        self.exact = np.zeros(x0.shape[0], dtype=bool)
        self.Yw = Y * bl.wt
        self.const = bl.constants(Y)
        self.x = x0.copy()
        self.md = bl.pirls(x0[:, :self.k], x0[:, self.k:], self.Yw, self.const, None)
        self.g = np.zeros_like(x0)
        ok = np.flatnonzero(np.isfinite(self.md.dev))
        self.g[ok] = bl.gradient(x0[ok, :self.k], _rows(self.Yw, ok), _sub(self.md, ok))
        self.evals = self.md.iters.copy()
        R, d = x0.shape
        self.H = np.zeros((R, d, d))
        self.need_h = np.ones(R, dtype=bool)
        self.last_dec = np.full(R, np.inf)
        self.done = np.zeros(R, dtype=bool)
        self.failed = ~np.isfinite(self.md.dev) | ~np.all(np.isfinite(self.g), axis=1)
        if H0 is not None:               # each row's own first Hessian (a nested model's)
            self.H[:] = H0
            self.need_h[:] = False
        elif SHARED_H and R > 2 * SHARED_H:
            # every row starts at the same point: the mean Hessian of a few rows there is every
            # row's first (BFGS) Hessian; a row whose first step must be halved gets its own
            few = np.flatnonzero(~self.failed)[:SHARED_H]
            if few.size:
                self.hessian(few)
                self.H[:] = self.H[few].mean(axis=0)
                self.need_h[:] = False

    def _trial(self, idx: np.ndarray, x: np.ndarray, U0: np.ndarray, f0: np.ndarray
               ) -> tuple[_Modes, np.ndarray]:
        """The modes and gradient at trial points ``x`` of rows ``idx``; the gradient only where the deviance did not rise
        above ``f0`` (else nan: the step is halved)."""
        bl, k = self.bl, self.k
        Yw = _rows(self.Yw, idx)
        md = bl.pirls(x[:, :k], x[:, k:], Yw, _rows(self.const, idx), U0)
        self.evals[idx] += md.iters
        g = np.full(x.shape, np.nan)
        down = np.flatnonzero(md.dev <= f0 + 1e-12 * np.abs(f0))
        if down.size:
            g[down] = bl.gradient(x[down, :k], _rows(Yw, down), _sub(md, down))
        return md, g

    def hessian(self, idx: np.ndarray) -> None:
        """Forward differences of the gradient at the current points of ``idx`` (the ``d``
        shifted points of every row evaluated together)."""
        bl, k = self.bl, self.k
        n, d = idx.size, self.x.shape[1]
        rep, dx, h = forward_shifts(self.x[idx], H_STEP)
        x = self.x[idx][rep]
        rows = idx[rep]
        Yw = self.Yw[rows]
        U0 = bl.predict_u(x[:, :k], Yw, _gather(self.md, rows), dx)
        md = bl.pirls(x[:, :k] + dx[:, :k], x[:, k:] + dx[:, k:], Yw, self.const[rows], U0)
        np.add.at(self.evals, rows, md.iters)
        G = bl.gradient(x[:, :k] + dx[:, :k], Yw, md).reshape(d, n, d).swapaxes(0, 1)
        H = forward_hessian(G, self.g[idx], h.reshape(d, n).T)
        self.failed[idx[~np.all(np.isfinite(H), axis=(1, 2))]] = True
        self.H[idx] = H
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
        if self.want_exact:
            late = (dec < EXACT_DEC) & ~self.exact[act]
            if late.any():
                self.hessian(act[late])
                self.exact[act[late]] = True
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
            U0 = self.bl.predict_u(self.x[act, :self.k], _rows(self.Yw, act), md0, dx)
            x2 = self.x[act] + dx
            md2, g2 = self._trial(act, x2, U0, f0)
            good = np.all(np.isfinite(g2), axis=1)
            if good.any():
                rows = act[good]
                upd = ~self.exact[rows]                # a Hessian from differences is kept
                self._bfgs(rows[upd], dx[good][upd], (g2[good] - self.g[rows])[upd])
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


def refit_many(model: GlmmModel, Y: Any, *, start: Any = None, vcov: str = "hessian"
               ) -> list[GlmmCore | Exception]:
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
    vcov : {"hessian", "rx"}
        The covariance of ``beta``, as :meth:`GlmmModel.refit
        <nlpower.glmm.model.GlmmModel.refit>`: from the Hessian of the
        deviance (glmer's default), or from the PIRLS factor.

    Returns
    -------
    list of GlmmCore or Exception
        Per row, the fit -- the same optimum as ``model.refit`` (Laplace
        deviance to ~1e-7, ``theta`` and ``beta`` to ~1e-5; ``vcov_beta`` to
        ~1e-3, ``converged``, ``singular`` by lme4's rule) -- or the error
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
    vcov = check_vcov(vcov)
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
        with single_threaded(), \
                np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            size = max(CHUNK, CHUNK_VALUES // model.spec.n)
            for lo in range(0, rows.size, size):
                _batched(model, Yv, rows[lo:lo + size], np.concatenate([theta, beta]), out,
                         vcov == "hessian")
    for i, res in enumerate(out):
        if res is None:
            try:
                out[i] = model.refit(Yv[i], start=start, vcov=vcov)
            except (FitError, ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
                out[i] = err
    return [r for r in out if r is not None]


def _hessian_vcov(H: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``2 H^{-1}``'s fixed-effects block per row (lme4's ``vcov``), and where ``H`` is PD."""
    lam = np.linalg.eigvalsh(H)
    pd = lam[:, 0] > 1e-10 * np.maximum(lam[:, -1], 1e-300)
    Hi = np.linalg.inv(np.where(pd[:, None, None], H, np.eye(H.shape[1])))
    V = Hi[:, k:, k:] + np.swapaxes(Hi[:, k:, k:], 1, 2)
    return V, pd & np.all(np.diagonal(V, axis1=1, axis2=2) > 0, axis=1)


def _batched(model: GlmmModel, Y: np.ndarray, rows: np.ndarray, x0: np.ndarray,
             out: list[GlmmCore | Exception | None], hessian: bool = True,
             H0: np.ndarray | None = None) -> None:
    """Fit ``Y[rows]`` together (from ``x0``: one start, or one per row, with ``H0`` their
    first Hessians); the converged fits go into ``out``."""
    bl = model._batched
    if bl is None or not np.array_equal(bl.wt, model.wt):   # built for other prior weights
        bl = model._batched = BatchedLaplace(model)
    x0 = np.broadcast_to(x0, (rows.size, bl.k + bl.p))
    nt = _Newton(bl, Y[rows], np.array(x0), exact=hessian, H0=H0)
    for _ in range(OUTER_MAXIT):
        if not nt.step():
            break
    ok = np.flatnonzero(nt.done & ~nt.failed)
    if hessian:                          # rows that converged before their Hessian was taken
        late = ok[~nt.exact[ok]]
        if late.size:
            nt.hessian(late)
        ok = ok[~nt.failed[ok]]
    if ok.size == 0:
        return
    k = bl.k
    md = _sub(nt.md, ok)
    if hessian:                          # PIRLS's where the Hessian is not positive definite
        V, pd = _hessian_vcov(nt.H[ok], k)
        rx = np.flatnonzero(~pd)
        if rx.size:
            V[rx] = bl.vcov(nt.x[ok[rx], :k], _sub(md, rx))
    else:
        V = bl.vcov(nt.x[ok, :k], md)
    for j, i in enumerate(ok):
        theta = np.abs(nt.x[i, :k])
        if not (math.isfinite(md.dev[j]) and np.all(np.isfinite(V[j]))) \
                or np.max(theta) > THETA_MAX or np.max(np.abs(model.pirls.X @ nt.x[i, k:])) > ETA_MAX:
            continue                     # no finite optimum (separation): refit's answer
        sign = np.concatenate([np.sign(nt.x[i, :k]) + (nt.x[i, :k] == 0), np.ones(bl.p)])
        out[rows[i]] = GlmmCore(theta=theta, beta=nt.x[i, k:].copy(), vcov_beta=V[j],
                                deviance=float(md.dev[j]), converged=True,
                                singular=bool(np.any(theta < SINGULAR_TOL)),
                                n_evals=int(nt.evals[i]), message="converged (batched Newton)",
                                hessian=(nt.H[i] * sign[:, None] * sign[None, :]
                                         if nt.exact[i] else None))


def _nested_columns(model: GlmmModel, null: GlmmModel) -> np.ndarray | None:
    """Where ``null``'s coordinates sit in ``model``'s ``(theta, beta)`` (None: not nested).

    Nested: the same random part, family, weights and offset, and each fixed-effects
    column of ``null`` one of ``model``'s (by name, the same values).
    """
    if (null.family != model.family or null.layout.names != model.layout.names
            or len(null.blocks) != len(model.blocks) or null.spec.n != model.spec.n
            or not np.array_equal(null.wt, model.wt)
            or not np.array_equal(null.offset, model.offset)):
        return None
    for a, b in zip(null.blocks, model.blocks, strict=True):
        if not (np.array_equal(a.codes, b.codes) and np.array_equal(a.Z, b.Z)):
            return None
    names = list(model.spec.fixef_names)
    cols = []
    for j, name in enumerate(null.spec.fixef_names):
        if name not in names:
            return None
        c = names.index(name)
        if not np.allclose(null.spec.X[:, j], model.spec.X[:, c], rtol=0, atol=1e-12):
            return None
        cols.append(model.k + c)
    return np.concatenate([np.arange(model.k), np.asarray(cols, dtype=np.intp)])


def _projected(core: GlmmCore, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The nested model's start from a fit of the larger one: ``(x0, first Hessian or None)``.

    With the fit's Hessian ``H``: the minimum of the quadratic model of the deviance
    with the dropped coordinates at 0, ``x - H^{-1}_{.D} (H^{-1}_{DD})^{-1} x_D``,
    and ``H``'s block of the kept coordinates; else the fit's kept coordinates.
    """
    x = np.concatenate([core.theta, core.beta])
    H = core.hessian
    if H is None:
        return x[keep], None
    drop = np.setdiff1d(np.arange(x.size), keep)
    try:
        Hi = np.linalg.inv(H)
        x = x - Hi[:, drop] @ np.linalg.solve(Hi[np.ix_(drop, drop)], x[drop])
    except np.linalg.LinAlgError:
        return x[keep], None
    return x[keep], H[np.ix_(keep, keep)]


def refit_nested(model: GlmmModel, null: GlmmModel, Y: Any, cores: list[Any]
                 ) -> list[GlmmCore | Exception] | None:
    """The nested model ``null``'s fits of ``Y``, each started from row i's fit ``cores[i]``.

    A likelihood-ratio test fits both models to every response.  When
    ``null`` has ``model``'s random part and a subset of its fixed-effects
    columns, row i's null fit starts at the minimum, with the dropped
    coefficients at 0, of the quadratic model of the deviance at its full
    fit (whose Hessian ``vcov="hessian"`` kept), and Newton's method starts
    with that Hessian's block -- a few steps from close by, instead of a fit
    from the truth.  The optimum is the same.  Rows whose full fit failed get
    its error; ``None``: ``null`` is not nested in ``model`` this way (fit it as usual).

    Examples
    --------
    >>> import pandas as pd
    >>> from nlpower.glmm import glmer
    >>> d = pd.read_csv("tests/reference/data/simdata.csv", dtype={"g": str})
    >>> full = glmer("z ~ x + (1 | g)", d, "poisson")
    >>> null = glmer("z ~ 1 + (1 | g)", d, "poisson")
    >>> Y = full.simulate(3, rng=1)
    >>> fits0 = refit_nested(full.model, null.model, Y, full.model.refit_many(Y, start=full))
    >>> [round(c.deviance, 5) == round(null.model.refit(y).deviance, 5) for c, y in zip(fits0, Y)]
    [True, True, True]
    """
    keep = _nested_columns(model, null)
    if keep is None or not BatchedLaplace.supports(null):
        return None
    Yv = _check_Y(null, Y)
    if len(cores) != len(Yv):
        raise InputError(f"cores must hold one fit per row of Y ({len(Yv)}); got {len(cores)}.")
    out: list[GlmmCore | Exception | None] = [None] * len(Yv)
    _row_errors(null, Yv, out)
    d = keep.size
    x0, H0 = np.zeros((len(Yv), d)), np.zeros((len(Yv), d, d))
    has = np.zeros(len(Yv), dtype=bool)
    for i, core in enumerate(cores):
        if isinstance(core, Exception):
            out[i] = core
        elif out[i] is None:
            x0[i], Hk = _projected(core, keep)
            if Hk is not None:
                H0[i], has[i] = Hk, True
    k = null.k
    x0[:, :k] = np.where(np.abs(x0[:, :k]) < 1e-8, THETA_NUDGE, x0[:, :k])
    rows = np.array([i for i, r in enumerate(out) if r is None and has[i]], dtype=np.intp)
    with single_threaded(), \
                np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        size = max(CHUNK, CHUNK_VALUES // null.spec.n)
        for lo in range(0, rows.size, size):
            part = rows[lo:lo + size]
            _batched(null, Yv, part, x0[part], out, hessian=False, H0=H0[part])
    for i, res in enumerate(out):
        if res is None:
            try:
                out[i] = null.refit(Yv[i], start={"theta": np.abs(x0[i, :k]), "beta": x0[i, k:]},
                                    vcov="rx")
            except (FitError, ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
                out[i] = err
    return [r for r in out if r is not None]
