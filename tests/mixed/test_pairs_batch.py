"""The stacked factorisation's pair strategy (``nlpower.mixed.pairs_batch``).

Reference: dense ``numpy.linalg`` algebra on ``M = Lambda'Z'WZ Lambda + I``
assembled per response from its definition, and the dense Schur
complement's stack (``pairs=False``) on the same weights.
"""

from __future__ import annotations

import numpy as np
import pytest

import nlpower.mixed.pairs_batch as pbm
from nlpower.mixed.blocked_batch import BatchedLayout
from nlpower.mixed.pairs_batch import PairBatchedFactor


def _design(seed: int, ms: tuple[int, ...], ones: bool, pairs: bool, n: int = 150, R: int = 4):
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, m, n) for m in ms]
    for c, m in zip(codes, ms, strict=True):
        c[:m] = np.arange(m)                      # every level observed
    z = [np.ones(n) if ones else rng.normal(size=n) for _ in ms]
    lay = BatchedLayout(codes, z, ms, pairs=pairs)
    lam = rng.uniform(0.2, 1.5, (R, len(ms)))
    w = rng.uniform(0.05, 0.3, (R, n))
    return lay, lam, w, rng


def _dense(lay: BatchedLayout, lam_r: np.ndarray) -> np.ndarray:
    """``Z Lambda`` for one response: ``(n, q)``."""
    A = np.zeros((lay.n, lay.q))
    for b in range(lay.nb):
        A[np.arange(lay.n), lay.cols[b]] = lay.z[b] * lam_r[b]
    return A


CASES = [((30, 6), True), ((30, 6), False), ((25, 7, 4), True), ((25, 7, 4), False)]


@pytest.mark.parametrize(("ms", "ones"), CASES)
def test_logdet_solve_and_selected_inverse_match_the_dense_system(ms, ones):
    lay, lam, w, rng = _design(1, ms, ones, pairs=True)
    fac = lay.factor(lam, w)
    assert isinstance(fac, PairBatchedFactor)
    rhs = rng.normal(size=(lam.shape[0], lay.q))
    rhs3 = rng.normal(size=(lam.shape[0], lay.q, 3))
    x, x3 = fac.solve(rhs), fac.solve(rhs3)
    s, h = fac.selected(lam, w)
    for r in range(lam.shape[0]):
        A = _dense(lay, lam[r])
        M = A.T @ (w[r][:, None] * A) + np.eye(lay.q)
        assert fac.logdet[r] == pytest.approx(np.linalg.slogdet(M)[1], rel=1e-12)
        np.testing.assert_allclose(x[r], np.linalg.solve(M, rhs[r]), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(x3[r], np.linalg.solve(M, rhs3[r]), rtol=1e-10, atol=1e-12)
        G = A @ np.linalg.inv(M)                  # (n, q): (M^-1 A_i')'
        np.testing.assert_allclose(h[r], np.einsum("nq,nq->n", A, G), rtol=1e-10)
        for b in range(lay.nb):
            gb = G[np.arange(lay.n), lay.cols[b]]
            assert s[r, b] == pytest.approx(np.sum(w[r] * lay.z[b] * gb), rel=1e-10)


def test_the_two_strategies_agree_and_rows_are_taken_and_put_back(monkeypatch):
    # pair values formed a few rows at a time, scattered in runs of 50 pairs: the same
    # numbers as all at once
    monkeypatch.setattr(pbm, "PAIR_VALUES", 700)
    monkeypatch.setattr(pbm, "SCATTER_PAIRS", 50)
    lay, lam, w, rng = _design(2, (40, 9), False, pairs=True, n=200, R=5)
    dense = BatchedLayout(lay.codes, lay.z, lay.m, pairs=False)
    assert lay.pair_batch is not None and lay.pair_batch.n_pairs > 700
    assert len(lay.pair_batch.runs[1, 1]) > 5
    fac, ref = lay.factor(lam, w), dense.factor(lam, w)
    np.testing.assert_allclose(fac.logdet, ref.logdet, rtol=1e-13)
    rhs = rng.normal(size=(5, lay.q))
    np.testing.assert_allclose(fac.solve(rhs), ref.solve(rhs), rtol=1e-11, atol=1e-13)
    for got, want in zip(fac.selected(lam, w), ref.selected(lam, w), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-11)
    stack = lay.empty(5)
    assert np.all(np.isinf(stack.logdet))
    stack.put(np.array([1, 3]), fac.rows(np.array([1, 3])))
    np.testing.assert_array_equal(stack.logdet[[1, 3]], fac.logdet[[1, 3]])
    np.testing.assert_allclose(stack.rows(np.array([3])).solve(rhs[3:4]), ref.solve(rhs)[3:4],
                               rtol=1e-11, atol=1e-13)


def test_a_row_that_is_not_positive_definite_gets_nan_and_the_others_their_factor():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(3, 5, 5))
    S = A @ np.swapaxes(A, 1, 2) + 5.0 * np.eye(5)
    S[1] = -S[1]
    L, ld = pbm.cholesky_rows(S)
    assert np.isnan(ld[1]) and np.all(np.isfinite(L[1]))
    for r in (0, 2):
        assert ld[r] == pytest.approx(np.linalg.slogdet(S[r])[1], rel=1e-12)
        np.testing.assert_allclose(L[r] @ L[r].T, S[r], rtol=1e-12)
