"""The negative binomial GLMM: glmer(family="negative_binomial") against lme4's glmer.nb and
glmmTMB's nbinom2 (pinned by tests/reference/negbin_reference.R), the family's pieces, the
power pipeline and the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import nlpower
from conftest import REFERENCE
from nlpower.cli import main
from nlpower.errors import InputError, NlpowerWarning
from nlpower.glmm import glmer
from nlpower.lmm.family import NegativeBinomial, Poisson, get_family

DATA = REFERENCE / "data"
REF = json.loads((REFERENCE / "negbin_reference.json").read_text())["cases"]
CASES = {"grouseticks": "TICKS ~ YEAR + sHEIGHT + (1 | BROOD) + (1 | LOCATION)",
         "crossed": "errors ~ system + (1 | worker) + (1 | item)"}


def _data(name: str) -> pd.DataFrame:
    if name == "crossed":
        return pd.read_csv(DATA / "negbin_crossed.csv")
    gt = pd.read_csv(DATA / "grouseticks.csv", dtype={"BROOD": str, "LOCATION": str, "INDEX": str})
    gt["sHEIGHT"] = (gt.HEIGHT - gt.HEIGHT.mean()) / gt.HEIGHT.std()   # R's scale()
    return gt


# lme4's glmer.nb uses PIRLS's expected weights in its Laplace approximation; glmmTMB the
# observed information: each is compared with nlpower's fit of the same approximation
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("laplace", "package"), [("expected", "lme4"), ("observed", "glmmTMB")])
def test_agrees_with_lme4_and_glmmtmb(case, laplace, package):
    ref = REF[case][package]
    fit = glmer(CASES[case], _data(case), "negative_binomial", laplace=laplace)
    # log-likelihood at or above theirs (to 1e-6 relative), parameters within 1e-3
    assert fit.loglik >= ref["loglik"] - 1e-6 * abs(ref["loglik"])
    assert fit.n_params == ref["df"]
    assert fit.dispersion == pytest.approx(ref["nb_theta"], abs=1e-3)
    for name, value in ref["fixef"].items():
        assert fit.fixef[name] == pytest.approx(value, abs=1e-3), name
    sd = fit.varcorr().set_index("grp")["sdcor"]
    for grp, value in ref["sd"].items():
        assert sd[grp] == pytest.approx(value, abs=1e-3), grp
    if package == "lme4":                 # lme4's vcov: the Hessian at theta_nb held fixed
        for name, value in ref["se"].items():
            assert fit.se[name] == pytest.approx(value, rel=5e-3), name


def test_the_two_approximations_differ_and_each_optimum_is_its_own():
    """At glmmTMB's estimates lme4's objective is lower than at nlpower's expected-weight fit."""
    ref = REF["crossed"]
    fit = glmer(CASES["crossed"], _data("crossed"), "negative_binomial")
    assert fit.loglik > ref["glmmTMB"]["lme4_loglik_at_this"]
    assert fit.optinfo.get("laplace") is None
    assert "observed information" not in fit.summary() and "Dispersion (theta)" in fit.summary()


def test_family_log_density_and_variance_match_scipy():
    fam = NegativeBinomial(theta=1.7)
    y = np.array([0.0, 1.0, 4.0, 12.0])
    mu = np.array([0.5, 2.0, 3.0, 9.0])
    ld = stats.nbinom.logpmf(y, 1.7, 1.7 / (1.7 + mu))
    assert fam.m2loglik(y, mu, np.ones(4)) == pytest.approx(-2 * ld.sum(), rel=1e-12)
    assert fam.variance(mu) == pytest.approx(stats.nbinom.var(1.7, 1.7 / (1.7 + mu)))
    # the observed information averages to the expected weight mu^2 / Var
    w_obs = fam.observed_weights(stats.nbinom.mean(1.7, 1.7 / (1.7 + mu)), mu, np.log(mu), np.ones(4))
    assert w_obs == pytest.approx(mu * mu / fam.variance(mu))


def test_draws_have_the_family_mean_and_variance():
    fam = NegativeBinomial(theta=2.0)
    n, mu = 40_000, 3.0
    y = fam.draw(np.random.default_rng(5), np.full(n, mu), np.ones(n))
    var = mu + mu * mu / 2.0
    assert abs(y.mean() - mu) < 4 * math.sqrt(var / n)
    # SE of the sample variance: sqrt((m4 - var^2) / n), m4 of NB from scipy's moments
    m4 = stats.nbinom.stats(2.0, 2.0 / 5.0, moments="k") * var ** 2 + 3 * var ** 2
    assert abs(y.var() - var) < 4 * math.sqrt((m4 - var ** 2) / n)


def test_input_errors_say_what_to_do():
    with pytest.raises(InputError, match=r"theta .*dispersion.* > 0; got -1"):
        NegativeBinomial(theta=-1.0)
    with pytest.raises(InputError, match="theta is not set"):
        NegativeBinomial().variance(np.ones(2))
    with pytest.raises(InputError, match="no dispersion parameter"):
        Poisson().with_dispersion(2.0)
    assert get_family("negative_binomial") == NegativeBinomial()
    d = _data("crossed").assign(errors=lambda f: f.errors + 0.5)
    with pytest.raises(InputError, match="negative binomial response must be non-negative whole"):
        glmer(CASES["crossed"], d, "negative_binomial")
    with pytest.raises(InputError, match="laplace"):
        glmer(CASES["crossed"], _data("crossed"), "negative_binomial", laplace="exact")
    from nlpower.glmm.lme4 import Lme4GlmmModel
    from nlpower.lmm.frame import model_frame
    with pytest.raises(InputError, match="laplace='observed'.*engine='native'"):
        Lme4GlmmModel(model_frame(CASES["crossed"], _data("crossed")), NegativeBinomial(),
                      laplace="observed")


@pytest.mark.filterwarnings("ignore::nlpower.errors.SingularFitWarning")
def test_counts_without_overdispersion_are_said_to_be_poisson():
    """Underdispersed counts: theta runs to its bound, the fit is the Poisson GLMM's, with a warning."""
    d = _data("crossed")
    d["errors"] = np.random.default_rng(1).binomial(4, 0.5, len(d))
    formula = "errors ~ system + (1 | worker)"
    with pytest.warns(NlpowerWarning, match="no overdispersion.*family='poisson'"):
        fit = glmer(formula, d, "negative_binomial")
    assert fit.dispersion >= 1e6
    # at theta = 1e7 the NB log-likelihood is the Poisson one to O(n / theta)
    assert fit.loglik == pytest.approx(glmer(formula, d, "poisson").loglik, abs=1e-3)


def _small() -> pd.DataFrame:
    d = _data("crossed")
    keep = d.worker.isin(sorted(d.worker.unique())[:8]) & d.item.isin(sorted(d.item.unique())[:20])
    return d.loc[keep].reset_index(drop=True)


def test_power_pipeline_runs_on_a_negative_binomial_fit():
    fit = glmer(CASES["crossed"], _small(), "negative_binomial")
    truth = fit.with_params(fixef={"systemB": 0.5}, dispersion=3.0)
    assert truth.dispersion == 3.0 and truth.n_params == fit.n_params
    res = nlpower.power(truth, term="systemB", n_sims=6, rng=3)
    assert res.family == "negative_binomial" and res.test == "z"
    assert res.n_failed == 0 and 0.0 <= res.power <= 1.0
    lrt = nlpower.power(truth, compare="~ . - system", n_sims=3, rng=5)
    assert lrt.test == "lrt" and lrt.n_failed == 0
    # a refit warm-started at the truth reaches the optimum of a fit from scratch
    y = truth.simulate(1, rng=4)[0]
    warm, cold = truth.refit(y), fit.model.fit(y)
    assert warm.dispersion == pytest.approx(cold.dispersion, rel=1e-3)
    assert warm.loglik == pytest.approx(cold.loglik, abs=1e-6)


def test_simulated_counts_have_the_negative_binomial_variance():
    """Without random effects the draws are NB(mu_i, theta): Pearson residuals^2 average 1."""
    fit = glmer(CASES["crossed"], _small(), "negative_binomial")
    truth = fit.with_params(sd={"worker": 0.0, "item": 0.0}, dispersion=0.8)
    Y = truth.simulate(300, rng=4)
    mu = np.exp(fit.model.spec.X @ truth.fixef.to_numpy())
    r2 = ((Y - mu) ** 2 / (mu + mu * mu / 0.8)).ravel()
    assert abs(r2.mean() - 1.0) < 4 * r2.std() / math.sqrt(r2.size)
    assert abs(Y.mean(axis=0) - mu).max() < 5 * math.sqrt(float((mu + mu * mu / 0.8).max()) / 300)


@pytest.mark.slow
def test_type1_error_of_the_z_test_at_effect_zero():
    fit = glmer(CASES["crossed"], _small(), "negative_binomial")
    n = 100
    res = nlpower.power(fit.with_params(fixef={"systemB": 0.0}), term="systemB", n_sims=n, rng=11)
    assert res.n_failed == 0 and math.isnan(res.power) and res.effect == 0.0
    # Wald z of a GLMM with 8 workers and 20 items: alpha within Monte Carlo error (3.5 SE)
    assert abs(res.rejection_rate - 0.05) <= 3.5 * math.sqrt(0.05 * 0.95 / n)


def test_cli_fit_and_study(tmp_path, capsys):
    path = tmp_path / "counts.csv"
    _small().to_csv(path, index=False)
    assert main(["fit", str(path), "--family", "negative_binomial", "--rating", "errors"]) == 0
    assert "Family: negative_binomial  ( log )" in capsys.readouterr().out
    assert main(["study", str(path), "--formula", CASES["crossed"], "--family",
                 "negative_binomial", "--set", "systemB=0.4", "--dispersion", "2.5",
                 "--term", "systemB", "--n-sims", "3", "--seed", "1"]) == 0
    assert "Power for systemB (z test" in capsys.readouterr().out
    assert main(["study", str(path), "--formula", CASES["crossed"], "--family", "poisson",
                 "--dispersion", "2", "--term", "systemB", "--n-sims", "2"]) != 0
    assert "no dispersion parameter" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.requires_r
def test_lme4_engine_runs_glmer_nb():
    pytest.importorskip("rpy2")
    ref = REF["crossed"]["lme4"]
    fit = glmer(CASES["crossed"], _data("crossed"), "negative_binomial", engine="lme4")
    assert fit.engine == "lme4"
    # the same glmer.nb as the R script (its optimize() over theta: to ~1e-5)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-5)
    assert fit.dispersion == pytest.approx(ref["nb_theta"], rel=1e-4)
    assert fit.n_params == ref["df"]
    y = fit.simulate(1, rng=1)[0]
    assert y.shape == (1200,) and np.all(y == np.round(y))
