"""The fit protocol on every family: one PreparedModel, with_params, simulate, refit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower
from conftest import REFERENCE
from nlpower.errors import InputError
from nlpower.lmm import PreparedModel

DATA = REFERENCE / "data"


@pytest.fixture(scope="module")
def fits() -> dict[str, object]:
    sleep = pd.read_csv(DATA / "sleepstudy.csv")
    cbpp = pd.read_csv(DATA / "cbpp.csv")
    wine = pd.read_csv(DATA / "wine.csv")
    return {
        "gaussian": nlpower.lmer("Reaction ~ Days + (Days | Subject)", sleep, REML=False),
        "binomial": nlpower.glmer("prop ~ period + (1 | herd)", cbpp, "binomial", weights="size"),
        "poisson": nlpower.glmer("incidence ~ period + (1 | herd)", cbpp, "poisson"),
        "ordinal": nlpower.clmm("rating ~ temp + contact + (1 | judge)", wine),
    }


FAMILIES = ("gaussian", "binomial", "poisson", "ordinal")


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_fills_the_protocol(fits, family):
    fit = fits[family]
    model = fit.model
    assert isinstance(model, PreparedModel)
    y = fit.simulate(1, rng=1)[0]
    core = model.refit(y, REML=False, start=None)
    for attr in ("theta", "beta", "vcov_beta", "se", "deviance", "converged", "singular"):
        assert hasattr(core, attr), attr
    assert np.all(np.isfinite(core.beta)) and core.vcov_beta.shape == (core.beta.size,) * 2


@pytest.mark.parametrize("family", ("binomial", "poisson", "ordinal"))
def test_likelihood_families_refuse_REML_and_satterthwaite(fits, family):
    model = fits[family].model
    with pytest.raises(InputError, match="maximum likelihood"):
        model.refit(fits[family].simulate(1, rng=2)[0], REML=True)
    with pytest.raises(InputError, match="Gaussian models"):
        model.satterthwaite_df(None, np.ones(1))


@pytest.mark.parametrize("family", FAMILIES)
def test_refit_returns_a_new_fit_and_leaves_this_one(fits, family):
    fit = fits[family]
    before = fit.fixef.copy()
    y = fit.simulate(1, rng=3)[0]
    new = fit.refit(y)
    assert type(new) is type(fit)
    assert not np.allclose(new.fixef.to_numpy(), before.to_numpy())
    pd.testing.assert_series_equal(fit.fixef, before)


def test_clmm_refit_leaves_the_original_fitted_values(fits):
    """``ClmmFit.refit`` used to swap the response of the shared structure."""
    fit = fits["ordinal"]
    f0 = fit.fitted().copy()
    fit.refit(fit.simulate(1, rng=4)[0])
    fit.simulate(2, rng=5)
    np.testing.assert_array_equal(fit.fitted(), f0)


@pytest.mark.parametrize("family,coef,term", [("gaussian", "Days", "Subject"),
                                              ("binomial", "period", "herd"),
                                              ("poisson", "period", "herd"),
                                              ("ordinal", "tempwarm", "judge")])
def test_with_params_sets_fixef_and_sds(fits, family, coef, term):
    fit = fits[family]
    sd = {"(Intercept)": 0.7} if family == "gaussian" else 0.7
    new = fit.with_params(fixef={coef: -0.25}, sd={term: sd})
    assert float(new.fixef[coef]) == -0.25
    vc = new.varcorr()
    row = vc[(vc.grp == term) & (vc.var1 == "(Intercept)") & vc.var2.isna()]
    assert float(row.sdcor.iloc[0]) == pytest.approx(0.7, rel=1e-12)
    assert float(fit.fixef[coef]) != -0.25            # the original is unchanged


def test_with_params_keeps_correlation_and_random_sds_when_sigma_changes(fits):
    fit = fits["gaussian"]
    new = fit.with_params(sigma=10.0)
    pd.testing.assert_series_equal(new.varcorr().sdcor.iloc[:3], fit.varcorr().sdcor.iloc[:3],
                                   rtol=1e-10)
    assert new.sigma == 10.0


def test_simulated_variance_matches_the_set_parameters(fits):
    """Var of a subject's mean response (one random intercept) = sd^2 + sigma^2 / 10; MC check."""
    sleep = pd.read_csv(DATA / "sleepstudy.csv")
    fit = nlpower.lmer("Reaction ~ Days + (1 | Subject)", sleep, REML=False)
    new = fit.with_params(fixef={"(Intercept)": 100.0, "Days": 0.0}, sd={"Subject": 30.0},
                          sigma=20.0)
    y = new.simulate(400, rng=6)                       # 400 x 180
    codes = sleep.Subject.astype("category").cat.codes.to_numpy()
    means = np.stack([y[:, codes == k].mean(axis=1) for k in range(18)], axis=1)
    var = means.var(axis=1, ddof=1).mean()
    expect = 30.0 ** 2 + 20.0 ** 2 / 10
    # the mean of 400 sample variances (17 df each): SE ~ expect * sqrt(2/17) / sqrt(400)
    assert abs(var - expect) < 4 * expect * np.sqrt(2 / 17) / 20
    assert abs(y.mean() - 100.0) < 4 * np.sqrt(expect / 18 / 400)


@pytest.mark.parametrize("kwargs,match", [
    ({"fixef": {"nope": 1.0}}, "no coefficient 'nope'"),
    ({"sd": {"worker": 1.0}}, "no random-effects term 'worker'"),
    ({"sd": {"Subject": 1.0}}, "give \\{column: sd\\}"),
    ({"sd": {"Subject": {"Days": -1.0}}}, ">= 0"),
    ({"sigma": 0.0}, "> 0"),
])
def test_with_params_errors(fits, kwargs, match):
    with pytest.raises(InputError, match=match):
        fits["gaussian"].with_params(**kwargs)


def test_glmm_refuses_sigma(fits):
    with pytest.raises(InputError, match="no residual SD"):
        fits["poisson"].with_params(sigma=1.0)
