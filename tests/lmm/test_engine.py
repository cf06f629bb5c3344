"""The engine protocol (``nlpower.lmm.engine``): registry, native and lme4 prepared models.

The ``requires_r`` tests check that lme4's ``PreparedModel.refit`` (the power
replicate's path on ``engine="lme4"``) finds the same optimum as the native
engine on a small crossed design: both maximise the same (restricted)
likelihood, so deviance, beta and theta agree to optimiser tolerance
(``xtol_abs = 1e-8`` on a well-identified model: 1e-4 relative is generous),
and Satterthwaite df evaluated at two nearly equal optima agree to ~1e-3.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, LMMParams, simulate
from nlpower.errors import EngineUnavailableError, InputError
from nlpower.lmm import (
    Engine,
    LmmFit,
    PreparedModel,
    get_engine,
    lmer,
    model_frame,
    single_threaded,
    theta_layout,
)
from nlpower.lmm import lme4 as lme4_engine
from nlpower.lmm.native import NativeModel

FORMULA = "rating ~ x + (1 + x || worker) + (1 + x || item)"
# well-identified variance components: the optimum is sharp in every direction
PARAMS = LMMParams(effect=0.1, sd_worker=0.2, sd_worker_slope=0.1, sd_item=0.2,
                   sd_item_slope=0.1, sigma=0.2)


@pytest.fixture(scope="module")
def sims():
    return simulate(CrossedDesign(10, 24), PARAMS, n_sims=3, rng=7)


@pytest.fixture(scope="module")
def spec(sims):
    return model_frame(FORMULA, sims.frame(0))


def require_rpy2() -> None:
    ok, reason = lme4_engine.available()
    if ok:
        return
    if os.environ.get("NLPOWER_REQUIRE_R") == "1":
        pytest.fail(f"NLPOWER_REQUIRE_R=1 but engine='lme4' is unavailable: {reason}")
    pytest.skip(f"engine='lme4' unavailable: {reason}")


# ---------------------------------------------------------------------------
# registry


def test_registry_names_and_protocol():
    for name in ("native", "lme4"):
        eng = get_engine(name)
        assert eng.name == name and isinstance(eng, Engine)
    assert get_engine("native") is get_engine("native")


def test_unknown_engine_names_the_argument_and_the_choices():
    with pytest.raises(InputError, match=r"engine must be one of 'native', 'lme4'; got 'lme5'\. "
                                         r"Did you mean 'lme4'\?"):
        get_engine("lme5")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="engine must be one of"):
        lmer("y ~ 1 + (1 | g)", pd.DataFrame({"y": [1.0, 2.0], "g": ["a", "b"]}),
             engine="R")  # type: ignore[arg-type]


def test_public_helpers_for_the_power_layer(spec):
    lay = theta_layout(spec.re_terms)
    assert lay.names == NativeModel(spec).theta_names
    with single_threaded():
        assert np.ones(3) @ np.ones(3) == 3.0


# ---------------------------------------------------------------------------
# native


def test_native_prepared_model_refit_equals_refit_core(spec, sims):
    model = get_engine("native").prepare(spec)
    assert isinstance(model, PreparedModel) and model.engine == "native"
    y = sims.y[1]
    for REML in (False, True):
        a = model.refit(y, REML=REML)
        b = NativeModel(spec).refit_core(y, REML=REML)
        assert a.deviance == b.deviance and np.array_equal(a.beta, b.beta)
        np.testing.assert_array_equal(a.theta, b.theta)
    warm = model.refit(y, start=a.theta)
    fresh = NativeModel(spec)
    cold = fresh.refit_core(y, start=a.theta)
    assert warm.n_evals == cold.n_evals and warm.deviance == cold.deviance
    assert model.satterthwaite_df(warm, [0.0, 1.0]) == fresh.satterthwaite_df(cold, [0.0, 1.0])


def test_native_refit_reports_bad_responses_with_the_full_message(spec):
    model = get_engine("native").prepare(spec)
    with pytest.raises(InputError, match="y is constant"):
        model.refit(np.full(spec.n, 0.5))
    y = np.array(spec.y, dtype=float)
    y[3] = np.nan
    with pytest.raises(InputError, match=r"y contains 1 missing or infinite value\(s\)"):
        model.refit(y)
    with pytest.raises(InputError, match=f"y must be a 1-D array of length {spec.n}"):
        model.refit(spec.y[:-1])


def test_lmer_is_the_engine_fit_plus_warnings(spec, sims):
    fit = lmer(FORMULA, sims.frame(0), REML=False)
    again = get_engine("native").prepare(spec).fit(REML=False)
    assert isinstance(fit, LmmFit) and fit.deviance == again.deviance
    pd.testing.assert_series_equal(fit.fixef, again.fixef)


# ---------------------------------------------------------------------------
# lme4 without R


def test_lme4_prepare_does_not_start_r(spec, monkeypatch):
    monkeypatch.setattr(lme4_engine, "_R", {})
    monkeypatch.setitem(sys.modules, "rpy2", None)      # importing rpy2 would fail
    model = get_engine("lme4").prepare(spec)
    assert isinstance(model, PreparedModel) and model.engine == "lme4"
    with pytest.raises(EngineUnavailableError, match="rpy2 is not installed"):
        model.refit(spec.y)


def test_lme4_prepared_model_errors(spec, monkeypatch):
    monkeypatch.setattr(lme4_engine, "_R", {})
    monkeypatch.setitem(sys.modules, "rpy2", None)
    model = get_engine("lme4").prepare(spec)
    with pytest.raises(InputError, match=r"start must be 4 finite theta values in lme4's order"):
        model.refit(spec.y, start=[1.0])
    with pytest.raises(InputError, match=f"y must be a 1-D array of {spec.n} finite values"):
        model.refit(spec.y[:-1])
    core = get_engine("native").prepare(spec).refit(spec.y)
    with pytest.raises(InputError, match="needs the FitCore returned by this model's latest refit"):
        model.satterthwaite_df(core, [0.0, 1.0])
    with pytest.raises(InputError, match="data must be the pandas DataFrame"):
        get_engine("lme4").prepare(spec, data=[1, 2])


# ---------------------------------------------------------------------------
# lme4 with R


@pytest.mark.requires_r
@pytest.mark.parametrize("REML", [False, True])
def test_lme4_refit_matches_native_refit(spec, sims, REML):
    require_rpy2()
    native = get_engine("native").prepare(spec)
    lme4 = get_engine("lme4").prepare(spec)
    for k in range(sims.n_sims):     # the first call fits with lmer, the others refit
        a = native.refit(sims.y[k], REML=REML)
        b = lme4.refit(sims.y[k], REML=REML)
        assert b.REML == REML and b.converged and not b.singular
        assert b.deviance == pytest.approx(a.deviance, rel=1e-4)
        np.testing.assert_allclose(b.beta, a.beta, rtol=1e-4)
        np.testing.assert_allclose(b.theta, a.theta, rtol=1e-4)
        np.testing.assert_allclose(b.vcov_beta, a.vcov_beta, rtol=1e-3)
        assert lme4.satterthwaite_df(b, [0.0, 1.0]) == pytest.approx(
            native.satterthwaite_df(a, [0.0, 1.0]), rel=1e-3)
    # a warm start changes nothing but the path
    c = lme4.refit(sims.y[0], REML=REML, start=a.theta)
    assert c.deviance == pytest.approx(native.refit(sims.y[0], REML=REML).deviance, rel=1e-4)


@pytest.mark.requires_r
def test_lme4_fit_from_matrices_equals_fit_from_the_data(spec, sims):
    require_rpy2()
    from_data = get_engine("lme4").prepare(spec, data=sims.frame(0)).fit(REML=True)
    from_matrices = get_engine("lme4").prepare(spec).fit(REML=True)
    native = get_engine("native").prepare(spec).fit(REML=True)
    assert from_matrices.engine == "lme4"
    assert from_matrices.deviance == pytest.approx(from_data.deviance, abs=1e-6)
    pd.testing.assert_series_equal(from_matrices.fixef, from_data.fixef, rtol=1e-6)
    assert list(from_matrices.theta_names) == list(from_data.theta_names)
    pd.testing.assert_frame_equal(from_matrices.varcorr(), from_data.varcorr(), rtol=1e-5)
    assert from_matrices.ngrps == from_data.ngrps == native.ngrps
    for g, tab in native.ranef().items():
        other = from_matrices.ranef()[g]
        assert list(other.index) == list(tab.index) and list(other.columns) == list(tab.columns)
        np.testing.assert_allclose(other.to_numpy(), tab.to_numpy(), atol=1e-4)


# ----------------------------------------------------------------- the family slot
def test_prepare_takes_data_and_family_on_every_engine(spec):
    from nlpower.lmm.family import Gaussian

    for name in ("native", "lme4"):
        model = get_engine(name).prepare(spec, data=None, family="gaussian")
        assert isinstance(model, PreparedModel) and model.family == Gaussian()


def test_a_family_without_a_fitter_fails_with_what_the_engine_fits(spec):
    from nlpower.errors import InputError

    # R's ordinal package is an engine for the ordinal family only
    with pytest.raises(InputError, match="engine='ordinal' has no fitter for the gaussian family "
                                         r"\(it fits: ordinal\)"):
        get_engine("ordinal").prepare(spec)


def test_register_fitter_is_one_registration(monkeypatch, spec):
    import nlpower.lmm.engine as eng
    from nlpower.errors import InputError
    from nlpower.lmm import register_fitter

    monkeypatch.setattr(eng, "_FITTERS", dict(eng._FITTERS))
    register_fitter("native", "poisson", "nlpower.lmm.engine:native_gaussian")
    model = get_engine("native").prepare(spec, family="poisson")
    assert model.engine == "native"
    with pytest.raises(InputError, match="package.module:callable"):
        register_fitter("native", "poisson", "no_colon")


def test_lme4_checkconv_maps_to_lmercontrol():
    from nlpower.lmm.checkconv import lmer_control_checks

    assert lmer_control_checks({}, None) == {}
    got = lmer_control_checks({"check.conv.hess": "ignore"}, {"grad": "error", "singular": "ignore"})
    assert got["check.conv.grad"] == {"action": "warning", "tol": 2e-3}
    assert got["check.conv.singular"] == {"action": "ignore", "tol": 1e-4}
    assert got["check.conv.hess"] == "ignore"          # the user's own setting wins


def test_gaussian_prepared_models_simulate_at_given_parameters(spec):
    native = get_engine("native").prepare(spec)
    core = native.refit(spec.y)
    a = native.simulate(4, rng=7, params=core)
    b = get_engine("lme4").prepare(spec).simulate(4, rng=7, params=core)
    assert a.shape == (4, spec.n)
    np.testing.assert_array_equal(a, b)              # same structure, same stream: same draws
    big = native.simulate(400, rng=1, params=core)
    np.testing.assert_allclose(big.mean(axis=0).mean(), (spec.X @ core.beta).mean(), atol=0.05)
