"""PPI / PPI++ for a difference of means of two independent groups (i.i.d. labels).

Two systems evaluated on different items, or two populations: group ``a``
has ``n_a`` labelled points (human label ``y``, judge score ``f``) and
``N_a`` judge-only points, group ``b`` likewise.  The estimand
``mean_a - mean_b`` is the slope of the least-squares regression of the label
on ``x = (1, [group a])``, and prediction-powered inference for it is the
M-estimation form of PPI++ (Angelopoulos, Duchi & Zrnic 2024, Sec. 3) with
the squared loss.  With ``g_i = x_i (x_i' theta - y_i)`` the gradient of a
labelled point, ``h_i`` the same with the judge score in place of the label
(``h~_j`` on the judge-only points) and ``H`` the Hessian (the mean of
``x x'`` over all ``n + N`` points),

    theta(lambda) = OLS(x~, lambda f~) + OLS(x, y - lambda f)
                  = lambda (mean f~_a - mean f~_b) + (mean r_a - mean r_b),  r = y - lambda f
    Var = H^-1 [ (n / N) Cov(lambda h~) + Cov(g - lambda h) ] H^-1 / n

and the variance-minimising ``lambda`` for the slope ``v = H^-1 e_2`` is

    lambda = v' [Cov(g, h) + Cov(h, g)] v / (2 (1 + n / N) v' Var(h) v),

clipped to [0, 1], with ``Var(h)`` pooled over labelled and judge-only points.
The moments are taken over all ``n`` labelled points at once (both groups),
so they depend on ``theta``; ``ppi-python`` 0.2.3 (``ppi_ols_ci`` with
``coord=1``) evaluates them at the PPI++ estimate whose own ``lambda`` was
tuned at the PPI (``lambda = 1``) estimate, i.e. it tunes twice, and
:func:`ppi_mean_difference` does the same so that the two give the same
interval (its centre is the estimate reported here; ``ppi_ols_pointestimate``
stops after the first tuning step and may differ in the third decimal).
Checked against pinned ``ppi-python`` output in ``tests/judge/test_iid.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._choices import Alternative, check_choice
from .._validation import check_probability, check_real
from ..errors import InputError
from .iid import MeanEstimate, _vector, interval_test


def _design(n_a: int, n_b: int) -> np.ndarray:
    return np.column_stack([np.ones(n_a + n_b), np.r_[np.ones(n_a), np.zeros(n_b)]])


def _theta(lam: float, y: tuple[np.ndarray, np.ndarray], f: tuple[np.ndarray, np.ndarray],
           fu: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """``(mean_b, mean_a - mean_b)`` at ``lambda`` (the two OLS fits are group means)."""
    ma = lam * fu[0].mean() + np.mean(y[0] - lam * f[0])
    mb = lam * fu[1].mean() + np.mean(y[1] - lam * f[1])
    return np.array([mb, ma - mb])


class _Moments:
    """Gradients and inverse Hessian of the squared loss at ``theta``."""

    def __init__(self, theta: np.ndarray, x: np.ndarray, xu: np.ndarray, y: np.ndarray,
                 f: np.ndarray, fu: np.ndarray, *, use_unlabelled: bool) -> None:
        self.n, self.big_n = y.size, fu.size
        hess = (x.T @ x + xu.T @ xu) / (self.n + self.big_n) if use_unlabelled else x.T @ x / self.n
        self.inv_h = np.linalg.inv(hess)
        self.g = x * (x @ theta - y)[:, None]
        self.h = x * (x @ theta - f)[:, None]
        self.hu = xu * (xu @ theta - fu)[:, None] if use_unlabelled else np.zeros_like(xu)

    def tuned(self, clip: bool) -> float:
        v = self.inv_h[1]
        gc, hc = self.g - self.g.mean(axis=0), self.h - self.h.mean(axis=0)
        cov = (gc.T @ hc + hc.T @ gc) / self.n
        var = np.cov(np.vstack([self.h, self.hu]).T)
        lam = float(v @ cov @ v / (2 * (1 + self.n / self.big_n) * (v @ var @ v)))
        return float(np.clip(lam, 0.0, 1.0)) if clip else lam

    def se(self, lam: float) -> float:
        var_u = np.cov((lam * self.hu).T)
        var_l = np.cov((self.g - lam * self.h).T)
        sigma = self.inv_h @ (self.n / self.big_n * var_u + var_l) @ self.inv_h
        return math.sqrt(sigma[1, 1] / self.n)


def ppi_mean_difference(y_a: Any, f_a: Any, f_unlabelled_a: Any, y_b: Any, f_b: Any,
                        f_unlabelled_b: Any, *, lam: float | None = None, null: float = 0.0,
                        confidence_level: float = 0.95, alternative: Alternative = "two-sided",
                        clip: bool = True) -> MeanEstimate:
    """Prediction-powered estimate of ``mean_a - mean_b`` from two independent groups.

    Parameters
    ----------
    y_a, f_a : array_like
        Human labels and judge scores on group ``a``'s labelled points.
    f_unlabelled_a : array_like
        Judge scores on group ``a``'s points without a human label.
    y_b, f_b, f_unlabelled_b : array_like
        The same for group ``b``.
    lam : float, optional
        ``1``: PPI; ``0``: the labels alone; ``None`` (default): PPI++'s tuned
        value (module docstring; one ``lambda`` shared by both groups).
    null : float, default 0
        Difference under the null hypothesis.
    confidence_level : float, default 0.95
    alternative : {"two-sided", "greater", "less"}
    clip : bool, default True
        Clip the tuned ``lambda`` to [0, 1].

    Returns
    -------
    MeanEstimate
        z interval and test (normal approximation, as in ``ppi-python``).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ta, tb = rng.normal(0.3, 1, 600), rng.normal(0.0, 1, 800)
    >>> fa, fb = ta + rng.normal(0, 0.5, 600), tb + rng.normal(0, 0.5, 800)
    >>> est = ppi_mean_difference(ta[:60], fa[:60], fa[60:], tb[:80], fb[:80], fb[80:])
    >>> 0 < est.lam < 1 and est.ci_low < est.estimate < est.ci_high
    True
    """
    y = (_vector("y_a", y_a, min_size=2), _vector("y_b", y_b, min_size=2))
    f = (_vector("f_a", f_a, min_size=2), _vector("f_b", f_b, min_size=2))
    fu = (_vector("f_unlabelled_a", f_unlabelled_a, min_size=2),
          _vector("f_unlabelled_b", f_unlabelled_b, min_size=2))
    for g in (0, 1):
        if y[g].size != f[g].size:
            s = "ab"[g]
            raise InputError(f"y_{s} and f_{s} must have the same length (one judge score per "
                             f"labelled point); got {y[g].size} and {f[g].size}.")
    check_real("null", null)
    check_probability("confidence_level", confidence_level)
    check_choice("alternative", alternative, ("two-sided", "greater", "less"))
    x, xu = _design(y[0].size, y[1].size), _design(fu[0].size, fu[1].size)
    yy, ff, uu = np.concatenate(y), np.concatenate(f), np.concatenate(fu)

    def moments(theta: np.ndarray, lam_: float) -> _Moments:
        return _Moments(theta, x, xu, yy, ff, uu, use_unlabelled=lam_ != 0)

    if lam is None:  # tuned at the PPI estimate, then again at that PPI++ estimate
        lam_ = moments(_theta(1.0, y, f, fu), 1.0).tuned(clip)
        lam_ = moments(_theta(lam_, y, f, fu), 1.0).tuned(clip)
        method = "ppi++"
    else:
        lam_ = check_real("lam", lam)
        method = "ppi" if lam_ == 1 else "ppi(lambda fixed)"
    theta = _theta(lam_, y, f, fu)
    se = moments(theta, lam_).se(lam_)
    return interval_test(float(theta[1]), se, null=null, confidence_level=confidence_level,
                         alternative=alternative, lam=lam_, method=method)
