"""ICCs from fitted crossed models: Shrout & Fleiss (1979) Table 2 by hand, RatingsFit per system."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower.agreement import icc
from nlpower.errors import InputError

# Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SF = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9],
               [6, 2, 4, 7]], dtype=float)
# Their Table 4: ICC(2,1) = ICC(A,1), ICC(3,1) = ICC(C,1), ICC(2,4), ICC(3,4).
PUBLISHED = {"ICC(A,1)": 0.29, "ICC(C,1)": 0.71, "ICC(A,k)": 0.62, "ICC(C,k)": 0.91}


def _hand(x: np.ndarray) -> dict[str, float]:
    """McGraw & Wong's mean-square formulas, written out for this test."""
    n, k = x.shape
    g = x.mean()
    msr = k * ((x.mean(1) - g) ** 2).sum() / (n - 1)
    msc = n * ((x.mean(0) - g) ** 2).sum() / (k - 1)
    mse = ((x - x.mean(1, keepdims=True) - x.mean(0, keepdims=True) + g) ** 2).sum() / (
        (n - 1) * (k - 1))
    return {"ICC(C,1)": (msr - mse) / (msr + (k - 1) * mse),
            "ICC(A,1)": (msr - mse) / (msr + (k - 1) * mse + k / n * (msc - mse)),
            "ICC(C,k)": (msr - mse) / msr,
            "ICC(A,k)": (msr - mse) / (msr + (msc - mse) / n)}


@pytest.fixture(scope="module")
def sf_fit():
    long = pd.DataFrame([(f"t{i}", f"j{j}", v) for i, r in enumerate(SF) for j, v in enumerate(r)],
                        columns=["item", "worker", "rating"])
    return nlpower.lmer("rating ~ 1 + (1 | item) + (1 | worker)", long)


def test_shrout_fleiss_by_hand_and_published(sf_fit) -> None:
    row = icc(sf_fit, target="item").table.iloc[0]
    hand = _hand(SF)
    for form, value in hand.items():
        assert row[form] == pytest.approx(value, abs=1e-5)
        assert round(row[form], 2) == PUBLISHED[form]
    assert row["k"] == 4


def test_ratings_fit_gives_one_row_per_system() -> None:
    rng = np.random.default_rng(0)
    design = nlpower.CrossedDesign(12, 30, workers_per_item=4)
    params = nlpower.presets.high_variance(effect=0.1)
    data = nlpower.simulate(design, params, rng=rng)
    rf = nlpower.fit_ratings(nlpower.read_ratings(data, scale="identity"))
    res = icc(rf)
    assert list(res.table["system"]) == list(rf.systems)
    item = rf.total_cov("item")
    s = rf.systems[0]
    expected = item.loc[s, s] / (item.loc[s, s] + rf.sigma**2)
    assert res.table["ICC(C,1)"].iloc[0] == pytest.approx(expected)
    assert res.table["k"].iloc[0] == pytest.approx(4.0)
    assert "ICC(A,1)" in res.summary()


def test_errors(sf_fit) -> None:
    with pytest.raises(InputError, match="grouping factor"):
        icc(sf_fit, target="document")
    with pytest.raises(InputError, match="k must be"):
        icc(sf_fit, target="item", k=0.5)
    with pytest.raises(InputError, match="RatingsFit or an LmmFit"):
        icc(object())
