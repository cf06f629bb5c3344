"""Batched fits of a single-scalar-term LMM (nlpower.lmm.batched) against the native engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower
from conftest import REFERENCE
from nlpower.lmm.batched import ScalarLmm
from nlpower.powersim.rules import KRTest
from nlpower.study.design import model_design

DATA = REFERENCE / "data"


def _unbalanced() -> pd.DataFrame:
    d = pd.read_csv(DATA / "sleepstudy.csv").sample(frac=0.7, random_state=1)
    return d.reset_index(drop=True).astype({"Subject": str})


@pytest.mark.parametrize("formula,REML", [
    ("Reaction ~ Days + (1 | Subject)", True),
    ("Reaction ~ Days + (1 | Subject)", False),
    ("Reaction ~ Days + (0 + Days | Subject)", True),
])
def test_batched_fits_and_df_are_the_native_ones(formula, REML):
    fit = nlpower.lmer(formula, _unbalanced(), REML=REML).with_params(fixef={"Days": 2.0})
    d = model_design(fit)
    model = d.prepare()
    Y = d.simulate(12, rng=5, model=model)
    sl = ScalarLmm(model.spec)
    fits = sl.fit(Y, REML=REML, theta0=float(d.theta[0]))
    L = np.array([0.0, 1.0])
    df = sl.satterthwaite_df(fits, Y, L)
    kr_se, kr_df = sl.kenward_roger(fits, L) if REML else (None, None)
    kr = KRTest(model.spec)
    assert fits.ok.all()
    for i, y in enumerate(Y):
        core = model.refit(y, REML=REML, start=d.theta)
        # the batch's optimum is at least as good as BOBYQA's, and the same point
        assert fits.deviance[i] <= core.deviance + 1e-9
        assert fits.deviance[i] == pytest.approx(core.deviance, abs=1e-6)
        np.testing.assert_allclose(fits.beta[i], core.beta, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(fits.vcov[i], core.vcov_beta, rtol=1e-4)
        assert df[i] == pytest.approx(float(model.satterthwaite_df(core, L)), rel=1e-4)
        if REML:
            _, se, kdf = kr.test(core, L)
            assert kr_se[i] == pytest.approx(se, rel=1e-4)
            assert kr_df[i] == pytest.approx(kdf, rel=1e-4)


def test_a_singular_fit_is_on_the_boundary():
    """A response without group structure: theta = 0, as lme4 (and flagged singular)."""
    d = _unbalanced()
    spec = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d).model.spec
    y = np.random.default_rng(1).normal(size=spec.n)
    y = y - np.bincount(spec.re_terms[0].codes, y)[spec.re_terms[0].codes] / \
        np.bincount(spec.re_terms[0].codes)[spec.re_terms[0].codes]     # no group means at all
    fits = ScalarLmm(spec).fit(y[None, :], REML=False, theta0=1.0)
    assert fits.theta[0] < 1e-6 and bool(fits.singular[0])


def test_a_constant_response_is_left_to_the_refit():
    spec = nlpower.lmer("Reaction ~ Days + (1 | Subject)", _unbalanced()).model.spec
    fits = ScalarLmm(spec).fit(np.full((2, spec.n), 3.0), REML=True)
    assert not fits.ok.any()


def test_supports_only_one_scalar_term():
    d = _unbalanced()
    assert not ScalarLmm.supports(
        nlpower.lmer("Reaction ~ Days + (Days | Subject)", d).model.spec)
    with pytest.raises(ValueError, match="one random-effects term"):
        ScalarLmm(nlpower.lmer("Reaction ~ Days + (Days | Subject)", d).model.spec)
