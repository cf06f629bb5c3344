"""The pair strategy of the blocked factorisation (``nlpower.mixed.pairs``) and its rule.

Reference: dense ``numpy.linalg`` algebra on ``M = Lambda'Z'WZ Lambda + I``
assembled from its definition.
"""

from __future__ import annotations

import numpy as np
import pytest

import nlpower.mixed.pairs as pm
from nlpower.mixed.blocked import BlockedFactor, BlockedLayout, FixedLast, factor
from nlpower.mixed.pairs import PAIR_MIN_WORK, PairFactor


def _design(seed: int, slope1: bool, n: int = 400, m1: int = 50, m2: int = 12):
    """Block 1 (items): ``1 + x`` (continuous, ``slope1``) or ``1 + s``; the rest (workers): ``1 + s``.

    ``s`` a 3-level factor (treatment coding): the rest's rows take 3 patterns.
    """
    rng = np.random.default_rng(seed)
    c1, c2 = rng.integers(0, m1, n), rng.integers(0, m2, n)
    c1[:m1], c2[:m2] = np.arange(m1), np.arange(m2)
    s = rng.integers(0, 3, n)
    S = np.column_stack([np.ones(n), s == 1, s == 2]).astype(float)
    Z1 = np.column_stack([np.ones(n), rng.normal(size=n)]) if slope1 else S.copy()
    lams = [np.tril(rng.uniform(-0.5, 0.5, (Z.shape[1],) * 2)) + np.diag(rng.uniform(0.4, 1.2, Z.shape[1]))
            for Z in (Z1, S)]
    zl = np.concatenate([Z1 @ lams[0], S @ lams[1]], axis=1)
    q1, q2 = Z1.shape[1], S.shape[1]
    dense = np.zeros((n, m1 * q1 + m2 * q2))
    for j in range(q1):
        dense[np.arange(n), c1 * q1 + j] = zl[:, j]
    for j in range(q2):
        dense[np.arange(n), m1 * q1 + c2 * q2 + j] = zl[:, q1 + j]
    return [c1, c2], [q1, q2], [m1, m2], [Z1, S], zl, dense, rng


@pytest.mark.parametrize("slope1", [False, True])
def test_pair_factor_equals_dense_algebra(slope1: bool) -> None:
    codes, qs, ms, designs, zl, A, rng = _design(1, slope1)
    lay = BlockedLayout(codes, qs, ms, designs=designs, pairs=True)
    assert lay.pairs is not None
    assert (lay.pairs.rep1 is None) == slope1          # block 1 compresses only without x
    w = rng.uniform(0.05, 0.4, A.shape[0])
    fac = factor(lay, lay.products(zl), w)
    assert isinstance(fac, PairFactor)
    M = A.T @ (w[:, None] * A) + np.eye(A.shape[1])
    assert fac.logdet == pytest.approx(np.linalg.slogdet(M)[1], rel=1e-11)
    r = rng.normal(size=(A.shape[1], 2))
    np.testing.assert_allclose(fac.solve(r), np.linalg.solve(M, r), rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(fac.solve(r[:, 1]), np.linalg.solve(M, r[:, 1]), rtol=1e-8,
                               atol=1e-11)
    Minv_a = np.linalg.solve(M, A.T).T                  # row i: M^{-1} a_i
    sel = fac.selected(zl)
    np.testing.assert_allclose(sel, np.take_along_axis(Minv_a, lay.slots, axis=1), rtol=1e-8,
                               atol=1e-11)
    # the blocked strategy on the same layout's design gives the same factor
    ref = BlockedLayout(codes, qs, ms, designs=designs, pairs=False)
    blk = factor(ref, ref.products(zl), w)
    assert isinstance(blk, BlockedFactor)
    assert blk.logdet == pytest.approx(fac.logdet, rel=1e-12)
    np.testing.assert_allclose(blk.selected(zl), sel, rtol=1e-8, atol=1e-11)


def test_the_rule_keeps_the_blocked_factorisation_where_pairs_do_not_apply(
        monkeypatch: pytest.MonkeyPatch) -> None:
    codes, qs, ms, designs, zl, A, rng = _design(2, True)
    # small problems (below PAIR_MIN_WORK), no designs: blocked
    assert ms[0] * qs[0] * float(ms[1] * qs[1]) ** 2 <= PAIR_MIN_WORK
    assert BlockedLayout(codes, qs, ms, designs=designs).pairs is None
    assert BlockedLayout(codes, qs, ms, pairs=True).pairs is None
    # a continuous slope in the rest: more patterns than columns
    Zr = np.column_stack([np.ones(A.shape[0]), rng.normal(size=A.shape[0])])
    lay = BlockedLayout(codes, [qs[0], 2], ms, designs=[designs[0], Zr], pairs=True)
    assert lay.pairs is None
    # above both work thresholds the rule takes pairs by itself (here: 400 observations in 50
    # first-block levels, so sum n_l^2 = 3,600 pairs; n1 qr^2 = 100 * 36^2 = 129,600)
    monkeypatch.setattr(pm, "PAIR_MIN_WORK", 0.0)
    n_pairs = float(np.sum(np.bincount(codes[0]) ** 2))
    work = ms[0] * qs[0] * float(ms[1] * qs[1]) ** 2
    monkeypatch.setattr(pm, "PAIR_WORK_PER_PAIR", 1.01 * work / n_pairs)
    assert BlockedLayout(codes, qs, ms, designs=designs).pairs is None
    monkeypatch.setattr(pm, "PAIR_WORK_PER_PAIR", 0.99 * work / n_pairs)
    assert BlockedLayout(codes, qs, ms, designs=designs).pairs is not None


@pytest.mark.parametrize("slope1", [False, True])
def test_fixed_effects_join_the_pair_factor_last(slope1: bool) -> None:
    """With ``X`` the factor is that of ``[A X]' W [A X] + diag(I, 0)``; logdet and the
    selected inverse stay ``M``'s, and the fixed effects' block is the blocked factor's."""
    codes, qs, ms, designs, zl, A, rng = _design(3, slope1)
    n = A.shape[0]
    X = np.column_stack([np.ones(n), rng.integers(0, 2, n), rng.normal(size=n)])
    lay = BlockedLayout(codes, qs, ms, 3, designs=designs, pairs=True)
    assert lay.pairs is not None
    w = rng.uniform(0.05, 0.4, n)
    fac = factor(lay, lay.products(zl), w, X, lay.x_products(X, zl))
    assert isinstance(fac, FixedLast)
    AX = np.hstack([A, X])
    q = A.shape[1]
    J = AX.T @ (w[:, None] * AX)
    J[np.arange(q), np.arange(q)] += 1.0
    r = rng.normal(size=(q + 3, 2))
    np.testing.assert_allclose(fac.solve(r), np.linalg.solve(J, r), rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(fac.solve(r[:, 0]), np.linalg.solve(J, r[:, 0]), rtol=1e-8,
                               atol=1e-11)
    M = J[:q, :q]
    assert fac.logdet == pytest.approx(np.linalg.slogdet(M)[1], rel=1e-11)
    Minv_a = np.linalg.solve(M, A.T).T
    np.testing.assert_allclose(fac.selected(zl), np.take_along_axis(Minv_a, lay.slots, axis=1),
                               rtol=1e-8, atol=1e-11)
    Sx = J[q:, q:] - J[q:, :q] @ np.linalg.solve(M, J[:q, q:])      # X's Schur complement
    np.testing.assert_allclose(fac.Lx @ fac.Lx.T, Sx, rtol=1e-9, atol=1e-11)
    ref = BlockedLayout(codes, qs, ms, 3, designs=designs, pairs=False)
    blk = factor(ref, ref.products(zl), w, X, ref.x_products(X, zl))
    assert isinstance(blk, BlockedFactor) and blk.Lx is not None
    np.testing.assert_allclose(blk.Lx, fac.Lx, rtol=1e-9, atol=1e-11)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        Xc = np.column_stack([X, np.zeros(n)])             # a zero column: Sx is singular
        lay_c = BlockedLayout(codes, qs, ms, 4, designs=designs, pairs=True)
        factor(lay_c, lay_c.products(zl), w, Xc, lay_c.x_products(Xc, zl))


def test_layout_sizes_from_small_integer_types() -> None:
    """Level counts as numpy int16 (pandas category codes) do not overflow the layout's sizes."""
    m1, m2 = 300, 250
    codes = [np.arange(600) % m1, np.arange(600) % m2]
    a = BlockedLayout(codes, [4, 4], [np.int16(m1), np.int16(m2)])
    assert (a.n1, a.qr, a.q) == (m1 * 4, m2 * 4, m1 * 4 + m2 * 4)
    assert a.qr * a.n1 == 1000 * 1200 and a._nzz == m1 * 16 + (0 if a.sparse_c else 1000 * 1200) \
        + 1000 * 1000
