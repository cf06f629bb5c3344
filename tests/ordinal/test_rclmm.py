"""engine="ordinal": R's ordinal::clmm through rpy2 returns the same ClmmFit as the native engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import REFERENCE
from nlpower.ordinal import clmm

pytestmark = pytest.mark.requires_r


@pytest.fixture(scope="module")
def wine() -> pd.DataFrame:
    pytest.importorskip("rpy2")
    return pd.read_csv(REFERENCE / "data" / "wine.csv")


def test_ordinal_engine_matches_native(wine: pd.DataFrame) -> None:
    r = clmm("rating ~ temp + contact + (1|judge)", wine, engine="ordinal")
    n = clmm("rating ~ temp + contact + (1|judge)", wine)
    assert r.engine == "ordinal" and r.converged
    assert r.loglik == pytest.approx(n.loglik, abs=1e-4)
    np.testing.assert_allclose(r.core.params, n.core.params, atol=1e-3)
    np.testing.assert_allclose(r.coef_table()["se"], n.coef_table()["se"], rtol=1e-2)
    assert r.ranef()["judge"].shape == (9, 1)
    assert "ordinal::clmm" in r.core.message


def test_ordinal_engine_clm(wine: pd.DataFrame) -> None:
    r = clmm("rating ~ temp + contact", wine, engine="ordinal")
    assert r.loglik == pytest.approx(clmm("rating ~ temp + contact", wine).loglik, abs=1e-8)
