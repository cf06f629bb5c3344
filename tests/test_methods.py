"""Methods paragraphs of power, plan and assurance results (nlpower.methods)."""

from __future__ import annotations

import warnings

import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.errors import InputError


@pytest.fixture(scope="module")
def result():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nlpower.power(CrossedDesign(8, 60), presets.high_variance(0.1), n_sims=3000,
                             rng=1, precision=0.02, null=True)


def test_power_paragraph_names_model_design_test_replicates_and_error(result):
    text = result.methods(source="Card et al. 2020, Table 16, high variance")
    p = presets.high_variance()
    for piece in (f"{p.sd_worker_slope:g} (worker slope)", f"{p.sigma:g} (residual)",
                  "(Card et al. 2020, Table 16, high variance)", "8 workers and 60 items",
                  f"{CrossedDesign(8, 60).n_ratings} ratings", "Satterthwaite",
                  "two-sided at alpha = 0.05", f"Each of {result.n_sims} simulated data sets",
                  f"power was {result.power:.3f}", f"Monte Carlo SE {result.se:.3f}",
                  f"{result.ci.low:.3f}-{result.ci.high:.3f}",
                  f"half-width at most 0.02; it stopped after {result.n_sims} of at most 3000",
                  f"rejected at rate {result.type1:.3f}"):
        assert piece in text, piece
    latex = result.methods(format="latex")
    assert r"$\alpha$ = 0.05" in latex and r"95\%" in latex and "~" not in latex


def test_analytic_and_outcome_paragraphs():
    a = nlpower.power(CrossedDesign(8, 60), presets.high_variance(0.1), method="analytic")
    assert "no Monte Carlo error" in a.methods() and f"power {a.power:.3f}" in a.methods()
    lk = nlpower.power(CrossedDesign(5, 30), presets.high_variance(0.2), outcome="likert",
                       levels=5, n_sims=50, rng=1)
    assert "5-point scale" in lk.methods() and "latent probit threshold model" in lk.methods()


def test_plan_paragraph():
    pl = nlpower.plan(presets.high_variance(), effect=0.1, max_workers=30, rng=1, n_sims=100)
    text = pl.methods(source="Card et al. 2020")
    assert f"{pl.n_workers} workers and {pl.n_items} items" in text
    assert f"power {pl.power:.3f}" in text and f"gave power {pl.simulated.power:.3f}" in text
    assert "reached 0.8 for an effect of 0.1" in text


def test_assurance_paragraph():
    from nlpower import fit_ratings, read_ratings
    from nlpower.pilot import assurance
    fit = fit_ratings(read_ratings("fixtures/pilot_ratings.csv", scale=(1, 5)))
    res = assurance(fit, CrossedDesign(10, 100), effect=0.05, rng=1, n_boot=40)
    text = res.methods()
    assert f"{res.assurance:.3f} (Monte Carlo SE {res.se:.3f})" in text
    assert f"{res.n_boot} draws" in text and f"({res.safeguard_power:.3f}" not in text
    assert f"power was {res.safeguard_power:.3f} (safeguard power)" in text
    assert f"power at the pilot's estimates was {res.power:.3f}" in text


def test_bad_format_is_refused(result):
    with pytest.raises(InputError, match="format"):
        result.methods(format="html")


def test_model_power_paragraph_names_formula_parameters_test_and_error():
    import pandas as pd
    d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    m = nlpower.lmer("Reaction ~ Days + (Days | Subject)", d, REML=False)
    truth = m.with_params(fixef={"Days": 2.5})
    res = nlpower.power(truth, term="Days", n_sims=400, rng=2, precision=0.2)
    text = res.methods(source="a pilot of 18 subjects")
    vc = m.varcorr()
    for piece in ("linear mixed model Reaction ~ Days + (Days | Subject)", "180 observations",
                  "with_params (a pilot of 18 subjects)", "Days 2.5",
                  f"Subject Days SD {vc['sdcor'][1]:.4g}", f"residual SD {m.sigma:.4g}",
                  f"Each of {res.n_sims} simulated data sets", "Satterthwaite",
                  "two-sided at alpha = 0.05", f"power was {res.power:.3f}",
                  f"Monte Carlo SE {res.se:.3f}", f"{res.ci.low:.3f}-{res.ci.high:.3f}",
                  "batches of 200", "half-width at most 0.2"):
        assert piece in text, piece
    assert res.n_sims == 200 and "it stopped after 200 of at most 400" in text
    fitted = nlpower.power(m, term="Days", n_sims=20, rng=2, test="z").methods()
    assert "the estimates of the fitted model" in fitted and "a Wald z test" in fitted
    latex = res.methods(format="latex")
    assert r"\textasciitilde{}" in latex and r"with\_params" in latex and "$\\alpha$" in latex


def test_simulated_power_paragraph():
    import numpy as np
    from scipy import stats

    from nlpower.simpower import simulate_power

    def sim(rng, n):
        return rng.normal(0.4, 1.0, n)

    def test(y):
        return float(np.mean(y)), float(stats.ttest_1samp(y, 0.0).pvalue)

    res = simulate_power(sim, test, effect=0.4, params={"n": 25}, n_sims=200, rng=3)
    text = res.methods(model="normal ratings (mean 0.4, SD 1)", test="a one-sample t test")
    for piece in ("each of 200 data sets", "normal ratings (mean 0.4, SD 1)", "n = 25",
                  "a one-sample t test at alpha = 0.05", f"power was {res.power:.3f}",
                  f"Monte Carlo SE {res.se:.3f}", f"{res.ci.low:.3f}-{res.ci.high:.3f}"):
        assert piece in text, piece
    assert "adaptive" not in text
    assert "user-supplied test (name it here)" in res.methods()
    null = simulate_power(lambda rng, n: rng.normal(0.0, 1.0, n), test, effect=0.0,
                          params={"n": 25}, n_sims=100, rng=3)
    assert f"rejection rate (Type I error) was {null.rejection_rate:.3f}" in null.methods()
