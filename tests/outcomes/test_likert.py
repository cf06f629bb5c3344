"""The latent threshold model of Likert ratings: preset mapping, simulation, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import CrossedDesign, LMMParams, presets
from nlpower.errors import InputError
from nlpower.outcomes import LikertParams, simulate_likert, simulate_likert_y
from nlpower.simulation import simulate_y

PRESETS = [presets.low_variance(0.0), presets.high_variance(0.0), presets.dataset("wmt19")]


@pytest.mark.parametrize("levels", [3, 5, 7])
@pytest.mark.parametrize("preset", PRESETS, ids=["low", "high", "wmt19"])
def test_from_preset_reproduces_mean_and_spread(preset, levels):
    if levels == 3 and preset is PRESETS[2]:
        # mean 0.86 on {0, 1/2, 1}: the SD is at least 0.5 sqrt(0.72 * 0.28) = 0.224 > 0.207
        with pytest.raises(InputError, match="closest: SD 0.22"):
            LikertParams.from_preset(preset, levels)
        return
    p = preset.to_lmm_params() if hasattr(preset, "to_lmm_params") else preset
    lp = LikertParams.from_preset(preset, levels)
    assert lp.effect == p.effect
    lp = lp.with_effect(0.0)        # matched at effect 0
    v = (p.sd_worker**2 + p.sd_item**2 + p.sd_worker_slope**2 + p.sd_item_slope**2 + p.sigma**2)
    for x in (-1.0, 1.0):
        assert lp.mean_rating01(x) == pytest.approx(p.beta0, abs=1e-6)
        assert lp.sd_rating01(x) == pytest.approx(math.sqrt(v), abs=1e-6)
    assert np.all(np.diff(lp.thresholds) > 0) and lp.levels == levels


def test_two_levels_match_the_mean_only():
    lp = LikertParams.from_preset(presets.high_variance(0.0), 2)
    assert lp.mean_rating01(1.0) == pytest.approx(0.5, abs=1e-9)


def test_simulated_ratings_have_the_model_moments():
    """Replicate means and SDs against the quadrature values, within 4 Monte Carlo SE."""
    lp = LikertParams.from_preset(presets.high_variance(0.1), 5, link="logit")
    design = CrossedDesign(8, 60)
    y = (simulate_likert(design, lp, n_sims=400, rng=3) - 1) / 4.0
    xcol = design.layout()["x"].to_numpy()
    for x in (-1.0, 1.0):
        per_rep = y[:, xcol == x].mean(axis=1)
        se = per_rep.std(ddof=1) / math.sqrt(per_rep.size)
        assert abs(per_rep.mean() - lp.mean_rating01(x)) < 4 * se
    diff = y[:, xcol == 1].mean(axis=1) - y[:, xcol == -1].mean(axis=1)
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert abs(diff.mean() / 2 - lp.lmm_effect()) < 4 * se


def test_probit_ratings_are_the_categories_of_the_gaussian_draws():
    lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    arrays = CrossedDesign(4, 9).arrays()
    latent = simulate_y(arrays, lp.latent_params(), 3, 5)
    cats = np.searchsorted(np.array(lp.thresholds), latent) + 1
    assert np.array_equal(simulate_likert_y(arrays, lp, 3, 5), cats)


def test_clmm_scale_divides_by_the_residual_scale():
    lp = LikertParams(thresholds=[-0.5, 0.5], effect=0.2, sd_item=0.4, scale=2.0, link="logit")
    c = lp.clmm_scale()
    assert c["thresholds"] == (-0.25, 0.25) and c["effect"] == 0.1 and c["sd_item"] == 0.2


@pytest.mark.parametrize("kwargs,match", [
    ({"thresholds": [0.5, 0.1]}, "strictly increasing"),
    ({"thresholds": [0.1, 0.1]}, "strictly increasing"),
    ({"thresholds": []}, "K - 1"),
    ({"thresholds": [0.0, float("nan")]}, "finite"),
    ({"thresholds": [0.0], "scale": 0.0}, "scale"),
    ({"thresholds": [0.0], "link": "cauchit"}, "link"),
    ({"thresholds": [0.0], "sd_item": -0.1}, "sd_item"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(InputError, match=match):
        LikertParams(**kwargs)


def test_bad_levels_and_unreachable_spread():
    for bad in (1, 0, 2.5, True):
        with pytest.raises(InputError, match="levels"):
            LikertParams.from_preset(presets.high_variance(0.0), bad)
    with pytest.raises(InputError, match="cannot show"):
        LikertParams.from_preset(LMMParams(sigma=2.0), 3)
    with pytest.raises(InputError, match="inside"):
        LikertParams.from_preset(LMMParams(beta0=1.2), 5)
