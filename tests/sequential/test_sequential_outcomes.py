"""Group-sequential Likert and head-to-head studies: each look analysed as nlpower.power does."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.errors import DesignError, InputError
from nlpower.outcomes import HeadToHeadParams, LikertParams
from nlpower.sequential import group_sequential, sequential_power
from nlpower.sequential.simulate import SequentialProblem

LIKERT = LikertParams.from_preset(presets.high_variance(0.0), levels=5)
H2H = HeadToHeadParams.from_share(0.5, sd_worker=0.3, sd_item=0.3, p_draw=0.1)


def test_three_look_likert_design_holds_alpha_within_monte_carlo_error():
    """One-sided alpha 0.025, O'Brien-Fleming type, 10 workers x 30 items bought in 3 batches."""
    b = group_sequential(3)
    n = 4000
    row = sequential_power(CrossedDesign(10, 30), LIKERT, b, effect=0.0, n_sims=n, rng=7,
                           progress=False).to_frame().iloc[0]
    se = math.sqrt(b.alpha * (1 - b.alpha) / n)
    assert abs(row["rejection_rate"] - b.alpha) <= 3 * se
    assert row["n_failed"] == 0
    assert 20 < row["expected_items"] <= 30                 # some stop at the interim looks


def test_last_look_is_nlpowers_own_likert_power_on_the_same_replicates():
    """The single analysis at all items rejects exactly where power(outcome="likert") does."""
    design, n = CrossedDesign(6, 24), 300
    for analysis, test in (("lmm", "satterthwaite"),):
        problem = SequentialProblem(design, LIKERT, group_sequential(2), "", n_sims=n,
                                    analysis=analysis)
        main_seq = np.random.SeedSequence(5).spawn(2)[0]     # power's main run, rng=5
        cell = problem.run_cell({"effect": 0.15}, main_seq)
        ref = nlpower.power(design, LIKERT.with_effect(0.15), outcome="likert", analysis=analysis,
                            test=test, alpha=0.025, alternative="greater", n_sims=n, rng=5)
        assert cell.fixed.n_significant == ref.mc.n_significant
        assert cell.fixed.type_m == pytest.approx(ref.type_m, rel=1e-9)


def test_head_to_head_looks_and_costs():
    design = CrossedDesign(4, 12)
    g = sequential_power(design, H2H, group_sequential(2), effect=[0.0, 1.5], n_sims=5, rng=3,
                         progress=False).to_frame()
    assert (g["max_items"] == 12).all() and (g["max_ratings"] == 12 * 4).all()
    for _, row in g.iterrows():
        assert 6 <= row["expected_items"] <= 12
        assert row["expected_ratings"] == pytest.approx(row["expected_items"] * 4)
    assert g["power"].iloc[1] >= g["rejection_rate"].iloc[0]


def test_head_to_head_looks_are_the_preference_power_fits():
    """Last look: the fits of power(outcome="preference"); earlier looks: the first items."""
    from nlpower.outcomes.headtohead import _run
    from nlpower.powersim.options import power_options
    from nlpower.sequential.outcomes import look_statistics

    design, n = CrossedDesign(4, 10), 6
    looks = look_statistics(design, H2H.with_effect(0.8), np.array([5, 10]), "glmer", n,
                            np.random.SeedSequence(11))
    opts = power_options(n_sims=n, test="z", method="simulate")
    full = _run(design, H2H.with_effect(0.8), np.random.SeedSequence(11), opts)
    np.testing.assert_allclose(looks.estimate[:, 1], full.estimate, rtol=1e-8)
    np.testing.assert_allclose(looks.z[:, 1], full.statistic, rtol=1e-8)
    assert not np.allclose(looks.estimate[:, 0], full.estimate)
    assert looks.ratings.tolist() == [20, 40]


def test_outcome_errors_name_the_problem():
    b = group_sequential(2)
    with pytest.raises(DesignError, match="fully crossed"):
        sequential_power(CrossedDesign(6, 12, workers_per_item=3), LIKERT, b, n_sims=2)
    with pytest.raises(InputError, match="analysis must be one of 'lmm', 'clmm'"):
        sequential_power(CrossedDesign(4, 12), LIKERT, b, analysis="glmer", n_sims=2)
    with pytest.raises(InputError, match="formula= sets the Gaussian LMM"):
        sequential_power(CrossedDesign(4, 12), H2H, b, formula="win ~ 1", n_sims=2)
    with pytest.raises(InputError, match="analysis='clmm' is for Likert"):
        sequential_power(CrossedDesign(4, 12), presets.high_variance(), b, analysis="clmm",
                         n_sims=2)
