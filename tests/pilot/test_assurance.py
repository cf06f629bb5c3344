"""assurance / plan_with_assurance: draws, vectorised power, safeguard, errors, calibration."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import InputError
from nlpower.pilot import AssuranceResult, as_params, assurance, plan_with_assurance
from nlpower.pilot.assurance import _moments
from nlpower.pilot.draws import (
    asymptotic_cov,
    bias_corrected,
    bootstrap_draws,
    params_at,
    variances_of,
)
from nlpower.powersim import analytic_power, plan
from nlpower.powersim.analytic import power_from_moments
from nlpower.powersim.balanced_fit import fit_balanced
from nlpower.powersim.fastpath import draw_stats, stats_from_ratings
from nlpower.ratings import fit_ratings, read_ratings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(scope="module")
def ratings():
    return read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))


@pytest.fixture(scope="module")
def pilot_fit(ratings):
    return fit_ratings(ratings)


# ---------------------------------------------------------------- building blocks

@pytest.mark.parametrize("test", ["satterthwaite", "z", "lrt"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("effect", [0.07, -0.07])
def test_vectorised_power_matches_power_from_moments(test, alternative, effect):
    se = np.array([0.02, 0.05, 0.1])
    df = np.array([3.5, 20.0, np.inf])
    got = power_from_moments(effect, se, df, alpha=0.05, test=test, alternative=alternative)
    ref = [power_from_moments(effect, s, d, alpha=0.05, test=test, alternative=alternative)
           for s, d in zip(se, df, strict=True)]
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("design", [CrossedDesign(10, 100), CrossedDesign(6, 30, workers_per_item=3)])
@pytest.mark.parametrize("coding", ["sum", "half"])
def test_moments_match_analytic_power(design, coding):
    point = presets.high_variance(0.1).to_coding(coding)
    rows = np.array([variances_of(point), variances_of(point) * [1.2, 0.5, 2.0, 1.0, 0.3]])
    se, df = _moments(design, point, rows)
    for r, row in enumerate(rows):
        ap = analytic_power(design, params_at(point, row))
        assert se[r] == pytest.approx(ap.se, rel=1e-10)
        assert df[r] == pytest.approx(ap.df, rel=1e-8)


def test_pilot_fit_equals_the_balanced_ml_fit(ratings, pilot_fit):
    # the bootstrap refits with the balanced fast path; on a balanced pilot it is the same
    # estimator as fit_ratings + to_params (so the draws are the point estimate's distribution)
    d = ratings.data
    y = d.pivot_table(index=["worker", "item"], columns="system", values="rating").to_numpy()
    y = y.reshape(d["worker"].nunique(), d["item"].nunique(), 2)
    v = fit_balanced(stats_from_ratings(y), with_df=False).variances[0]
    # same optimum up to the native optimiser's tolerance (SDs to ~1e-3 relative)
    np.testing.assert_allclose(np.sqrt(v), np.sqrt(variances_of(pilot_fit.to_params())),
                               rtol=1e-3, atol=1e-4)


def test_bootstrap_residual_variance_is_centred_and_spread_as_theory_says():
    v = variances_of(presets.high_variance(0.1))
    w, i, n = 8, 40, 400
    draws = bootstrap_draws(v, w, i, np.random.SeedSequence(1).spawn(n))
    s2 = draws[:, 0]
    # residual stratum: 2(W-1)(I-1) df, ML with ~n df: mean ~ v0 (1 - small), sd ~ v0 sqrt(2/df)
    dfres = 2 * (w - 1) * (i - 1)
    sd_theory = v[0] * np.sqrt(2 / dfres)
    assert abs(s2.mean() - v[0]) < 4 * sd_theory / np.sqrt(n) + 0.02 * v[0]
    assert s2.std() == pytest.approx(sd_theory, rel=0.2)
    # expected information agrees with the spread of the residual variance
    assert np.sqrt(asymptotic_cov(v, w, i)[0, 0]) == pytest.approx(sd_theory, rel=0.1)


def test_bias_correction_moves_the_mean_and_never_shrinks():
    v_hat = np.array([0.02, 0.0, 0.01, 0.002, 0.02])
    rng = np.random.default_rng(3)
    draws = v_hat * rng.chisquare(4, size=(500, 5)) / 5  # mean 0.8 v_hat: biased low
    draws[:, 1] = rng.uniform(0, 1e-3, 500)              # boundary: mean above v_hat = 0
    c = bias_corrected(v_hat, draws)
    m = draws.mean(axis=0)
    np.testing.assert_allclose(c.mean(axis=0)[[0, 2, 3, 4]], (2 * v_hat - m)[[0, 2, 3, 4]])
    np.testing.assert_array_equal(c[:, 1], draws[:, 1])
    assert np.all(c >= draws)


# ---------------------------------------------------------------- assurance

def test_point_power_is_the_analytic_power_of_as_params(pilot_fit):
    d = CrossedDesign(10, 100)
    a = assurance(pilot_fit, d, effect=0.05, rng=1)
    ref = analytic_power(d, as_params(pilot_fit, effect=0.05)).power
    assert a.power == pytest.approx(ref, rel=1e-10)
    assert isinstance(a, AssuranceResult) and "assurance=" in repr(a)
    assert a.ci.low <= a.assurance <= a.ci.high and a.se > 0
    assert a.quantiles[0.05] <= a.quantiles[0.5] <= a.quantiles[0.95]
    assert all(a.sd_upper[k] >= a.sd_point[k] - 1e-12 for k in a.sd_point)
    assert a.safeguard_power <= a.power + 1e-12
    assert len(a.to_frame()) == 200 and "power" in a.to_frame()
    assert "safeguard power" in a.summary() and a.to_record()["n_boot"] == 200


def test_fit_and_params_with_pilot_size_agree(pilot_fit):
    d = CrossedDesign(10, 100)
    a = assurance(pilot_fit, d, effect=0.05, rng=7)
    b = assurance(pilot_fit.to_params(), d, pilot=(8, 40), effect=0.05, rng=7)
    assert a.assurance == pytest.approx(b.assurance, rel=1e-9)


def test_same_seed_same_result_other_seed_differs(pilot_fit):
    d = CrossedDesign(10, 100)
    a = assurance(pilot_fit, d, effect=0.05, rng=3)
    b = assurance(pilot_fit, d, effect=0.05, rng=3)
    c = assurance(pilot_fit, d, effect=0.05, rng=4)
    assert a.assurance == b.assurance and a.assurance != c.assurance
    assert a.seed == b.seed


@pytest.mark.parametrize("method", ["bootstrap", "asymptotic"])
def test_simulated_inner_power_agrees_with_analytic(pilot_fit, method):
    d = CrossedDesign(10, 60)
    an = assurance(pilot_fit, d, effect=0.07, n_boot=20, method=method, rng=5)
    sim = assurance(pilot_fit, d, effect=0.07, n_boot=20, n_sims=100, method=method, rng=5)
    # same draws (same seed); per-draw simulation SE <= 0.5/sqrt(100); plus 0.03 for the
    # analytic approximation (docs/power.md measures its agreement with simulation)
    se = 0.5 / np.sqrt(100 * 20)
    assert abs(sim.assurance - an.assurance) < 4 * se + 0.03
    assert sim.n_sims == 100


def test_errors(pilot_fit):
    d = CrossedDesign(10, 100)
    with pytest.raises(InputError, match="effect is required"):
        assurance(pilot_fit, d, effect=None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="target_power must be strictly between 0 and 1"):
        assurance(pilot_fit, d, effect=0.05, target_power=80)
    with pytest.raises(InputError, match=r"confidence_level must be in \[0.5, 1\)"):
        assurance(pilot_fit, d, effect=0.05, confidence_level=0.2)
    with pytest.raises(InputError, match="method"):
        assurance(pilot_fit, d, effect=0.05, method="bayes")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="n_boot"):
        assurance(pilot_fit, d, effect=0.05, n_boot=5)
    with pytest.raises(InputError, match=r"pilot=\(n_workers, n_items\) is required"):
        assurance(presets.high_variance(), d, effect=0.05)
    with pytest.raises(InputError, match="pilot must be a pair"):
        assurance(presets.high_variance(), d, effect=0.05, pilot=8)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="pilot= is only for parameters"):
        assurance(pilot_fit, d, effect=0.05, pilot=(8, 40))
    with pytest.raises(InputError, match="must be a RatingsFit"):
        assurance("pilot.csv", d, effect=0.05)  # type: ignore[arg-type]


def test_unbalanced_pilot_takes_the_general_path_only_with_the_bootstrap():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit4 = fit_ratings(read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5)))
        with pytest.raises(InputError, match="method='bootstrap'"):
            assurance(fit4, CrossedDesign(10, 100), effect=0.05, contrast="B",
                      method="asymptotic")
        with pytest.raises(InputError, match="name the comparison"):
            assurance(fit4, CrossedDesign(10, 100), effect=0.05)


# ---------------------------------------------------------------- plans

def test_plan_with_assurance(pilot_fit):
    res = plan_with_assurance(pilot_fit, effect=0.1, cost_per_worker=20, rng=1)
    ref = plan(as_params(pilot_fit, effect=0.1), effect=0.1, cost_per_worker=20)
    assert (res.point.n_workers, res.point.n_items) == (ref.n_workers, ref.n_items)
    assert res.safeguard is not None and res.safeguard.cost >= res.point.cost
    assert res.safeguard_assurance.safeguard_power >= 0.8 - 1e-9
    assert res.point_assurance.power >= 0.8
    assert list(res.to_frame()["plan"]) == ["point", "safeguard"]
    assert "safeguard" in res.summary() and "PilotPlanResult" in repr(res)


def test_plan_with_assurance_when_the_safeguard_is_out_of_reach(pilot_fit):
    # without max_workers the search extends to 1000 workers: out of reach needs few items
    res = plan_with_assurance(pilot_fit, effect=0.1, max_items=16, rng=1)
    assert res.safeguard is None and "no design in the searched range" in res.note
    assert "2-1000 workers and at most 16 items" in res.note


# ---------------------------------------------------------------- calibration (small)

def test_point_power_is_optimistic_and_safeguard_is_not_for_small_pilots():
    """Fast version of benchmarks/assurance_calibration.py (3 workers x 50 items pilots)."""
    truth = presets.high_variance(0.1)
    target = CrossedDesign(21, 33)  # plan(truth, effect=0.1): true power 0.80
    true_power = analytic_power(target, truth).power
    v = variances_of(truth)
    n = 100
    point_le, safe_le = [], []
    for s in np.random.SeedSequence(11).spawn(n):
        s1, s2 = s.spawn(2)
        st = draw_stats(3, 50, 0.5, 0.1, v, [np.random.Generator(np.random.PCG64(s1))])
        est = params_at(truth, fit_balanced(st, with_df=False).variances[0])
        a = assurance(est, target, pilot=(3, 50), effect=0.1, n_boot=100, rng=s2)
        point_le.append(a.power <= true_power)
        safe_le.append(a.safeguard_power <= true_power)
    se = 0.5 / np.sqrt(n)
    # point power overstates the true power in most pilots (an unbiased-in-median estimate: 50%)
    assert np.mean(point_le) < 0.5 - 3 * se
    # the safeguard (upper 80% SD bounds) understates it in most pilots
    assert np.mean(safe_le) > 0.5 + 3 * se


def test_plan_progress_reports_every_stage(capsys):
    from nlpower import fit_ratings, read_ratings
    from nlpower.pilot import plan_with_assurance

    fit = fit_ratings(read_ratings("fixtures/pilot_ratings.csv", scale=(1, 5)))
    quiet = plan_with_assurance(fit, effect=0.1, rng=1)
    capsys.readouterr()
    loud = plan_with_assurance(fit, effect=0.1, rng=1, progress=True)
    err = capsys.readouterr().err
    assert "searching designs at the estimates" in err and "at the upper bounds" in err
    # the range searched (worker counts 2..50) is the bar's total: it shows the time left
    assert any(" 0/49 [" in x for x in err.replace("\r", "\n").split("\n")
               if x.startswith("searching designs at the estimates"))
    assert f"assurance of {loud.point.n_workers} workers" in err
    assert loud.point.design == quiet.point.design          # the numbers do not change
    assert loud.point_assurance.assurance == quiet.point_assurance.assurance


def test_plan_progress_on_a_pilot_that_is_not_fully_crossed(capsys):
    import pandas as pd

    from nlpower import fit_ratings, read_ratings
    from nlpower.pilot import plan_with_assurance

    rows = pd.read_csv("fixtures/pilot_ratings.csv").drop(index=0)   # one rating missing
    fit = fit_ratings(read_ratings(rows, scale=(1, 5)))
    kw = dict(effect=0.1, n_boot=20, max_workers=12, cost_per_worker=20, rng=3)
    quiet = plan_with_assurance(fit, **kw)
    capsys.readouterr()
    loud = plan_with_assurance(fit, progress=True, **kw)
    err = capsys.readouterr().err
    assert "refitting the pilot (bootstrap)" in err and "/20 " in err
    assert f"assurance of {loud.point.n_workers} workers" in err
    assert np.array_equal(loud.point_assurance.power_draws, quiet.point_assurance.power_draws)
