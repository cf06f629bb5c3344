"""The one Monte Carlo summary (nlpower.montecarlo)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from nlpower.intervals import wilson_ci
from nlpower.montecarlo import MonteCarloSummary


def test_counts_power_and_intervals():
    rng = np.random.default_rng(3)
    est = rng.normal(0.1, 0.2, size=400)
    sig = np.abs(est / 0.2) > 1.0
    s = MonteCarloSummary.from_draws(est, sig, effect=0.1)
    right = sig & (est > 0)
    assert s.n_rejected == right.sum() and s.power == right.sum() / 400
    assert s.rejection_rate == sig.mean() and s.n_wrong_sign == (sig & (est < 0)).sum()
    assert s.ci == s.proportion_ci() and tuple(s.ci) == wilson_ci(s.n_rejected, 400)
    assert tuple(s.type_s_ci) == wilson_ci(s.n_wrong_sign, s.n_significant)
    ratio = np.abs(est[sig]) / 0.1
    half = stats.t.ppf(0.975, ratio.size - 1) * ratio.std(ddof=1) / math.sqrt(ratio.size)
    assert s.type_m_ci.low == pytest.approx(ratio.mean() - half)
    assert s.type_m_ci.high == pytest.approx(ratio.mean() + half)


def test_record_round_trip_and_effect_zero():
    s = MonteCarloSummary.from_draws(np.array([0.2, -0.1, 0.3]), np.array([True, True, False]),
                                     effect=0.2)
    rec = s.to_record()
    back = MonteCarloSummary.from_record({**rec, "type_m": s.type_m}, effect=0.2)
    assert back == s
    assert MonteCarloSummary.from_record({"n_sims": 3}, effect=0.2) is None
    z = MonteCarloSummary.from_draws(np.array([0.2, -0.1]), np.array([True, False]), effect=0.0)
    assert math.isnan(z.power) and z.rejection_rate == 0.5 and math.isnan(z.type_s)
    assert tuple(z.proportion_ci()) == wilson_ci(1, 2)
    assert math.isnan(z.type_m_ci.low)


def test_every_simulated_result_composes_the_summary():
    from nlpower.accuracy import power as accuracy_power
    from nlpower.bleu import power as bleu_power
    from nlpower.paired import retrospective_power

    acc = accuracy_power(400, 0.03, agreement=0.9, method="simulate", n_sims=300, rng=1)
    assert acc.mc is not None and acc.mc.power == acc.power and acc.mc.type_s_ci.high <= 1
    assert type(acc).from_record(acc.to_record()).mc == acc.mc
    bl = bleu_power(500, 1.0, 0.125, 25.8, n_sims=100, method="normal", rng=1)
    assert bl.mc is not None and bl.mc.power == bl.power
    assert type(bl).from_record(bl.to_record()).mc == bl.mc
    curve = retrospective_power(np.random.default_rng(2).normal(0.2, 1.0, 40), sizes=[20, 80],
                                n_sims=200, rng=3)
    assert all(r.mc is not None and r.mc.n_sims == 200 for r in curve.results)


def test_type_m_interval_never_reaches_below_zero():
    # two rejections with very different magnitudes: the t interval would reach below 0
    from nlpower.montecarlo import MonteCarloSummary

    est = [0.01, 5.0, 0.0, 0.0]
    mc = MonteCarloSummary.from_draws(est, [True, True, False, False], effect=0.5)
    low, high = mc.type_m_ci
    assert low == 0.0 and high > mc.type_m
