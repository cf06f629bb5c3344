"""ML and REML fits of the balanced crossed design from its sums of squares.

The criterion (:mod:`nlpower.powersim.fastpath` for the strata) is::

    sum_k w_k log(lambda_k) + SS_k / lambda_k,     lambda = A v,  v >= 0

over the seven strata, with ``w_k = m_k`` (ML) or ``w_k = 0`` in the mean and
system strata (REML), and ``SS = 0`` there.  It is solved for every replicate
at once (STYLE 11):

REML -- closed form
    Without the mean and system strata the four random-effect strata only
    constrain their eigenvalue to be at least the residual variance
    ``lambda_k >= s2``.  For a fixed ``s2`` each is ``max(MS_k, s2)``; the
    profiled criterion is convex in ``1 / s2``, and its minimum is the
    pooled mean square of the residual stratum and of every stratum whose
    mean square lies below it (isotonic regression under the simple tree
    order, Robertson, Wright & Dykstra 1988, ch. 1): sort the four mean
    squares, pool while the next is below the running pooled value.  No
    iteration, the global optimum by construction.
ML -- projected Newton
    The mean and system strata add ``log(lambda_mean)`` and
    ``log(lambda_system)`` (each a sum of variances), which couple the
    strata; no closed form.  A projected Newton method (Bertsekas 1982) from
    four starts, all stacked into one batch, keeps the best per replicate.
    The Newton direction comes from a hand-vectorised 5 x 5 Cholesky
    factorisation; rows whose Hessian is not positive definite (far from
    the optimum) take the eigenvalue-modified direction.

Both equal what the general engine (:class:`nlpower.lmm.native.NativeModel`)
finds on the same data (``tests/powersim/test_balanced_fit.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fastpath import BalancedStats, design_matrix, stratum_dims

_LOG2PI = float(np.log(2.0 * np.pi))
_P = 5  # variance parameters


@dataclass(frozen=True, eq=False)
class BalancedFit:
    """ML (or REML) fits of replicates of the balanced design (arrays over replicates).

    Attributes
    ----------
    variances : ndarray (r, 5)
        Estimates of :data:`~nlpower.powersim.fastpath.VARIANCES` (+/-1 scale).
    beta0, beta1 : ndarray (r,)
    se : ndarray (r,)
        Wald standard error of ``beta1``: ``sqrt(lambda_system / (2WI))``.
    t : ndarray (r,)
    deviance : ndarray (r,)
        ML deviance (-2 log-likelihood), comparable with lme4's ``deviance()``;
        with ``REML=True`` lme4's REML criterion.
    df : ndarray (r,)
        Satterthwaite df from the observed Hessian of the criterion in the
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


# ----------------------------------------------------------------------------------------
# the criterion and its derivatives
# ----------------------------------------------------------------------------------------


def _m7(n_workers: int, n_items: int, REML: bool) -> np.ndarray:
    """Stratum weights in the criterion: REML drops the mean and system strata."""
    w0 = 0.0 if REML else 1.0
    return np.concatenate([[w0, w0], stratum_dims(n_workers, n_items)])


def _objective(v: np.ndarray, ss7: np.ndarray, m7: np.ndarray, A: np.ndarray) -> np.ndarray:
    lam = v @ A.T
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sum(m7 * np.log(lam) + ss7 / lam, axis=1)
    return np.where(np.all(lam > 0, axis=1), out, np.inf)


def _grad_hess(v: np.ndarray, ss7: np.ndarray, m7: np.ndarray, A: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """Gradient (r, 5) and Hessian (r, 5, 5); the Hessian as one matrix product."""
    lam = v @ A.T
    gl = m7 / lam - ss7 / lam**2
    hl = -m7 / lam**2 + 2.0 * ss7 / lam**3
    outer = (A[:, :, None] * A[:, None, :]).reshape(A.shape[0], -1)  # (7, 25)
    return gl @ A, (hl @ outer).reshape(-1, _P, _P)


# ----------------------------------------------------------------------------------------
# Newton directions for a batch of 5 x 5 systems
# ----------------------------------------------------------------------------------------


def _cholesky_solve(H: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``H^-1 g`` row by row by a vectorised Cholesky; ``ok`` False where ``H`` is not PD.

    Written out on the entries (lists of length-r arrays), which for 5 x 5
    systems is several times faster than numpy's batched LAPACK calls.
    """
    h = [[H[:, i, j] for j in range(_P)] for i in range(_P)]
    tol = 1e-12 * np.max(np.abs(np.diagonal(H, axis1=1, axis2=2)), axis=1)
    ok = np.ones(g.shape[0], dtype=bool)
    L: list[list[np.ndarray]] = [[] for _ in range(_P)]  # L[i][j], j <= i
    inv_diag = []
    for j in range(_P):
        pivot = h[j][j]
        for k in range(j):
            pivot = pivot - L[j][k] * L[j][k]
        ok &= pivot > tol
        inv = 1.0 / np.sqrt(np.where(ok, pivot, 1.0))
        inv_diag.append(inv)
        for i in range(j, _P):
            if i == j:
                L[j].append(1.0 / inv)
                continue
            acc = h[i][j]
            for k in range(j):
                acc = acc - L[i][k] * L[j][k]
            L[i].append(acc * inv)
    z: list[np.ndarray] = []
    for j in range(_P):  # L z = g
        acc = g[:, j]
        for k in range(j):
            acc = acc - L[j][k] * z[k]
        z.append(acc * inv_diag[j])
    x: list[np.ndarray] = [np.empty(0)] * _P
    for j in reversed(range(_P)):  # L' x = z
        acc = z[j]
        for k in range(j + 1, _P):
            acc = acc - L[k][j] * x[k]
        x[j] = acc * inv_diag[j]
    return np.column_stack(x), ok


def _modified_newton(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """``H+^-1 g`` with ``H+`` the matrix with its eigenvalues made positive."""
    ev, Q = np.linalg.eigh(H)
    top = np.max(np.abs(ev), axis=1, keepdims=True)
    ev = np.maximum(np.abs(ev), 1e-12 * top)
    return np.einsum("rij,rj,rkj,rk->ri", Q, 1.0 / ev, Q, g)


def _direction(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    x, ok = _cholesky_solve(H, g)
    if not ok.all():
        bad = ~ok
        x[bad] = _modified_newton(H[bad], g[bad])
    return x


# ----------------------------------------------------------------------------------------
# ML: projected Newton from several starts
# ----------------------------------------------------------------------------------------


def _projected_newton(
    v: np.ndarray, ss7: np.ndarray, m7: np.ndarray, A: np.ndarray, lb: np.ndarray, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimise the criterion over ``v >= lb`` for every row.

    Projected Newton (Bertsekas 1982) with an epsilon-active set: a variable
    within ``eps`` of its bound whose gradient pushes it out is fixed at the
    bound; the Newton step on the free variables uses the Hessian with its
    eigenvalues made positive (:func:`_direction`); Armijo backtracking along
    the projected arc.  The columns of ``A`` are scaled so every variable is
    O(1) in the units of the eigenvalues.
    """
    r = v.shape[0]
    colscale = A.max(axis=0)
    As = A / colscale
    u = v * colscale
    lbs = lb * colscale
    f = _objective(u, ss7, m7, As)
    done = ~np.isfinite(f)
    conv = np.zeros(r, dtype=bool)
    eye = np.eye(_P)
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
        gf = np.where(free, g, 0.0)
        d = np.where(free, -_direction(Hf, gf), 0.0)
        decrement = -np.sum(gf * d, axis=1)
        ok_now = decrement < 1e-13 * np.maximum(1.0, np.abs(f[idx]))
        conv[idx[ok_now]] = True
        done[idx[ok_now]] = True
        idx, ui, d, g = idx[~ok_now], ui[~ok_now], d[~ok_now], g[~ok_now]
        if idx.size == 0:
            break
        alpha = np.ones(idx.size)
        fi = f[idx]
        ssi = ss7[idx]
        accepted = np.zeros(idx.size, dtype=bool)
        unew = ui.copy()
        fnew = fi.copy()
        for _ls in range(40):
            todo = np.flatnonzero(~accepted)
            if todo.size == 0:
                break
            cand = np.maximum(ui[todo] + alpha[todo, None] * d[todo], lbs)
            fc = _objective(cand, ssi[todo], m7, As)
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


def starts_ml(mom: np.ndarray, reml: np.ndarray, n_workers: int, n_items: int,
              thorough: bool = False) -> list[np.ndarray]:
    """Starting points of the ML search (scaled variances, one row per replicate).

    The ANOVA (method-of-moments) estimates truncated at 0 and the REML
    solution (which truncates by pooling, so it sits on the boundary where
    the data say so).  ``thorough=True`` adds the starts of the first
    version of this solver -- all random variances 0, and two perturbations
    of the ANOVA start; on 45 000 replicates of random designs and variances
    every start reached the same optimum to 1e-9 (the test
    ``test_two_starts_find_the_optimum_of_four``), so they only cost time.
    """
    if not thorough:
        return [mom, reml]
    r = mom.shape[0]
    bump = np.array([0.0, 1.0 / (2 * n_items), 1.0 / (2 * n_items), 1.0 / (2 * n_workers),
                     1.0 / (2 * n_workers)])
    return [mom, np.column_stack([np.ones(r), np.zeros((r, 4))]),
            mom * np.array([1.0, 0.3, 0.3, 0.3, 0.3]), mom + bump, reml]


def _minimise_ml(ss: np.ndarray, ss_sys: np.ndarray, n_workers: int, n_items: int,
                 thorough: bool = False, only_extra: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Global ML over the variances per replicate; returns (v, deviance, converged).

    ``only_extra=True`` runs only the starts that ``thorough=True`` adds to
    the two default ones (so a caller that already has the default result
    completes the thorough search by taking the smaller deviance).
    """
    m5 = stratum_dims(n_workers, n_items)
    m7 = _m7(n_workers, n_items, REML=False)
    A = design_matrix(n_workers, n_items)
    r = ss.shape[0]
    n = 2.0 * n_workers * n_items
    ss7 = np.column_stack([np.zeros(r), ss_sys, ss])
    # scale to O(1): pooled mean square over all strata (deviance shifts by n log c)
    c = np.sum(ss7, axis=1) / n
    c = np.where(c > 0, c, 1.0)
    ss7s = ss7 / c[:, None]
    ms = np.where(m5 > 0, ss / c[:, None] / np.maximum(m5, 1), 0.0)
    lb = np.array([1e-10, 0.0, 0.0, 0.0, 0.0])
    mom = _mom_start(ms, n_workers, n_items)
    mom[:, 0] = np.maximum(mom[:, 0], 1e-3)
    reml, _, _ = _minimise_reml(ss / c[:, None], n_workers, n_items)
    starts = starts_ml(mom, reml, n_workers, n_items, thorough or only_extra)
    if only_extra:
        starts = starts[1:-1]  # thorough = [mom, *extra, reml]
    k = len(starts)
    v, f, done = _projected_newton(np.maximum(np.vstack(starts), lb), np.tile(ss7s, (k, 1)), m7, A, lb)
    best = np.argmin(f.reshape(k, r), axis=0)  # the first start reaching the minimum
    rows = best * r + np.arange(r)
    v = v[rows] * c[:, None]
    dev = n * _LOG2PI + f[rows] + n * np.log(c)
    return v, dev, done[rows]


# ----------------------------------------------------------------------------------------
# REML: closed form
# ----------------------------------------------------------------------------------------


def _minimise_reml(ss: np.ndarray, n_workers: int, n_items: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """REML variances in closed form (module docstring); returns (v, criterion, converged)."""
    w, i = n_workers, n_items
    m5 = stratum_dims(w, i)
    n = 2.0 * w * i
    r = ss.shape[0]
    ms_re = ss[:, :4] / m5[:4]
    order = np.argsort(ms_re, axis=1, kind="stable")
    ss_sorted = np.take_along_axis(ss[:, :4], order, axis=1)
    m_sorted = m5[:4][order]
    ms_sorted = np.take_along_axis(ms_re, order, axis=1)
    # pooled[:, j]: residual pooled with the j smallest random-effect strata
    zero = np.zeros((r, 1))
    pooled = ((ss[:, 4:5] + np.hstack([zero, np.cumsum(ss_sorted, axis=1)]))
              / (m5[4] + np.hstack([zero, np.cumsum(m_sorted, axis=1)])))
    # pool while the next smallest mean square is below the running pooled value
    below = ms_sorted < pooled[:, :4]
    n_pooled = np.sum(np.cumprod(below, axis=1), axis=1)
    s2 = pooled[np.arange(r), n_pooled]
    floor = 1e-10 * np.sum(ss, axis=1) / n
    s2 = np.maximum(s2, np.where(floor > 0, floor, 1e-10))
    lam = np.maximum(ms_re, s2[:, None])  # worker, worker:system, item, item:system
    scale = np.array([2.0 * i, 2.0 * i, 2.0 * w, 2.0 * w])
    v = np.column_stack([s2, (lam - s2[:, None]) / scale])
    lam5 = np.column_stack([lam, s2])
    crit = np.sum(m5 * np.log(lam5) + ss / lam5, axis=1)
    dev = (n - 2.0) * _LOG2PI + crit + 2.0 * np.log(n)
    return v, dev, np.ones(r, dtype=bool)


# ----------------------------------------------------------------------------------------
# Satterthwaite df and the fit
# ----------------------------------------------------------------------------------------


def _observed_df(v: np.ndarray, stats: BalancedStats, REML: bool = False) -> np.ndarray:
    """Satterthwaite df of beta1 from the observed Hessian of the ML deviance (or REML criterion)."""
    w, i = stats.n_workers, stats.n_items
    A = design_matrix(w, i)
    m7 = _m7(w, i, REML)
    r = v.shape[0]
    ss7 = np.column_stack([np.zeros(r), np.zeros(r), stats.ss])
    # Hessian at the fitted parameters, scaled for conditioning
    c = v[:, :1]
    vs = v / c
    _, H = _grad_hess(vs, ss7 / c, m7, A)
    n = 2.0 * w * i
    grad = A[1] / n  # d Var(beta1) / d v (scaled units cancel below)
    free = v > 1e-10 * c  # boundary parameters drop out (see BalancedFit.df)
    free[:, 0] = True
    var = (vs @ A[1]) / n
    # fixed parameters: identity rows/columns and zero gradient, so they drop out of g'H^-1 g
    mask = free[:, :, None] & free[:, None, :]
    Hf = np.where(mask, H, 0.0) + (~free)[:, :, None] * np.eye(_P)[None]
    gf = np.where(free, grad[None, :], 0.0)
    try:
        q = np.einsum("ri,ri->r", gf, np.linalg.solve(Hf, gf[..., None])[..., 0])
    except np.linalg.LinAlgError:  # a singular Hessian somewhere: solve row by row
        q = np.full(r, np.nan)
        for j in range(r):
            try:
                q[j] = gf[j] @ np.linalg.solve(Hf[j], gf[j])
            except np.linalg.LinAlgError:
                pass
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, var**2 / q, np.nan)


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


def kr_df(variances: np.ndarray, n_workers: int, n_items: int) -> np.ndarray:
    """Kenward-Roger df of ``beta1`` at REML fits of the balanced design (pbkrtest's ``Lb_ddf``).

    Here ``X`` spans the mean and system strata, so pbkrtest's adjusted
    covariance equals the unadjusted one, and for one contrast its df is
    ``2 / A1 = Var^2 / (g' IE2^-1 g)`` -- Satterthwaite's formula with the
    *expected* REML information of the variances ``IE2_rs = sum_k m_k A_kr
    A_ks / lambda_k^2`` (random strata).  Since ``lambda_sys = lambda_WS +
    lambda_IS - lambda_E`` this is::

        (l_WS + l_IS - l_E)^2 / (l_WS^2/(W-1) + l_IS^2/(I-1) + l_E^2/(2(W-1)(I-1)))

    at the *fitted* eigenvalues: the expected-mean-square df (:func:`ems_df`)
    at an interior fit, where ``lambda_k = MS_k`` and it equals lmerTest's
    Satterthwaite df.  At a boundary fit the two differ: lmerTest's
    observed-Hessian df in ``(theta, sigma)`` drops a variance estimated at 0,
    KR keeps it (``tests/powersim/test_kr_balanced.py`` checks both cases
    against :func:`nlpower.lmm.kenward_roger.kr_state`).
    """
    lam = np.asarray(variances, dtype=float) @ design_matrix(n_workers, n_items).T
    return ems_df(lam[:, 3], lam[:, 5], lam[:, 6], n_workers, n_items)


def fit_balanced(stats: BalancedStats, *, REML: bool = False, with_df: bool = True) -> BalancedFit:
    """ML (lme4 ``REML = FALSE``, default) or REML fit of every replicate in ``stats``.

    With ``REML=True`` the ``deviance`` field holds lme4's REML criterion.

    Examples
    --------
    >>> import numpy as np
    >>> from nlpower.powersim.fastpath import draw_stats
    >>> gens = [np.random.default_rng(k) for k in range(3)]
    >>> st = draw_stats(4, 20, 0.5, 0.1, [0.04, 0.01, 0.01, 0.01, 0.02], gens)
    >>> fit_balanced(st).t.shape
    (3,)
    """
    w, i = stats.n_workers, stats.n_items
    if w < 2 or i < 2:
        raise ValueError("the balanced fast path needs at least 2 workers and 2 items")
    n = 2.0 * w * i
    if REML:
        v, dev, conv = _minimise_reml(stats.ss, w, i)
    else:
        v, dev, conv = _minimise_ml(stats.ss, np.zeros(stats.n_sims), w, i)
    lam_sys = v @ design_matrix(w, i)[1]
    se = np.sqrt(lam_sys / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = stats.beta1 / se
    ms = stats.ss / stats.dims()
    df_ems = ems_df(ms[:, 1], ms[:, 3], ms[:, 4], w, i)
    df = _observed_df(v, stats, REML) if with_df else np.full(stats.n_sims, np.nan)
    singular = np.any(v[:, 1:] <= 1e-8 * v[:, :1], axis=1)
    return BalancedFit(v, stats.beta0, stats.beta1, se, t, dev, df, df_ems, conv, singular, REML)


def null_deviance(stats: BalancedStats) -> np.ndarray:
    """ML deviance of the model without the system effect (``beta1 = 0``).

    With ``beta1`` fixed at 0 the system stratum keeps its sum of squares
    ``2WI beta1_hat^2``; everything else is unchanged.  The two default
    starts ignore that sum of squares, so all starts are used
    (:func:`starts_ml` with ``thorough=True``).
    """
    n = 2.0 * stats.n_workers * stats.n_items
    _, dev, _ = _minimise_ml(stats.ss, n * stats.beta1**2, stats.n_workers, stats.n_items,
                             thorough=True)
    return dev


__all__ = ["BalancedFit", "ems_df", "fit_balanced", "kr_df", "null_deviance"]
