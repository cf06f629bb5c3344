"""One-judgement head-to-head power: the test's thresholds, Fig. 1, exact vs simulated, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from nlpower.errors import InputError
from nlpower.preference import PreferencePowerResult, power
from nlpower.preference.rules import thresholds


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("alpha", [0.05, 0.01])
def test_binomial_thresholds_match_scipy_binomtest(alpha, alternative):
    m = np.arange(0, 61)
    lower, upper = thresholds(m, "binomial", alpha, alternative)
    for mm in range(1, 61):
        for w in range(mm + 1):
            p = stats.binomtest(w, mm, 0.5, alternative=alternative).pvalue
            ours = bool(w <= lower[mm] or w >= upper[mm])
            assert ours == (p <= alpha), (mm, w, p)
    assert lower[0] == -1 and upper[0] == 1


def test_z_thresholds_are_the_score_test():
    m = np.arange(1, 80)
    lower, upper = thresholds(m, "z", 0.05, "two-sided")
    for mm in range(1, 80):
        w = np.arange(mm + 1)
        z = (2 * w - mm) / math.sqrt(mm)
        rej = np.abs(z) >= stats.norm.isf(0.025)
        assert np.array_equal(rej, (w <= lower[mm - 1]) | (w >= upper[mm - 1]))


def test_figure1_numbers():
    """Card et al. (2020), Fig. 1: 65% prefer B."""
    r100, r25 = power(100, 0.65), power(25, 0.65)
    assert r100.power > 0.80
    assert 0.25 < r25.power < 0.35
    # the exact values: P(W >= 61 | 100) and P(W >= 18 | 25) (binomial two-sided rejection regions)
    assert r100.power == pytest.approx(stats.binom.sf(60, 100, 0.65), abs=1e-12)
    assert r25.power == pytest.approx(stats.binom.sf(17, 25, 0.65), abs=1e-12)
    # significant samples overestimate the share, more at n = 25
    assert r25.mean_significant > r100.mean_significant > 0.65
    assert r25.type_m > r100.type_m > 1.0


def _brute(n, p_win, p_draw, ties, test, alpha, alternative):
    """Sum over every (W, D) outcome: power, Type-M, Type-S, rejection rate."""
    p_lose = 1 - p_win - p_draw
    share = p_win / (1 - p_draw) if ties == "exclude" else p_win + p_draw / 2
    eff = share - 0.5
    right = wrong = dev = 0.0
    for d in range(n + 1):
        m = n - d
        lo, up = thresholds(np.array([m]), test, alpha, alternative)
        for w in range(m + 1):
            pr = math.comb(n, d) * math.comb(m, w) * p_draw**d * p_win**w * p_lose**(m - w)
            if not (w <= lo[0] or w >= up[0]):
                continue
            est = w / m if ties == "exclude" else (w + d / 2) / n
            dev += pr * abs(est - 0.5)
            if (est - 0.5) * eff > 0:
                right += pr
            else:
                wrong += pr
    rej = right + wrong
    return right, dev / (abs(eff) * rej), wrong / rej, rej


@pytest.mark.parametrize("ties", ["exclude", "split"])
@pytest.mark.parametrize("test,alternative", [("binomial", "two-sided"), ("z", "greater"),
                                              ("binomial", "less")])
def test_exact_matches_brute_force_enumeration(ties, test, alternative):
    p_win = 0.25 if alternative == "less" else 0.45
    r = power(30, p_win, p_draw=0.25, ties=ties, test=test, alternative=alternative)
    pw, tm, ts, rej = _brute(30, p_win, 0.25, ties, test, 0.05, alternative)
    assert r.power == pytest.approx(pw, abs=1e-10)
    assert r.type_m == pytest.approx(tm, rel=1e-9)
    assert r.type_s == pytest.approx(ts, abs=1e-10)
    assert r.rejection_rate == pytest.approx(rej, abs=1e-10)


@pytest.mark.parametrize("ties", ["exclude", "split"])
def test_simulation_agrees_with_exact_within_monte_carlo_error(ties):
    ex = power(60, 0.4, p_draw=0.3, ties=ties)
    n_sims = 40_000
    sim = power(60, 0.4, p_draw=0.3, ties=ties, method="simulate", n_sims=n_sims, rng=11)
    se = math.sqrt(ex.power * (1 - ex.power) / n_sims)
    assert abs(sim.power - ex.power) < 4 * se
    # |estimate - 1/2| / |effect| <= 0.5 / |effect|: a bound on the SD of Type-M's terms
    n_sig = sim.rejection_rate * n_sims
    assert abs(sim.type_m - ex.type_m) < 4 * (0.5 / abs(ex.effect)) / math.sqrt(n_sig)
    assert sim.seed and sim.n_sims == n_sims and not sim.exact


def test_same_seed_same_simulation():
    a = power(40, 0.6, method="simulate", n_sims=500, rng=3)
    b = power(40, 0.6, method="simulate", n_sims=500, rng=3)
    assert a == b


def test_size_of_the_binomial_test_is_at_most_alpha():
    for n in (10, 37, 100):
        for p_draw in (0.0, 0.3):
            r = power(n, (1 - p_draw) / 2, p_draw=p_draw)
            assert math.isnan(r.power) and r.rejection_rate <= 0.05


def test_ties_change_the_effect_not_the_test():
    ex, sp = power(50, 0.4, p_draw=0.3), power(50, 0.4, p_draw=0.3, ties="split")
    assert ex.power == pytest.approx(sp.power, abs=1e-12)
    assert ex.share == pytest.approx(0.4 / 0.7) and sp.share == pytest.approx(0.55)
    assert ex.type_m != pytest.approx(sp.type_m)


def test_record_round_trip_and_summary():
    r = power(25, 0.65, method="simulate", n_sims=300, rng=1)
    assert PreferencePowerResult.from_record(r.to_record()) == r
    assert "Type-M" in r.summary() and len(r.to_frame()) == 1
    assert "power=" in repr(r)


@pytest.mark.parametrize("kwargs,match", [
    ({"p_win": 1.2}, "p_win"), ({"p_win": 0.0}, "p_win"), ({"p_win": 65}, "not a percentage"),
    ({"p_win": 0.5, "p_draw": -0.1}, "p_draw"), ({"p_win": 0.5, "p_draw": 1.0}, "p_draw"),
    ({"p_win": 0.7, "p_draw": 0.4}, "p_lose"), ({"p_win": 0.6, "alpha": 0.6}, "alpha"),
    ({"p_win": 0.6, "ties": "half"}, "ties"), ({"p_win": 0.6, "test": "t"}, "test"),
    ({"p_win": 0.6, "alternative": "up"}, "alternative"), ({"p_win": 0.6, "method": "mc"}, "method"),
])
def test_bad_input_says_what_to_do(kwargs, match):
    with pytest.raises(InputError, match=match):
        power(50, **kwargs)
    with pytest.raises(InputError, match="n must be"):
        power(0, 0.6)
