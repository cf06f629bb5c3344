"""nlpower.accuracy.power: the paper's numbers, exact enumeration against brute force and
simulation, the rng policy, bounds, results and errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from nlpower.accuracy import (
    AccuracyPowerResult,
    agreement_bounds,
    mcnemar,
    mcnemar_pvalue,
    paired_table,
    power,
    power_bounds,
)
from nlpower.errors import InputError

TESTS = ("exact", "mid-p", "chi2", "chi2-cc")


# --- the paper ---------------------------------------------------------------------------

def test_appendix_c_n500():
    """Card et al. (2020) App. C: n 500, delta 0.02, Pa 0.9 -> power ~0.25, Type-M ~1.9."""
    r = power(500, 0.02, 0.9)
    assert abs(r.power - 0.25) < 0.01
    assert abs(r.type_m - 1.9) < 0.05
    assert r.type_s < 0.01


def test_appendix_c_n2000():
    """App. C: n 2000 -> 'nearly 80%' power, Type-M ~1.1."""
    r = power(2000, 0.02, 0.9)
    assert 0.77 < r.power < 0.80
    assert abs(r.type_m - 1.1) < 0.05


def test_notebook_example():
    """The paper's accuracy notebook: baseline 0.8, delta 0.02, Pa 0.975, n 500 -> 0.80, 1.12."""
    r = power(500, 0.02, 0.975, baseline=0.8)
    assert abs(r.power - 0.80) < 0.01
    assert abs(r.type_m - 1.12) < 0.01


# --- exact enumeration -------------------------------------------------------------------

def _brute_force(n, delta, agreement, test, alpha=0.05):
    """Power, Type-M, Type-S by enumerating every (b, c) and testing it with statsmodels."""
    t = paired_table(delta, agreement)
    probs = [t.only_new, t.only_old, 1 - t.discordant]
    right = sig_all = wrong = mabs = 0.0
    for b, c in itertools.product(range(n + 1), repeat=2):
        if b + c > n or b + c == 0:
            continue
        prob = stats.multinomial.pmf([b, c, n - b - c], n, probs)
        table = [[n - b - c, c], [b, 0]]
        if test in ("exact", "mid-p"):
            p = sm_mcnemar(table, exact=True).pvalue
            if test == "mid-p" and b != c:
                p = p - stats.binom.pmf(min(b, c), b + c, 0.5)
        else:
            p = sm_mcnemar(table, exact=False, correction=test == "chi2-cc").pvalue
        if b == c or not p <= alpha:
            continue
        sig_all += prob
        mabs += prob * abs(b - c) / n
        if (b > c) == (delta > 0):
            right += prob
        else:
            wrong += prob
    return right, mabs / (abs(delta) * sig_all), wrong / sig_all


@pytest.mark.parametrize("test", TESTS)
@pytest.mark.parametrize("delta,agreement", [(0.1, 0.6), (-0.15, 0.7)])
def test_exact_matches_brute_force_enumeration(test, delta, agreement):
    n = 25
    pw, tm, ts = _brute_force(n, delta, agreement, test)
    r = power(n, delta, agreement, test=test)
    assert r.power == pytest.approx(pw, abs=1e-12)
    assert r.type_m == pytest.approx(tm, rel=1e-10)
    assert r.type_s == pytest.approx(ts, abs=1e-12)


@pytest.mark.parametrize("test", TESTS)
def test_exact_agrees_with_large_simulation(test):
    """Power and Type-M by exact enumeration lie within 4 Monte Carlo SEs of a simulation."""
    n, delta, agreement, n_sims = 800, 0.02, 0.9, 40_000
    exact = power(n, delta, agreement, test=test)
    gen = np.random.default_rng(7)
    t = paired_table(delta, agreement)
    counts = gen.multinomial(n, [t.only_new, t.only_old, 1 - t.discordant], size=n_sims)
    b, c = counts[:, 0], counts[:, 1]
    sig = mcnemar_pvalue(b, c, test) <= 0.05
    hit = sig & (b > c)
    se = math.sqrt(exact.power * (1 - exact.power) / n_sims)
    assert abs(hit.mean() - exact.power) < 4 * se
    ratio = np.abs(b - c)[sig] / n / delta
    assert abs(ratio.mean() - exact.type_m) < 4 * ratio.std(ddof=1) / math.sqrt(sig.sum())


@pytest.mark.parametrize("test", TESTS)
def test_simulate_method_agrees_with_exact(test):
    exact = power(1200, 0.025, 0.92, test=test)
    sim = power(1200, 0.025, 0.92, test=test, method="simulate", n_sims=20_000, rng=11)
    assert abs(sim.power - exact.power) < 4 * sim.se
    assert sim.ci.low < sim.power < sim.ci.high
    assert sim.n_sims == 20_000 and exact.n_sims == 0
    assert exact.ci.low == exact.ci.high == exact.power and exact.se == 0.0


def test_pvalues_match_statsmodels():
    for b, c in [(10, 2), (0, 7), (30, 15), (3, 9), (100, 80), (1, 0)]:
        table = [[50, c], [b, 40]]
        assert mcnemar_pvalue(b, c, "exact") == pytest.approx(sm_mcnemar(table).pvalue, rel=1e-12)
        assert mcnemar_pvalue(b, c, "chi2") == pytest.approx(
            sm_mcnemar(table, exact=False, correction=False).pvalue, rel=1e-12)
        assert mcnemar_pvalue(b, c, "chi2-cc") == pytest.approx(
            sm_mcnemar(table, exact=False, correction=True).pvalue, rel=1e-12)
        # mid-p (Fagerland et al. 2013): the exact p-value minus the point probability
        assert mcnemar_pvalue(b, c, "mid-p") == pytest.approx(
            sm_mcnemar(table).pvalue - stats.binom.pmf(min(b, c), b + c, 0.5), rel=1e-12)
    assert mcnemar_pvalue(5, 5, "chi2-cc") == 1.0 and mcnemar_pvalue(0, 0, "exact") == 1.0


def test_mcnemar_result():
    r = mcnemar(10, 2)
    assert r.statistic == 2 and r.pvalue == pytest.approx(2 * stats.binom.cdf(2, 12, 0.5))
    chi = mcnemar(30, 15, test="chi2")
    assert chi.statistic == pytest.approx(15**2 / 45)
    assert "p-value" in r.summary() and len(r.to_frame()) == 1


def test_exact_at_n_10000():
    r = power(10_000, 0.006, 0.95)
    assert 0 < r.power < 1


def test_sign_symmetry_and_zero_effect():
    up, down = power(700, 0.03, 0.85), power(700, -0.03, 0.85)
    assert up.power == pytest.approx(down.power) and up.type_m == pytest.approx(down.type_m)
    null = power(700, 0.0, 0.85)
    assert math.isnan(null.power) and math.isnan(null.type_m)
    assert 0 < null.rejection_rate <= 0.05                 # the exact test holds its size
    assert "delta is 0" in null.summary()


def test_agreement_prior_in_power():
    r = power(1000, 0.02, "glue", baseline=0.9)
    assert r.agreement == pytest.approx(0.4142 + 0.5819 * 0.9 - 0.4662 * 0.02)
    assert r.agreement_source == "glue"


# --- rng policy --------------------------------------------------------------------------

def test_simulate_seed_replays_and_generator_is_consumed():
    a = power(300, 0.03, 0.9, method="simulate", n_sims=2000, rng=5)
    b = power(300, 0.03, 0.9, method="simulate", n_sims=2000, rng=5)
    assert a.power == b.power and a.seed == b.seed
    gen = np.random.default_rng(1)
    c = power(300, 0.03, 0.9, method="simulate", n_sims=2000, rng=gen)
    d = power(300, 0.03, 0.9, method="simulate", n_sims=2000, rng=gen)
    assert (c.power, c.type_m) != (d.power, d.type_m)
    e = power(300, 0.03, 0.9, method="simulate", n_sims=2000, rng=np.random.default_rng(1))
    assert e.power == c.power


# --- bounds ------------------------------------------------------------------------------

def test_agreement_bounds():
    b = agreement_bounds(0.8, 0.02)
    assert (b.low, b.high) == pytest.approx((0.62, 0.98))
    # the extremes are tables with a zero cell
    assert paired_table(0.02, b.high, 0.8).only_old == pytest.approx(0.0)
    assert paired_table(0.02, b.low, 0.8).both_wrong == pytest.approx(0.0)


def test_power_bounds_bracket_the_agreements_between():
    pb = power_bounds(800, 0.85, 0.02)
    mid = power(800, 0.02, (pb.low.agreement + pb.high.agreement) / 2, baseline=0.85)
    assert pb.low.power < mid.power < pb.high.power
    assert "minimal agreement" in pb.summary() and len(pb.to_frame()) == 2


# --- results -----------------------------------------------------------------------------

def test_record_round_trip_and_frame():
    for r in (power(400, 0.02, 0.9, baseline=0.7),
              power(400, 0.02, 0.9, method="simulate", n_sims=500, rng=2),
              power(400, 0.0, 0.9)):
        back = AccuracyPowerResult.from_record(r.to_record())
        assert back.to_record() == r.to_record()
        assert len(r.to_frame()) == 1 and "power" in r.to_frame()
        assert "McNemar power" in r.summary() and "AccuracyPowerResult(" in repr(r)


def test_table_frame():
    t = paired_table(0.02, 0.9, 0.64)
    frame = t.to_frame()
    assert frame.loc["new correct", "old incorrect"] == pytest.approx(0.06)
    assert frame.to_numpy().sum() == pytest.approx(1.0)


# --- errors ------------------------------------------------------------------------------

def test_error_impossible_off_diagonal():
    with pytest.raises(InputError, match=r"delta=0.2 with agreement=0.9 is impossible: "
                                         r"p\(only old correct\).*at most 1 - agreement = 0.1"):
        power(100, 0.2, 0.9)


def test_error_impossible_diagonal_names_cell_and_range():
    with pytest.raises(InputError, match=r"both_wrong = 1 - baseline - p\(only new correct\).*"
                                         r"agreement must lie in \[0.92, 0.98\]"):
        power(100, 0.02, 0.5, baseline=0.95)
    with pytest.raises(InputError, match=r"both_correct = baseline - p\(only old correct\)"):
        power(100, 0.02, 0.5, baseline=0.1)


def test_error_new_accuracy_out_of_range():
    with pytest.raises(InputError, match=r"baseline \+ delta = 1.05 is not an accuracy"):
        agreement_bounds(0.95, 0.1)
    with pytest.raises(InputError, match="new accuracy baseline \\+ delta must lie in"):
        paired_table(0.1, 0.85, 0.95)


def test_error_prior_needs_baseline():
    with pytest.raises(InputError, match="agreement='glue' is a regression prior and needs the "
                                         "baseline"):
        power(100, 0.02, "glue")


@pytest.mark.parametrize("kw,msg", [
    ({"test": "exakt"}, "test must be one of .*Did you mean 'exact'"),
    ({"method": "mc"}, "method must be one of"),
    ({"alpha": 1.5}, "alpha must be < 1.0"),
    ({"n_sims": 0, "method": "simulate"}, "n_sims must be >= 1"),
])
def test_error_options(kw, msg):
    with pytest.raises(InputError, match=msg):
        power(100, 0.02, 0.9, **kw)


def test_error_bad_agreement_name_and_n():
    with pytest.raises(InputError, match="agreement must be one of 'glue', 'squad'"):
        power(100, 0.02, "mnli", baseline=0.9)
    with pytest.raises(InputError, match="n must be >= 1"):
        power(0, 0.02, 0.9)
