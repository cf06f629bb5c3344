"""``outcome=`` / ``analysis=`` through nlpower.power (the CLI: tests/cli/test_cli_outcomes.py)."""

from __future__ import annotations

import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.errors import InputError
from nlpower.outcomes import LikertParams, likert_power


def test_power_with_outcome_likert_is_likert_power():
    d, p = CrossedDesign(5, 30), presets.high_variance(0.1)
    a = nlpower.power(d, p, outcome="likert", levels=5, n_sims=100, rng=3, null=True)
    b = likert_power(d, LikertParams.from_preset(p, 5), n_sims=100, rng=3, null=True)
    assert a.power == b.power and a.type1 == b.type1
    lp = LikertParams.from_preset(p, 5)
    c = nlpower.power(d, lp, outcome="likert", n_sims=100, rng=3, null=True)
    assert c.power == a.power


@pytest.mark.parametrize("kwargs,match", [
    ({"outcome": "likert"}, "levels=K"),
    ({"outcome": "binary", "levels": 5}, "outcome must be one of"),
    ({"outcome": "likert", "levels": 1}, "levels"),
    ({"outcome": "likert", "levels": 5, "method": "simulate"}, "does not take method"),
    ({"outcome": "likert", "levels": 5, "likert": 5}, "does not take likert"),
])
def test_outcome_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        nlpower.power(CrossedDesign(5, 30), presets.high_variance(0.1), n_sims=10, **kwargs)
    with pytest.raises(InputError, match="disagrees"):
        nlpower.power(CrossedDesign(5, 30), LikertParams(thresholds=[0.0]), outcome="likert",
                      levels=3)


def test_power_takes_one_analysis():
    with pytest.raises(InputError, match="one analysis"):
        nlpower.power(CrossedDesign(5, 30), presets.high_variance(0.1), outcome="likert",
                      levels=5, analysis=["lmm", "clmm"], n_sims=5)  # type: ignore[arg-type]


def test_options_objects_carry_the_outcome():
    d, p = CrossedDesign(5, 30), presets.high_variance(0.1)
    opts = nlpower.power_options(outcome="likert", levels=5, analysis="clmm", n_sims=10)
    assert (opts.outcome, opts.analysis, opts.levels, opts.test) == ("likert", "clmm", 5, "z")
    via = nlpower.power(d, p, options=opts, rng=4)
    direct = nlpower.power(d, p, outcome="likert", levels=5, analysis="clmm", n_sims=10, rng=4)
    assert via.power == direct.power and via.test == "z"
    with pytest.raises(InputError, match="either options= .* not both; got options= and levels"):
        nlpower.power(d, p, options=opts, levels=5)
    both = nlpower.power_options(outcome="likert", levels=5, analysis=["lmm", "clmm"], test="lrt")
    assert both.analysis_tests == ("lrt", "lrt")
    assert nlpower.power_options(outcome="likert", levels=5,
                                 analysis="both").analysis_tests == ("satterthwaite", "z")
    with pytest.raises(InputError, match="one analysis"):
        nlpower.power(d, p, options=both)
