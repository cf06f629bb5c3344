"""The pair strategy (``mixed/pairs.py``) in the ordinal engine against dense algebra."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.checkconv import gradient
from nlpower.mixed import pairs as st
from nlpower.mixed.blocked import BlockedFactor, factor
from nlpower.mixed.pairs import PairFactor
from nlpower.ordinal import prepare_clmm


def _crowd(seed: int, n: int = 500, n_w: int = 30, n_i: int = 45) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = pd.DataFrame({"w": rng.integers(0, n_w, n).astype(str),
                      "i": rng.integers(0, n_i, n).astype(str),
                      "s": rng.choice(["A", "B", "C", "D"], n),
                      "x": rng.normal(size=n), "g": rng.integers(0, 6, n).astype(str)})
    d["rating"] = rng.integers(1, 6, n)
    return d


FORMULAS = [
    "rating ~ s + (s || w) + (s || i)",                  # q = 5 in both factors
    "rating ~ s + (1 + s | w) + (s || i)",               # a full 4 x 4 term in the rest
    "rating ~ s + (s || i) + (1 | w)",
    "rating ~ x + (1 + x | i) + (1 | w) + (0 + s | w)",  # continuous slope in the first block
    "rating ~ s + (s || i) + (1 | w) + (1 + s | g)",     # two rest blocks
]


def _dense_H(model, w: np.ndarray) -> np.ndarray:
    A = model.rs.A.toarray()
    return A.T @ (w[:, None] * A) + np.eye(A.shape[1])


@pytest.mark.parametrize("formula", FORMULAS)
@pytest.mark.parametrize("seed", [0, 1])
def test_pair_factor_equals_dense_algebra(formula: str, seed: int) -> None:
    d = _crowd(seed, n_i=90)
    m = prepare_clmm(formula, d)
    rs = m.rs
    rs.use_pairs = True              # small enough for the dense Schur complement by default
    assert rs.pair_plan() is not None
    rng = np.random.default_rng(seed + 10)
    theta = rng.uniform(0.2, 1.5, rs.n_theta) * np.where(rs.lower == 0.0, 1.0,
                                                         rng.choice([-1, 1], rs.n_theta))
    rs.set_theta(theta)
    w = rng.uniform(0.05, 0.3, rs.n)
    fac = rs.factor(w)
    assert isinstance(fac, PairFactor)
    H = _dense_H(m, w)
    sign, ld = np.linalg.slogdet(H)
    assert sign > 0
    assert fac.logdet == pytest.approx(ld, rel=1e-10, abs=1e-8)
    r = rng.normal(size=(rs.n_u, 3))
    np.testing.assert_allclose(fac.solve(r), np.linalg.solve(H, r), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fac.solve(r[:, 0]), np.linalg.solve(H, r[:, 0]), rtol=1e-8,
                               atol=1e-10)
    # H^{-1} a_i at observation i's own random effects
    Hinv = np.linalg.inv(H)
    A = rs.A.toarray()
    v = fac.selected(rs.Avals)
    for i in rng.choice(rs.n, 40, replace=False):
        np.testing.assert_allclose(v[i], (Hinv @ A[i])[rs.Acols[i]], rtol=1e-8, atol=1e-10)
    # and the blockwise dense Schur complement agrees
    ref = factor(rs.layout, rs.products, w)
    assert ref.logdet == pytest.approx(fac.logdet, rel=1e-11)


def test_continuous_slope_in_the_rest_is_not_compressed() -> None:
    d = _crowd(2, n_i=90)
    m = prepare_clmm("rating ~ x + (1 | i) + (1 + x | w)", d)
    m.rs.use_pairs = True
    assert m.rs.blocks[0].group == "i"
    assert m.rs.pair_plan() is None
    assert isinstance(m.rs.factor(np.full(m.rs.n, 0.2)), BlockedFactor)


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_gradient_of_the_crossed_q5_model_matches_differences(link: str) -> None:
    d = _crowd(3, n=700)
    m = prepare_clmm("rating ~ s + (s || w) + (s || i)", d, link=link)
    m.rs.use_pairs = True
    assert m.rs.pair_plan() is not None
    rng = np.random.default_rng(4)
    x = m.start()
    x[m.n_alpha:m.n_alpha + m.p] += 0.2
    k = m.n_alpha + m.p
    x[k:] = np.where(m.rs.lower == 0.0, rng.uniform(0.3, 1.2, m.n_theta),
                     rng.uniform(-0.4, 0.4, m.n_theta))
    f, g = m.nll_grad(x)
    assert isinstance(m._state.inner.factor, PairFactor)
    fd = gradient(m.nll, x, f, 1e-4)[0]
    np.testing.assert_allclose(g, fd, atol=2e-4 * max(1.0, np.abs(fd).max() / 10))
    assert np.abs(g).max() > 1e-2
    # the same likelihood as the blockwise dense Schur complement
    m2 = prepare_clmm("rating ~ s + (s || w) + (s || i)", d, link=link)
    m2.rs.use_pairs = False
    f2, g2 = m2.nll_grad(x)
    assert f2 == pytest.approx(f, abs=1e-8)
    np.testing.assert_allclose(g2, g, atol=1e-7)


def test_small_crossed_designs_take_the_dense_schur_complement() -> None:
    """By default pairs only where the dense Schur complement's work exceeds PAIR_MIN_WORK."""
    d = _crowd(2, n_i=90)
    m = prepare_clmm("rating ~ s + (s || w) + (s || i)", d)
    b1 = m.rs.blocks[0]
    q1 = b1.L * b1.q
    assert q1 * (m.rs.n_u - q1) ** 2 <= st.PAIR_MIN_WORK
    assert m.rs.pair_plan() is None
    assert isinstance(m.rs.factor(np.full(m.rs.n, 0.2)), BlockedFactor)


def test_blockwise_schur_fallback_dense_and_sparse_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the pair path switched off, the blocked factor's dense and sparse coupling agree."""
    import nlpower.mixed.blocked as bl
    d = _crowd(5)
    rng = np.random.default_rng(6)
    w = rng.uniform(0.05, 0.3, len(d))
    facs = []
    for limit in (bl.DENSE_C, 0):
        monkeypatch.setattr(bl, "DENSE_C", limit)
        m = prepare_clmm("rating ~ s + (s || w) + (1 | i)", d)
        m.rs.use_pairs = False
        m.rs.set_theta(np.random.default_rng(7).uniform(0.3, 1.2, m.rs.n_theta))
        facs.append((m.rs.layout.sparse_c, m.rs.factor(w)))
    (dense_c, dense), (sparse_c, sparse) = facs
    assert not dense_c and sparse_c
    assert sparse.logdet == pytest.approx(dense.logdet, rel=1e-12)
    r = rng.normal(size=m.rs.n_u)
    np.testing.assert_allclose(sparse.solve(r), dense.solve(r), rtol=1e-9, atol=1e-12)


def test_chord_steps_reach_the_newton_modes() -> None:
    """Modes seeded by another point's factor equal the modes of plain Newton steps."""
    from nlpower.ordinal.laplace import conditional_modes
    d = _crowd(7)
    m = prepare_clmm("rating ~ s + (s || w) + (s || i)", d)
    x = m.start()
    alpha, beta, theta = m.split(x)
    m.rs.set_theta(theta)
    up, lo = m.bounds(alpha, beta)
    u0 = np.zeros(m.rs.n_u)
    plain = conditional_modes(m.rs, m.link, up, lo, u0)
    far = conditional_modes(m.rs, m.link, up + 0.3, lo + 0.3, u0)      # another point's H
    seeded = conditional_modes(m.rs, m.link, up, lo, far.u, factor0=far.factor)
    assert plain.converged and seeded.converged
    np.testing.assert_allclose(seeded.u, plain.u, atol=1e-7)
    assert seeded.h == pytest.approx(plain.h, abs=1e-9)
    assert seeded.logdet == pytest.approx(plain.logdet, abs=1e-7)
    assert seeded.iterations <= plain.iterations


def test_fit_through_pairs_reaches_the_blockwise_optimum() -> None:
    d = _crowd(8, n=600)
    f = "rating ~ s + (s || w) + (s || i)"
    a = prepare_clmm(f, d)
    b = prepare_clmm(f, d)
    a.rs.use_pairs, b.rs.use_pairs = True, False
    assert a.rs.pair_plan() is not None and b.rs.pair_plan() is None
    ca, cb = a.refit(), b.refit()
    assert ca.converged and cb.converged
    assert ca.loglik >= cb.loglik - 1e-6
    np.testing.assert_allclose(ca.beta, cb.beta, atol=1e-3)
    np.testing.assert_allclose(ca.alpha, cb.alpha, atol=1e-3)


def test_intercept_is_redundant_next_to_a_dummy_coded_term() -> None:
    """The staged start's premise: only s0^2 11' + L L' enters the likelihood."""
    d = _crowd(9)
    m = prepare_clmm("rating ~ s + (s || w) + (1 | i)", d)
    rs = m.rs
    ks = [k for k, t in enumerate(rs.terms) if t.group == "w"]
    k0 = next(k for k in ks if rs.terms[k].q == 1)
    k1 = next(k for k in ks if rs.terms[k].q == 4)
    rng = np.random.default_rng(10)
    L = np.tril(rng.uniform(-0.5, 0.5, (4, 4))) + np.diag(rng.uniform(0.4, 1.0, 4))
    s0 = 0.8
    Lt = np.linalg.cholesky(s0 ** 2 * np.ones((4, 4)) + L @ L.T)
    base = m.start()
    off = m.n_alpha + m.p

    def x_of(sd0: float, Lw: np.ndarray) -> np.ndarray:
        x = base.copy()
        th = x[off:]
        th[rs.theta_slices[k0]] = sd0
        th[rs.theta_slices[k1]] = np.concatenate([Lw[j:, j] for j in range(4)])
        th[[i for i in range(rs.n_theta) if not any(
            i in range(*rs.theta_slices[k].indices(rs.n_theta)) for k in ks)]] = 0.7
        return x

    assert m.nll(x_of(s0, L)) == pytest.approx(m.nll(x_of(0.0, Lt)), abs=1e-8)
    assert abs(m.nll(x_of(s0, L)) - m.nll(x_of(0.0, L))) > 1e-3


def test_staged_start_reaches_the_unit_start_optimum() -> None:
    d = _crowd(11, n=700)
    m = prepare_clmm("rating ~ s + (s || w) + (s || i)", d)
    staged = m.refit()
    unit = m.refit(start=m.start())
    assert staged.converged and unit.converged
    assert staged.loglik >= unit.loglik - 1e-6
    np.testing.assert_allclose(staged.beta, unit.beta, atol=1e-3)
    np.testing.assert_allclose(staged.thresholds, unit.thresholds, atol=1e-3)
