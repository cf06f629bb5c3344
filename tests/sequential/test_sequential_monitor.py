"""Interim analyses of accumulating ratings (Monitor)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from nlpower import CrossedDesign, lmer, presets, simulate
from nlpower.errors import InputError
from nlpower.sequential import group_sequential
from nlpower.sequential.monitor import Monitor

FORMULA = "rating ~ x + (1 | worker) + (1 | item)"


@pytest.fixture(scope="module")
def ratings():
    return simulate(CrossedDesign(4, 30), presets.high_variance(0.05), rng=11)


def upto(frame, n):
    return frame[frame["item"] <= f"i{n:02d}"]


def test_planned_looks_use_the_design_boundaries_and_lmer_statistic(ratings):
    design = group_sequential(3, futility=[-3.0, -3.0])
    mon = Monitor(design, formula=FORMULA, max_items=30)
    looks = []
    for n in (10, 20, 30):
        looks.append(mon.update(upto(ratings, n)))
        if looks[-1].stop:
            break
    for k, look in enumerate(looks):
        assert look.information_fraction == pytest.approx(design.information_rates[k])
        assert look.efficacy == pytest.approx(design.efficacy[k], abs=1e-9)
        row = lmer(FORMULA, upto(ratings, 10 * (k + 1))).coef_table(ddf="satterthwaite").loc["x"]
        z = stats.norm.isf(stats.t.sf(row["t"], row["df"]))
        assert look.statistic == pytest.approx(z, rel=1e-6)
        assert look.n_ratings == 4 * 2 * 10 * (k + 1)
    assert [lk.look for lk in mon.looks] == list(range(1, len(looks) + 1))
    assert mon.to_frame()["decision"].tolist() == [lk.decision for lk in looks]


def test_a_large_effect_stops_early_for_efficacy():
    data = simulate(CrossedDesign(4, 30), presets.high_variance(0.4), rng=2)
    mon = Monitor(group_sequential(3), formula=FORMULA, max_items=30)
    look = mon.update(upto(data, 10))
    assert look.decision == "stop: efficacy" and look.statistic >= look.efficacy
    with pytest.raises(InputError, match="the study stopped at look 1"):
        mon.update(data)


def test_futility_stop_and_final_look(ratings):
    flipped = ratings.assign(x=-ratings["x"])        # the effect now points the wrong way
    mon = Monitor(group_sequential(3, futility=[0.0, 0.0]), formula=FORMULA, max_items=30)
    look = mon.update(upto(flipped, 10))
    if look.statistic <= 0:
        assert look.decision == "stop: futility"
    last = Monitor(group_sequential(2), formula=FORMULA, max_items=40).update(ratings, final=True)
    assert last.decision in ("stop: efficacy", "stop: final look")
    assert last.efficacy == pytest.approx(group_sequential(information=[1.0]).efficacy[0], abs=1e-9)


def test_max_information_sets_the_fraction(ratings):
    first = lmer(FORMULA, upto(ratings, 10)).coef_table(ddf="satterthwaite").loc["x"]
    planned = 3 / first["std_error"] ** 2
    look = Monitor(group_sequential(3), formula=FORMULA, max_information=planned).update(upto(ratings, 10))
    assert look.information_fraction == pytest.approx(1 / 3, rel=1e-6)


def test_errors(ratings):
    d = group_sequential(3)
    with pytest.raises(InputError, match="exactly one of max_items"):
        Monitor(d, formula=FORMULA)
    with pytest.raises(InputError, match="GroupSequentialDesign"):
        Monitor("obf", formula=FORMULA, max_items=3)
    mon = Monitor(d, formula=FORMULA, max_items=30)
    mon.update(upto(ratings, 10))
    with pytest.raises(InputError, match="not more than the previous look"):
        mon.update(upto(ratings, 10))
    with pytest.raises(InputError, match="term='system' is not a fixed effect"):
        Monitor(d, formula=FORMULA, max_items=30, term="system").update(upto(ratings, 10))
    with pytest.raises(InputError, match="item='doc' is not a column"):
        Monitor(d, formula=FORMULA, max_items=30, item="doc").update(ratings)
    assert np.isfinite(mon.looks[0].se)


def test_alternative_less_flips_the_statistic(ratings):
    kwargs = dict(formula="rating ~ system + (1 | worker) + (1 | item)", max_items=30,
                  contrasts={"system": "sum"})
    up = Monitor(group_sequential(3), **kwargs).update(upto(ratings, 10))
    down = Monitor(group_sequential(3), alternative="less", **kwargs).update(upto(ratings, 10))
    assert down.statistic == pytest.approx(-up.statistic)
    with pytest.raises(InputError, match="alternative"):
        Monitor(group_sequential(3), alternative="two-sided", **kwargs)
