"""Parametric-bootstrap LRT on the balanced design (nlpower.powersim.pblrt)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm import lmer
from nlpower.powersim.balanced_fit import _minimise_ml
from nlpower.powersim.fastpath import design_matrix, draw_stats, stats_from_ratings, stratum_dims
from nlpower.powersim.pblrt import TIE, _null_draws, lr_statistic, pb_lrt_pvalues

V = [0.0676, 0.0001, 0.0121, 0.0016, 0.0196]        # Card et al. Table 16 "high variance"


def test_lr_statistic_equals_general_engine_lrt():
    """LR from the sufficient statistics = ML deviance difference of two native fits."""
    rng = np.random.default_rng(3)
    w, i = 3, 12
    x = np.array([-1.0, 1.0])
    y = (0.5 + rng.normal(0, 0.1, (w, 1, 1)) + rng.normal(0, 0.1, (1, i, 1))
         + (rng.normal(0, 0.1, (w, 1, 1)) + rng.normal(0, 0.12, (1, i, 1))) * x
         + rng.normal(0, 0.26, (w, i, 2)))
    lr, _ = lr_statistic(stats_from_ratings(y))
    wk, it, sy = np.meshgrid(np.arange(w), np.arange(i), np.arange(2), indexing="ij")
    df = pd.DataFrame({"worker": wk.ravel().astype(str), "item": it.ravel().astype(str),
                       "x": x[sy.ravel()], "rating": y.ravel()})
    full = lmer("rating ~ x + (1 + x || worker) + (1 + x || item)", df, REML=False,
                checkconv="ignore")
    null = lmer("rating ~ 1 + (1 + x || worker) + (1 + x || item)", df, REML=False,
                checkconv="ignore")
    assert lr[0] == pytest.approx(null.deviance - full.deviance, abs=1e-5)


def test_pvalues_are_bootstrap_ranks():
    gens = [np.random.default_rng(k) for k in range(6)]
    st = draw_stats(3, 20, 0.5, 0.0, V, gens)
    p, lr = pb_lrt_pvalues(st, 19, np.random.default_rng(1))
    assert p.shape == (6,) and np.all(lr >= 0)
    np.testing.assert_allclose(p * 20, np.round(p * 20))         # (1 + count) / (B + 1)
    assert np.all((p >= 1 / 20) & (p <= 1))


def test_huge_effect_gets_the_smallest_pvalue():
    gens = [np.random.default_rng(k) for k in range(3)]
    st = draw_stats(5, 30, 0.5, 2.0, V, gens)                   # beta1 = 2: LR enormous
    p, _ = pb_lrt_pvalues(st, 19, np.random.default_rng(2))
    np.testing.assert_allclose(p, 1 / 20)


def test_shortcuts_give_the_brute_force_pvalues():
    """Wald bound + two-stage null fit = full and five-start null fits of every bootstrap sample."""
    w, i, B = 3, 20, 49
    for beta1 in (0.0, 0.08):
        st = draw_stats(w, i, 0.5, beta1, V, [np.random.default_rng(k) for k in range(40)])
        p, lr = pb_lrt_pvalues(st, B, np.random.default_rng(5))
        _, v0 = lr_statistic(st)
        n = 2.0 * w * i
        ss, b1 = _null_draws(v0 @ design_matrix(w, i).T, stratum_dims(w, i), n, B,
                             np.random.default_rng(5))
        ss, b1 = ss.reshape(-1, 5), b1.ravel()
        _, dev1, _ = _minimise_ml(ss, np.zeros(b1.size), w, i)
        _, dev0, _ = _minimise_ml(ss, n * b1**2, w, i, thorough=True)
        hit = (dev0 - dev1).reshape(40, B) >= lr[:, None] * (1 - TIE)
        np.testing.assert_array_equal(p, (1 + hit.sum(axis=1)) / (1 + B))
