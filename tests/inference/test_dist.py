"""The scipy.stats-free distribution functions give scipy.stats' numbers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from nlpower import _dist

X = np.array([-40.0, -6.0, -2.5, -0.3, 0.0, 0.7, 1.96, 4.0, 9.0, 39.0])
Q = np.array([1e-300, 1e-12, 1e-4, 0.025, 0.3, 0.5, 0.8, 0.975, 1 - 1e-9])
DF = np.array([0.7, 1.0, 2.5, 7.0, 30.0, 1e4, np.inf])


def _close(a: object, b: object) -> None:
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=1e-12, atol=1e-300)


def test_normal() -> None:
    _close(_dist.norm_cdf(X), stats.norm.cdf(X))
    _close(_dist.norm_sf(X), stats.norm.sf(X))
    _close(_dist.norm_pdf(X), stats.norm.pdf(X))
    _close(_dist.norm_ppf(Q), stats.norm.ppf(Q))
    _close(_dist.norm_isf(Q), stats.norm.isf(Q))
    assert isinstance(_dist.norm_sf(1.0), float)


@pytest.mark.parametrize("df", DF)
def test_student_t(df: float) -> None:
    _close(_dist.t_cdf(X, df), stats.t.cdf(X, df))
    _close(_dist.t_sf(X, df), stats.t.sf(X, df))
    q = Q[Q > 1e-200]
    _close(_dist.t_ppf(q, df), stats.t.ppf(q, df))
    _close(_dist.t_isf(q, df), stats.t.isf(q, df))


@pytest.mark.parametrize("df", DF[:-1])
def test_chi2(df: float) -> None:
    x = np.abs(X)
    _close(_dist.chi2_cdf(x, df), stats.chi2.cdf(x, df))
    _close(_dist.chi2_sf(x, df), stats.chi2.sf(x, df))
    q = Q[Q > 1e-200]
    _close(_dist.chi2_ppf(q, df), stats.chi2.ppf(q, df))
    _close(_dist.chi2_isf(q, df), stats.chi2.isf(q, df))


@pytest.mark.parametrize(("dfn", "dfd"), [(1.0, 1.0), (2.0, 17.3), (3.0, 1e3), (0.5, 4.0)])
def test_f(dfn: float, dfd: float) -> None:
    x = np.abs(X)
    _close(_dist.f_cdf(x, dfn, dfd), stats.f.cdf(x, dfn, dfd))
    _close(_dist.f_sf(x, dfn, dfd), stats.f.sf(x, dfn, dfd))
    q = Q[(Q > 1e-200) & (Q < 0.99)]
    _close(_dist.f_isf(q, dfn, dfd), stats.f.isf(q, dfn, dfd))


def test_broadcast_over_df() -> None:
    _close(_dist.t_sf(2.0, DF), stats.t.sf(2.0, DF))
    _close(_dist.f_sf(3.0, 2.0, DF[:-1]), stats.f.sf(3.0, 2.0, DF[:-1]))


def test_namespaces_mirror_scipy_stats() -> None:
    _close(_dist.norm.sf(X), stats.norm.sf(X))
    _close(_dist.t.sf(X, 3.0), stats.t.sf(X, 3.0))
    _close(_dist.chi2.sf(np.abs(X), 2.0), stats.chi2.sf(np.abs(X), 2.0))
    _close(_dist.f.sf(np.abs(X), 2.0, 9.0), stats.f.sf(np.abs(X), 2.0, 9.0))


@pytest.mark.parametrize("df", [2.5, 10.0, 80.0, 1e4])
@pytest.mark.parametrize("nc", [0.0, 0.5, 3.0, 8.0])
def test_noncentral_t(df: float, nc: float) -> None:
    x = np.linspace(-3.0, 12.0, 31)
    _close(_dist.nct_sf(x, df, nc), stats.nct.sf(x, df, nc))
    _close(_dist.nct.sf(x, df, nc), stats.nct.sf(x, df, nc))
