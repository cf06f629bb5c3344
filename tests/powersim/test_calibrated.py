"""test="calibrated" (prepivoted Satterthwaite, nlpower.powersim.calibrated) and the size warning."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import InputError, NlpowerWarning
from nlpower.powersim import power
from nlpower.powersim.rules import check_path, size_check, size_message


def test_calibrated_holds_alpha_where_satterthwaite_does():
    """10 workers x 50 items, high variance: the table's Satterthwaite rate is 0.050; the
    calibrated test must be within 4 MC SE of 0.05 too (1,500 replicates)."""
    r = power(CrossedDesign(10, 50), presets.high_variance(0.0), n_sims=1500, rng=5,
              test="calibrated")
    assert r.method == "balanced"
    assert abs(r.rejection_rate - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 1500)


def test_calibrated_is_less_liberal_than_satterthwaite_at_3_workers():
    kw = {"n_sims": 1500, "rng": 2026}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        satt = power(CrossedDesign(3, 50), presets.high_variance(0.0), test="satterthwaite", **kw)
        cal = power(CrossedDesign(3, 50), presets.high_variance(0.0), test="calibrated", **kw)
    assert cal.rejection_rate < satt.rejection_rate


def test_calibrated_replicates_do_not_depend_on_n_sims():
    a = power(CrossedDesign(10, 20), presets.low_variance(0.2), n_sims=40, rng=3, test="calibrated")
    b = power(CrossedDesign(10, 20), presets.low_variance(0.2), n_sims=20, rng=3, test="calibrated")
    assert a.replicates is not None and b.replicates is not None
    assert np.array_equal(a.replicates.pvalue[:20], b.replicates.pvalue)
    assert set(np.unique(a.replicates.pvalue)) <= {(1 + k) / 100 for k in range(100)}


def test_calibrated_refuses_what_it_cannot_do():
    with pytest.raises(InputError, match="balanced fast path only"):
        power(CrossedDesign(3, 20), presets.high_variance(0.2), n_sims=5, test="calibrated",
              method="simulate")
    with pytest.raises(InputError, match="balanced fast path only"):
        power(CrossedDesign(6, 20, workers_per_item=3), presets.high_variance(0.2), n_sims=2,
              test="calibrated")
    with pytest.raises(InputError, match="two-sided"):
        power(CrossedDesign(3, 20), presets.high_variance(0.2), n_sims=5, test="calibrated",
              alternative="greater")
    with pytest.raises(InputError, match="REML"):
        power(CrossedDesign(3, 20), presets.high_variance(0.2), n_sims=5, test="calibrated",
              REML=False)


def test_power_warns_with_the_measured_type1_and_keeps_the_numbers():
    """Fig. 6 with the paper's rule stays reproducible: the warning changes no number."""
    design, params = CrossedDesign(3, 50), presets.high_variance(0.3)
    with pytest.warns(NlpowerWarning, match=r"test='z' does not hold alpha=0.05 on this design "
                                            r"with 3 workers: its Type I error measured here is"):
        r = power(design, params, n_sims=400, rng=1, test="z")
    assert any("Type I error measured here" in n for n in r.notes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        same = power(design, params, n_sims=400, rng=1, test="z", null=True)
    assert same.power == r.power and same.type1 is not None and same.type1 > 0.1


def test_the_measured_type1_is_kept_and_a_grid_warns_once():
    """power() records the Type I error it measured for the warning; a grid of such cells
    warns once for all of them, and its frame carries the measurements (for the plot's mark)."""
    from nlpower import power_grid
    from nlpower.errors import SizeWarning

    with pytest.warns(SizeWarning):
        r = power(CrossedDesign(3, 50), presets.high_variance(0.3), n_sims=400, rng=1, test="z")
    assert r.type1 is not None and r.type1_ci is not None and r.type1_ci.low > 0.05
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        grid = power_grid(presets.high_variance(), n_workers=[3, 10], n_items=[50, 100],
                          effect=[0.1, 0.2], n_sims=300, test="z", rng=1, progress=False)
    said = [w for w in caught if issubclass(w.category, SizeWarning)]
    assert len(said) == 1
    frame = grid.to_frame()
    bad = frame[frame["type1_ci_low"] > 0.05]
    assert len(bad) >= 1 and set(bad["n_workers"]) == {3}
    assert f"in {len(bad)} of 8 cells (those with 3 workers)" in str(said[0].message)
    assert frame.loc[frame["n_workers"] == 10, "type1"].isna().all()  # not measured there


def test_no_warning_where_the_test_holds_alpha():
    with warnings.catch_warnings():
        warnings.simplefilter("error", NlpowerWarning)
        r = power(CrossedDesign(10, 50), presets.high_variance(0.2), n_sims=400, rng=2)
    assert not any("Type I" in n for n in r.notes)


def test_size_check_rule_and_message():
    assert size_check("z", 0.05, 3, 50, 1000) is None          # 0.05: interval covers alpha
    assert size_check("z", 0.05, 3, None, 1000) is None
    with pytest.warns(NlpowerWarning):
        msg = size_check("satterthwaite", 0.05, 3, 80, 1000)
    assert msg is not None and "0.080" in msg and "test='calibrated'" in msg
    assert "plan for more workers" in size_message("calibrated", 0.05, 3, 66, 1000)


def test_paths_and_size_advice_are_rule_attributes():
    """No pipeline compares test names: where a test runs and what its warning advises are data."""
    from nlpower.powersim.rules import TESTS, get_test

    assert get_test("calibrated").paths == ("balanced",)
    assert all(r.paths == ("balanced", "simulate") for r in TESTS.values() if r.name != "calibrated")
    with pytest.raises(InputError, match=r"this design needs the simulate path\. Use test='pblrt'"):
        check_path("calibrated", "simulate")
    check_path("pblrt", "simulate")
    check_path("calibrated", "balanced")
    assert size_message("z", 0.05, 3, 80, 1000).endswith("reproduce the paper's Figure 6.")
    assert size_message("pblrt", 0.05, 3, 80, 1000).endswith(get_test("pblrt").size_advice)
    assert "test='calibrated'" in get_test("lrt").size_advice
