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


def design_matrix(n_workers: int, n_items: int) -> np.ndarray:
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
    return np.asarray(variances, dtype=float) @ design_matrix(n_workers, n_items).T


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
    dfs = [float(v) for v in m]
    for j, g in enumerate(generators):
        z[j] = g.standard_normal(2)
        # one scalar call per stratum: the same draws as g.chisquare(m) (numpy draws an array's
        # elements in order from the stream), without the array argument's checks (3x faster)
        chi[j] = [g.chisquare(v) for v in dfs]
    b0 = beta0 + z[:, 0] * np.sqrt(lam[0] / n)
    b1 = beta1 + z[:, 1] * np.sqrt(lam[1] / n)
    ss = chi * lam[2:][None, :]
    return BalancedStats(n_workers, n_items, b0, b1, ss)


def describe_strata(n_workers: int, n_items: int, variances: Sequence[float]) -> dict[str, Any]:
    """Dimensions and eigenvalues of the seven strata (for docs and checks)."""
    lam = stratum_eigenvalues(n_workers, n_items, variances)
    names = ("mean", "system", *STRATA)
    m = np.concatenate([[1.0, 1.0], stratum_dims(n_workers, n_items)])
    return {k: (int(mm), float(lv)) for k, mm, lv in zip(names, m, lam, strict=True)}
