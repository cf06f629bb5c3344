"""The Likert power grid on the package's runner: same numbers for any n_jobs, records, errors."""

from __future__ import annotations

import pytest

from nlpower import presets
from nlpower.errors import InputError
from nlpower.grid import cell_seed
from nlpower.outcomes import LikertParams, likert_power
from nlpower.outcomes.grid import LikertProblem, likert_power_grid


def test_grid_is_the_same_for_any_n_jobs_and_matches_its_cells():
    kw = {"n_workers": [3, 5], "n_items": 20, "effect": 0.1, "levels": 5, "n_sims": 40, "rng": 1,
          "progress": False}
    scen = {"high": presets.high_variance(), "low": presets.low_variance()}
    a = likert_power_grid(scen, **kw).to_frame()
    b = likert_power_grid(scen, n_jobs=2, **kw).to_frame()
    assert a.equals(b)
    key = {"scenario": "low", "n_workers": 5, "n_items": 20, "effect": 0.1}
    from nlpower import CrossedDesign
    one = likert_power(CrossedDesign(5, 20), LikertParams.from_preset(presets.low_variance(0.1), 5),
                       n_sims=40, null=True, rng=cell_seed(1, key))
    row = a[(a.scenario == "low") & (a.n_workers == 5)].iloc[0]
    assert row["power_lmm"] == one.power and row["type1_lmm"] == one.type1


def test_record_round_trip():
    p = LikertProblem({"s": presets.high_variance()}, 5, ("lmm",), 10, 0.05, True)
    cell = p.run_cell({"n_workers": 3, "n_items": 10, "effect": 0.1},
                      __import__("numpy").random.SeedSequence(2))
    assert p.from_record(cell.to_record()).to_record() == cell.to_record()
    assert "type1_lmm" in p.result_columns


def test_grid_errors():
    with pytest.raises(InputError, match="scenarios"):
        likert_power_grid("high", n_workers=3, n_items=10, effect=0.1, levels=5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="levels"):
        likert_power_grid(presets.high_variance(), n_workers=3, n_items=10, effect=0.1, levels=1)
    with pytest.raises(InputError, match="not available"):
        likert_power_grid(presets.high_variance(), n_workers=3, n_items=10, effect=0.1, levels=5,
                          analysis="glm")
