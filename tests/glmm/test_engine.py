"""The GLMM behind the engine protocol (family slot), refits and simulation."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.glmm import GlmmCore, GlmmModel, glmer
from nlpower.glmm.lme4 import Lme4GlmmModel
from nlpower.lmm import get_engine
from nlpower.lmm.family import Binomial, Poisson
from nlpower.lmm.frame import model_frame

from .glmm_cases import dataset


@pytest.fixture(scope="module")
def cbpp_fit():
    return glmer("prop ~ period + (1 | herd)", dataset("cbpp"), weights="size")


def test_family_slot_returns_glmm_model() -> None:
    d = dataset("glmm_crossed")
    spec = model_frame("y ~ x + (1 | worker) + (1 | item)", d)
    model = get_engine("native").prepare(spec, family=Binomial())
    assert isinstance(model, GlmmModel)
    assert model.family == Binomial()
    lme = get_engine("lme4").prepare(spec, data=d, family="binomial")
    assert isinstance(lme, Lme4GlmmModel)            # R is not started by prepare
    direct = glmer("y ~ x + (1 | worker) + (1 | item)", d)
    assert model.fit().loglik == pytest.approx(direct.loglik, abs=1e-8)
    core = model.refit(spec.y, start=direct)
    assert core.deviance == pytest.approx(direct.deviance, abs=1e-6)


def test_gaussian_family_keeps_lmm_engine() -> None:
    from nlpower.lmm.native import NativeModel
    d = dataset("cbpp")
    spec = model_frame("prop ~ period + (1 | herd)", d)
    assert isinstance(get_engine("native").prepare(spec, family="gaussian"), NativeModel)


def test_refit_same_response_reproduces_fit(cbpp_fit) -> None:
    core = cbpp_fit.model.refit(cbpp_fit.model.spec.y, start=cbpp_fit)
    assert isinstance(core, GlmmCore)
    assert core.deviance == pytest.approx(cbpp_fit.deviance, abs=1e-6)
    np.testing.assert_allclose(core.beta, cbpp_fit.fixef.to_numpy(), atol=1e-3)
    assert core.se.shape == (4,) and np.all(core.se > 0)


def test_refit_simulated_response_and_fit_refit(cbpp_fit) -> None:
    y = cbpp_fit.simulate(1, rng=3)[0]
    core = cbpp_fit.model.refit(y, start=cbpp_fit)
    cold = cbpp_fit.model.refit(y)                      # both stages, lme4's start
    assert core.deviance == pytest.approx(cold.deviance, abs=1e-5)
    new = cbpp_fit.refit(y)
    assert new.deviance == pytest.approx(cold.deviance, abs=1e-5)
    assert new.nobs == cbpp_fit.nobs


def test_simulate_reproducible_and_mean(cbpp_fit) -> None:
    a = cbpp_fit.simulate(3, rng=7)
    b = cbpp_fit.simulate(3, rng=7)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (3, cbpp_fit.nobs)
    # theta = 0: y * size ~ Binomial(size, linkinv(X beta)); the mean within Monte Carlo error
    m = cbpp_fit.model
    beta = cbpp_fit.fixef.to_numpy()
    sims = m.simulate(400, rng=11, params={"theta": [0.0], "beta": beta})
    p = Binomial().link.linkinv(m.spec.X @ beta)
    k = sims * m.wt
    tot_mean = k.sum(axis=1).mean()
    expected = float(np.sum(m.wt * p))
    sd = float(np.sqrt(np.sum(m.wt * p * (1 - p)) / 400))
    assert abs(tot_mean - expected) < 4 * sd


def test_predict_link_and_response(cbpp_fit) -> None:
    eta = cbpp_fit.predict(type="link")
    b = cbpp_fit.ranef()["herd"]["(Intercept)"]
    herd = dataset("cbpp")["herd"].to_numpy()
    manual = cbpp_fit.model.spec.X @ cbpp_fit.fixef.to_numpy() + b.loc[herd].to_numpy()
    np.testing.assert_allclose(eta, manual, atol=1e-10)
    np.testing.assert_allclose(cbpp_fit.predict(type="response"), 1 / (1 + np.exp(-eta)))
    with pytest.raises(ValueError, match="type"):
        cbpp_fit.predict(type="probability")


def test_summary_and_frames(cbpp_fit) -> None:
    s = cbpp_fit.summary()
    assert "Laplace" in s and "z value" in s and "herd" in s
    tab = cbpp_fit.to_frame()
    assert list(tab["effect"]) == ["fixed"] * 4 + ["ran_pars"]
    assert tab.loc[4, "term"] == "sd__(Intercept)"
    vc = cbpp_fit.varcorr()
    assert "Residual" not in set(vc["grp"])
    ct = cbpp_fit.coef_table()
    np.testing.assert_allclose(ct["z"], cbpp_fit.fixef / cbpp_fit.se)
    assert cbpp_fit.bic > cbpp_fit.aic
    assert "GlmmFit(binomial(logit)" in repr(cbpp_fit)


def test_poisson_offset_shifts_intercept() -> None:
    d = dataset("cbpp")
    a = glmer("incidence ~ period + (1 | herd)", d, "poisson", offset="log_size")
    b = glmer("incidence ~ period + (1 | herd)", d, "poisson",
              offset=d["log_size"].to_numpy() + 1.0)
    assert b.fixef["(Intercept)"] == pytest.approx(a.fixef["(Intercept)"] - 1.0, abs=1e-3)
    assert b.loglik == pytest.approx(a.loglik, abs=1e-6)
    assert isinstance(GlmmModel(a.model.spec, Poisson()).family, Poisson)


def test_singular_fit_flagged() -> None:
    """Every group has the same outcomes: the between-group SD is estimated as 0."""
    import pandas as pd

    from nlpower.errors import SingularFitWarning
    x = np.tile(np.linspace(-1, 1, 8), 30)
    y = np.tile([0, 0, 1, 0, 1, 1, 0, 1], 30)
    d = pd.DataFrame({"g": np.repeat([f"g{i}" for i in range(30)], 8), "x": x, "y": y})
    with pytest.warns(SingularFitWarning, match="singular"):
        fit = glmer("y ~ x + (1 | g)", d)
    assert fit.singular and fit.theta[0] < 1e-4
    assert "boundary (singular)" in fit.summary()
