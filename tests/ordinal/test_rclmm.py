"""engine="ordinal": R's ordinal::clmm through rpy2, a fitter in the engine registry, returns
the same ClmmFit as the native engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import FIXTURES, REFERENCE
from nlpower.errors import InputError
from nlpower.lmm import get_engine
from nlpower.lmm.family import Ordinal
from nlpower.ordinal import clmm
from nlpower.ordinal.api import ordinal_frame
from nlpower.ordinal.rclmm import RClmmModel


@pytest.fixture(scope="module")
def wine() -> pd.DataFrame:
    return pd.read_csv(REFERENCE / "data" / "wine.csv")


@pytest.fixture(scope="module")
def rwine(wine: pd.DataFrame) -> pd.DataFrame:
    pytest.importorskip("rpy2")
    return wine


def test_r_fitter_is_registered_for_the_ordinal_family(wine: pd.DataFrame) -> None:
    spec, response, frame = ordinal_frame("rating ~ temp + contact + (1|judge)", wine)
    for name in ("ordinal", "lme4"):           # clmm's name for it, and the lme4 engine's
        model = get_engine(name).prepare(spec, data=frame, family=Ordinal("probit"),
                                         response=response)
        assert isinstance(model, RClmmModel) and model.engine == "ordinal"
        assert model.family == Ordinal("probit") and model.model.levels == response.levels
    with pytest.raises(InputError, match=r"pass data= the rows behind the model \(72 rows"):
        get_engine("ordinal").prepare(spec, family=Ordinal())
    with pytest.raises(InputError, match="got 3 rows"):
        get_engine("ordinal").prepare(spec, data=frame.head(3), family=Ordinal())


@pytest.mark.requires_r
def test_ordinal_engine_matches_native(rwine: pd.DataFrame) -> None:
    r = clmm("rating ~ temp + contact + (1|judge)", rwine, engine="ordinal")
    n = clmm("rating ~ temp + contact + (1|judge)", rwine)
    assert r.engine == "ordinal" and r.converged
    assert r.loglik == pytest.approx(n.loglik, abs=1e-4)
    np.testing.assert_allclose(r.core.params, n.core.params, atol=1e-3)
    np.testing.assert_allclose(r.coef_table()["se"], n.coef_table()["se"], rtol=1e-2)
    assert r.ranef()["judge"].shape == (9, 1)
    assert "ordinal::clmm" in r.core.message


@pytest.mark.requires_r
def test_ordinal_engine_clm(rwine: pd.DataFrame) -> None:
    r = clmm("rating ~ temp + contact", rwine, engine="ordinal")
    assert r.loglik == pytest.approx(clmm("rating ~ temp + contact", rwine).loglik, abs=1e-8)


@pytest.mark.requires_r
def test_r_refit_swaps_the_response(rwine: pd.DataFrame) -> None:
    spec, response, frame = ordinal_frame("rating ~ temp + contact + (1|judge)", rwine)
    r = get_engine("ordinal").prepare(spec, data=frame, family=Ordinal(), response=response)
    n = get_engine("native").prepare(spec, data=frame, family=Ordinal(), response=response)
    y = n.simulate(1, rng=5, params=n.refit())[0]
    assert r.refit(y).loglik == pytest.approx(n.refit(y).loglik, abs=1e-3)


@pytest.mark.requires_r
def test_fit_ratings_ordinal_on_the_lme4_engine_is_r_clmm() -> None:
    pytest.importorskip("rpy2")
    from nlpower.ratings import fit_ratings, read_ratings

    pilot = read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))
    formula = "rating ~ system + (1 | worker) + (1 | item)"
    r = fit_ratings(pilot, family="ordinal", engine="lme4", model=formula)
    n = fit_ratings(pilot, family="ordinal", model=formula)
    assert r.fit.engine == "ordinal" and n.fit.engine == "native"
    assert r.fit.loglik == pytest.approx(n.fit.loglik, abs=1e-3)
    np.testing.assert_allclose(r.fixef, n.fixef, atol=2e-3)
