"""The optimiser stage (nlpower.lmm.native.optimize): optimum, convergence and boundary diagnostics."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower.lmm
from lmm_specs import _term, crossed_spec
from nlpower.errors import (
    ConvergenceWarning,
    FitError,
    SingularFitWarning,
)
from nlpower.lmm import lmer
from nlpower.lmm.native import NativeModel
from nlpower.lmm.structure import ModelSpec


def test_optimum_is_a_local_minimum():
    model = NativeModel(crossed_spec())
    core = model.refit_core(model.spec.y)
    rng = np.random.default_rng(5)
    for _ in range(20):
        th = np.maximum(core.theta + rng.normal(0, 1e-2, core.theta.size), 0)
        assert model.deviance(th) >= core.deviance - 1e-6


def test_singular_flag_and_lmer_warning(monkeypatch):
    # identical group means: the ML estimate of the group variance is exactly 0
    base = np.array([1.0, 2.0, 4.0, 7.0])
    y = np.concatenate([np.random.default_rng(k).permutation(base) for k in range(6)])
    g = np.repeat(np.arange(6), 4)
    spec = ModelSpec("y ~ 1 + (1 | g)", "y", y, np.ones((24, 1)), ("(Intercept)",),
                     (_term("g", g, np.ones(24), ("(Intercept)",)),))
    core = NativeModel(spec).refit_core(y)
    assert core.singular and core.theta[0] < 1e-4
    # lmer builds the structure with nlpower.lmm.model_frame: hand it this one
    monkeypatch.setattr(nlpower.lmm, "model_frame", lambda formula, data, contrasts=None: spec)
    with pytest.warns(SingularFitWarning, match="singular"):
        fit = lmer("y ~ 1 + (1 | g)", pd.DataFrame({"y": y, "g": g}), REML=False)
    assert fit.singular


def test_convergence_failure_is_reported_and_warned(monkeypatch):
    spec = crossed_spec()
    core = NativeModel(spec).refit_core(spec.y, control={"maxeval": 3})
    assert not core.converged and "maxeval" in core.message
    # lmer builds the structure with nlpower.lmm.model_frame: hand it this one
    monkeypatch.setattr(nlpower.lmm, "model_frame", lambda formula, data, contrasts=None: spec)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        lmer(spec.formula, pd.DataFrame({"y": spec.y}), control={"maxeval": 3})


def test_fit_error_when_deviance_not_finite_at_start():
    spec = crossed_spec()
    X = np.column_stack([spec.X, spec.X[:, 1]])          # aliased column -> R_X singular
    bad = ModelSpec(spec.formula, "y", spec.y, X, ("(Intercept)", "x", "x2"), spec.re_terms)
    with pytest.raises(FitError, match="not finite at the starting theta"):
        NativeModel(bad).refit_core(spec.y)
