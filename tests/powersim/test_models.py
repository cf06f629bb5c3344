"""The analysis model's structure, built from the design's index arrays (no response)."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import InputError
from nlpower.lmm import theta_layout
from nlpower.lmm.frame import model_frame
from nlpower.params import MultiSystemParams
from nlpower.powersim.models import build_model, design_formula, design_spec
from nlpower.simulation import simulate_y

M3 = MultiSystemParams(beta0=0.5, effects=(0.1, 0.0), sd_worker=0.05,
                       sd_worker_systems=(0.05, 0.05, 0.05), sd_item=0.05,
                       sd_item_systems=(0.1, 0.1, 0.1), sigma=0.2)
M2 = MultiSystemParams(beta0=0.5, effects=(0.1,), sd_worker=0.05, sd_worker_systems=(0.05, 0.05),
                       sd_item=0.05, sd_item_systems=(0.1, 0.1), sigma=0.2)


def _from_formula(design, params):
    """The structure the formula layer builds on the design's layout and a simulated response."""
    lay = design.layout(coding=params.coding)
    codes = design.arrays().system
    for j in range(1, design.n_systems):
        lay[f"x{j}"] = np.where(codes == j, 1.0, np.where(codes == 0, -1.0, 0.0))
    lay["rating"] = simulate_y(design.arrays(), params, 1, np.random.default_rng(0))[0]
    return model_frame(design_formula(design, params), lay)


@pytest.mark.parametrize("design,params", [
    (CrossedDesign(3, 4), presets.high_variance(0.1)),
    (CrossedDesign(12, 30, workers_per_item=3), presets.low_variance(0.1).to_coding("half")),
    (CrossedDesign(4, 6, items="nested"), presets.high_variance(0.1).to_coding("half")),
    (CrossedDesign(3, 4, systems=3), M3),
    (CrossedDesign(4, 6, systems=3, items="nested"), M3),
    (CrossedDesign(11, 5), M2),
])
def test_design_spec_equals_the_formula_layer(design, params):
    a, b = _from_formula(design, params), design_spec(design, params)
    for f in ("formula", "response", "fixef_names", "contrasts", "data_columns", "dropped",
              "n_dropped"):
        assert getattr(a, f) == getattr(b, f), f
    np.testing.assert_array_equal(a.X, b.X)
    assert len(a.re_terms) == len(b.re_terms)
    for s, t in zip(a.re_terms, b.re_terms, strict=True):
        assert (s.group, s.levels, s.cnames) == (t.group, t.levels, t.cnames)
        np.testing.assert_array_equal(s.codes, t.codes)
        np.testing.assert_array_equal(s.Z, t.Z)
    assert not b.y.any()  # structure only: no response, not even a placeholder


def test_unidentifiable_term_is_refused_like_lme4():
    # 3 systems, one worker per item: (system || item) has as many effects as ratings
    d = CrossedDesign(3, 6, systems=3, workers_per_item=1)
    with pytest.raises(InputError, match=r"number of observations \(=18\) <= number of random "
                                         r"effects \(=18\)"):
        design_spec(d, M3)
    with pytest.raises(InputError, match="number of observations"):
        _from_formula(d, M3)


def test_true_theta_follows_the_engines_term_order():
    p = presets.high_variance(0.1)
    dm = build_model(CrossedDesign(3, 4), p)
    true = {("worker", "(Intercept)"): p.sd_worker, ("worker", "x"): p.sd_worker_slope,
            ("item", "(Intercept)"): p.sd_item, ("item", "x"): p.sd_item_slope}
    order = [(t.group, t.cnames[0]) for t in theta_layout(dm.spec.re_terms).terms]
    assert [g for g, _ in order] == ["item", "item", "worker", "worker"]  # more levels first
    np.testing.assert_allclose(dm.theta, [true[k] / p.sigma for k in order])
