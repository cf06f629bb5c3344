"""The shared blocked factorisation and Newton loop (``nlpower.mixed.blocked``, ``.modes``).

References: dense ``numpy.linalg`` algebra on ``M = Lambda'Z'WZ Lambda + I``
assembled from its definition, and closed-form minima.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import nlpower.mixed.blocked as bl
from nlpower.mixed.blocked import BlockedLayout, factor
from nlpower.mixed.modes import Direction, newton_modes


def _design(seed: int, qs: tuple[int, ...], ms: tuple[int, ...], n: int = 240
            ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Level codes per block, ``Z Lambda`` per slot and the dense ``Z Lambda`` (``n x q``)."""
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, m, n) for m in ms]
    for c, m in zip(codes, ms, strict=True):
        c[:m] = np.arange(m)                      # every level observed
    zl = rng.normal(size=(n, sum(qs)))
    dense = np.zeros((n, sum(m * q for m, q in zip(ms, qs, strict=True))))
    off, slot = 0, 0
    for c, m, q in zip(codes, ms, qs, strict=True):
        for j in range(q):
            dense[np.arange(n), off + c * q + j] = zl[:, slot + j]
        off += m * q
        slot += q
    return codes, zl, dense


CASES = [((1,), (30,)), ((2,), (12,)), ((1, 1), (40, 6)), ((2, 1), (15, 7)), ((1, 2, 1), (25, 4, 3))]


@pytest.mark.parametrize(("qs", "ms"), CASES)
@pytest.mark.parametrize("sparse", [False, True])
def test_factor_equals_dense_algebra(qs: tuple[int, ...], ms: tuple[int, ...], sparse: bool,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if sparse:
        monkeypatch.setattr(bl, "DENSE_C", 0)     # C (rest x block 1) held sparse
    codes, zl, A = _design(len(qs) + 3 * sparse, qs, ms)
    lay = BlockedLayout(codes, qs, ms)
    assert lay.sparse_c == (sparse and len(qs) > 1)
    rng = np.random.default_rng(1)
    w = np.asarray(rng.uniform(0.1, 2.0, A.shape[0]))
    fac = factor(lay, lay.products(zl), w)
    M = A.T @ (w[:, None] * A) + np.eye(A.shape[1])
    assert fac.logdet == pytest.approx(float(np.linalg.slogdet(M).logabsdet), rel=1e-12)
    r = rng.normal(size=(A.shape[1], 3))
    np.testing.assert_allclose(fac.solve(r), np.linalg.solve(M, r), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fac.solve(r[:, 0]), np.linalg.solve(M, r[:, 0]), rtol=1e-9,
                               atol=1e-12)
    # selected inverse: M^{-1} (Z Lambda)_i' at observation i's own columns
    full = np.linalg.solve(M, A.T).T                                   # (n, q)
    expect = np.take_along_axis(full, lay.slots, axis=1)
    np.testing.assert_allclose(fac.selected(zl), expect, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(lay.zu(zl, r[:, 0]), A @ r[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lay.ztv(zl, w), A.T @ w, rtol=1e-12, atol=1e-12)
    G = lay.block1_matrices(lay.products(zl), w)
    n1 = ms[0] * qs[0]
    blocks = np.stack([M[i:i + qs[0], i:i + qs[0]] for i in range(0, n1, qs[0])])
    np.testing.assert_allclose(G, blocks, rtol=1e-12)


@pytest.mark.parametrize(("qs", "ms"), CASES[2:])
def test_factor_with_fixed_effects(qs: tuple[int, ...], ms: tuple[int, ...]) -> None:
    """With ``X`` the factor is that of ``[A X]' W [A X] + diag(I, 0)``; logdet of the RE part."""
    codes, zl, A = _design(7, qs, ms)
    rng = np.random.default_rng(2)
    X = np.column_stack([np.ones(A.shape[0]), rng.normal(size=A.shape[0])])
    lay = BlockedLayout(codes, qs, ms, p=2)
    w = np.asarray(rng.uniform(0.1, 2.0, A.shape[0]))
    fac = factor(lay, lay.products(zl), w, X, lay.x_products(X, zl))
    AX = np.hstack([A, X])
    q = A.shape[1]
    M = AX.T @ (w[:, None] * AX)
    M[np.arange(q), np.arange(q)] += 1.0
    r = rng.normal(size=q + 2)
    np.testing.assert_allclose(fac.solve(r), np.linalg.solve(M, r), rtol=1e-9, atol=1e-12)
    MRE = A.T @ (w[:, None] * A) + np.eye(q)
    assert fac.logdet == pytest.approx(float(np.linalg.slogdet(MRE).logabsdet), rel=1e-12)


def test_not_positive_definite_is_a_linalg_error() -> None:
    codes, zl, _ = _design(3, (2, 1), (20, 5))
    lay = BlockedLayout(codes, (2, 1), (20, 5))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        factor(lay, lay.products(zl), np.full(zl.shape[0], -50.0))


def _quartic() -> tuple[Any, Any, np.ndarray]:
    """``f(x) = sum (x - c)^4 / 4 + |x|^2 / 2``: convex, minimum where ``(x - c)^3 + x = 0``."""
    c = np.array([2.0, -1.0, 0.5])

    def evaluate(x: np.ndarray) -> tuple[float, None]:
        return float(np.sum((x - c) ** 4) / 4 + x @ x / 2), None

    def direction(x: np.ndarray, _: None) -> Direction:
        g = (x - c) ** 3 + x
        H = 3 * (x - c) ** 2 + 1
        du = -g / H
        return Direction(du, float(g @ -du) < 1e-24, "at the mode")
    return evaluate, direction, c


def test_newton_modes_reaches_the_minimum() -> None:
    evaluate, direction, c = _quartic()
    x0 = np.zeros(3)
    run = newton_modes(x0, evaluate(x0)[0], None, direction, evaluate,
                       maxit=50, max_halvings=30, slack=1e-13)
    assert run.status == "converged" and run.payload == "at the mode"
    np.testing.assert_allclose((run.x - c) ** 3 + run.x, 0.0, atol=1e-12)
    # each accepted step decreases f, so a start far away needs halvings and still arrives
    far = np.full(3, 40.0)
    run = newton_modes(far, evaluate(far)[0], None, direction, evaluate,
                       maxit=100, max_halvings=30, slack=1e-13)
    assert run.status == "converged"
    np.testing.assert_allclose((run.x - c) ** 3 + run.x, 0.0, atol=1e-12)


def test_newton_modes_statuses() -> None:
    evaluate, direction, _ = _quartic()
    x0 = np.zeros(3)
    f0 = evaluate(x0)[0]
    run = newton_modes(x0, f0, None, lambda x, s: None, evaluate, maxit=5, max_halvings=3,
                       slack=0.0)
    assert run.status == "failed" and run.iterations == 1 and run.x is x0
    uphill = newton_modes(x0, f0, None, lambda x, s: Direction(-direction(x, s).delta), evaluate,
                          maxit=5, max_halvings=3, slack=0.0)
    assert uphill.status == "stalled" and uphill.value == f0
    capped = newton_modes(x0, f0, None, direction, evaluate,
                          maxit=1, max_halvings=30, slack=0.0)
    assert capped.status == "maxit" and capped.value < f0
    rule = newton_modes(x0, f0, None, direction, evaluate,
                        converged=lambda old, new, step, d, x: True, maxit=9,
                        max_halvings=30, slack=0.0)
    assert rule.status == "converged" and rule.iterations == 1
