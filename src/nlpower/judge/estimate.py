"""PPI++ with a crossed worker x item rectifier.

For systems ``s`` and a contrast matrix ``L`` (each system minus the
baseline), the estimate on the human scale is

    L theta_hat = lambda * L mean_U(f) + L beta_R(lambda)

where ``mean_U(f)`` is the judge's mean score per system over the ``N``
unlabelled items and ``beta_R(lambda)`` the per-system means of the
rectifier ``r = y - lambda * f`` estimated by a crossed mixed model on the
human ratings (default ``r ~ 0 + system + (1 | worker) + (1 | worker:system) +
(1 | item) + (1 | item:system)``, the paper's ``(system || worker) +
(system || item)`` for two systems with equal per-system variances).  The two parts use disjoint items, so

    Var = lambda^2 L S_U L' / N + L Var(beta_R) L'

with ``S_U`` the covariance of the judge scores over unlabelled items and
``Var(beta_R)`` the rectifier fit's ``vcov``.  Intervals are t intervals
with Welch-Satterthwaite df combining the rectifier contrast's Satterthwaite
df and ``N - 1``.  Any fixed ``lambda`` gives an unbiased estimate whatever
the judge's bias (even a bias that differs by system); ``lambda`` only
trades variance.  Only the items carry the judge-human covariance (worker
effects are independent of the judge), so the tuned ``lambda`` is PPI++'s
item-level value ``tr Cov(L ybar_i, L f_i) / ((1 + n / N) tr Var(L f_i))``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..lmm import lmer
from .data import SINGLE, JudgeData
from .iid import MeanEstimate, interval_test, ppi_mean


def contrasts(systems: tuple[str, ...]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each non-baseline system minus the baseline (the mean itself for one system)."""
    k = len(systems)
    if k == 1:
        return np.ones((1, 1)), ("mean" if systems[0] == SINGLE else systems[0],)
    mat = np.zeros((k - 1, k))
    mat[:, 0] = -1.0
    mat[np.arange(k - 1), np.arange(1, k)] = 1.0
    return mat, tuple(f"{s} - {systems[0]}" for s in systems[1:])


def default_random(systems: tuple[str, ...]) -> str:
    """Crossed worker and item intercepts, plus worker x system and item x system with systems."""
    if len(systems) == 1:
        return "(1 | worker) + (1 | item)"
    return "(1 | worker) + (1 | worker:system) + (1 | item) + (1 | item:system)"


def item_lambda(data: JudgeData, mat: np.ndarray, *, clip: bool = True) -> float:
    """PPI++'s ``lambda`` from item-level contrasts (complete labelled items only)."""
    h = data.item_means() @ mat.T
    g = data.judge_labelled @ mat.T
    keep = np.all(np.isfinite(h), axis=1)
    h, g = h[keep], g[keep]
    gu = data.judge_unlabelled @ mat.T
    n, big_n = h.shape[0], gu.shape[0]
    if n < 2:
        return 0.0
    cov = float(np.sum(np.mean((h - h.mean(0)) * (g - g.mean(0)), axis=0)))
    var = float(np.sum(np.var(np.vstack([g, gu]), axis=0, ddof=1)))
    lam = cov / ((1 + n / big_n) * var) if var > 0 else 0.0
    return float(np.clip(lam, 0.0, 1.0)) if clip else lam


def _formula(lhs: str, systems: tuple[str, ...], random: str) -> str:
    fixed = "1" if len(systems) == 1 else "0 + system"
    return f"{lhs} ~ {fixed} + {random}"


def _fixef_order(systems: tuple[str, ...]) -> list[str]:
    if len(systems) == 1:
        return ["(Intercept)"]
    return [f"system{s}" for s in systems]


def mixed_contrasts(frame: pd.DataFrame, lhs: str, systems: tuple[str, ...], random: str,
                    mat: np.ndarray, *, family: str | None = None) -> tuple[np.ndarray, np.ndarray,
                                                                            np.ndarray, Any]:
    """Fit ``lhs`` by a crossed model; contrasts, their covariance and Satterthwaite df."""
    formula = _formula(lhs, systems, random)
    fit: Any
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if family is None:
            fit = lmer(formula, frame, REML=True)
        else:
            from ..glmm import glmer
            fit = glmer(formula, frame, family=family)
    order = _fixef_order(systems)
    beta = fit.fixef.reindex(order).to_numpy()
    vcov = fit.vcov.reindex(index=order, columns=order).to_numpy()
    est, cov = mat @ beta, mat @ vcov @ mat.T
    if family is None:
        df = np.array([fit.contrast_df(_pad(fit, order, row)) for row in mat])
    else:
        df = np.full(mat.shape[0], math.inf)
    return est, cov, df, fit


def _pad(fit: Any, order: list[str], row: np.ndarray) -> np.ndarray:
    full = pd.Series(0.0, index=fit.fixef.index)
    full[order] = row
    return full.to_numpy()


def welch_df(v_judge: float, df_judge: float, v_rect: float, df_rect: float) -> float:
    """Welch-Satterthwaite df of a sum of two independent variance estimates."""
    denom = (v_judge**2 / df_judge if df_judge > 0 else 0.0) + (
        v_rect**2 / df_rect if math.isfinite(df_rect) and df_rect > 0 else 0.0)
    return (v_judge + v_rect) ** 2 / denom if denom > 0 else math.inf


def ppi_crossed(data: JudgeData, mat: np.ndarray, lam: float, random: str, method: str,
                **test: Any) -> tuple[list[MeanEstimate], Any]:
    """The PPI estimate of each contrast, with a crossed mixed-model rectifier."""
    frame = data.labelled.assign(r=data.labelled["y"] - lam * data.labelled["f"])
    est_r, cov_r, df_r, fit = mixed_contrasts(frame, "r", data.systems, random, mat)
    gu = data.judge_unlabelled @ mat.T
    big_n = gu.shape[0]
    mean_u = gu.mean(0)
    var_u = np.var(gu, axis=0, ddof=1) / big_n
    out = []
    for c in range(mat.shape[0]):
        v_j, v_r = lam**2 * var_u[c], cov_r[c, c]
        df = welch_df(v_j, big_n - 1, v_r, df_r[c])
        out.append(interval_test(lam * mean_u[c] + est_r[c], math.sqrt(v_j + v_r), df=df,
                                 lam=lam, method=method, **test))
    return out, fit


def human_only(data: JudgeData, mat: np.ndarray, random: str, **test: Any) -> tuple[
        list[MeanEstimate], Any]:
    """The crossed mixed model on the human ratings alone."""
    est, cov, df, fit = mixed_contrasts(data.labelled, "y", data.systems, random, mat)
    return [interval_test(est[c], math.sqrt(cov[c, c]), df=df[c], lam=0.0, method="human", **test)
            for c in range(mat.shape[0])], fit


def judge_only(data: JudgeData, mat: np.ndarray, **test: Any) -> list[MeanEstimate]:
    """The judge's mean contrast over all judged items (biased if the judge is)."""
    g = np.vstack([data.judge_labelled, data.judge_unlabelled]) @ mat.T
    n = g.shape[0]
    return [interval_test(float(g[:, c].mean()), float(g[:, c].std(ddof=1) / math.sqrt(n)),
                          df=n - 1, lam=math.nan, method="judge", **test)
            for c in range(mat.shape[0])]


def ppi_items(data: JudgeData, mat: np.ndarray, lam: float | None, **test: Any) -> list[
        MeanEstimate]:
    """I.i.d. PPI on item-level contrasts (one human mean per item; ``ppi-python``'s numbers)."""
    h = data.item_means() @ mat.T
    g = data.judge_labelled @ mat.T
    keep = np.all(np.isfinite(h), axis=1)
    gu = data.judge_unlabelled @ mat.T
    return [ppi_mean(h[keep, c], g[keep, c], gu[:, c], lam=lam, **test)
            for c in range(mat.shape[0])]


def judge_r(data: JudgeData, mat: np.ndarray, human_fit: Any) -> float:
    """Correlation of the judge's per-item contrast with the true (item x system) one.

    ``Cov(L ybar_i, L f_i) / sqrt(Var_true * Var(L f_i))`` for the first
    contrast, with ``Var_true = 2 sigma^2_{item:system}`` from the human-only
    crossed fit (worker effects and rating noise are not part of what a judge
    can predict).  ``NaN`` without an ``item:system`` term or when its variance
    is 0.  Not clipped: a value above 1 says the item x system variance is
    poorly estimated (few items).  The ``judge_r`` of :func:`nlpower.judge.judge_power`.
    """
    if human_fit is None or mat.shape[1] < 2:
        return math.nan
    vc = human_fit.varcorr()
    rows = vc[(vc["grp"] == "item:system") & vc["var2"].isna()]
    if rows.empty or float(rows["vcov"].iloc[0]) <= 0:
        return math.nan
    v_true = float(mat[0] @ mat[0]) * float(rows["vcov"].iloc[0])
    h = data.item_means() @ mat[0]
    g = data.judge_labelled @ mat[0]
    keep = np.isfinite(h)
    if keep.sum() < 3:
        return math.nan
    cov = float(np.cov(h[keep], g[keep])[0, 1])
    var_g = float(np.var(np.concatenate([g, data.judge_unlabelled @ mat[0]]), ddof=1))
    return cov / math.sqrt(v_true * var_g) if var_g > 0 else math.nan
