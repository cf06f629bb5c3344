"""Repeated head-to-head judgements: the logistic crossed simulator and the glmer analysis."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nlpower
from nlpower import CrossedDesign
from nlpower.errors import DesignError, InputError
from nlpower.outcomes import HeadToHeadParams, headtohead_power
from nlpower.outcomes.headtohead import simulate_judgements


def test_simulated_shares_and_draws_match_the_model():
    p = HeadToHeadParams.from_share(0.7, p_draw=0.25)
    design = CrossedDesign(20, 200)
    gen = np.random.default_rng(1)
    win, draw = simulate_judgements(design, p, gen)
    n = win.size
    assert n == 20 * 200
    assert abs(draw.mean() - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n)
    m = (~draw).sum()
    assert abs(win.sum() / m - 0.7) < 4 * math.sqrt(0.7 * 0.3 / m)


def test_glmer_recovers_the_effect():
    """The intercept estimates logit(share); mean over replicates within 4 SE (+ 0.05 bias)."""
    p = HeadToHeadParams.from_share(0.65, sd_worker=0.3, p_draw=0.1)
    r = headtohead_power(CrossedDesign(6, 60), p, n_sims=12, rng=3)
    est = r.replicates.estimate[~r.replicates.failed]
    se = est.std(ddof=1) / math.sqrt(est.size)
    assert abs(est.mean() - p.effect) < 4 * se + 0.05
    assert r.test == "z" and r.effect == pytest.approx(p.effect)


def test_same_seed_same_result_and_front_end():
    p = HeadToHeadParams.from_share(0.6, sd_worker=0.4, sd_item=0.4)
    d = CrossedDesign(4, 16)
    a = headtohead_power(d, p, n_sims=5, rng=8)
    b = nlpower.power(d, p, outcome="preference", analysis="glmer", n_sims=5, rng=8)
    assert a.power == b.power and np.array_equal(a.replicates.estimate, b.replicates.estimate)


def test_results_do_not_depend_on_n_jobs_or_on_the_other_replicates():
    """Each replicate has its own seed and starts at the truth: chunks change nothing."""
    p = HeadToHeadParams.from_share(0.6, sd_worker=0.4, sd_item=0.4, p_draw=0.1)
    d = CrossedDesign(5, 30)
    a = headtohead_power(d, p, n_sims=6, rng=11)
    b = headtohead_power(d, p, n_sims=6, rng=11, n_jobs=2)
    np.testing.assert_array_equal(a.replicates.estimate, b.replicates.estimate)
    np.testing.assert_array_equal(a.replicates.se, b.replicates.se)
    # replicate 3 alone (its own child seed) fits to the same numbers as inside the run
    from nlpower.outcomes.headtohead import GlmerAnalysis, Judgements
    from nlpower.powersim.loop import replicate_batch
    from nlpower.powersim.options import power_options
    seeds = np.random.SeedSequence(11).spawn(2)[0].spawn(6)
    one = replicate_batch(Judgements(d, p), GlmerAnalysis(d, p),
                          power_options(n_sims=6, test="z", method="simulate"), 3, 4, n_sims=6,
                          seeds=seeds)
    assert one.estimate[0] == a.replicates.estimate[3] and one.se[0] == a.replicates.se[3]
    with pytest.raises(InputError, match="n_jobs"):
        headtohead_power(d, p, n_sims=2, n_jobs=0)


def test_k_of_w_design_and_position_slopes():
    p = HeadToHeadParams.from_share(0.6, sd_worker=0.4, position=0.3, sd_worker_position=0.3)
    r = headtohead_power(CrossedDesign(6, 18, workers_per_item=3), p, n_sims=3, rng=2)
    assert "(0 + pos | worker)" in r.notes[0] and r.n_sims == 3


@pytest.mark.parametrize("kwargs,err,match", [
    ({"ties": "split"}, InputError, "whole number of successes"),
])
def test_bad_options(kwargs, err, match):
    with pytest.raises(err, match=match):
        headtohead_power(CrossedDesign(4, 8), HeadToHeadParams(), n_sims=2, **kwargs)


def test_bad_parameters_and_designs():
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(InputError, match="share"):
            HeadToHeadParams.from_share(bad)
    with pytest.raises(InputError, match="p_draw"):
        HeadToHeadParams(p_draw=1.0)
    with pytest.raises(InputError, match="sd_item"):
        HeadToHeadParams(sd_item=-1.0)
    with pytest.raises(DesignError, match="two systems"):
        headtohead_power(CrossedDesign(4, 8, systems=3), HeadToHeadParams(), n_sims=2)
    with pytest.raises(InputError, match="HeadToHeadParams"):
        nlpower.power(CrossedDesign(4, 8), nlpower.presets.high_variance(0.1),
                      outcome="preference", n_sims=2)


@pytest.mark.slow
def test_type1_of_glmer_at_ten_workers_within_3_mc_se():
    p = HeadToHeadParams(effect=0.0, sd_worker=0.5, sd_item=0.5, p_draw=0.2)
    n_sims = 400
    r = headtohead_power(CrossedDesign(10, 40), p, n_sims=n_sims, rng=2020, keep_replicates=False)
    assert abs(r.type1 - 0.05) < 3 * math.sqrt(0.05 * 0.95 / n_sims)
