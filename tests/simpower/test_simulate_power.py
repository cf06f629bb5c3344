"""nlpower.simulate_power / simulate_power_grid: Card et al.'s Fig. 2 recipe as a function."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import nlpower
from nlpower.errors import InputError
from nlpower.grid.axes import cell_seed
from nlpower.simpower import SimulatedPowerResult, simulate_power, simulate_power_grid


def generate(rng, n, share=0.65):
    return rng.binomial(n, share), n


def binom_test(data):
    k, n = data
    return k / n - 0.5, stats.binomtest(k, n).pvalue


def _exact_fig1(n, share=0.65, alpha=0.05):
    """Power and Type-M of the two-sided binomial test, by enumerating k = 0..n."""
    k = np.arange(n + 1)
    p = np.array([stats.binomtest(int(x), n).pvalue for x in k])
    w = stats.binom.pmf(k, n, share)
    sig = p <= alpha
    right = sig & (k / n > 0.5)
    type_m = float((w[sig] * np.abs(k[sig] / n - 0.5)).sum() / w[sig].sum() / (share - 0.5))
    return float(w[right].sum()), type_m


@pytest.mark.parametrize("n", [25, 100])
def test_figure1_against_enumeration(n):
    """Fig. 1: 65% prefer B. n=100 power > 0.80, n=25 about 0.30, Type-M larger at n=25."""
    r = simulate_power(generate, binom_test, effect=0.15, params={"n": n}, n_sims=1500, rng=2020)
    exact_power, exact_m = _exact_fig1(n)
    assert abs(r.power - exact_power) < 4 * math.sqrt(exact_power * (1 - exact_power) / 1500)
    assert r.ci.low <= r.power <= r.ci.high
    assert r.type_m_ci.low - 0.05 < exact_m < r.type_m_ci.high + 0.05
    if n == 100:
        assert exact_power > 0.80
    else:
        assert 0.25 < exact_power < 0.35 and exact_m > 1.5


def test_type_m_larger_with_fewer_raters():
    small = simulate_power(generate, binom_test, effect=0.15, params={"n": 25}, n_sims=600, rng=1)
    big = simulate_power(generate, binom_test, effect=0.15, params={"n": 100}, n_sims=600, rng=1)
    assert small.type_m_ci.low > big.type_m_ci.high


def test_same_seed_same_result_and_record_round_trip():
    a = simulate_power(generate, binom_test, effect=0.15, params={"n": 40}, n_sims=200, rng=7)
    b = simulate_power(generate, binom_test, effect=0.15, params={"n": 40}, n_sims=200, rng=7)
    assert a == b and np.array_equal(a.estimates, b.estimates)
    back = SimulatedPowerResult.from_record(a.to_record())
    assert back.power == a.power and back.type_m == pytest.approx(a.type_m)
    assert back.seed == a.seed and back.params == {"n": 40}
    assert "power" in a.summary() and len(a.to_frame()) == 1 and "power=" in repr(a)


def test_effect_zero_gives_type1():
    def gen(rng, n):
        return rng.normal(0.0, 1.0, n)

    def t(x):
        return x.mean(), stats.ttest_1samp(x, 0.0).pvalue
    r = simulate_power(gen, t, effect=0.0, params={"n": 30}, n_sims=2000, rng=3)
    assert math.isnan(r.power) and math.isnan(r.type_m)
    assert abs(r.rejection_rate - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 2000)
    assert "Type I" in r.summary()


def test_failed_tests_are_counted_non_rejections():
    def flaky(data):
        k, n = data
        if k % 3 == 0:  # about a third fail: under the default max_failed share
            raise RuntimeError("no fit")
        return binom_test(data)
    r = simulate_power(generate, flaky, effect=0.15, params={"n": 50}, n_sims=200, rng=5)
    assert 0 < r.n_failed < 200
    assert "failed" in r.summary()


def test_test_may_return_mapping_or_object():
    def as_map(data):
        e, p = binom_test(data)
        return {"estimate": e, "pvalue": p}

    def as_obj(data):
        k, n = data
        res = stats.binomtest(k, n)
        return type("R", (), {"statistic": k / n - 0.5, "pvalue": res.pvalue})()
    a = simulate_power(generate, binom_test, effect=0.15, params={"n": 30}, n_sims=50, rng=2)
    b = simulate_power(generate, as_map, effect=0.15, params={"n": 30}, n_sims=50, rng=2)
    c = simulate_power(generate, as_obj, effect=0.15, params={"n": 30}, n_sims=50, rng=2)
    assert a.power == b.power == c.power


def test_errors_say_what_to_do():
    with pytest.raises(InputError, match="generate must be a function"):
        simulate_power(3, binom_test, effect=0.1)
    with pytest.raises(InputError, match=r"test\(data\) must return \(estimate, pvalue\)"):
        simulate_power(generate, lambda d: 0.3, effect=0.1, params={"n": 5}, n_sims=2)
    with pytest.raises(InputError, match="n_sims"):
        simulate_power(generate, binom_test, effect=0.1, n_sims=0)
    with pytest.raises(InputError, match="keep_draws=True"):
        simulate_power(generate, binom_test, effect=0.1, params={"n": 5}, n_sims=2,
                       keep_draws=False).plot()
    with pytest.raises(InputError, match="effect='m' names no parameter"):
        simulate_power_grid(generate, binom_test, {"n": [5]}, effect="m", n_sims=2)
    with pytest.raises(InputError, match="params must be a non-empty mapping"):
        simulate_power_grid(generate, binom_test, {}, effect=0.1, n_sims=2)


def test_plot_draws_figure1():
    pytest.importorskip("matplotlib")
    r = simulate_power(generate, binom_test, effect=0.15, params={"n": 25}, n_sims=100, rng=1)
    fig = r.plot()
    assert fig.axes and "power" in fig.axes[0].get_title()


def test_grid_cell_is_simulate_power_with_the_cell_seed(tmp_path):
    g = simulate_power_grid(generate, binom_test, {"n": [25, 60], "share": 0.65},
                            effect=lambda n, share: share - 0.5, n_sims=120, rng=11,
                            progress=False, checkpoint=tmp_path / "ck.jsonl")
    frame = g.to_frame()
    assert list(frame["n"]) == [25, 60]
    root = np.random.SeedSequence(11)
    for n, power in zip(frame["n"], frame["power"], strict=True):
        one = simulate_power(generate, binom_test, effect=0.15, params={"n": int(n), "share": 0.65},
                             n_sims=120, rng=cell_seed(root, {"n": int(n), "share": 0.65}))
        assert one.power == pytest.approx(power)
    again = simulate_power_grid(generate, binom_test, {"n": [25, 60], "share": 0.65},
                                effect=lambda n, share: share - 0.5, n_sims=120, rng=11,
                                progress=False, checkpoint=tmp_path / "ck.jsonl")
    assert list(again.to_frame()["power"]) == list(frame["power"])


def test_grid_effect_by_axis_name_and_top_level_export():
    def gen(rng, n, delta):
        return rng.normal(delta, 1.0, n)

    def t(x):
        return x.mean(), stats.ttest_1samp(x, 0.0).pvalue
    g = nlpower.simulate_power_grid(gen, t, {"n": 20, "delta": [0.0, 0.8]}, effect="delta",
                                    n_sims=100, rng=4, progress=False)
    frame = g.to_frame()
    assert math.isnan(frame["power"].iloc[0]) and frame["power"].iloc[1] > 0.5
    assert nlpower.simulate_power is simulate_power


def test_grid_same_numbers_for_any_n_jobs_and_plots():
    kw = {"effect": lambda n, share: share - 0.5, "n_sims": 60, "rng": 8, "progress": False}
    one = simulate_power_grid(generate, binom_test, {"n": [20, 40], "share": 0.65}, **kw)
    two = simulate_power_grid(generate, binom_test, {"n": [20, 40], "share": 0.65}, n_jobs=2, **kw)
    assert list(one.to_frame()["power"]) == list(two.to_frame()["power"])
    pytest.importorskip("matplotlib")
    from nlpower.plots import plot_grid
    assert plot_grid(one, x="n", y="type_m").axes
