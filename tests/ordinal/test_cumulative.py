"""The cumulative link parts (probabilities and densities at the two bounds) to full precision."""

from __future__ import annotations

from decimal import Decimal, getcontext

import numpy as np
import pytest

from nlpower.lmm.family import get_link
from nlpower.ordinal.cumulative import bounds_parts, cumulative_parts, logit_gap

# (upper, lower) pairs: both tails, adjacent thresholds, the open ends
BOUNDS = [(0.3, -1.2), (40.0, 35.0), (-35.0, -40.0), (2.0, 2.0 - 1e-9), (-600.0, -650.0), (-2.0, -800.0),
          (np.inf, 3.0), (np.inf, -30.0), (-2.0, -np.inf), (30.0, -np.inf), (1e-3, -1e-3)]


def _logistic(x: float) -> Decimal:
    if x == np.inf:
        return Decimal(1)
    if x == -np.inf:
        return Decimal(0)
    return 1 / (1 + (-Decimal(x)).exp())


@pytest.mark.parametrize(("up", "lo"), BOUNDS)
def test_logit_parts_to_full_relative_precision(up: float, lo: float) -> None:
    getcontext().prec = 60
    Fu, Fl = _logistic(up), _logistic(lo)
    p = Fu - Fl
    fu, fl = Fu * (1 - Fu), Fl * (1 - Fl)
    cp = cumulative_parts(get_link("logit"), np.array([up]), np.array([lo]))
    assert cp.p[0] == pytest.approx(float(p), rel=1e-13)
    assert cp.logp[0] == pytest.approx(float(p.ln()), rel=1e-13)
    for got, want in [(cp.f_up, fu), (cp.f_lo, fl), (cp.df_up, fu * (1 - 2 * Fu)),
                      (cp.df_lo, fl * (1 - 2 * Fl))]:
        # zero at an open end; elsewhere to full relative precision (1e-304 at -inf's floor)
        assert got[0] == pytest.approx(float(want), rel=1e-12, abs=1e-300)


def test_stacked_bounds_with_the_gap_held_equal_the_pairwise_parts() -> None:
    rng = np.random.default_rng(0)
    up = rng.normal(size=(3, 20)) * 3
    lo = up - rng.uniform(0.1, 4.0, size=(3, 20))
    up[:, :4], lo[:, 4:8] = np.inf, -np.inf
    B = np.stack((up, lo))
    for name in ("logit", "probit", "cloglog"):
        link = get_link(name)
        ref = cumulative_parts(link, up, lo)
        eta = rng.normal(size=(3, 20))
        shifted = bounds_parts(link, B - eta, gap=logit_gap(B) if name == "logit" else None)
        want = cumulative_parts(link, up - eta, lo - eta)
        for a, b in zip(shifted, want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)
        assert np.isfinite(ref.logp).all()
