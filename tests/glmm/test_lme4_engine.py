"""engine="lme4": lme4's glmer through rpy2 gives the same numbers as the R script."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.glmm import glmer

from .glmm_cases import dataset, reference

pytestmark = pytest.mark.requires_r


@pytest.fixture(autouse=True)
def _rpy2() -> None:
    pytest.importorskip("rpy2")


def test_lme4_engine_matches_reference_and_native() -> None:
    ref = reference()["cbpp_weights"]
    d = dataset("cbpp")
    fit = glmer("prop ~ period + (1 | herd)", d, weights="size", engine="lme4")
    assert fit.engine == "lme4"
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-8)
    np.testing.assert_allclose(fit.fixef, list(ref["fixef"].values()), atol=1e-8)
    np.testing.assert_allclose(fit.se, list(ref["se"].values()), rtol=1e-6)
    assert list(fit.ranef()["herd"].columns) == ["(Intercept)"]
    nat = glmer("prop ~ period + (1 | herd)", d, weights="size")
    assert nat.loglik >= fit.loglik - 1e-4
    np.testing.assert_allclose(nat.predict(type="response"), fit.predict(type="response"), atol=2e-3)


def test_lme4_engine_poisson_offset_and_refit() -> None:
    ref = reference()["cbpp_poisson_offset"]
    d = dataset("cbpp")
    fit = glmer("incidence ~ period + (1 | herd)", d, "poisson", offset="log_size", engine="lme4")
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-8)
    y = fit.simulate(1, rng=2)[0]
    core = fit.model.refit(y, start=fit)
    assert np.isfinite(core.deviance) and core.beta.shape == (4,)
