"""The cheapest crossed sequential design by simulation (cheapest_design) and calibrated boundaries."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.cli import main
from nlpower.errors import DesignError, InputError
from nlpower.grid import cell_seed
from nlpower.powersim.models import design_formula
from nlpower.sequential import (
    calibrate_boundaries,
    cheapest_design,
    compare_designs,
    group_sequential,
    sequential_power,
)
from nlpower.sequential.search import candidate_designs
from nlpower.sequential.simulate import SequentialProblem, _gaussian_general, statistics_at
from nlpower.simulation import simulate

PARAMS = presets.low_variance(0.0)


@pytest.fixture(scope="module")
def search():
    return cheapest_design(PARAMS, effect=0.15, workers=4, items=[12, 16], looks=(2, 3),
                           spending=("obf", "pocock"), n_sims=60, confirm_sims=40, rng=7,
                           progress=False)


def test_each_candidate_is_sequential_power_on_the_cells_replicates(search):
    # the search evaluates every candidate on one set of replicates per maximum design;
    # each candidate's numbers must be those of sequential_power's own cell on that seed
    for _, row in search.table.sample(4, random_state=1).iterrows():
        design = CrossedDesign(int(row["n_workers"]), int(row["n_items"]))
        bounds = candidate_designs((2, 3), ("obf", "pocock"), alpha=0.025,
                                   power=0.8)[int(row["candidate_index"])]
        key = {"n_workers": design.n_workers, "n_items": design.n_items, "effect": 0.15}
        problem = SequentialProblem(design, PARAMS, bounds, design_formula(design, PARAMS), n_sims=60)
        own = problem.run_cell({"effect": 0.15}, cell_seed(7, key))
        assert row["power"] == pytest.approx(own.mc.power, abs=1e-12)
        assert row["expected_ratings"] == pytest.approx(own.expected_ratings, abs=1e-9)


def test_the_choice_is_the_cheapest_feasible_and_confirmed_on_fresh_replicates(search):
    feasible = search.table[search.table["power"] >= 0.8]
    best = feasible["cost"].min()
    top = search.to_frame().iloc[0]
    assert top["cost"] == best
    assert search.design.n_items == top["n_items"] and search.boundaries.looks == top["looks"]
    conf = search.confirmed()
    assert list(conf["design"]) == ["chosen", "fixed"]
    assert int(conf["n_sims"].iloc[0]) == 40
    # fixed design in the ranking: one look, all ratings bought
    fixed = search.to_frame()[search.to_frame()["looks"] == 1].iloc[0]
    assert fixed["expected_ratings"] == fixed["max_ratings"]
    text = search.summary()
    assert "confirmed on 40 fresh replicates" in text and "Ranking" in text
    assert "40 fresh simulated studies" in search.methods()
    assert "\\%" in search.methods("latex")


def test_fixed_candidate_is_the_single_look_of_the_same_replicates(search):
    # the one-look candidate's power equals fixed_power of any sequential candidate of the same cell
    design = CrossedDesign(4, 16)
    bounds = group_sequential(2, spending="pocock")
    key = {"n_workers": 4, "n_items": 16, "effect": 0.15}
    own = SequentialProblem(design, PARAMS, bounds, design_formula(design, PARAMS), n_sims=60
                            ).run_cell({"effect": 0.15}, cell_seed(7, key))
    t = search.table
    row = t[(t["looks"] == 1) & (t["n_items"] == 16)].iloc[0]
    assert row["power"] == pytest.approx(own.fixed.power, abs=1e-12)


def test_shortlist_keeps_the_iid_cheapest():
    cands = candidate_designs((2, 3, 4), ("obf", "pocock"), alpha=0.025, power=0.8, shortlist=2)
    ranked = compare_designs(looks=(2, 3, 4), spending=("obf", "pocock"), power=0.8).head(2)
    assert cands[0].looks == 1
    assert sorted((c.looks, c.spending) for c in cands[1:]) == \
        sorted(zip(ranked["looks"], ranked["spending"], strict=True))


def test_refusals():
    with pytest.raises(DesignError, match="items="):
        cheapest_design(PARAMS, effect=0.01, workers=3, items=[8], looks=(2,), spending=("obf",),
                        n_sims=20, rng=1, progress=False)
    with pytest.raises(InputError, match="effect"):
        cheapest_design(PARAMS, effect=0.0, workers=3, items=[8], n_sims=20, progress=False)
    with pytest.raises(InputError, match="futility"):
        cheapest_design(PARAMS, effect=0.1, workers=3, items=[8], futility=[0.0], progress=False)


def test_balanced_gaussian_looks_equal_the_general_refit():
    d, p = CrossedDesign(5, 16), presets.high_variance(0.1)
    items = np.array([4, 8, 16])
    formula = design_formula(d, p)
    fast = statistics_at(d, p, formula, "lmm", items, 5, np.random.SeedSequence(3))
    sims = simulate(d, p, n_sims=5, rng=np.random.SeedSequence(3))
    slow = _gaussian_general(sims.layout, sims.y, formula, items, 0.1)
    np.testing.assert_allclose(fast.estimate, slow.estimate, atol=1e-10)
    np.testing.assert_allclose(fast.z, slow.z, atol=1e-3)
    np.testing.assert_array_equal(fast.ratings, slow.ratings)


@pytest.mark.parametrize("method", ["t", "empirical"])
def test_calibrated_boundaries_hold_alpha_on_fresh_replicates(method):
    # 4 workers x 12 items: the REML Satterthwaite sequential test is conservative here
    design, bounds, n = CrossedDesign(4, 12), group_sequential(3), 3000
    cal = calibrate_boundaries(design, PARAMS, bounds, method=method, n_sims=n, rng=1)
    if method == "empirical":    # on its own replicates the rate is alpha up to one replicate
        assert 0.025 - 1.0 / n <= cal.rejection_calibrated <= 0.025
    else:                        # a conservative statistic: its null z varies less than N(0, 1)
        assert cal.z_variance < 1.0 and cal.alpha_used > 0.025
    fresh = sequential_power(design, PARAMS, cal.boundaries, effect=0.0, n_sims=n, rng=2,
                             progress=False).to_frame()["rejection_rate"].iloc[0]
    # calibration error and evaluation error: two independent binomial SEs
    se = math.sqrt(2 * 0.025 * 0.975 / n)
    assert abs(fresh - 0.025) < 3 * se
    assert list(cal.to_frame().columns) == ["look", "information", "efficacy_nominal",
                                            "efficacy_calibrated", "null_z_sd"]
    assert "we spent alpha" in cal.methods()


def test_calibration_refusals():
    with pytest.raises(InputError, match="method"):
        calibrate_boundaries(CrossedDesign(4, 12), PARAMS, group_sequential(2), method="exact")
    with pytest.raises(InputError, match="too few"):
        calibrate_boundaries(CrossedDesign(4, 2), PARAMS, group_sequential(3))


def test_cli_search_prints_and_writes_json(capsys, tmp_path):
    out = tmp_path / "s.json"
    code = main(["sequential", "search", "--effect", "0.3", "--workers", "4", "--items", "12,16",
                 "--looks", "2", "--spending", "obf,hsd(-2)", "--n-sims", "20", "--seed", "1",
                 "--calibrate", "100", "--methods", "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "Cheapest crossed design" in text and "We chose the design by simulation" in text
    got = json.loads(out.read_text())
    assert {r["looks"] for r in got["ranking"]} <= {1, 2}
    assert [r["design"] for r in got["confirmed"]][0] == "chosen"
    assert all(0 < r["alpha_spent"] < 0.2 for r in got["ranking"])


def test_weight_null_mixes_the_nulls_expected_cost():
    r = cheapest_design(PARAMS, effect=0.3, workers=4, items=[12], looks=(2,), spending=("pocock",),
                        weight_null=0.25, n_sims=30, confirm_sims=20, rng=3, progress=False)
    t = r.table
    np.testing.assert_allclose(t["cost"], 0.75 * t["expected_ratings"] + 0.25 * t["expected_ratings_h0"])
    assert "expected_ratings_h0" in r.to_frame().columns
    assert t["type_i_search"].notna().all()


def test_calibrated_search_uses_each_candidates_calibrated_boundaries():
    r = cheapest_design(PARAMS, effect=0.2, workers=4, items=[12, 16], looks=(3,), spending=("obf",),
                        calibrate=300, n_sims=60, confirm_sims=30, rng=5, progress=False)
    row = r.table[(r.table["looks"] == 3) & (r.table["n_items"] == 16)].iloc[0]
    cell = cell_seed(5, {"n_workers": 4, "n_items": 16, "effect": 0.2})
    null_seed = np.random.SeedSequence(cell.entropy, spawn_key=(*cell.spawn_key, 0xCA1))
    own = calibrate_boundaries(CrossedDesign(4, 16), PARAMS, group_sequential(3), n_sims=300,
                               rng=null_seed)
    assert row["alpha_spent"] == pytest.approx(own.alpha_used, rel=1e-9)
    assert r.boundaries.alpha == pytest.approx(float(r.to_frame()["alpha_spent"].iloc[0]))
    assert "calibrated" in r.summary() and "calibrated on 300 simulated null" in r.methods()


def test_search_does_not_depend_on_n_jobs(search):
    again = cheapest_design(PARAMS, effect=0.15, workers=4, items=[12, 16], looks=(2, 3),
                            spending=("obf", "pocock"), n_sims=60, confirm_sims=40, rng=7,
                            n_jobs=2, progress=False)
    assert again.table.equals(search.table)
    assert again.confirmed().equals(search.confirmed())
