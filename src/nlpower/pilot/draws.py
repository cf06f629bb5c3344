"""The pilot's sampling distribution of the variance components.

A pilot fit gives point estimates ``v_hat`` of the five variances of the
paper's model on the +-1 scale (:data:`VARIANCES`: residual, worker
intercept, worker slope, item intercept, item slope).  Two ways to describe
how far they could be from the truth:

``"bootstrap"`` (parametric bootstrap of the pilot fit)
    Simulate the pilot's own design from ``v_hat`` and refit by ML, ``n_boot``
    times, then correct for the bias of ML variances (:func:`bias_corrected`).
    For a balanced pilot (every worker rated every item under both
    systems once) the fit depends on the data only through five sums of
    squares, which are drawn directly (``SS_k ~ lambda_k chi2(m_k)``,
    :func:`nlpower.powersim.fastpath.draw_stats`) and fitted all at once
    (:func:`nlpower.powersim.balanced_fit.fit_balanced`): 200 refits take
    milliseconds.
``"asymptotic"`` (the fit's asymptotic covariance)
    ``v ~ N(v_hat, J(v_hat)^-1)`` truncated at 0, with ``J`` the expected
    (Fisher) information of the ML fit, which for the balanced pilot is
    ``J = 1/2 sum_k m_k a_k a_k' / lambda_k^2`` over the seven strata
    (``lambda = A v``, ``a_k`` the rows of
    :func:`nlpower.powersim.fastpath.design_matrix`).

:func:`bias_corrected` rescales the bootstrap draws for the ML bias of
variance estimates (measured to matter: ``docs/pilot.md``), and
:func:`upper_bounds` turns either description into one-sided upper
confidence bounds of the variances.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import _dist as stats
from ..params import LMMParams
from ..powersim.balanced_fit import fit_balanced
from ..powersim.fastpath import VARIANCES, design_matrix, draw_stats, stratum_dims

__all__ = ["MAX_VARIANCE", "SD_NAMES", "VARIANCES", "asymptotic_cov", "asymptotic_draws",
           "bias_corrected", "bootstrap_draws", "params_at", "upper_bounds", "variances_of"]

#: SD names in the order of :data:`VARIANCES` (LMMParams fields; ``sigma`` the residual SD).
SD_NAMES = ("sigma", "sd_worker", "sd_worker_slope", "sd_item", "sd_item_slope")
#: No variance of a rating on [0, 1] exceeds 1/4 (SD 1/2): the cap of every upper bound.
MAX_VARIANCE = 0.25


def variances_of(params: LMMParams) -> np.ndarray:
    """The five variances of ``params`` on the +-1 (sum coding) scale, :data:`VARIANCES` order."""
    p = params.to_coding("sum")
    return np.array([p.sigma**2, p.sd_worker**2, p.sd_worker_slope**2, p.sd_item**2,
                     p.sd_item_slope**2])


def params_at(point: LMMParams, variances: np.ndarray) -> LMMParams:
    """``point`` (any coding) with its variances replaced by ``variances`` (+-1 scale)."""
    p = point.to_coding("sum")
    sd = np.sqrt(np.clip(np.asarray(variances, dtype=float), 0.0, None))
    q = LMMParams(beta0=p.beta0, effect=p.effect, sigma=max(float(sd[0]), 1e-12),
                  sd_worker=float(sd[1]), sd_worker_slope=float(sd[2]), sd_item=float(sd[3]),
                  sd_item_slope=float(sd[4]), coding="sum")
    return q if point.coding == "sum" else q.to_coding(point.coding)


def bootstrap_draws(v_hat: np.ndarray, n_workers: int, n_items: int,
                    seeds: Sequence[np.random.SeedSequence]) -> np.ndarray:
    """ML refits of ``len(seeds)`` Gaussian pilots of a balanced ``n_workers x n_items`` design.

    One replicate per seed (its own stream), so the draws do not depend on
    chunking.  Returns ``(n_boot, 5)`` variances, :data:`VARIANCES` order.
    """
    gens = [np.random.Generator(np.random.PCG64(s)) for s in seeds]
    st = draw_stats(n_workers, n_items, 0.0, 0.0, np.asarray(v_hat, dtype=float).tolist(), gens)
    return np.asarray(fit_balanced(st, with_df=False).variances, dtype=float)


def asymptotic_cov(v_hat: np.ndarray, n_workers: int, n_items: int) -> np.ndarray:
    """Inverse expected information of the ML variances of a balanced pilot (5 x 5)."""
    a = design_matrix(n_workers, n_items)
    lam = a @ np.asarray(v_hat, dtype=float)
    m = np.concatenate([[1.0, 1.0], stratum_dims(n_workers, n_items)])
    g = a / lam[:, None]
    info = 0.5 * g.T @ (g * m[:, None])
    return np.asarray(np.linalg.pinv(info, hermitian=True))


def asymptotic_draws(v_hat: np.ndarray, n_workers: int, n_items: int, n: int,
                     gen: np.random.Generator) -> np.ndarray:
    """``n`` draws of ``N(v_hat, J^-1)`` truncated at 0 (residual variance kept positive)."""
    cov = asymptotic_cov(v_hat, n_workers, n_items)
    v = gen.multivariate_normal(np.asarray(v_hat, dtype=float), cov, size=n, method="eigh")
    v = np.clip(v, 0.0, MAX_VARIANCE)
    v[:, 0] = np.maximum(v[:, 0], 1e-6 * max(float(v_hat[0]), 1e-12))
    return np.asarray(v)


def bias_corrected(v_hat: np.ndarray, draws: np.ndarray, *, cap: float | None = MAX_VARIANCE
                   ) -> np.ndarray:
    """Bootstrap draws scaled by the estimated ML bias factor of each variance.

    ML variance estimates are biased low (a worker variance from W workers by
    about ``(W - 1) / W``), and a parametric bootstrap from ``v_hat`` repeats
    that bias, so the raw draws centre below ``v_hat`` when ``v_hat`` is
    itself below the truth.  Each component's draws are multiplied by
    ``c = (2 v_hat - m) / m`` (``m`` the draws' mean), which puts their mean
    at the bias-corrected estimate ``2 v_hat - m`` and keeps their shape;
    ``c`` is never below 1 (at the boundary the bootstrap mean exceeds
    ``v_hat`` because refits cannot go below 0, and shrinking would hide
    uncertainty).  ``cap`` bounds the result (default :data:`MAX_VARIANCE`,
    for ratings on [0, 1]; ``None`` for latent-scale variances).
    """
    v_hat = np.asarray(v_hat, dtype=float)
    m = draws.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(m > 0, (2.0 * v_hat - m) / m, 1.0)
    out = draws * np.maximum(c, 1.0)
    return np.asarray(out if cap is None else np.minimum(out, cap))


def upper_bounds(v_hat: np.ndarray, draws: np.ndarray, n_workers: int, n_items: int,
                 confidence_level: float, method: str) -> np.ndarray:
    """One-sided upper confidence bounds of the five variances (capped at :data:`MAX_VARIANCE`).

    ``"bootstrap"``: the ``confidence_level`` quantile of the (bias-corrected,
    :func:`bias_corrected`) draws.  ``"asymptotic"``: ``v_hat + z se`` with
    ``se`` from :func:`asymptotic_cov` and ``z`` the normal quantile.
    """
    if method == "bootstrap":
        return np.asarray(np.minimum(np.quantile(draws, confidence_level, axis=0), MAX_VARIANCE))
    v_hat = np.asarray(v_hat, dtype=float)
    z = float(stats.norm.ppf(confidence_level))
    se = np.sqrt(np.clip(np.diag(asymptotic_cov(v_hat, n_workers, n_items)), 0.0, None))
    return np.asarray(np.minimum(v_hat + z * se, MAX_VARIANCE))

