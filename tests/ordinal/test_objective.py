"""The log-likelihood as a function of (x, u0), and fits that share nothing through their model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.checkconv import gradient as fd_gradient
from nlpower.ordinal import prepare_clmm
from nlpower.ordinal.objective import loglik


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(12)
    n = 360
    w, i = rng.integers(0, 12, n), rng.integers(0, 30, n)
    x = rng.normal(size=n)
    lat = 0.5 * x + rng.normal(0, 0.8, 12)[w] + rng.normal(0, 0.6, 30)[i] + rng.logistic(size=n)
    return pd.DataFrame({"w": w.astype(str), "i": i.astype(str), "x": x,
                         "rating": np.digitize(lat, [-1.5, 0.0, 1.5]) + 1})


FORMULAS = ["rating ~ x + (1 | w)", "rating ~ x + (1 | w) + (1 | i)", "rating ~ x"]


def _point(m, shift: float) -> np.ndarray:
    x = m.start()
    x[m.n_alpha:m.n_alpha + m.p] += shift
    x[m.n_alpha + m.p:] = 0.7 + shift
    return x


@pytest.mark.parametrize("formula", FORMULAS)
def test_loglik_depends_on_its_arguments_only(data: pd.DataFrame, formula: str) -> None:
    m = prepare_clmm(formula, data)
    a, b = _point(m, 0.1), _point(m, 0.4)
    u0 = np.zeros(m.n_u)
    fa, ga, ua = loglik(m, a, u0)
    fb, gb, _ = loglik(m, b, u0)
    fa2, ga2, ua2 = loglik(m, a, u0)            # after another point: the same numbers
    assert fa2 == fa and np.array_equal(ga2, ga) and np.array_equal(ua2, ua)
    assert fa != fb
    # the value is the model's -loglik, from its own warm starts, to the modes' tolerance
    assert m.nll(a) == pytest.approx(fa, abs=1e-9)
    assert ua.shape == (m.n_u,)
    fd = fd_gradient(lambda z: loglik(m, z, u0)[0], a, fa, 1e-5)[0]
    np.testing.assert_allclose(ga, fd, atol=2e-4 * max(1.0, np.abs(fd).max() / 10))


def test_loglik_outside_the_parameter_space_is_infinite(data: pd.DataFrame) -> None:
    m = prepare_clmm(FORMULAS[1], data)
    x = _point(m, 0.0)
    x[1] = x[0] - 1.0                              # decreasing thresholds
    f, g, u = loglik(m, x, np.zeros(m.n_u))
    assert f == np.inf and np.isnan(g).all() and not u.any()


@pytest.mark.parametrize("formula", FORMULAS[:2])
def test_a_fit_does_not_depend_on_the_fits_before_it(data: pd.DataFrame, formula: str) -> None:
    m = prepare_clmm(formula, data)
    y1 = m.y.copy()
    y2 = m.simulate(1, rng=3, params=m.refit().params)[0]
    first = m.refit(y1)
    m.refit(y2)                                    # another response in between
    again = m.refit(y1)
    np.testing.assert_array_equal(again.params, first.params)
    np.testing.assert_array_equal(again.vcov, first.vcov)
    assert again.n_evals == first.n_evals
