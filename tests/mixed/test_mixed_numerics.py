"""The shared mixed-model numerics (``nlpower.mixed``) against exact answers.

The references are closed forms and ``scipy.integrate.quad``, not this package.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special

from nlpower.mixed.fdiff import (
    cold,
    forward_hessian,
    forward_shifts,
    gradient_hessian,
    richardson_hessian,
    richardson_jacobian,
    value_gradient,
    value_hessian,
)
from nlpower.mixed.quadrature import adaptive_nodes, gh_rule, level_logliks
from nlpower.mixed.relfactor import (
    block_index,
    factor_theta,
    fill_factor,
    relative_factor,
    theta_lower,
)

A = np.array([[3.0, 0.5, -0.2], [0.5, 2.0, 0.3], [-0.2, 0.3, 1.0]])


def _quadratic(x: np.ndarray) -> float:
    return float(0.5 * x @ A @ x + x.sum())


def _smooth(x: np.ndarray) -> np.ndarray:
    """``x0^2 x1^3 + exp(x0 x1) + log(1 + x2^2) x0`` over the last axis."""
    a, b, c = x[..., 0], x[..., 1], x[..., 2]
    return a**2 * b**3 + np.exp(a * b) + np.log1p(c * c) * a


def _smooth_hessian(x: np.ndarray) -> np.ndarray:
    a, b, c = x
    e = np.exp(a * b)
    hab = 6 * a * b * b + e * (1 + a * b)
    hac = 2 * c / (1 + c * c)
    return np.array([[2 * b**3 + b * b * e, hab, hac],
                     [hab, 6 * a * a * b + a * a * e, 0.0],
                     [hac, 0.0, a * (2 - 2 * c * c) / (1 + c * c) ** 2]])


def test_richardson_rules_are_exact_to_extrapolation_error_and_the_same_per_row() -> None:
    X = np.array([[0.7, 1.3, -0.4], [0.05, -0.8, 2.0], [1.5, 0.2, 0.01]])
    H = richardson_hessian(_smooth, X)
    J = richardson_jacobian(lambda x: np.stack([_smooth(x), x[..., 0] * x[..., 2]], axis=-1), X)
    for r, x in enumerate(X):
        np.testing.assert_allclose(H[r], _smooth_hessian(x), rtol=1e-6, atol=1e-6)
        # a row of a batch gets exactly the one-point arithmetic
        assert np.array_equal(richardson_hessian(_smooth, x), H[r])
        Jr = richardson_jacobian(lambda t: np.array([_smooth(t), t[0] * t[2]]), x)
        assert np.array_equal(Jr, J[r])
    a, b, c = X[0]
    e = np.exp(a * b)
    np.testing.assert_allclose(J[0, :, 0], [2 * a * b**3 + b * e + np.log1p(c * c),
                                            3 * a * a * b * b + a * e, 2 * a * c / (1 + c * c)],
                               rtol=1e-9)


def test_forward_shifts_and_hessian_of_rows_match_the_one_point_rule() -> None:
    X = np.array([[0.3, -0.2, 1.0], [2.0, 0.5, -1.0]])
    def grad(x: np.ndarray) -> np.ndarray:       # elementwise (no BLAS: same bits per row)
        cols = [x[..., 0] * A[0, i] + x[..., 1] * A[1, i] + x[..., 2] * A[2, i] for i in range(3)]
        return np.stack(cols, axis=-1) + 1.0 + 0.1 * x**3

    rows, dx, steps = forward_shifts(X, 1e-4)
    n, k = X.shape
    G = grad(X[rows] + dx).reshape(k, n, k).swapaxes(0, 1)
    H = forward_hessian(G, grad(X), steps.reshape(k, n).T)
    for r, x in enumerate(X):
        h = 1e-4 * (1.0 + np.abs(x))
        Gr = np.array([grad(x + h[j] * np.eye(k)[j]) for j in range(k)])
        assert np.array_equal(forward_hessian(Gr, grad(x), h), H[r])
        np.testing.assert_allclose(H[r], A + np.diag(0.3 * x**2), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("cross", ["central", "forward"])
def test_value_hessian_is_exact_on_a_quadratic(cross: str) -> None:
    x = np.array([0.3, -0.7, 1.1])
    g, H, n = value_hessian(cold(_quadratic), x, _quadratic(x), cross=cross)  # type: ignore[arg-type]
    assert np.allclose(g, A @ x + 1.0, atol=1e-8)
    assert np.allclose(H, A, atol=1e-6)
    assert n == (6 + 12 if cross == "central" else 6 + 3)


def test_central_cross_rule_is_second_order_forward_first_order() -> None:
    """On a cubic the forward cross rule's error is O(h), the four-point rule's O(h^2)."""
    f = cold(lambda x: float(x[0] ** 2 * x[1] + x[1] ** 3))
    x = np.array([0.5, 0.2])
    exact = 2.0 * x[0]                                     # d2f / dx0 dx1
    h = 1e-2
    central = value_hessian(f, x, f(x, None)[0], h, cross="central")[1][0, 1]
    forward = value_hessian(f, x, f(x, None)[0], h, cross="forward")[1][0, 1]
    assert abs(central - exact) < 1e-8
    assert abs(forward - exact) > 1e-3                     # h (f_001 + f_011) / 2 = 1e-2


def test_gradient_hessian_and_forward_hessian_agree() -> None:
    grad = cold(lambda x: A @ x + 1.0)
    x = np.array([0.1, 0.2, -0.3])
    Hc, nc = gradient_hessian(grad, x)
    Hf, nf = gradient_hessian(grad, x, g=A @ x + 1.0)
    G = np.array([A @ (x + 1e-4 * e) + 1.0 for e in np.eye(3)])
    assert (nc, nf) == (6, 3)
    assert np.allclose(Hc, A, atol=1e-8) and np.allclose(Hf, A, atol=1e-8)
    assert np.array_equal(forward_hessian(G, A @ x + 1.0), Hf)


def test_value_gradient_steps_forward_at_a_bound() -> None:
    f = cold(lambda x: float(np.sum(np.exp(x))))
    x = np.array([0.0, 1.0])
    g, _, fm, _, n = value_gradient(f, x, 1e-6, fx=f(x, None)[0], lower=np.array([0.0, -np.inf]))
    assert np.isnan(fm[0]) and n == 3
    assert np.allclose(g, np.exp(x), rtol=1e-5)


def test_warm_starts_are_extrapolated_from_the_modes() -> None:
    starts: list[np.ndarray] = []

    def f(x: np.ndarray, start: np.ndarray) -> tuple[float, np.ndarray]:
        starts.append(start)
        return float(x @ x), 2.0 * x                       # the "mode" is linear in x

    x = np.array([1.0, 2.0])
    value_hessian(f, x, 5.0, 0.5, cross="forward", mode=2.0 * x)
    assert np.allclose(starts[1], 2.0 * (x - [0.5, 0.0]))  # 2 u0 - u(x + h e0)
    assert np.allclose(starts[-1], 2.0 * (x + [0.5, 0.5]))  # u(x+h e0) + u(x+h e1) - u0


def test_gauss_hermite_rule_integrates_normal_moments() -> None:
    z, w = gh_rule(6)
    assert np.isclose(w.sum(), 1.0)
    for k, moment in [(2, 1.0), (4, 3.0), (6, 15.0), (10, 945.0)]:
        assert np.isclose(w @ z**k, moment, rtol=1e-12)


@pytest.mark.parametrize("k", [1, 5, 15])
def test_level_logliks_against_quad(k: int) -> None:
    """A logistic-normal integral per level, adaptive rule vs scipy.integrate.quad."""
    ys = [np.array([1, 1, 0]), np.array([0, 0, 0, 1])]
    sd = 1.3

    def h(v: np.ndarray, y: np.ndarray) -> np.ndarray:   # log p(y | v) - v^2 / 2
        eta = sd * np.asarray(v)[..., None]
        return np.sum(y * eta - np.logaddexp(0.0, eta), axis=-1) - 0.5 * np.asarray(v) ** 2

    u, s = np.empty(2), np.empty(2)
    for i, y in enumerate(ys):                            # mode and Laplace scale by Newton
        v = 0.0
        for _ in range(50):
            p = special.expit(sd * v)
            v -= (sd * np.sum(y - p) - v) / (-(sd**2) * p * (1 - p) * y.size - 1.0)
        p = special.expit(sd * v)
        u[i], s[i] = v, (sd**2 * y.size * p * (1 - p) + 1.0) ** -0.5
    nodes = adaptive_nodes(u, s, k)
    hv = np.stack([h(nodes[i], y) for i, y in enumerate(ys)])
    ll = level_logliks(hv, s)[0]
    exact = [np.log(integrate.quad(lambda v, y=y: np.exp(h(v, y)), -30, 30, epsabs=1e-14)[0]
                    / np.sqrt(2 * np.pi)) for y in ys]
    tol = {1: 5e-2, 5: 1e-3, 15: 1e-9}[k]
    assert np.allclose(ll, exact, atol=tol)
    if k == 1:                                            # one node: the Laplace approximation
        assert not np.allclose(ll, exact, atol=1e-6)


def test_relative_factor_layout_and_bounds() -> None:
    lam = relative_factor(np.array([1.0, 0.2, -0.3, 2.0, 0.4, 3.0]), 3)
    assert np.array_equal(lam, [[1.0, 0, 0], [0.2, 2.0, 0], [-0.3, 0.4, 3.0]])
    assert np.array_equal(factor_theta(lam), [1.0, 0.2, -0.3, 2.0, 0.4, 3.0])
    assert theta_lower(3).tolist() == [0.0, -np.inf, -np.inf, 0.0, -np.inf, 0.0]
    theta = np.arange(1.0, 5.0)                           # term A (q=2) at 1, term B (q=1) at 0
    flat, idx = block_index([2, 1], [1, 0])
    block = fill_factor(theta, flat, idx, 3)
    assert np.array_equal(block[:2, :2], relative_factor(theta[1:], 2))
    assert block[2, 2] == theta[0] and block[2, :2].tolist() == [0.0, 0.0]
