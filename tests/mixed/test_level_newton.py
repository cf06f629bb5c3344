"""The per-level Newton loop (``nlpower.mixed.modes.level_newton``) on closed-form minima."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.mixed.modes import level_newton

C = np.array([0.5, -1.0, 2.0])


def _evaluate(x: np.ndarray) -> tuple[np.ndarray, None]:
    """``log cosh(x_l - c_l)`` per level: minimum at ``c``, Newton overshoots from far away."""
    return np.log(np.cosh(x - C)), None


def _direction(x: np.ndarray, _: None) -> tuple[np.ndarray, np.ndarray | bool]:
    t = x - C
    delta = -np.sinh(t) * np.cosh(t)                  # -f' / f''
    dec = np.tanh(t) * -delta
    return delta, (dec.sum(axis=-1) < 1e-20) if x.ndim == 2 else bool(dec.sum() < 1e-20)


def test_each_level_is_halved_on_its_own() -> None:
    x0 = np.array([0.5 + 3.0, -1.0 + 0.1, 2.0])       # far, near, at the minimum
    one = level_newton(x0, _evaluate(x0)[0], None, _direction, _evaluate, maxit=1,
                       max_halvings=60, slack=0.0)
    delta = _direction(x0, None)[0]
    assert one.x[1] == x0[1] + delta[1]               # the near level takes its full step
    assert one.x[0] != x0[0] + delta[0]               # the far one a halved step
    assert np.all(one.values <= _evaluate(x0)[0])
    run = level_newton(x0, _evaluate(x0)[0], None, _direction, _evaluate, maxit=60,
                       max_halvings=60, slack=0.0)
    assert run.status == "converged"
    np.testing.assert_allclose(run.x, C, atol=1e-9)


def test_points_in_a_batch_stop_when_converged() -> None:
    x0 = np.vstack([C, C + np.array([1.0, -0.5, 0.2])])   # the first point converged already
    run = level_newton(x0, _evaluate(x0)[0], None, _direction, _evaluate, maxit=60,
                       max_halvings=60, slack=0.0)
    assert run.status == "converged"
    np.testing.assert_array_equal(run.x[0], C)             # never moved
    np.testing.assert_allclose(run.x[1], C, atol=1e-9)


@pytest.mark.parametrize(("direction", "maxit", "status"), [
    (lambda x, s: None, 5, "failed"),
    (lambda x, s: (-_direction(x, s)[0], False), 5, "stalled"),   # uphill: never accepted
    (_direction, 1, "maxit"),
])
def test_statuses(direction, maxit: int, status: str) -> None:
    x0 = C + 1.0
    run = level_newton(x0, _evaluate(x0)[0], None, direction, _evaluate, maxit=maxit,
                       max_halvings=4, slack=0.0)
    assert run.status == status
    if status != "maxit":
        np.testing.assert_array_equal(run.x, x0)               # the start kept
