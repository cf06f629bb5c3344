"""Simulated operating characteristics of batched crossed studies (sequential_power)."""

from __future__ import annotations

import math

import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import InputError
from nlpower.sequential import group_sequential, sequential_power
from nlpower.sequential.simulate import SequentialPowerResult, look_items

PARAMS = presets.high_variance(0.0)


def run(n_sims=6, effect=0.2, rng=5, **kwargs):
    return sequential_power(CrossedDesign(4, 12), PARAMS, group_sequential(3, **kwargs),
                            effect=effect, n_sims=n_sims, rng=rng, progress=False)


def test_same_seed_same_result_and_record_round_trip():
    g1, g2 = run(), run()
    f1, f2 = g1.to_frame(), g2.to_frame()
    assert f1.drop(columns=["stop_efficacy", "stop_futility"]).equals(
        f2.drop(columns=["stop_efficacy", "stop_futility"]))
    cell = g1.cells[0].result
    again = SequentialPowerResult.from_record(cell.to_record())
    assert again.to_record() == cell.to_record()
    assert "expected items" in cell.summary()


def test_costs_and_stopping_shares_add_up():
    f = run(n_sims=8, effect=[0.0, 0.4], futility=[0.0, 0.0]).to_frame()
    for _, row in f.iterrows():
        shares = sum(row["stop_efficacy"]) + sum(row["stop_futility"][:-1])
        assert shares <= 1 + 1e-12
        assert 4 <= row["expected_items"] <= row["max_items"] == 12
        assert row["expected_ratings"] == pytest.approx(row["expected_items"] * 4 * 2)
        assert row["rejection_rate"] == pytest.approx(sum(row["stop_efficacy"]))
    assert math.isnan(f["power"].iloc[0])


def test_look_items():
    assert look_items(60, group_sequential(3).information_rates).tolist() == [20, 40, 60]
    assert look_items(10, group_sequential(information=[0.05, 1.0]).information_rates).tolist() == [1, 10]


def test_errors():
    with pytest.raises(InputError, match="too few for 3 looks"):
        sequential_power(CrossedDesign(4, 2), PARAMS, group_sequential(3), n_sims=2, progress=False)
    with pytest.raises(InputError, match="positive effect"):
        run(effect=-0.1)
    with pytest.raises(InputError, match="GroupSequentialDesign"):
        sequential_power(CrossedDesign(4, 12), PARAMS, "obf", n_sims=2, progress=False)
    with pytest.raises(InputError, match="two systems"):
        sequential_power(CrossedDesign(4, 12, systems=3), PARAMS, group_sequential(3), progress=False)


@pytest.mark.slow
def test_type_one_error_of_a_three_look_design_is_alpha():
    # 600 replicates under the null: the rejection rate's MC SE at alpha = 0.025 is 0.0064
    g = sequential_power(CrossedDesign(6, 30), PARAMS, group_sequential(3), effect=0.0, n_sims=600,
                         rng=20261128, progress=False)
    rate = float(g.to_frame()["rejection_rate"].iloc[0])
    assert abs(rate - 0.025) < 3 * math.sqrt(0.025 * 0.975 / 600)


def test_methods_paragraph_reports_the_simulation():
    design = group_sequential(3)
    g = sequential_power(CrossedDesign(4, 12), PARAMS, design, effect=[0.0, 0.3], n_sims=4, rng=1,
                         progress=False)
    text = design.methods(simulation=g)
    f = g.to_frame()
    assert "4 replicates per effect" in text
    assert f"rejection rate was {f['rejection_rate'].iloc[0]:.4f}" in text
    assert f"power was {f['power'].iloc[1]:.3f}" in text
