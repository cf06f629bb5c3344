"""The blocked factorisation stacked over responses (``nlpower.mixed.blocked_batch``).

Reference: dense ``numpy.linalg`` algebra on ``M = Lambda'Z'WZ Lambda + I``
assembled per response from its definition.
"""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.mixed.blocked_batch import BatchedLayout


def _design(seed: int, ms: tuple[int, ...], ones: bool, n: int = 150, R: int = 4):
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, m, n) for m in ms]
    for c, m in zip(codes, ms, strict=True):
        c[:m] = np.arange(m)                      # every level observed
    z = [np.ones(n) if ones or b == 0 else rng.normal(size=n) for b in range(len(ms))]
    lay = BatchedLayout(codes, z, ms)
    lam = rng.uniform(0.2, 1.5, (R, len(ms)))
    w = rng.uniform(0.05, 0.3, (R, n))
    return lay, lam, w, rng


def _dense(lay: BatchedLayout, lam_r: np.ndarray) -> np.ndarray:
    """``Z Lambda`` for one response: ``(n, q)``."""
    A = np.zeros((lay.n, lay.q))
    for b in range(lay.nb):
        A[np.arange(lay.n), lay.cols[b]] = lay.z[b] * lam_r[b]
    return A


CASES = [((30,), True), ((30,), False), ((20, 6), True), ((20, 6), False),
         ((25, 7, 4), True), ((25, 7, 4), False)]


@pytest.mark.parametrize(("ms", "ones"), CASES)
def test_logdet_and_solve_match_the_dense_system(ms, ones):
    lay, lam, w, rng = _design(1, ms, ones)
    fac = lay.factor(lam, w)
    rhs = rng.normal(size=(lam.shape[0], lay.q))
    rhs3 = rng.normal(size=(lam.shape[0], lay.q, 3))
    x, x3 = fac.solve(rhs), fac.solve(rhs3)
    for r in range(lam.shape[0]):
        A = _dense(lay, lam[r])
        M = A.T @ (w[r][:, None] * A) + np.eye(lay.q)
        assert fac.logdet[r] == pytest.approx(np.linalg.slogdet(M)[1], rel=1e-12)
        np.testing.assert_allclose(x[r], np.linalg.solve(M, rhs[r]), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(x3[r], np.linalg.solve(M, rhs3[r]), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("ms", "ones"), CASES)
def test_selected_inverse_matches_the_dense_inverse(ms, ones):
    lay, lam, w, _ = _design(2, ms, ones)
    s, h = lay.factor(lam, w).selected(lam, w)
    for r in range(lam.shape[0]):
        A = _dense(lay, lam[r])
        G = A @ np.linalg.inv(A.T @ (w[r][:, None] * A) + np.eye(lay.q))   # (n, q): (M^-1 A_i')'
        np.testing.assert_allclose(h[r], np.einsum("nq,nq->n", A, G), rtol=1e-10)
        for b in range(lay.nb):
            gb = G[np.arange(lay.n), lay.cols[b]]
            assert s[r, b] == pytest.approx(np.sum(w[r] * lay.z[b] * gb), rel=1e-10)


def test_products_with_z_lambda_match_the_dense_matrix():
    lay, lam, _, rng = _design(3, (20, 6), False)
    U = rng.normal(size=(lam.shape[0], lay.q))
    V = rng.normal(size=(lam.shape[0], lay.n))
    zu, ztv = lay.zu(lam, U), lay.ztv(lam, V)
    for r in range(lam.shape[0]):
        A = _dense(lay, lam[r])
        np.testing.assert_allclose(zu[r], A @ U[r], rtol=1e-12)
        np.testing.assert_allclose(ztv[r], A.T @ V[r], rtol=1e-12)


def test_rows_are_taken_and_put_back_per_response():
    lay, lam, w, _ = _design(4, (20, 6), True)
    fac = lay.factor(lam, w)
    stack = lay.empty(lam.shape[0])
    assert np.all(np.isinf(stack.logdet))
    stack.put(np.array([1, 3]), fac.rows(np.array([1, 3])))
    assert stack.logdet[1] == fac.logdet[1] and stack.logdet[3] == fac.logdet[3]
    assert np.isinf(stack.logdet[0]) and np.isinf(stack.logdet[2])
    one = lay.factor(lam[2:3], w[2:3])           # a response alone: the same factor
    assert one.logdet[0] == fac.logdet[2]
    np.testing.assert_array_equal(one.Sinv[0], fac.Sinv[2])
