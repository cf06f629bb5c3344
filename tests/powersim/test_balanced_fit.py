"""The vectorised balanced fits: REML in closed form, ML from two starts, batched Cholesky.

The fits are checked against the general engine replicate by replicate in
``test_fastpath.py``; here against the exhaustive version of the same solver
(projected Newton from every start of the first version, which also has to
find the REML optimum iteratively) on random designs and variances.
"""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.powersim import balanced_fit as bf
from nlpower.powersim import fastpath as fp


def _random_stats(seed: int, n: int = 200):
    rng = np.random.default_rng(seed)
    w = int(rng.choice([2, 3, 4, 6, 10, 20]))
    i = int(rng.choice([3, 5, 20, 50, 200]))
    v = list(rng.gamma(0.3, 0.02, 5))
    v[0] += rng.uniform(0.001, 0.05)
    gens = [np.random.default_rng([seed, k]) for k in range(n)]
    return fp.draw_stats(w, i, 0.5, 0.05, v, gens)


def _exhaustive(st, REML: bool, ss_sys=None):
    """Projected Newton from every start (the first version's four and the REML solution)."""
    w, i = st.n_workers, st.n_items
    n = 2.0 * w * i
    r = st.n_sims
    ss_sys = np.zeros(r) if ss_sys is None else ss_sys
    ss7 = np.column_stack([np.zeros(r), ss_sys, st.ss])
    c = ss7.sum(axis=1) / n
    ms = st.ss / c[:, None] / st.dims()
    mom = bf._mom_start(ms, w, i)
    mom[:, 0] = np.maximum(mom[:, 0], 1e-3)
    reml, _, _ = bf._minimise_reml(st.ss / c[:, None], w, i)
    lb = np.array([1e-10, 0, 0, 0, 0])
    m7 = bf._m7(w, i, REML)
    best = np.full(r, np.inf)
    for s in bf.starts_ml(mom, reml, w, i, thorough=True):
        _, f, _ = bf._projected_newton(np.maximum(s, lb), ss7 / c[:, None], m7,
                                       fp.design_matrix(w, i), lb)
        best = np.minimum(best, f)
    const = (n - 2.0) * np.log(2 * np.pi) + (n - 2.0) * np.log(c) + 2 * np.log(n) if REML \
        else n * np.log(2 * np.pi) + n * np.log(c)
    return best + const


@pytest.mark.parametrize("seed", range(6))
def test_reml_closed_form_is_the_optimum(seed):
    st = _random_stats(seed)
    fit = bf.fit_balanced(st, REML=True, with_df=False)
    ref = _exhaustive(st, REML=True)
    # never worse than any iterative search, and equal to its tolerance
    assert np.all(fit.deviance <= ref + 1e-9)
    np.testing.assert_allclose(fit.deviance, ref, rtol=0, atol=1e-7)
    assert np.all(fit.variances >= 0) and np.all(fit.converged)


@pytest.mark.parametrize("seed", range(6))
def test_two_starts_find_the_optimum_of_all_starts(seed):
    st = _random_stats(100 + seed)
    fit = bf.fit_balanced(st, REML=False, with_df=False)
    ref = _exhaustive(st, REML=False)
    assert np.all(fit.deviance <= ref + 1e-8 * np.maximum(1.0, np.abs(ref)))


def test_null_deviance_uses_every_start():
    st = _random_stats(7)
    n = 2.0 * st.n_workers * st.n_items
    ref = _exhaustive(st, REML=False, ss_sys=n * st.beta1**2)
    assert np.all(bf.null_deviance(st) <= ref + 1e-8 * np.maximum(1.0, np.abs(ref)))


def test_reml_pooling_by_hand():
    # worker and worker:system mean squares below the residual one: both pooled with it
    w, i = 3, 4
    m = fp.stratum_dims(w, i)  # 2, 2, 3, 3, 12
    ms = np.array([0.5, 0.8, 4.0, 3.0, 1.0])
    st = fp.BalancedStats(w, i, np.zeros(1), np.zeros(1), (ms * m)[None, :])
    fit = bf.fit_balanced(st, REML=True, with_df=False)
    s2 = (0.5 * 2 + 0.8 * 2 + 1.0 * 12) / 16
    expected = [s2, 0.0, 0.0, (4.0 - s2) / (2 * w), (3.0 - s2) / (2 * w)]
    np.testing.assert_allclose(fit.variances[0], expected, rtol=1e-12)
    assert fit.singular[0]


def test_batched_cholesky_solve():
    rng = np.random.default_rng(3)
    B = rng.normal(size=(50, 5, 5))
    H = B @ B.transpose(0, 2, 1) + 0.1 * np.eye(5)
    g = rng.normal(size=(50, 5))
    x, ok = bf._cholesky_solve(H, g)
    assert ok.all()
    np.testing.assert_allclose(x, np.linalg.solve(H, g[..., None])[..., 0], rtol=1e-9, atol=1e-12)
    H[7] = -H[7]  # not positive definite: flagged, and _direction falls back to eigenvalues
    _, ok = bf._cholesky_solve(H, g)
    assert not ok[7] and ok[np.arange(50) != 7].all()
    d = bf._direction(H, g)
    np.testing.assert_allclose(d[7], np.linalg.solve(-H[7], g[7]), rtol=1e-9)
