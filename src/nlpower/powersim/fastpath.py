"""Exact fast path for the balanced, fully crossed two-system design.

Every one of ``W`` workers rates every one of ``I`` items under both systems
(one rating per cell), the model is Card et al.'s (2020, App. H.3, eq. 5-10)::

    rating ~ x + (1 + x || worker) + (1 + x || item),   x = -1 / +1 (sum coding)

fitted by maximum likelihood.  The covariance of the ``n = 2WI`` ratings is
diagonalised by the orthogonal *strata* of the balanced design (tensor
products of the worker, item and system "mean" and "contrast" spaces):

===============  =====================  ==========================================
stratum          dimension ``m``        eigenvalue ``lambda``
===============  =====================  ==========================================
mean             1                      s2 + 2I s0w2 + 2W s0i2
system           1                      s2 + 2I s1w2 + 2W s1i2
worker           W - 1                  s2 + 2I s0w2
worker:system    W - 1                  s2 + 2I s1w2
item             I - 1                  s2 + 2W s0i2
item:system      I - 1                  s2 + 2W s1i2
residual         2 (W - 1)(I - 1)       s2
===============  =====================  ==========================================

(``s2`` the residual variance, ``s0w2``/``s1w2`` the worker intercept/slope
variances, ``s0i2``/``s1i2`` the item ones, all on the +/-1 scale.)  The
fixed-effect columns span the mean and system strata, so GLS equals OLS:
``beta1_hat = mean(x * y)`` exactly, with ``Var(beta1_hat) = lambda_system /
(2WI)``.  The ML deviance (-2 log-likelihood at ``beta_hat``) is::

    n log(2 pi) + sum_k m_k log(lambda_k) + sum_k SS_k / lambda_k

with ``SS = 0`` in the mean and system strata.  The fit therefore depends on
the data only through five sums of squares, and is a 5-parameter problem with
bounds (variances >= 0) that :func:`fit_balanced` solves for all replicates
at once by a projected Newton method (from several starts, keeping the
best), vectorised over replicates.  The result equals what the general
engine (:class:`nlpower.lmm.native.NativeModel`) finds on the same data: t
values to ~1e-6 relative and the same deviance (``tests/power/test_fastpath.py``).

The sufficient statistics come either from rating arrays
(:func:`stats_from_ratings`, works for any response, e.g. Likert scores) or
are drawn directly for Gaussian data (:func:`draw_stats`: ``SS_k ~ lambda_k
chi2(m_k)``, ``beta1_hat ~ N(beta1, lambda_system / (2WI))``, all independent),
which costs O(1) per replicate whatever the design size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the five strata that carry sums of squares, in the order of ``ss`` columns
STRATA = ("worker", "worker:system", "item", "item:system", "residual")
#: the variance parameters, in the order of ``variances`` columns
VARIANCES = ("sigma2", "sd_worker2", "sd_worker_slope2", "sd_item2", "sd_item_slope2")

_LOG2PI = float(np.log(2.0 * np.pi))


@dataclass(frozen=True, eq=False)
class BalancedStats:
    """Sufficient statistics of replicates of a balanced crossed 2-system design.

    Attributes
    ----------
    n_workers, n_items : int
    beta0, beta1 : ndarray, shape (r,)
        OLS (= GLS = ML) estimates of the intercept and the +/-1 system effect.
    ss : ndarray, shape (r, 5)
        Sums of squares of the strata in :data:`STRATA` order.
    """

    n_workers: int
    n_items: int
    beta0: np.ndarray
    beta1: np.ndarray
    ss: np.ndarray

    @property
    def n_sims(self) -> int:
        return int(self.beta1.shape[0])

    @property
    def n(self) -> int:
        return 2 * self.n_workers * self.n_items

    def dims(self) -> np.ndarray:
        """Dimensions ``m`` of the five strata."""
        return stratum_dims(self.n_workers, self.n_items)


def stratum_dims(n_workers: int, n_items: int) -> np.ndarray:
    """Dimensions of the (worker, worker:system, item, item:system, residual) strata."""
    w, i = n_workers, n_items
    return np.array([w - 1, w - 1, i - 1, i - 1, 2 * (w - 1) * (i - 1)], dtype=float)


def _design_matrix(n_workers: int, n_items: int) -> np.ndarray:
    """7 x 5 map from variances to stratum eigenvalues (rows: mean, system, then STRATA)."""
    w2, i2 = 2.0 * n_workers, 2.0 * n_items
    return np.array(
        [
            [1.0, i2, 0.0, w2, 0.0],  # mean
            [1.0, 0.0, i2, 0.0, w2],  # system
            [1.0, i2, 0.0, 0.0, 0.0],  # worker
            [1.0, 0.0, i2, 0.0, 0.0],  # worker:system
            [1.0, 0.0, 0.0, w2, 0.0],  # item
            [1.0, 0.0, 0.0, 0.0, w2],  # item:system
            [1.0, 0.0, 0.0, 0.0, 0.0],  # residual
        ]
    )


def stratum_eigenvalues(n_workers: int, n_items: int, variances: Sequence[float] | np.ndarray) -> np.ndarray:
    """Eigenvalues (mean, system, worker, worker:system, item, item:system, residual).

    ``variances`` = (sigma2, sd_worker2, sd_worker_slope2, sd_item2,
    sd_item_slope2) on the +/-1 (sum) coding scale; the last axis may be
    batched.
    """
    return np.asarray(variances, dtype=float) @ _design_matrix(n_workers, n_items).T


# ----------------------------------------------------------------------------------------
# sufficient statistics
# ----------------------------------------------------------------------------------------


def stats_from_ratings(y: np.ndarray) -> BalancedStats:
    """Sufficient statistics from ratings arranged as ``(r, W, I, 2)``.

    The last axis is the system, in the order ``x = -1, +1``.  Vectorised
    over the replicate axis; any response works (Gaussian or Likert).
    """
    y = np.asarray(y, dtype=float)
    if y.ndim == 3:
        y = y[None]
    if y.ndim != 4 or y.shape[-1] != 2:
        raise ValueError(f"y must have shape (r, n_workers, n_items, 2); got {y.shape}")
    _, w, i, _ = y.shape
    a = 0.5 * (y[..., 1] + y[..., 0])  # (r, W, I): cell means over systems
    z = 0.5 * (y[..., 1] - y[..., 0])  # (r, W, I): half differences (x-weighted means)
    b0 = a.mean(axis=(1, 2))
    b1 = z.mean(axis=(1, 2))
    aw = a.mean(axis=2) - b0[:, None]
    ai = a.mean(axis=1) - b0[:, None]
    zw = z.mean(axis=2) - b1[:, None]
    zi = z.mean(axis=1) - b1[:, None]
    ra = a - b0[:, None, None] - aw[:, :, None] - ai[:, None, :]
    rz = z - b1[:, None, None] - zw[:, :, None] - zi[:, None, :]
    ss = np.stack(
        [
            2.0 * i * np.sum(aw**2, axis=1),
            2.0 * i * np.sum(zw**2, axis=1),
            2.0 * w * np.sum(ai**2, axis=1),
            2.0 * w * np.sum(zi**2, axis=1),
            2.0 * (np.sum(ra**2, axis=(1, 2)) + np.sum(rz**2, axis=(1, 2))),
        ],
        axis=1,
    )
    return BalancedStats(w, i, b0, b1, ss)


def draw_stats(
    n_workers: int,
    n_items: int,
    beta0: float,
    beta1: float,
    variances: Sequence[float],
    generators: Sequence[np.random.Generator],
) -> BalancedStats:
    """Draw the sufficient statistics of Gaussian replicates directly.

    One replicate per generator (each replicate has its own stream, so the
    result does not depend on how replicates are chunked).  ``variances`` on
    the +/-1 scale, see :data:`VARIANCES`.
    """
    lam = stratum_eigenvalues(n_workers, n_items, variances)
    m = stratum_dims(n_workers, n_items)
    n = 2.0 * n_workers * n_items
    r = len(generators)
    z = np.empty((r, 2))
    chi = np.empty((r, 5))
    for j, g in enumerate(generators):
        z[j] = g.standard_normal(2)
        chi[j] = g.chisquare(m)
    b0 = beta0 + z[:, 0] * np.sqrt(lam[0] / n)
    b1 = beta1 + z[:, 1] * np.sqrt(lam[1] / n)
    ss = chi * lam[2:][None, :]
    return BalancedStats(n_workers, n_items, b0, b1, ss)


# ----------------------------------------------------------------------------------------
# ML fit on the sufficient statistics
# ----------------------------------------------------------------------------------------


def _objective(v: np.ndarray, ss7: np.ndarray, m7: np.ndarray, A: np.ndarray) -> np.ndarray:
    lam = v @ A.T
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sum(m7 * np.log(lam) + ss7 / lam, axis=1)
    return np.where(np.all(lam > 0, axis=1), out, np.inf)


def _grad_hess(v: np.ndarray, ss7: np.ndarray, m7: np.ndarray, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lam = v @ A.T
    gl = m7 / lam - ss7 / lam**2
    hl = -m7 / lam**2 + 2.0 * ss7 / lam**3
    g = gl @ A
    H = np.einsum("rk,ki,kj->rij", hl, A, A)
    return g, H


def _projected_newton(
    v: np.ndarray, ss7: np.ndarray, m7: np.ndarray, A: np.ndarray, lb: np.ndarray, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimise the scaled deviance over ``v >= lb`` for every row (replicate).

    Projected Newton (Bertsekas 1982) with an epsilon-active set: a variable
    within ``eps`` of its bound whose gradient pushes it out is fixed at the
    bound; the Newton step on the free variables uses the Hessian with its
    eigenvalues made positive; Armijo backtracking along the projected arc.
    The columns of ``A`` are scaled so every variable is O(1) in the units of
    the eigenvalues.
    """
    r, p = v.shape
    colscale = A.max(axis=0)
    As = A / colscale
    u = v * colscale
    lbs = lb * colscale
    f = _objective(u, ss7, m7, As)
    done = ~np.isfinite(f)
    conv = np.zeros(r, dtype=bool)
    eye = np.eye(p)
    eps = 1e-9
    for _ in range(max_iter):
        idx = np.flatnonzero(~done)
        if idx.size == 0:
            break
        ui = u[idx]
        g, H = _grad_hess(ui, ss7[idx], m7, As)
        active = (ui <= lbs + eps) & (g > 0)
        free = ~active
        mask = free[:, :, None] & free[:, None, :]
        Hf = np.where(mask, H, 0.0) + active[:, :, None] * eye[None]
        ev, Q = np.linalg.eigh(Hf)
        top = np.max(np.abs(ev), axis=1, keepdims=True)
        ev = np.maximum(np.abs(ev), 1e-12 * top)
        gf = np.where(free, g, 0.0)
        d = -np.einsum("rij,rj,rkj,rk->ri", Q, 1.0 / ev, Q, gf)
        d = np.where(free, d, 0.0)
        decrement = -np.sum(gf * d, axis=1)
        ok_now = decrement < 1e-13 * np.maximum(1.0, np.abs(f[idx]))
        conv[idx[ok_now]] = True
        done[idx[ok_now]] = True
        idx, ui, d, g = idx[~ok_now], ui[~ok_now], d[~ok_now], g[~ok_now]
        if idx.size == 0:
            break
        alpha = np.ones(idx.size)
        fi = f[idx]
        accepted = np.zeros(idx.size, dtype=bool)
        unew = ui.copy()
        fnew = fi.copy()
        for _ls in range(40):
            todo = np.flatnonzero(~accepted)
            if todo.size == 0:
                break
            cand = np.maximum(ui[todo] + alpha[todo, None] * d[todo], lbs)
            fc = _objective(cand, ss7[idx[todo]], m7, As)
            slope = np.sum(g[todo] * (cand - ui[todo]), axis=1)
            ok = fc <= fi[todo] + 1e-4 * np.minimum(slope, 0.0)
            good = todo[ok]
            unew[good] = cand[ok]
            fnew[good] = fc[ok]
            accepted[good] = True
            alpha[todo[~ok]] *= 0.25
        # no acceptable step: at the optimum to rounding (flat objective)
        stuck = ~accepted
        conv[idx[stuck]] = True
        done[idx[stuck]] = True
        u[idx] = unew
        f[idx] = fnew
    return u / colscale, f, conv


@dataclass(frozen=True, eq=False)
class BalancedFit:
    """ML fits of replicates of the balanced design (arrays over replicates).

    Attributes
    ----------
    variances : ndarray (r, 5)
        ML estimates of :data:`VARIANCES` (+/-1 scale).
    beta0, beta1 : ndarray (r,)
    se : ndarray (r,)
        Wald standard error of ``beta1``: ``sqrt(lambda_system / (2WI))``.
    t : ndarray (r,)
    deviance : ndarray (r,)
        ML deviance (-2 log-likelihood), comparable with lme4's ``deviance()``.
    df : ndarray (r,)
        Satterthwaite df from the observed Hessian of the ML deviance in the
        variance parameters (lmerTest's method; parameters on the boundary
        drop out, as they do in lmerTest's (theta, sigma) parameterisation).
    df_ems : ndarray (r,)
        Balanced expected-mean-square df (Westfall, Kenny & Judd 2014):
        ``(MS_WS + MS_IS - MS_E)^2 / (MS_WS^2/(W-1) + MS_IS^2/(I-1) + MS_E^2/df_E)``.
    converged, singular : ndarray of bool (r,)
    """

    variances: np.ndarray
    beta0: np.ndarray
    beta1: np.ndarray
    se: np.ndarray
    t: np.ndarray
    deviance: np.ndarray
    df: np.ndarray
    df_ems: np.ndarray
    converged: np.ndarray
    singular: np.ndarray
    REML: bool = False


def _mom_start(ms: np.ndarray, n_workers: int, n_items: int) -> np.ndarray:
    s2 = ms[:, 4]
    return np.stack(
        [
            s2,
            np.maximum(ms[:, 0] - s2, 0.0) / (2.0 * n_items),
            np.maximum(ms[:, 1] - s2, 0.0) / (2.0 * n_items),
            np.maximum(ms[:, 2] - s2, 0.0) / (2.0 * n_workers),
            np.maximum(ms[:, 3] - s2, 0.0) / (2.0 * n_workers),
        ],
        axis=1,
    )


def _m7(n_workers: int, n_items: int, REML: bool) -> np.ndarray:
    """Stratum weights in the criterion: REML drops the mean and system strata."""
    w0 = 0.0 if REML else 1.0
    return np.concatenate([[w0, w0], stratum_dims(n_workers, n_items)])


def _minimise(stats_ss: np.ndarray, ss_sys: np.ndarray, n_workers: int, n_items: int,
              REML: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global ML (or REML) over the variances per replicate; returns (v, criterion, converged).

    The REML criterion of the balanced design is the ML one without the
    mean and system strata (``log|X'V^-1 X| = 2 log(2WI) - log lambda_mean -
    log lambda_system`` cancels their log terms), plus constants.
    """
    m5 = stratum_dims(n_workers, n_items)
    m7 = _m7(n_workers, n_items, REML)
    A = _design_matrix(n_workers, n_items)
    r = stats_ss.shape[0]
    n = 2.0 * n_workers * n_items
    ss7 = np.column_stack([np.zeros(r), ss_sys, stats_ss])
    # scale to O(1): pooled mean square over all strata (deviance shifts by n log c)
    c = np.sum(ss7, axis=1) / n
    c = np.where(c > 0, c, 1.0)
    ss7s = ss7 / c[:, None]
    ms = np.where(m5 > 0, stats_ss / c[:, None] / np.maximum(m5, 1), 0.0)
    lb = np.array([1e-10, 0.0, 0.0, 0.0, 0.0])
    mom = _mom_start(ms, n_workers, n_items)
    mom[:, 0] = np.maximum(mom[:, 0], 1e-3)
    starts = [mom, np.column_stack([np.ones(r), np.zeros((r, 4))]), mom * np.array([1.0, 0.3, 0.3, 0.3, 0.3]),
              mom + np.array([0.0, 1.0 / (2 * n_items), 1.0 / (2 * n_items), 1.0 / (2 * n_workers), 1.0 / (2 * n_workers)])]
    best_v = np.empty((r, 5))
    best_f = np.full(r, np.inf)
    best_c = np.zeros(r, dtype=bool)
    for s in starts:
        v, f, done = _projected_newton(np.maximum(s.copy(), lb), ss7s, m7, A, lb)
        better = f < best_f
        best_v[better] = v[better]
        best_f[better] = f[better]
        best_c[better] = done[better]
    v = best_v * c[:, None]
    if REML:
        dev = (n - 2.0) * _LOG2PI + best_f + (n - 2.0) * np.log(c) + 2.0 * np.log(n)
    else:
        dev = n * _LOG2PI + best_f + n * np.log(c)
    return v, dev, best_c


def _observed_df(v: np.ndarray, stats: BalancedStats, REML: bool = False) -> np.ndarray:
    """Satterthwaite df of beta1 from the observed Hessian of the ML deviance (or REML criterion)."""
    w, i = stats.n_workers, stats.n_items
    A = _design_matrix(w, i)
    m7 = _m7(w, i, REML)
    ss_sys = None
    r = v.shape[0]
    ss7 = np.column_stack([np.zeros(r), np.zeros(r) if ss_sys is None else ss_sys, stats.ss])
    # Hessian at the fitted parameters, scaled for conditioning
    c = v[:, :1]
    vs = v / c
    _, H = _grad_hess(vs, ss7 / c, m7, A)
    n = 2.0 * w * i
    grad = np.broadcast_to(A[1] / n, (r, 5))  # d Var(beta1) / d v (scaled units cancel below)
    free = v > 1e-10 * c  # boundary parameters drop out (see BalancedFit.df)
    free[:, 0] = True
    df = np.empty(r)
    var = (vs @ A[1]) / n
    for j in range(r):
        f = free[j]
        Hf = H[j][np.ix_(f, f)]
        gf = grad[j][f]
        try:
            q = float(gf @ np.linalg.solve(Hf, gf))
        except np.linalg.LinAlgError:
            q = np.nan
        df[j] = var[j] ** 2 / q if q > 0 else np.nan
    return df


def ems_df(ms_ws: np.ndarray, ms_is: np.ndarray, ms_e: np.ndarray, n_workers: int, n_items: int) -> np.ndarray:
    """Satterthwaite df of ``MS_WS + MS_IS - MS_E`` (balanced expected mean squares).

    ``E[MS_WS] = s2 + 2I s1w2``, ``E[MS_IS] = s2 + 2W s1i2``, ``E[MS_E] = s2``
    (+/-1 coding, one rating per worker x item x system cell), so
    ``E[MS_WS + MS_IS - MS_E] = lambda_system = 2WI Var(beta1_hat)``.
    """
    num = (ms_ws + ms_is - ms_e) ** 2
    den = ms_ws**2 / (n_workers - 1) + ms_is**2 / (n_items - 1) + ms_e**2 / (2.0 * (n_workers - 1) * (n_items - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(num / den)


def fit_balanced(stats: BalancedStats, *, REML: bool = False, with_df: bool = True) -> BalancedFit:
    """ML (lme4 ``REML = FALSE``, default) or REML fit of every replicate in ``stats``.

    With ``REML=True`` the ``deviance`` field holds lme4's REML criterion.
    """
    w, i = stats.n_workers, stats.n_items
    if w < 2 or i < 2:
        raise ValueError("the balanced fast path needs at least 2 workers and 2 items")
    n = 2.0 * w * i
    v, dev, conv = _minimise(stats.ss, np.zeros(stats.n_sims), w, i, REML)
    lam_sys = v @ _design_matrix(w, i)[1]
    se = np.sqrt(lam_sys / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = stats.beta1 / se
    m = stats.dims()
    ms = stats.ss / m
    df_ems = ems_df(ms[:, 1], ms[:, 3], ms[:, 4], w, i)
    df = _observed_df(v, stats, REML) if with_df else np.full(stats.n_sims, np.nan)
    singular = np.any(v[:, 1:] <= 1e-8 * v[:, :1], axis=1)
    return BalancedFit(v, stats.beta0, stats.beta1, se, t, dev, df, df_ems, conv, singular, REML)


def null_deviance(stats: BalancedStats) -> np.ndarray:
    """ML deviance of the model without the system effect (``beta1 = 0``).

    With ``beta1`` fixed at 0 the system stratum keeps its sum of squares
    ``2WI beta1_hat^2``; everything else is unchanged.
    """
    n = 2.0 * stats.n_workers * stats.n_items
    _, dev, _ = _minimise(stats.ss, n * stats.beta1**2, stats.n_workers, stats.n_items)
    return dev


def describe_strata(n_workers: int, n_items: int, variances: Sequence[float]) -> dict[str, Any]:
    """Dimensions and eigenvalues of the seven strata (for docs and checks)."""
    lam = stratum_eigenvalues(n_workers, n_items, variances)
    names = ("mean", "system", *STRATA)
    m = np.concatenate([[1.0, 1.0], stratum_dims(n_workers, n_items)])
    return {k: (int(mm), float(lv)) for k, mm, lv in zip(names, m, lam, strict=True)}
