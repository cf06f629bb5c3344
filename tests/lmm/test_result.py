"""LmmFit / FitCore: lme4 conventions, tables, text, errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lmm_specs import crossed_spec
from nlpower.errors import InputError
from nlpower.lmm import get_engine
from nlpower.lmm.native import NativeModel
from nlpower.lmm.result import LmmFit


@pytest.fixture(scope="module")
def fits() -> dict[str, LmmFit]:
    model = get_engine("native").prepare(crossed_spec(corr=True))
    return {"ML": model.fit(REML=False), "REML": model.fit(REML=True)}


def test_likelihood_conventions(fits):
    ml, reml = fits["ML"], fits["REML"]
    k = ml.fixef.size + ml.theta.size + 1
    assert ml.n_params == k
    assert ml.loglik == pytest.approx(-ml.deviance / 2)
    assert ml.aic == pytest.approx(ml.deviance + 2 * k)
    assert ml.bic == pytest.approx(ml.deviance + math.log(ml.nobs) * k)
    assert ml.reml_criterion is None
    # lme4: for a REML fit deviance() is the REML criterion, logLik the REML log-likelihood
    assert reml.reml_criterion == pytest.approx(reml.deviance)
    assert reml.loglik == pytest.approx(-reml.reml_criterion / 2)


def test_varcorr_layout_matches_r(fits):
    vc = fits["ML"].varcorr()
    assert list(vc.columns) == ["grp", "var1", "var2", "vcov", "sdcor"]
    # correlated item term first (15 levels), then worker.x, worker.(Intercept)
    assert list(vc["grp"]) == ["item", "item", "item", "worker", "worker.1", "Residual"]
    assert list(vc["var1"][:3]) == ["(Intercept)", "x", "(Intercept)"]
    assert vc["var2"][2] == "x" and pd.isna(vc["var2"][0])
    cov_row = vc.iloc[2]
    sd0, sd1 = vc["sdcor"][0], vc["sdcor"][1]
    assert cov_row["sdcor"] == pytest.approx(cov_row["vcov"] / (sd0 * sd1))
    assert -1 <= cov_row["sdcor"] <= 1
    np.testing.assert_allclose(vc["sdcor"][:2] ** 2, vc["vcov"][:2])
    assert vc["vcov"].iloc[-1] == pytest.approx(fits["ML"].sigma ** 2)


def test_ranef_frames(fits):
    re = fits["ML"].ranef()
    assert list(re) == ["item", "worker"]
    assert list(re["item"].columns) == ["(Intercept)", "x"]
    assert re["item"].shape == (15, 2) and re["worker"].shape == (6, 2)
    assert fits["ML"].ngrps == {"item": 15, "worker": 6}
    re["item"].iloc[0, 0] = 99.0            # a copy: the fit is not changed
    assert fits["ML"].ranef()["item"].iloc[0, 0] != 99.0


def test_coef_table(fits):
    fit = fits["ML"]
    normal = fit.coef_table("normal")
    assert list(normal.columns) == ["estimate", "std_error", "df", "t", "p"]
    assert np.isinf(normal["df"]).all()
    t = normal.loc["x", "t"]
    assert normal.loc["x", "p"] == pytest.approx(math.erfc(abs(t) / math.sqrt(2)))
    satt = fit.coef_table()
    assert (satt["df"] > 1).all() and np.isfinite(satt["df"]).all()
    assert (satt["p"] >= normal["p"]).all()        # t tails are heavier than normal tails
    np.testing.assert_allclose(satt["t"], fit.tvalues)
    np.testing.assert_allclose(satt["std_error"], np.sqrt(np.diag(fit.vcov)))


def test_to_frame_and_repr_and_summary(fits):
    fit = fits["REML"]
    tidy = fit.to_frame()
    assert list(tidy.columns) == ["effect", "group", "term", "estimate", "std_error", "statistic",
                                  "p_value"]
    assert list(tidy["term"][:2]) == ["(Intercept)", "x"]
    assert "cor__(Intercept).x" in set(tidy["term"])
    assert tidy["term"].iloc[-1] == "sd__Observation"
    assert len(tidy) == 2 + len(fit.varcorr())
    r = repr(fit)
    assert r.startswith("LmmFit(REML, native:") and len(r) < 200
    text = fit.summary()
    for piece in ("REML criterion at convergence", "Scaled residuals", "Random effects:",
                  "Groups", "Std.Dev.", "Corr", "Residual", "Number of obs: 180",
                  "Fixed effects:", "Pr(>|t|)", fit.formula):
        assert piece in text
    assert "AIC" in fits["ML"].summary() and "Pr(>|z|)" in fits["ML"].summary("normal")


def test_fitcore_repr_and_se():
    model = NativeModel(crossed_spec())
    core = model.refit_core(model.spec.y)
    assert repr(core).startswith("FitCore(deviance=")
    np.testing.assert_allclose(core.se, np.sqrt(np.diag(core.vcov_beta)))
    np.testing.assert_allclose(core.tvalues, core.beta / core.se)


def test_errors(fits):
    fit = fits["ML"]
    with pytest.raises(InputError,
                       match="ddf must be one of 'satterthwaite', 'kenward-roger', 'normal'"):
        fit.coef_table("residual")
    with pytest.raises(InputError, match="kenward-roger' is defined at a REML fit"):
        fit.coef_table("kenward-roger")
    with pytest.raises(InputError, match=r"one entry per fixed effect \(2: \(Intercept\), x\)"):
        fit.contrast_df([1, 0, 0])
    from dataclasses import replace
    no_df = replace(fit, df_fn=None, engine="lme4", _cache={})
    with pytest.raises(InputError, match="Satterthwaite df are not available for engine='lme4'"):
        no_df.coef_table("satterthwaite")
    assert "Pr(>|z|)" in no_df.summary()


def test_coef_table_kenward_roger_is_pbkrtests_at_the_reml_fit(fits):
    from nlpower.lmm.ddf import term_covariances, term_slots
    from nlpower.lmm.kenward_roger import kr_state

    fit = fits["REML"]
    spec = crossed_spec(corr=True)
    tab = fit.coef_table("kenward-roger")
    covs = term_covariances(term_slots(spec), fit.theta, fit.sigma)
    st = kr_state(spec, fit.fixef.to_numpy(), covs, fit.sigma)
    for i in range(fit.fixef.size):
        _, se, df, p = st.t_test(np.eye(fit.fixef.size)[i])
        assert tab["std_error"].iloc[i] == pytest.approx(se, rel=1e-12)
        assert tab["df"].iloc[i] == pytest.approx(df, rel=1e-12)
        assert tab["p"].iloc[i] == pytest.approx(p, rel=1e-10)
    assert "df" in fit.summary(ddf="kenward-roger")


def test_optsum_is_the_typed_optimiser_summary(fits):
    opt = fits["ML"].optsum
    assert opt.optimizer == "nlopt LN_BOBYQA" and opt.n_evals > 0
    assert opt.converged == fits["ML"].converged and opt.optimizer_converged
    assert isinstance(opt.check_messages, tuple)
