"""Closed-form variance and power with a judge against simulated nlpower.judge.fit estimates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import LMMParams
from nlpower.errors import InputError
from nlpower.judge import fit, simulate_study
from nlpower.judge.power import JudgeDesign, judge_mde, judge_plan, judge_power, variance

PARAMS = LMMParams(effect=0.1, sd_worker=0.05, sd_worker_slope=0.08, sd_item=0.1,
                   sd_item_slope=0.2, sigma=0.3)
R = 0.8


def _simulate(design: JudgeDesign, lam: float, n_sims: int, seed: int) -> np.ndarray:
    """Estimates of B - A from data drawn from PARAMS (mapped to simulate_study's scale)."""
    sd_b = math.sqrt(2) * PARAMS.sd_item_slope
    tau = sd_b * math.sqrt(1 / R**2 - 1)
    out = []
    for s in np.random.SeedSequence(seed).spawn(n_sims):
        human, judge = simulate_study(
            n_items=design.n_labelled + design.n_unlabelled, n_labelled=design.n_labelled,
            workers_per_item=design.workers_per_item, n_workers=design.workers,
            effect=PARAMS.mean_difference, sd_item=PARAMS.sd_item, sd_item_system=sd_b,
            sd_worker=PARAMS.sd_worker, sd_worker_system=math.sqrt(2) * PARAMS.sd_worker_slope,
            sigma=PARAMS.sigma, judge_noise=tau, judge_bias=(0.0, 0.5), rng=s)
        out.append(fit(human, judge, rectifier="iid", lam=lam, compare=False).ppi["B - A"].estimate)
    return np.array(out)


@pytest.mark.slow
@pytest.mark.parametrize("lam", [None, 0.0])
def test_variance_matches_simulation(lam: float | None) -> None:
    design = JudgeDesign(n_labelled=30, workers_per_item=3, n_unlabelled=300)
    v, lam_used = variance(design, PARAMS, R, lam=lam)
    n_sims = 300
    est = _simulate(design, lam_used, n_sims, seed=7)
    # unbiased for the true difference although the judge favours B by 0.5
    assert abs(est.mean() - PARAMS.mean_difference) < 3.5 * math.sqrt(v / n_sims)
    # sample variance: relative SE sqrt(2 / (n - 1)) for normal estimates
    assert est.var(ddof=1) / v == pytest.approx(1.0, abs=3.5 * math.sqrt(2 / (n_sims - 1)))


def test_tuned_lambda_minimises_the_variance() -> None:
    design = JudgeDesign(40, 3, 500)
    v_star, lam = variance(design, PARAMS, R)
    assert lam == pytest.approx(R**2 / (1 + 40 / 500))
    for other in (0.0, lam - 0.1, lam + 0.1, 1.0):
        assert variance(design, PARAMS, R, lam=other)[0] >= v_star


def test_power_mde_and_plan_agree() -> None:
    design = JudgeDesign(60, 3, 1000)
    mde_j, mde_h = judge_mde(design, PARAMS, judge_r=R)
    assert mde_j < mde_h
    at_mde = judge_power(design, PARAMS.with_effect(mde_j / 2), judge_r=R)
    assert at_mde.power == pytest.approx(0.8, abs=1e-3)
    tab = judge_plan(PARAMS, judge_r=R, max_workers=8, max_workers_per_item=4)
    assert (tab["power"] >= 0.8).all()
    assert tab.loc["with judge", "cost"] <= tab.loc["human only", "cost"]
    assert tab.loc["with judge", "ratings_saved"] == (tab.loc["human only", "n_ratings"]
                                                      - tab.loc["with judge", "n_ratings"])


def test_errors() -> None:
    with pytest.raises(InputError, match="judge_r"):
        judge_power(JudgeDesign(10, 2, 10), PARAMS, judge_r=1.0)
    with pytest.raises(InputError, match="n_workers"):
        JudgeDesign(10, 3, 10, n_workers=2)
    with pytest.raises(InputError, match="non-zero"):
        judge_plan(PARAMS.with_effect(0.0), judge_r=R)
    with pytest.raises(InputError, match="LMMParams"):
        judge_power(JudgeDesign(10, 2, 10), "high", judge_r=R)  # type: ignore[arg-type]


def test_power_curve_rises_with_ratings_and_judge_quality() -> None:
    from nlpower.judge import power_curve_data

    data = power_curve_data(PARAMS, n_labelled=[10, 40, 160], judge_r=(0.0, 0.9), n_workers=20)
    assert (np.diff(data[0.0]) > 0).all() and (np.diff(data[0.9]) > 0).all()
    assert (data[0.9] > data[0.0]).all()


def test_plot(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    from nlpower.judge import plot_power_curve

    ax = plot_power_curve(PARAMS, n_labelled=[10, 20], judge_r=(0.0, 0.5, 0.9), n_workers=20)
    assert [line.get_label() for line in ax.lines[:3]] == ["humans only", "judge r = 0.5",
                                                           "judge r = 0.9"]


@pytest.mark.slow
def test_closed_form_power_matches_simulated_rejections() -> None:
    """Rejection rates of simulated fits (fresh workers, i.i.d. rectifier, lambda*) vs judge_power."""
    params = PARAMS.with_effect(0.06)
    design = JudgeDesign(60, 2, 600, n_workers=120)
    closed = judge_power(design, params, judge_r=R)
    _, lam = variance(design, params, R)
    sd_b = math.sqrt(2) * params.sd_item_slope
    n_sims, rej, rej0 = 300, 0, 0
    for s in np.random.SeedSequence(5).spawn(n_sims):
        human, judge = simulate_study(
            n_items=660, n_labelled=60, workers_per_item=2, n_workers=120,
            effect=params.mean_difference, sd_item=params.sd_item, sd_item_system=sd_b,
            sd_worker=params.sd_worker, sd_worker_system=math.sqrt(2) * params.sd_worker_slope,
            sigma=params.sigma, judge_noise=sd_b * math.sqrt(1 / R**2 - 1),
            judge_bias=(0.0, 0.5), rng=s)
        res = fit(human, judge, rectifier="iid", lam=lam)
        rej += res.ppi["B - A"].pvalue < 0.05
        rej0 += res.estimates["human"]["B - A"].pvalue < 0.05
    for simulated, power in ((rej / n_sims, closed.power), (rej0 / n_sims, closed.power_human)):
        assert simulated == pytest.approx(power, abs=3 * math.sqrt(power * (1 - power) / n_sims))


def test_closed_form_power_matches_iid_ppi_rejections() -> None:
    """i.i.d. labels (no worker effects, one rating per output): the closed form against the
    rejection rate of ppi-python's estimator (judge.ppi_mean, pinned to ppi-python) on
    simulated per-item differences, within 3 Monte Carlo SE."""
    from nlpower.judge import ppi_mean

    params = LMMParams(effect=0.03, sd_worker=0.0, sd_worker_slope=0.0, sd_item=0.1,
                       sd_item_slope=0.15, sigma=0.1)
    design = JudgeDesign(n_labelled=100, workers_per_item=1, n_unlabelled=1000)
    r, n, big_n, n_sims = 0.85, 100, 1000, 2000
    want = judge_power(design, params, judge_r=r)
    v_item = 4 * params.sd_item_slope**2
    rng = np.random.default_rng(20261128)
    hits, hits_human = 0, 0
    for _ in range(n_sims):
        a = rng.normal(0, math.sqrt(v_item), n + big_n)        # item x system part of B - A
        y = params.mean_difference + a[:n] + rng.normal(0, math.sqrt(2) * params.sigma, n)
        g = 0.3 + a + rng.normal(0, math.sqrt(v_item * (1 / r**2 - 1)), n + big_n)  # biased judge
        hits += ppi_mean(y, g[:n], g[n:]).pvalue <= 0.05
        hits_human += ppi_mean(y, g[:n], g[n:], lam=0.0).pvalue <= 0.05
    for got, p in ((hits / n_sims, want.power), (hits_human / n_sims, want.power_human)):
        se = math.sqrt(p * (1 - p) / n_sims)
        assert abs(got - p) < 3 * se, (got, p, se)
    assert want.power > want.power_human + 0.1  # the check separates the two
