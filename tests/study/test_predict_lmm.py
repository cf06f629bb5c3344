"""LmmFit.predict: lme4's predict.merMod for Gaussian fits (the same code as glmer's)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower
from conftest import REFERENCE
from nlpower.errors import InputError


@pytest.fixture(scope="module")
def fit():
    d = pd.read_csv(REFERENCE / "data" / "sleepstudy.csv")
    return nlpower.lmer("Reaction ~ Days + (Days | Subject)", d), d


def test_fitted_values_and_the_population_level(fit):
    m, d = fit
    np.testing.assert_allclose(m.predict(), d.Reaction.to_numpy() - m.residuals, atol=1e-8)
    pop = m.predict(re_form="NA")
    np.testing.assert_allclose(pop, m.fixef.iloc[0] + m.fixef.iloc[1] * d.Days, atol=1e-10)


def test_a_known_subject_uses_its_modes_and_a_new_one_needs_permission(fit):
    m, _ = fit
    b = m.ranef()["Subject"].loc["308"] if "308" in m.ranef()["Subject"].index else \
        m.ranef()["Subject"].iloc[0]
    new = pd.DataFrame({"Days": [3.0], "Subject": [308]})
    expect = m.fixef.iloc[0] + b.iloc[0] + 3.0 * (m.fixef.iloc[1] + b.iloc[1])
    assert m.predict(new)[0] == pytest.approx(expect, abs=1e-8)
    with pytest.raises(InputError, match="allow_new_levels=True"):
        m.predict(pd.DataFrame({"Days": [3.0], "Subject": [999]}))
