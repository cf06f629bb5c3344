"""Parametric-bootstrap likelihood-ratio test of the system effect (balanced designs).

The LRT of ``beta1 = 0`` referred to chi^2_1 is liberal with few workers
(Type I error 0.12-0.14 at 3 workers, ``docs/power.md``).  The parametric
bootstrap (pbkrtest's ``PBmodcomp``; Halekoh & Hoejsgaard 2014, JSS 59(9))
refers the observed LR statistic to its distribution simulated from the
*null* fit instead: draw ``B`` responses from the null model at its ML
estimates, fit both models to each, and report
``p = (1 + #{LR* >= LR}) / (1 + B)``.

For the balanced crossed 2-system design (every worker rates every item
under both systems) both fits depend on the data only through five sums of
squares and ``beta1_hat`` (:mod:`nlpower.powersim.fastpath`), and a null
response's statistics can be drawn directly (``SS_k ~ lambda_k chi2(m_k)``,
``beta1* ~ N(0, lambda_sys / n)``) -- O(1) per bootstrap sample whatever the
design size, and all ``R x B`` refits of a power cell run as one vectorised
batch of :func:`nlpower.powersim.balanced_fit.fit_balanced`.  The structure
(strata, dimensions) is fixed; only the null variances change per replicate.
"""

from __future__ import annotations

import numpy as np

from .balanced_fit import _minimise_ml, fit_balanced, null_deviance
from .fastpath import BalancedStats, design_matrix, stratum_dims


def lr_statistic(stats: BalancedStats) -> tuple[np.ndarray, np.ndarray]:
    """``(LR, null variances)``: ML deviance difference null - full, and the null ML fit."""
    w, i = stats.n_workers, stats.n_items
    n = 2.0 * w * i
    v0, dev0, _ = _minimise_ml(stats.ss, n * stats.beta1**2, w, i, thorough=True)
    dev1 = fit_balanced(stats, REML=False, with_df=False).deviance
    return np.maximum(dev0 - dev1, 0.0), v0


def pb_lrt_pvalues(stats: BalancedStats, n_boot: int, rng: np.random.Generator,
                   chunk: int = 200_000) -> tuple[np.ndarray, np.ndarray]:
    """Parametric-bootstrap p-values of ``beta1 = 0`` for every replicate in ``stats``.

    Returns ``(p, LR)``.  ``rng`` draws the bootstrap samples (``R * B``
    normals and ``5 R B`` chi-squares).

    Examples
    --------
    >>> from nlpower.powersim.fastpath import draw_stats
    >>> gens = [np.random.default_rng(k) for k in range(4)]
    >>> st = draw_stats(3, 20, 0.5, 0.0, [0.07, 0.0001, 0.012, 0.0016, 0.02], gens)
    >>> p, lr = pb_lrt_pvalues(st, 19, np.random.default_rng(1))
    >>> bool(np.all((p > 0) & (p <= 1)))
    True
    """
    w, i = stats.n_workers, stats.n_items
    n = 2.0 * w * i
    lr, v0 = lr_statistic(stats)
    lam = v0 @ design_matrix(w, i).T                      # (R, 7) null stratum eigenvalues
    m = stratum_dims(w, i)
    R = stats.n_sims
    exceed = np.zeros(R)
    per = max(1, chunk // max(n_boot, 1))
    for s in range(0, R, per):
        rows = np.arange(s, min(R, s + per))
        r = rows.size
        chi = rng.chisquare(np.broadcast_to(m, (r, n_boot, 5)))
        ss = (chi * lam[rows, None, 2:]).reshape(-1, 5)
        b1 = (rng.standard_normal((r, n_boot)) * np.sqrt(lam[rows, 1] / n)[:, None]).ravel()
        st = BalancedStats(w, i, np.zeros(r * n_boot), b1, ss)
        dev1 = fit_balanced(st, REML=False, with_df=False).deviance
        lr_b = np.maximum(null_deviance(st) - dev1, 0.0).reshape(r, n_boot)
        exceed[rows] = np.sum(lr_b >= lr[rows, None] * (1.0 - 1e-12), axis=1)
    return (1.0 + exceed) / (1.0 + n_boot), lr


__all__ = ["lr_statistic", "pb_lrt_pvalues"]
