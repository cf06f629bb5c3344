"""The Student t tail computed without scipy.special agrees with scipy.special.stdtr."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from nlpower._student import t_sf

T = np.array([0.0, 1e-12, 1e-8, 1e-3, 0.1, 0.5, 1.0, 1.7, 2.0, 2.5, 3.0, 5.0, 10.0, 40.0,
              1e3, 1e8, 1e160])
T = np.concatenate([T, -T[1:]])
DF = np.array([0.05, 0.3, 1.5, 2.5, 4.2, 7.3, 19.99, 20.0, 20.01, 57.7, 123.4, 1e3, 9999.0])


def _rel(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    keep = ref > 1e-290  # below this scipy's own result is subnormal
    return np.abs(got[keep] - ref[keep]) / ref[keep]


@pytest.mark.parametrize("df", DF)
def test_grid_matches_stdtr(df: float) -> None:
    ref = special.stdtr(df, -T)
    assert _rel(np.asarray(t_sf(T, df)), ref).max() < 1e-12          # array path
    assert _rel(np.array([t_sf(x, df) for x in T]), ref).max() < 1e-12  # scalar path


def test_random_points_match_stdtr() -> None:
    rng = np.random.default_rng(20261128)
    t = rng.standard_normal(4000) * np.exp(rng.uniform(-3.0, 3.0, 4000))
    df = np.exp(rng.uniform(np.log(0.3), np.log(1e4), 4000))
    assert _rel(t_sf(t, df), special.stdtr(df, -t)).max() < 1e-12


def test_exact_forms_at_one_and_two_df() -> None:
    # Cauchy and df = 2 have closed forms (written without cancellation for t > 0);
    # near t = 0 they check the symmetric branch
    t = np.array([1e-8, 0.01, 0.3, 2.0, 50.0, 1e6])
    np.testing.assert_allclose(t_sf(t, 1.0), np.arctan(1.0 / t) / np.pi, rtol=1e-13)
    s = np.sqrt(2.0 + t * t)
    np.testing.assert_allclose(t_sf(t, 2.0), 1.0 / ((s + t) * s), rtol=1e-13)


def test_edges_and_broadcasting() -> None:
    assert t_sf(0.0, 3.0) == 0.5
    assert t_sf(np.inf, 3.0) == 0.0 and t_sf(-np.inf, 3.0) == 1.0
    assert np.isnan(t_sf(np.nan, 3.0)) and np.isnan(t_sf(1.0, 0.0)) and np.isnan(t_sf(1.0, -2.0))
    # infinite df is the normal; beyond 1e4 df scipy.special is used
    np.testing.assert_allclose(t_sf([-1.0, 2.5], np.inf), special.ndtr([1.0, -2.5]), rtol=1e-14)
    np.testing.assert_allclose(t_sf(2.0, 5e6), special.stdtr(5e6, -2.0), rtol=1e-14)
    out = t_sf(np.linspace(-3, 3, 60).reshape(3, 20), np.array([[2.0], [30.0], [np.inf]]))
    assert out.shape == (3, 20)
    x = np.linspace(-3, 3, 60).reshape(3, 20)
    np.testing.assert_allclose(out, special.stdtr(np.array([[2.0], [30.0], [np.inf]]), -x),
                               rtol=1e-12)
    assert isinstance(t_sf(1.0, 4.0), float)


def test_tiny_t_whose_square_underflows() -> None:
    # t^2 / df underflows to 0: the tail is 1/2 to double precision, on both paths
    assert t_sf(1e-200, 3.0) == 0.5 and t_sf(-1e-170, 1e4) == 0.5
    np.testing.assert_array_equal(t_sf(np.full(40, 1e-200), 3.0), 0.5)
