"""mde() and plan()."""

from __future__ import annotations

import pytest

from nlpower import CrossedDesign, LMMParams, presets
from nlpower.errors import DesignError, InputError
from nlpower.powersim import analytic_power, mde, plan


def test_mde_is_root_of_analytic_power():
    d = CrossedDesign(10, 100)
    m = mde(d, presets.high_variance())
    assert analytic_power(d, presets.high_variance(m.effect)).power == pytest.approx(0.8, abs=1e-6)
    assert m.mean_difference == pytest.approx(2 * m.effect)
    half = mde(d, presets.high_variance().to_coding("half"))
    assert half.effect == pytest.approx(2 * m.effect) and half.mean_difference == pytest.approx(m.mean_difference)
    assert "Minimum detectable effect" in m.summary() and m.to_frame()["effect"].iloc[0] == m.effect


def test_mde_decreases_with_more_items():
    p = presets.low_variance()
    assert mde(CrossedDesign(5, 200), p).effect < mde(CrossedDesign(5, 50), p).effect


def test_mde_confirmed_by_simulation():
    d = CrossedDesign(10, 100)
    m = mde(d, presets.low_variance(), method="simulation", n_sims=1500, rng=3)
    s = m.simulated
    assert s is not None and abs(s.power - 0.8) < 3 * s.se + 0.02


def test_plan_finds_cheapest_design():
    p = presets.high_variance()
    res = plan(p, effect=0.1, max_workers=12, max_items=2000)
    assert res.power >= 0.8
    # each frontier entry is the fewest items reaching the target for its number of workers
    for w, i in zip(res.frontier["n_workers"], res.frontier["n_items"], strict=True):
        if i == i:  # not NaN
            assert analytic_power(CrossedDesign(w, int(i)), p.with_effect(0.1)).power >= 0.8
            if i > 2:
                assert analytic_power(CrossedDesign(w, int(i) - 1), p.with_effect(0.1)).power < 0.8
    assert res.cost == res.frontier["cost"].min()
    assert res.n_workers * res.n_items * 2 == res.cost
    assert set(res.curve["n_items"]) >= {res.n_items}


def test_plan_worker_cost_moves_choice_to_fewer_workers():
    p = presets.low_variance()
    cheap = plan(p, effect=0.05, max_workers=20, max_items=3000)
    costly = plan(p, effect=0.05, max_workers=20, max_items=3000, cost_per_worker=500.0)
    assert costly.n_workers <= cheap.n_workers
    assert costly.cost == pytest.approx(2 * costly.n_workers * costly.n_items + 500 * costly.n_workers)


def test_plan_simulation_confirmation_and_subsets():
    p = presets.low_variance()
    res = plan(p, effect=0.15, max_workers=4, max_items=120, workers_per_item=3, rng=1, n_sims=10)
    assert res.design.raters_per_item == 3 and res.simulated is not None
    assert "Cheapest design" in res.summary()


@pytest.mark.parametrize(
    "kwargs,err,match",
    [
        ({"effect": 0.0}, InputError, "effect must be non-zero"),
        ({"target_power": 1.2}, InputError, "target_power"),
        ({"cost_per_rating": 0.0, "cost_per_worker": 0.0}, InputError, "both 0"),
        ({"max_workers": 3, "max_items": 10}, DesignError, "no design"),
        ({"workers_per_item": 60}, DesignError, "exceeds max_workers"),
        ({"test": "t"}, InputError, "test must be one of"),
    ],
)
def test_plan_errors(kwargs, err, match):
    effect = kwargs.pop("effect", 0.1)
    with pytest.raises(err, match=match):
        plan(presets.high_variance(), effect=effect, **kwargs)


def test_mde_errors():
    d = CrossedDesign(5, 20)
    with pytest.raises(InputError, match="alternative='less'"):
        mde(d, presets.high_variance(), alternative="less")
    with pytest.raises(InputError, match="method must be one of"):
        mde(d, presets.high_variance(), method="bootstrap")
    with pytest.raises(InputError, match="target_power"):
        mde(d, presets.high_variance(), target_power=0)
    with pytest.raises(InputError, match="LMMParams"):
        plan(object(), effect=0.1)


@pytest.mark.parametrize("start", [2, 7, 40, 95, 400])
@pytest.mark.parametrize("answer", [2, 3, 41, 100, None])
def test_galloping_search_finds_the_first_passing_count(start, answer):
    from nlpower.powersim.plansearch import fewest_passing

    calls = []

    def pw(i):
        calls.append(i)
        return 1.0 if answer is not None and i >= answer else 0.0

    assert fewest_passing(pw, 0.8, 2, 100, start) == answer
    assert all(2 <= i <= 100 for i in calls)


def test_plan_with_workers_per_item_searches_near_the_answer():
    from nlpower.powersim.analytic import analytic_moments

    p = LMMParams(beta0=0, effect=0.2, sd_worker=0.05, sd_worker_slope=0.07, sd_item=0.1,
                  sd_item_slope=0.15, sigma=1.5)
    res = plan(p, effect=0.2, workers_per_item=3, test="z")

    def pw(w, i):
        return analytic_moments(CrossedDesign(w, i, workers_per_item=3), p, alpha=0.05,
                                test="z", alternative="two-sided").power
    w, i = res.n_workers, res.n_items
    assert pw(w, i) >= 0.8 > pw(w, i - 1)
    assert res.design.workers_per_item == 3


def test_a_plan_that_spreads_workers_thin_says_so_unless_workers_cost_something():
    from nlpower.powersim.plansearch import Space

    free = Space.check(1.0, 0.0, 2, None, 5000, 3, outcome="gaussian")
    thin = [n for n in free.notes(192, 192, 97) if "each worker rates about 1.5 items" in n]
    assert len(thin) == 1 and "cost_per_worker" in thin[0]
    assert not any("each worker rates" in n for n in free.notes(46, 46, 33))   # 2.2 items each
    paid = Space.check(1.0, 5.0, 2, None, 5000, 3, outcome="gaussian")
    assert not any("each worker rates" in n for n in paid.notes(192, 192, 97))
