"""Refitting the paper's priors (fit_agreement_prior, fit_effect_prior; Card et al. 2020, App. E.2).

The seeds print the fitted coefficients (Tables 5-8) but not the leaderboard data behind
them, so the paper's coefficients cannot be refitted from the paper's data here.  The
fitter is checked against statsmodels OLS (coefficients, standard errors, R^2) and on
tables drawn from the printed models, where it recovers the printed coefficients within
their Monte Carlo error.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from nlpower.accuracy import (
    AgreementPriorFit,
    fit_agreement_prior,
    fit_effect_prior,
    glue_effect,
    mde,
    paper_agreement_prior,
    power,
)
from nlpower.accuracy.priors import GLUE_EFFECT_TASKS
from nlpower.errors import InputError


def _glue_pairs(n=270, seed=0):
    """Pairs of models drawn from Table 5 (residual SD chosen to give R^2 about 0.97)."""
    gen = np.random.default_rng(seed)
    a, b = gen.uniform(0.55, 0.97, n), gen.uniform(0.55, 0.97, n)
    y = 0.4142 + 0.5819 * np.minimum(a, b) - 0.4662 * np.abs(a - b) + gen.normal(0, 0.015, n)
    return pd.DataFrame({"acc_a": a, "acc_b": b, "agreement": y})


def test_agreement_fit_matches_statsmodels():
    t = _glue_pairs()
    fit = fit_agreement_prior(t)
    t = t.assign(min_acc=np.minimum(t.acc_a, t.acc_b), acc_diff=(t.acc_a - t.acc_b).abs())
    ref = smf.ols("agreement ~ min_acc + acc_diff", data=t).fit()
    assert np.allclose(fit.coefficients, ref.params.values, atol=1e-10)
    assert np.allclose(fit.se, ref.bse.values, rtol=1e-8)
    assert fit.r2 == pytest.approx(ref.rsquared, abs=1e-10)
    assert fit.n == 270 and fit.residual_sd == pytest.approx(np.sqrt(ref.scale))
    same = fit_agreement_prior(t, min_acc="min_acc", acc_diff="acc_diff")
    assert np.allclose(same.coefficients, fit.coefficients)


def test_agreement_fit_recovers_table5_from_data_drawn_from_it():
    fit = fit_agreement_prior(_glue_pairs(seed=1))
    for est, se, true in zip(fit.coefficients, fit.se, (0.4142, 0.5819, -0.4662), strict=True):
        assert abs(est - true) < 3.5 * se
    assert fit.r2 > 0.9


def test_fitted_prior_drives_power_and_mde_like_the_named_one():
    paper = paper_agreement_prior("glue")
    assert isinstance(paper, AgreementPriorFit) and paper.coefficients == (0.4142, 0.5819, -0.4662)
    by_name = power(2000, 0.01, "glue", baseline=0.9)
    by_fit = power(2000, 0.01, paper, baseline=0.9)
    assert by_fit.power == pytest.approx(by_name.power, abs=1e-12)
    assert by_fit.agreement_source == "prior (glue)"
    m1 = mde(3000, 0.917, agreement="glue", test="mid-p")
    m2 = mde(3000, 0.917, agreement=paper, test="mid-p")
    assert m2.delta == pytest.approx(m1.delta, abs=1e-10)
    assert "0.4142" in paper.summary() and len(paper.to_frame()) == 3


def test_effect_fit_with_task_dummies_matches_statsmodels_and_table7():
    """61 claims drawn from Table 7 (percentage points, MNLI-m the reference level)."""
    gen = np.random.default_rng(3)
    tasks = gen.choice(list(GLUE_EFFECT_TASKS), 61)
    best = gen.uniform(70, 95, 61)
    eff = np.array([100 * glue_effect(t, b / 100) for t, b in zip(tasks, best, strict=True)])
    eff = eff + gen.normal(0, 1.309, 61)
    t = pd.DataFrame({"task": tasks, "previous_best": best, "effect": eff})
    fit = fit_effect_prior(t, task="task")
    ref = smf.ols("effect ~ previous_best + C(task)", data=t).fit()
    assert fit.reference == "MNLI-m"
    assert fit.slope == pytest.approx(ref.params["previous_best"], abs=1e-10)
    assert fit.tasks["QNLI"] == pytest.approx(ref.params["C(task)[T.QNLI]"], abs=1e-10)
    assert fit.r2 == pytest.approx(ref.rsquared, abs=1e-10)
    assert abs(fit.slope - (-0.264)) < 3.5 * fit.se["previous_best"]
    assert fit.predict(91.7, "RTE") == pytest.approx(
        fit.const + fit.slope * 91.7 + fit.tasks["RTE"])
    assert "reference MNLI-m" in fit.summary()


def test_effect_fit_without_tasks_table8_form():
    best = np.linspace(0.8, 0.91, 14)
    fit = fit_effect_prior({"previous_best": best, "effect": 0.1331 - 0.1408 * best})
    assert fit.const == pytest.approx(0.1331) and fit.slope == pytest.approx(-0.1408)
    with pytest.raises(InputError, match="fitted without tasks"):
        fit.predict(0.9, "SQuAD")


def test_errors():
    with pytest.raises(InputError, match="no column 'agreement'"):
        fit_agreement_prior({"acc_a": [0.9] * 5, "acc_b": [0.8] * 5})
    with pytest.raises(InputError, match="more rows than coefficients"):
        fit_agreement_prior({"acc_a": [0.9, 0.8], "acc_b": [0.8, 0.7], "agreement": [0.9, 0.8]})
    with pytest.raises(InputError, match="give both min_acc= and acc_diff="):
        fit_agreement_prior(_glue_pairs(), min_acc="acc_a")
    with pytest.raises(InputError, match="non-finite"):
        fit_agreement_prior({"acc_a": [0.9, np.nan, 0.8, 0.7], "acc_b": [0.8] * 4,
                             "agreement": [0.9] * 4})
    with pytest.raises(InputError, match="needs the baseline"):
        power(100, 0.02, paper_agreement_prior("squad"))
    with pytest.raises(InputError, match="name must be 'glue'"):
        paper_agreement_prior("mnli")
    with pytest.raises(InputError, match="reference= needs task="):
        fit_effect_prior({"previous_best": [1, 2, 3, 4], "effect": [1, 2, 3, 5]}, reference="a")
