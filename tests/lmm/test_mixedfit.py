"""One fit for every family and engine: MixedFit, the prepared-model protocol, the
convergence policy, and ranef's conditional variances against lme4 and ordinal."""

from __future__ import annotations

import dataclasses
import inspect
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import nlpower
from conftest import REFERENCE
from nlpower.errors import ConvergenceWarning
from nlpower.lmm import MixedFit, OptSummary, PreparedModel, report_convergence
from nlpower.lmm.checkconv import fit_converged
from nlpower.study import model_design

DATA = REFERENCE / "data"

#: every family x engine: (family, engine, needs R)
COMBOS = [("gaussian", "native"), ("gaussian", "lme4"), ("binomial", "native"),
          ("binomial", "lme4"), ("poisson", "native"), ("poisson", "lme4"),
          ("ordinal", "native"), ("ordinal", "ordinal")]


def _data(family: str) -> pd.DataFrame:
    if family == "gaussian":
        return pd.read_csv(DATA / "sleepstudy.csv")
    if family == "ordinal":
        return pd.read_csv(DATA / "wine.csv", dtype={"judge": str})
    return pd.read_csv(DATA / "cbpp.csv", dtype={"herd": str, "period": str})


def _fit(family: str, engine: str, data: pd.DataFrame) -> MixedFit:
    if family == "gaussian":
        return nlpower.lmer("Reaction ~ Days + (Days | Subject)", data, REML=False, engine=engine)
    if family == "binomial":
        return nlpower.glmer("prop ~ period + (1 | herd)", data, "binomial", weights="size",
                             engine=engine)
    if family == "poisson":
        return nlpower.glmer("incidence ~ period + (1 | herd)", data, "poisson", engine=engine)
    return nlpower.clmm("rating ~ temp + contact + (1 | judge)", data, engine=engine)


_CACHE: dict[tuple[str, str], tuple[MixedFit, pd.DataFrame]] = {}


def _combo(family: str, engine: str) -> tuple[MixedFit, pd.DataFrame]:
    if engine != "native":
        pytest.importorskip("rpy2")
    key = (family, engine)
    if key not in _CACHE:
        data = _data(family)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _CACHE[key] = (_fit(family, engine, data), data)
    return _CACHE[key]


def _params(combo: tuple[str, str]) -> object:
    marks = [pytest.mark.requires_r] if combo[1] != "native" else []
    return pytest.param(*combo, marks=marks, id="-".join(combo))


ALL = [_params(c) for c in COMBOS]


@pytest.mark.parametrize("family,engine", ALL)
def test_every_fit_is_a_frozen_mixedfit_with_the_shared_api(family, engine):
    fit, data = _combo(family, engine)
    assert isinstance(fit, MixedFit) and fit.engine == engine
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.loglik = 0.0  # type: ignore[misc]
    assert isinstance(fit.fixef, pd.Series) and isinstance(fit.vcov, pd.DataFrame)
    assert isinstance(fit.optsum, OptSummary) and fit.optsum.converged == fit.converged
    assert isinstance(fit.converged, bool) and isinstance(fit.singular, bool)
    assert fit.deviance == pytest.approx(-2.0 * fit.loglik)
    assert fit.aic == pytest.approx(-2.0 * fit.loglik + 2.0 * fit.n_params)
    assert fit.bic == pytest.approx(-2.0 * fit.loglik + np.log(fit.nobs) * fit.n_params)
    np.testing.assert_allclose(fit.se, np.sqrt(np.diag(fit.vcov))[fit._fixef_offset():][
        :fit.fixef.size])
    group = {"gaussian": "Subject", "ordinal": "judge"}.get(family, "herd")
    assert list(fit.ranef()) == [group]
    cv = fit.ranef(condvar=True)
    assert list(cv.columns) == ["grpvar", "term", "grp", "condval", "condsd"]
    assert np.all(cv.condsd > 0)
    assert set(fit.varcorr().columns) == {"grp", "var1", "var2", "vcov", "sdcor"}
    tidy = fit.to_frame()
    assert list(tidy.columns) == ["effect", "group", "term", "estimate", "std_error", "statistic",
                                  "p_value"]
    assert isinstance(fit.summary(), str) and type(fit).__name__ in repr(fit)


@pytest.mark.parametrize("family,engine", ALL)
def test_data_is_a_snapshot(family, engine):
    fit, data = _combo(family, engine)
    before = fit.data.copy()
    col = data.columns[0]
    data[col] = data[col].iloc[::-1].to_numpy()       # the caller changes its frame
    try:
        pd.testing.assert_frame_equal(fit.data, before)
    finally:
        data[col] = data[col].iloc[::-1].to_numpy()


@pytest.mark.parametrize("family,engine", ALL)
def test_predict_simulate_refit_with_params_on_every_fit(family, engine):
    fit, data = _combo(family, engine)
    rows = fit.data.head(3)
    full = np.asarray(fit.predict(rows))
    pop = np.asarray(fit.predict(rows, re_form="NA"))
    assert full.shape[0] == pop.shape[0] == 3 and not np.allclose(full, pop)
    y = fit.simulate(2, rng=1)
    assert y.shape == (2, fit.nobs)
    np.testing.assert_array_equal(y, fit.simulate(2, rng=1))
    before = fit.fixef.copy()
    new = fit.refit(y[0])
    assert type(new) is type(fit) and not np.allclose(new.fixef, before)
    pd.testing.assert_series_equal(fit.fixef, before)
    name = fit.fixef.index[-1]
    set_ = fit.with_params(fixef={name: 0.5})
    assert float(set_.fixef[name]) == 0.5 and set_.params_set and not fit.params_set


@pytest.mark.parametrize("family,engine", ALL)
def test_every_prepared_model_fills_one_protocol(family, engine):
    fit, _ = _combo(family, engine)
    model = model_design(fit).prepare(engine=engine)
    assert isinstance(model, PreparedModel) and model.engine == engine
    sig = inspect.signature(model.simulate)
    assert list(sig.parameters)[:3] == ["n", "rng", "params"]
    assert sig.parameters["rng"].kind is inspect.Parameter.KEYWORD_ONLY
    y = model.simulate(1, rng=2, params=fit)[0]
    core = model.refit(y, REML=False, start=None)
    for attr in ("theta", "beta", "vcov_beta", "se", "deviance", "converged", "singular"):
        assert hasattr(core, attr), attr
    assert np.all(np.isfinite(core.beta))


def test_simulate_takes_the_old_keywords_with_a_deprecation():
    fit, _ = _combo("gaussian", "native")
    with pytest.warns(DeprecationWarning, match="params="):
        old = fit.model.simulate(2, rng=3, theta=fit.theta, beta=fit.fixef, sigma=fit.sigma)
    np.testing.assert_array_equal(old, fit.model.simulate(2, rng=3, params=fit))


def test_clmm_vcov_is_an_attribute_and_the_old_call_still_works():
    fit, _ = _combo("ordinal", "native")
    assert isinstance(fit.vcov, pd.DataFrame)
    with pytest.warns(DeprecationWarning, match="attribute"):
        old = fit.vcov()
    pd.testing.assert_frame_equal(old, pd.DataFrame(fit.vcov))


# -- ranef(condvar=True) against R -------------------------------------------------------
REF = json.loads((REFERENCE / "ranef_condvar_reference.json").read_text())


@pytest.mark.parametrize("case,rtol,atol", [
    ("sleepstudy_REML", 1e-5, 1e-5), ("penicillin_ML", 1e-4, 1e-4),
    # lme4's and the native optimum of the GLMM differ in the 4th digit; so do the modes
    ("cbpp_binomial", 2e-3, 2e-3), ("wine_clmm", 1e-4, 1e-4)])
def test_conditional_sds_match_lme4_and_ordinal(case, rtol, atol):
    ref = REF[case]
    f = ref["formula"]
    if case.startswith("sleep"):
        fit = nlpower.lmer(f, pd.read_csv(DATA / "sleepstudy.csv"))
    elif case.startswith("pen"):
        fit = nlpower.lmer(f, pd.read_csv(DATA / "penicillin.csv"), REML=False)
    elif case.startswith("cbpp"):
        fit = nlpower.glmer(f, _data("binomial"), "binomial", weights="size")
    else:
        fit = nlpower.clmm(f, _data("ordinal"))
    got = fit.ranef(condvar=True)
    got["grp"] = got["grp"].astype(str)
    want = pd.DataFrame({k: ref[k] for k in ("grpvar", "term", "grp", "condval", "condsd")})
    both = got.merge(want, on=["grpvar", "term", "grp"], suffixes=("", "_R"))
    assert len(both) == len(want) == len(got)
    np.testing.assert_allclose(both.condsd, both.condsd_R, rtol=rtol)
    np.testing.assert_allclose(both.condval, both.condval_R, atol=atol)


# -- one convergence policy -------------------------------------------------------------
HESS = "Model failed to converge: degenerate  Hessian with 2 negative eigenvalues"
GRAD = "Model failed to converge with max|grad| = 0.0108 (tol = 0.002, component 1)"


class _Fit:
    """What report_convergence reads: optsum, converged, singular, engine."""

    def __init__(self, messages: tuple[str, ...], optimizer_ok: bool = True) -> None:
        self.converged = fit_converged(optimizer_ok, messages)
        self.singular = False
        self.engine = "native"
        self.optsum = OptSummary("x", 10, "stopped", optimizer_ok, self.converged, messages)


def _said_not_converged(messages: tuple[str, ...], optimizer_ok: bool = True) -> tuple[bool, bool]:
    fit = _Fit(messages, optimizer_ok)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report_convergence(fit, None, where="lmer")
    said = any("failed to converge" in str(w.message) or "did not converge" in str(w.message)
               for w in caught)
    return said, fit.converged


@pytest.mark.parametrize("messages,optimizer_ok", [
    ((HESS,), True), (("unable to evaluate scaled gradient", HESS), True), ((GRAD,), True),
    ((GRAD, HESS), True), ((), False),
    (("Model is nearly unidentifiable: large eigenvalue ratio - Rescale variables?",), True)])
def test_a_warning_that_says_not_converged_comes_with_converged_false(messages, optimizer_ok):
    said, converged = _said_not_converged(messages, optimizer_ok)
    assert said == (not converged)


def test_degenerate_hessian_warns_without_saying_failed_and_the_fit_converged():
    fit = _Fit((HESS,))
    assert fit.converged
    with pytest.warns(ConvergenceWarning, match="degenerate Hessian with 2 negative") as rec:
        report_convergence(fit, None, where="lmer")
    assert not any(str(w.message).startswith("lmer (native): Model failed") for w in rec)


@pytest.mark.requires_r
def test_lme4_engine_degenerate_hessian_fit_counts_as_converged_like_the_native_one():
    """lme4 flags ham's (Product || Consumer) fit with a negative Hessian eigenvalue; both
    engines reach the same optimum, and now both call it converged and say so in words."""
    pytest.importorskip("rpy2")
    ham = pd.read_csv(DATA / "ham.csv", dtype={"Consumer": str, "Product": str,
                                                "Information": str})
    f = "Informed.liking ~ Product + Information + (Product || Consumer)"
    kw = {"REML": False, "contrasts": {"Product": "sum", "Information": "sum"}}
    with pytest.warns(ConvergenceWarning, match="degenerate Hessian") as rec:
        r = nlpower.lmer(f, ham, engine="lme4", **kw)
    assert any("Hessian" in m for m in r.optsum.check_messages) and r.converged
    assert not any("did not converge" in str(w.message) for w in rec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        n = nlpower.lmer(f, ham, **kw)
    assert n.converged and abs(n.deviance - r.deviance) < 1e-3
