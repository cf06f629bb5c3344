"""Stage 3: counting replicates into power, Type-S/M and diagnostics (hand-made replicates)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower.powersim.result import Replicates
from nlpower.powersim.summary import count


def _reps(estimate, pvalue, failed=None, singular=None, converged=None):
    n = len(estimate)
    z = np.zeros(n, dtype=bool)
    return Replicates(np.asarray(estimate, float), np.ones(n), np.asarray(estimate, float),
                      np.full(n, np.inf), np.asarray(pvalue, float),
                      np.ones(n, bool) if converged is None else np.asarray(converged, bool),
                      z if singular is None else np.asarray(singular, bool),
                      z if failed is None else np.asarray(failed, bool))


def test_only_sign_correct_rejections_are_power():
    # significant: 0.3 (right sign), -0.2 (wrong sign); 0.5 not significant; one failed fit
    r = _reps([0.3, -0.2, 0.5, np.nan], [0.01, 0.02, 0.2, np.nan], failed=[0, 0, 0, 1])
    c = count(r, effect=0.1, alpha=0.05)
    assert (c.mc.n_rejected, c.n_sig, c.mc.rejection_rate) == (1, 2, 0.5)
    assert c.mc.type_s == pytest.approx(0.5)  # one of the two significant estimates is wrong-signed
    assert c.mc.type_m == pytest.approx((0.3 / 0.1 + 0.2 / 0.1) / 2)
    # Type-S and Type-M carry Monte Carlo intervals (Wilson; t over the rejections)
    assert c.mc.type_s_ci.low < 0.5 < c.mc.type_s_ci.high
    assert c.mc.type_m_ci.low < c.mc.type_m < c.mc.type_m_ci.high
    assert c.mean_estimate == pytest.approx((0.3 - 0.2 + 0.5) / 3) and c.n_failed == 1


def test_effect_zero_and_diagnostics():
    r = _reps([0.1, -0.1, 0.2], [0.01, 0.5, 0.04], singular=[1, 0, 1], converged=[1, 0, 1])
    c = count(r, effect=0.0, alpha=0.05)
    assert c.mc.n_rejected == 0 and c.n_sig == 2
    assert math.isnan(c.mc.type_s) and math.isnan(c.mc.type_m)
    assert (c.n_singular, c.n_nonconverged) == (2, 1)
