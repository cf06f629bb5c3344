"""NativeModel (nlpower.lmm.native.model): refits, the engine protocol's refit, input errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from lmm_specs import _term, crossed_spec, dense_deviance
from nlpower.errors import (
    InputError,
)
from nlpower.lmm import lmer
from nlpower.lmm.native import NativeModel
from nlpower.lmm.structure import ModelSpec, ReTerm


def test_refit_core_equals_fresh_model_and_warm_start():
    spec = crossed_spec()
    model = NativeModel(spec)
    y2 = spec.y + np.random.default_rng(9).normal(0, .5, spec.n)
    core = model.refit_core(y2)
    fresh = NativeModel(spec.with_response(y2)).fit()
    assert core.deviance == pytest.approx(fresh.deviance, abs=1e-6)
    np.testing.assert_allclose(core.beta, fresh.fixef.to_numpy(), rtol=1e-5)
    warm = model.refit_core(y2, start=core.theta)
    assert warm.deviance <= core.deviance + 1e-6
    assert warm.n_evals < core.n_evals
    # the original response is untouched by refits
    again = model.fit()
    assert again.nobs == spec.n and np.array_equal(model.blocks.y, spec.y)


def test_refit_core_never_warns():
    spec = crossed_spec()
    model = NativeModel(spec)
    rng = np.random.default_rng(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            model.refit_core(rng.normal(size=spec.n))   # pure noise: singular fits


def test_lmer_end_to_end_with_formula():
    spec = crossed_spec()
    t_w = spec.re_terms[0]
    t_i = spec.re_terms[2]
    df = pd.DataFrame({"y": spec.y, "x": spec.X[:, 1],
                       "worker": np.array(t_w.levels)[t_w.codes],
                       "item": np.array(t_i.levels)[t_i.codes]})
    fit = lmer("y ~ x + (1 + x || worker) + (1 + x || item)", df, REML=False)
    direct = NativeModel(spec).fit()
    assert fit.deviance == pytest.approx(direct.deviance, abs=1e-6)
    assert fit.engine == "native" and not fit.REML


def test_model_without_fixed_effects():
    # y ~ 0 + (1 | g): REML and ML coincide (p = 0); checked against lme4 1.1-31 by hand
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(8), 5)
    y = rng.normal(size=40) + rng.normal(size=8)[g]
    spec = ModelSpec("y ~ 0 + (1 | g)", "y", y, np.zeros((40, 0)), (),
                     (_term("g", g, np.ones(40), ("(Intercept)",)),))
    model = NativeModel(spec)
    ml, reml = model.fit(REML=False), model.fit(REML=True)
    assert ml.fixef.size == 0 and ml.deviance == pytest.approx(reml.deviance, rel=1e-10)
    assert ml.deviance == pytest.approx(dense_deviance(model, ml.theta, False), rel=1e-10)
    assert "(no fixed effects)" in ml.summary()


# ---------------------------------------------------------------- errors


def test_error_nan_in_response():
    spec = crossed_spec()
    y = spec.y.copy()
    y[3] = np.nan
    with pytest.raises(InputError, match=r"missing or infinite value.*rows 3"):
        NativeModel(spec).refit_core(y)
    with pytest.raises(InputError, match="missing or infinite"):
        NativeModel(spec.with_response(y))


def test_error_inf_in_X():
    spec = crossed_spec()
    X = spec.X.copy()
    X[5, 1] = np.inf
    bad = ModelSpec(spec.formula, "y", spec.y, X, spec.fixef_names, spec.re_terms)
    with pytest.raises(InputError, match=r"X \(the fixed-effects model matrix\).*rows 5"):
        NativeModel(bad)


def test_error_nan_in_random_effects_columns():
    spec = crossed_spec()
    t = spec.re_terms[1]
    Z = t.Z.copy()
    Z[0, 0] = np.nan
    bad = ModelSpec(spec.formula, "y", spec.y, spec.X, spec.fixef_names,
                    (spec.re_terms[0], ReTerm(t.group, t.codes, t.levels, Z, t.cnames),
                     *spec.re_terms[2:]))
    with pytest.raises(InputError, match=r"random-effects columns of \(x \| worker\)"):
        NativeModel(bad)


def test_error_constant_response():
    spec = crossed_spec()
    with pytest.raises(InputError, match="constant"):
        NativeModel(spec).refit_core(np.full(spec.n, 3.0))


def test_error_wrong_response_length():
    spec = crossed_spec()
    with pytest.raises(InputError, match=rf"length {spec.n}"):
        NativeModel(spec).refit_core(np.ones(4))


def test_error_no_random_terms():
    spec = crossed_spec()
    bad = ModelSpec("y ~ x", "y", spec.y, spec.X, spec.fixef_names, ())
    with pytest.raises(InputError, match="no random-effects terms"):
        NativeModel(bad)


def test_error_too_few_observations():
    g = np.array([0, 1])
    spec = ModelSpec("y ~ a + b + (1|g)", "y", np.array([1.0, 2.0]), np.eye(2), ("a", "b"),
                     (_term("g", g, np.ones(2), ("(Intercept)",)),))
    with pytest.raises(InputError, match="need more observations"):
        NativeModel(spec)


def test_error_bad_start_and_theta_and_control_and_mode():
    model = NativeModel(crossed_spec())
    with pytest.raises(InputError, match="start must be 4 finite theta values"):
        model.refit_core(model.spec.y, start=[1.0, 2.0])
    with pytest.raises(InputError, match="theta must have 4 values"):
        model.deviance([1.0])
    with pytest.raises(InputError, match="unknown setting"):
        model.refit_core(model.spec.y, control={"tol": 1})
    with pytest.raises(InputError, match="mode must be one of"):
        NativeModel(crossed_spec(), mode="fast")


def test_lmer_argument_errors():
    df = pd.DataFrame({"y": [1.0, 2.0]})
    with pytest.raises(InputError, match="engine must be one of 'native', 'lme4'"):
        lmer("y ~ 1 + (1|g)", df, engine="julia")
    with pytest.raises(InputError, match="REML must be True or False"):
        lmer("y ~ 1 + (1|g)", df, REML="yes")  # type: ignore[arg-type]
