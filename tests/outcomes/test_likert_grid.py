"""Likert and head-to-head grids through nlpower.power_grid: the same runner as Gaussian ratings.

Same numbers for any n_jobs, each cell equal to a direct nlpower.power call with the cell's
seed, checkpoints that resume, records that round-trip, errors before any cell runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.errors import CheckpointError, InputError
from nlpower.grid import RunOptions, cell_seed
from nlpower.outcomes import HeadToHeadParams, LikertParams, likert_power
from nlpower.outcomes.grid import likert_power_grid
from nlpower.powersim import power_grid, power_options

LIKERT = {"n_workers": [3, 5], "n_items": 20, "effect": 0.1, "outcome": "likert", "levels": 5,
          "n_sims": 30, "rng": 1, "progress": False}


def test_likert_grid_is_the_same_for_any_n_jobs_and_matches_its_cells():
    scen = {"high": presets.high_variance(), "low": presets.low_variance()}
    a = power_grid(scen, null=True, **LIKERT).to_frame()
    b = power_grid(scen, null=True, n_jobs=2, **LIKERT).to_frame()
    pd.testing.assert_frame_equal(a, b)
    key = {"scenario": "low", "n_workers": 5, "n_items": 20, "effect": 0.1}
    one = nlpower.power(CrossedDesign(5, 20), presets.low_variance(0.1), outcome="likert",
                        levels=5, n_sims=30, null=True, rng=cell_seed(1, key))
    row = a[(a.scenario == "low") & (a.n_workers == 5)].iloc[0]
    assert row["power"] == one.power and row["type1"] == one.type1
    assert row["test"] == "satterthwaite" and len(a) == 4


def test_preference_grid_is_the_same_for_any_n_jobs_and_matches_its_cells():
    p = HeadToHeadParams.from_share(0.65, sd_worker=0.5, sd_item=0.3)
    kw = {"n_workers": [4, 6], "n_items": 12, "effect": [0.3, 0.6], "outcome": "preference",
          "n_sims": 8, "rng": 7, "progress": False}
    a = power_grid(p, **kw).to_frame()
    b = power_grid(p, n_jobs=2, **kw).to_frame()
    pd.testing.assert_frame_equal(a, b)
    key = {"n_workers": 6, "n_items": 12, "effect": 0.6}
    one = nlpower.power(CrossedDesign(6, 12), p.with_effect(0.6), outcome="preference",
                        n_sims=8, rng=cell_seed(7, key))
    row = a[(a.n_workers == 6) & (a.effect == 0.6)].iloc[0]
    assert row["power"] == one.power and row["test"] == "z"


def test_analyses_compared_on_the_same_replicates_and_the_alias():
    scen = {"high": presets.high_variance(), "low": presets.low_variance()}
    kw = dict(LIKERT)
    g = power_grid({"low": presets.low_variance()}, analysis=["lmm", "clmm"], null=True,
                   **{**kw, "n_sims": 10, "n_workers": 3}).to_frame()
    assert {"power_lmm", "power_clmm", "type1_lmm", "type1_clmm", "test_clmm"} <= set(g.columns)
    assert (g["power"] == g["power_lmm"]).all() and (g["test_clmm"] == "z").all()
    # the clmm column of a cell is the clmm analysis of that cell's replicates
    key = {"scenario": "low", "n_workers": 3, "n_items": 20, "effect": 0.1}
    c = likert_power(CrossedDesign(3, 20), LikertParams.from_preset(presets.low_variance(0.1), 5),
                     analysis=["lmm", "clmm"], n_sims=10, null=True, rng=cell_seed(1, key))
    row = g[(g.scenario == "low") & (g.n_workers == 3)].iloc[0]
    assert row["power_clmm"] == c["clmm"].power and row["type1_lmm"] == c["lmm"].type1
    # likert_power_grid is power_grid(outcome="likert", null=True) with a list of analyses
    alias = likert_power_grid(scen, **{k: v for k, v in kw.items() if k != "outcome"},
                              analysis="lmm")
    direct = power_grid(scen, analysis=["lmm"], null=True, **kw)
    pd.testing.assert_frame_equal(alias.to_frame(), direct.to_frame())


def test_checkpoint_resumes_and_refuses_another_outcome(tmp_path):
    ck = tmp_path / "likert.jsonl"
    first = power_grid(presets.high_variance(), checkpoint=ck, **LIKERT).to_frame()
    again = power_grid(presets.high_variance(), checkpoint=ck, **LIKERT).to_frame()
    pd.testing.assert_frame_equal(first, again)
    with pytest.raises(CheckpointError):
        power_grid(presets.high_variance(), checkpoint=ck,
                   **{**LIKERT, "analysis": "clmm"})


def test_options_and_run_objects_give_the_same_grid():
    opts = power_options(n_sims=30, outcome="likert", levels=5)
    run = RunOptions(progress=False)
    a = power_grid(presets.high_variance(), n_workers=[3, 5], n_items=20, effect=0.1, rng=1,
                   options=opts, run=run).to_frame()
    b = power_grid(presets.high_variance(), **LIKERT).to_frame()
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(InputError, match="either options= .* not both; got options= and n_sims"):
        power_grid(presets.high_variance(), n_workers=3, n_items=20, options=opts, n_sims=5)
    with pytest.raises(InputError, match="either run= .* not both; got run= and n_jobs"):
        power_grid(presets.high_variance(), n_workers=3, n_items=20, run=run, n_jobs=2)


@pytest.mark.parametrize("kwargs,match", [
    ({"outcome": "likert"}, "levels=K"),
    ({"outcome": "likert", "levels": 1}, "levels"),
    ({"outcome": "likert", "levels": 5, "analysis": "glm"}, "must be one of 'lmm', 'clmm'"),
    ({"outcome": "likert", "levels": 5, "method": "balanced"}, "takes method='auto' or"),
    ({"outcome": "preference"}, "needs HeadToHeadParams"),
    ({"outcome": "preference", "levels": 5}, "does not take levels"),
    ({"outcome": "gaussian", "levels": 5}, "does not take levels"),
    ({"outcome": "likert", "levels": 5, "coding": "half"}, "does not take coding"),
    ({"outcome": "binary"}, "outcome must be one of"),
])
def test_grid_errors_before_any_cell_runs(kwargs, match):
    with pytest.raises(InputError, match=match):
        power_grid(presets.high_variance(), n_workers=3, n_items=10, effect=0.1, n_sims=5,
                   progress=False, **kwargs)
    with pytest.raises(InputError, match="scenarios"):
        likert_power_grid("high", n_workers=3, n_items=10, effect=0.1, levels=5)  # type: ignore[arg-type]


def test_record_round_trip_of_a_comparison_cell():
    g = power_grid(presets.high_variance(), analysis="both",
                   **{**LIKERT, "n_sims": 5, "n_workers": 3})
    problem_record = g.cells[0].record
    assert problem_record["power"] == problem_record["power_lmm"]
    assert np.isfinite(g.to_frame()["power_clmm"]).all()
    from nlpower.powersim.grid import ComparisonCell
    assert ComparisonCell(dict(problem_record)).to_record() == problem_record
