"""Judge quality from a pilot: the moment estimate of judge_r and the assurance over it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import presets
from nlpower.errors import InputError
from nlpower.judge import JudgeDesign, judge_assurance, judge_power, simulate_study
from nlpower.judge.assurance import _item_stats, _r_from


def test_moment_estimate_centres_on_the_simulated_correlation() -> None:
    """sd_item_system 0.4, judge noise 0.3: r = 0.8; mean of 10 pilots within 3 SE."""
    rs = []
    for seed in range(10):
        h, j = simulate_study(n_items=300, n_labelled=100, workers_per_item=3, n_workers=30,
                              sd_item_system=0.4, judge_noise=0.3, sigma=0.4,
                              sd_worker_system=0.1, rng=seed)
        rs.append(_r_from(*_item_stats(h, j)))
    r = np.array(rs)
    assert abs(r.mean() - 0.8) < 3 * r.std(ddof=1) / math.sqrt(r.size) + 0.02  # + ratio bias


def test_assurance_is_power_over_the_draws() -> None:
    h, j = simulate_study(n_items=300, n_labelled=60, workers_per_item=3, rng=2)
    design = JudgeDesign(150, 2, 1000, n_workers=80)
    params = presets.high_variance(effect=0.05)
    a = judge_assurance(design, params, h, j, n_boot=100, rng=1)
    b = judge_assurance(design, params, h, j, n_boot=100, rng=1)
    assert np.array_equal(a.judge_r_draws, b.judge_r_draws)
    assert ((a.judge_r_draws >= 0) & (a.judge_r_draws <= 0.999)).all()
    low = judge_power(design, params, judge_r=0.0).power
    high = judge_power(design, params, judge_r=0.999).power
    assert low <= a.expected_power <= high
    expected = np.mean([judge_power(design, params, judge_r=float(r)).power
                        for r in a.judge_r_draws])
    assert a.expected_power == pytest.approx(expected)
    assert "assurance" in repr(a)


def test_errors() -> None:
    h, j = simulate_study(n_items=60, n_labelled=4, workers_per_item=3, rng=2)
    with pytest.raises(InputError, match="at least 5"):
        judge_assurance(JudgeDesign(50, 2, 100), presets.high_variance(effect=0.05), h, j)
    with pytest.raises(InputError, match="n_boot"):
        judge_assurance(JudgeDesign(50, 2, 100), presets.high_variance(effect=0.05), h, j,
                        n_boot=1)
