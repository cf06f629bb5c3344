"""Power of Likert studies: Type I of the LMM analysis, agreement with nlpower.power, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import CrossedDesign, power, presets
from nlpower.errors import DesignError, InputError
from nlpower.outcomes import LikertParams, likert_power


@pytest.mark.parametrize("preset", [presets.low_variance(0.0), presets.high_variance(0.0)],
                         ids=["low", "high"])
def test_type1_of_the_lmm_at_ten_workers_within_3_mc_se(preset):
    lp = LikertParams.from_preset(preset, 5)
    n_sims = 2000
    r = likert_power(CrossedDesign(10, 50), lp, n_sims=n_sims, rng=21, keep_replicates=False)
    se = math.sqrt(0.05 * 0.95 / n_sims)
    assert math.isnan(r.power) and abs(r.type1 - 0.05) < 3 * se


def test_lmm_fast_path_agrees_with_the_general_engine_on_the_same_replicates():
    lp = LikertParams.from_preset(presets.high_variance(0.1), 5)
    design = CrossedDesign(4, 12)
    fast = likert_power(design, lp, n_sims=12, rng=4, test="z")
    from nlpower.outcomes.analyses import _lmm_general
    from nlpower.outcomes.power import _simulate
    from nlpower.powersim.options import power_options

    root = np.random.SeedSequence(4)
    y = _simulate(design, lp, root.spawn(2)[0], 12)
    proxy = lp.latent_params()
    reps = _lmm_general(design, (y - 1) / 4.0, proxy, power_options(n_sims=12, test="z",
                                                                     method="simulate"))
    ok = ~reps.failed
    assert np.allclose(fast.replicates.estimate[ok], reps.estimate[ok], atol=1e-8)
    assert np.allclose(fast.replicates.statistic[ok], reps.statistic[ok], rtol=1e-3, atol=1e-3)


def test_power_rises_with_the_effect_and_counts_the_right_sign():
    design = CrossedDesign(10, 50)
    small = likert_power(design, LikertParams.from_preset(presets.high_variance(0.05), 5),
                         n_sims=300, rng=2)
    big = likert_power(design, LikertParams.from_preset(presets.high_variance(0.15), 5),
                       n_sims=300, rng=2)
    neg = likert_power(design, LikertParams.from_preset(presets.high_variance(-0.15), 5),
                       n_sims=300, rng=2)
    assert small.power < big.power
    assert neg.effect < 0 and abs(neg.power - big.power) < 4 * math.sqrt(0.25 / 300) * 2


def test_close_to_the_rounding_likert_of_nlpower_power_at_many_levels():
    """At 10 levels the fitted thresholds are near the rounding cut points of ``likert=10``."""
    design = CrossedDesign(10, 50)
    lp = LikertParams.from_preset(presets.high_variance(0.1), 10)
    a = likert_power(design, lp, n_sims=600, rng=8)
    b = power(design, presets.high_variance(0.1), likert=10, n_sims=600, rng=9)
    se = math.sqrt(a.power * (1 - a.power) / 600 + b.power * (1 - b.power) / 600)
    assert abs(a.power - b.power) < 4 * se + 0.02


def test_same_seed_same_result_and_seed_recorded():
    lp = LikertParams.from_preset(presets.low_variance(0.1), 5)
    a = likert_power(CrossedDesign(3, 20), lp, n_sims=50, rng=6, null=True)
    b = likert_power(CrossedDesign(3, 20), lp, n_sims=50, rng=6, null=True)
    assert a.power == b.power and a.type1 == b.type1 and a.seed == b.seed
    assert a.version and a.engine == "native" or a.method == "balanced"


def test_several_analyses_share_replicates():
    lp = LikertParams.from_preset(presets.low_variance(0.1), 5)
    c = likert_power(CrossedDesign(3, 20), lp, analysis=["lmm"], n_sims=30, rng=1)
    assert list(c.to_frame()["analysis"]) == ["lmm"] and "lmm" in c.summary()


@pytest.mark.parametrize("kwargs,err,match", [
    ({"analysis": "glm"}, InputError, "must be one of .lmm., .clmm."),
    ({"analysis": ["lmm", "lmm"]}, InputError, "twice"),
    ({"test": "pblrt"}, InputError, "not a test"),
    ({"alternative": "up"}, InputError, "alternative"),
])
def test_bad_options(kwargs, err, match):
    lp = LikertParams.from_preset(presets.low_variance(0.1), 5)
    with pytest.raises(err, match=match):
        likert_power(CrossedDesign(3, 20), lp, n_sims=5, **kwargs)


def test_bad_design_and_params():
    lp = LikertParams.from_preset(presets.low_variance(0.1), 5)
    with pytest.raises(DesignError, match="two systems"):
        likert_power(CrossedDesign(3, 20, systems=3), lp, n_sims=5)
    with pytest.raises(InputError, match="LikertParams"):
        likert_power(CrossedDesign(3, 20), presets.low_variance(0.1), n_sims=5)
