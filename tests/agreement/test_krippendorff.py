"""Krippendorff's alpha against the krippendorff package (to 1e-9) and its bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.agreement import krippendorff_alpha
from nlpower.errors import InputError

kd = pytest.importorskip("krippendorff")

LEVELS = ["nominal", "ordinal", "interval", "ratio"]


def _random_matrix(seed: int, raters: int, units: int, levels: int, missing: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, levels + 1, units)
    data = np.clip(truth + rng.integers(-1, 2, (raters, units)), 1, levels).astype(float)
    data[rng.random((raters, units)) < missing] = np.nan
    return data


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_krippendorff_package(level: str, seed: int) -> None:
    data = _random_matrix(seed, raters=5, units=40, levels=5, missing=0.3)
    ours = krippendorff_alpha(data, level=level).alpha  # type: ignore[arg-type]
    ref = kd.alpha(reliability_data=data, level_of_measurement=level)
    assert ours == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_long_frame_equals_matrix(level: str) -> None:
    data = _random_matrix(7, raters=4, units=30, levels=7, missing=0.2)
    r, u = np.nonzero(np.isfinite(data))
    long = pd.DataFrame({"worker": r, "item": u, "rating": data[r, u]})
    ours = krippendorff_alpha(long, level=level, unit="item").alpha  # type: ignore[arg-type]
    assert ours == pytest.approx(kd.alpha(reliability_data=data, level_of_measurement=level),
                                 abs=1e-9)


def test_bootstrap_interval_covers_and_is_reproducible() -> None:
    data = _random_matrix(3, raters=4, units=60, levels=5, missing=0.1)
    a = krippendorff_alpha(data, n_boot=300, rng=5)
    b = krippendorff_alpha(data, n_boot=300, rng=5)
    assert a.ci is not None and b.ci is not None
    assert a.ci.low < a.alpha < a.ci.high
    assert (a.ci.low, a.ci.high) == (b.ci.low, b.ci.high)
    assert "bootstrap" in a.summary() and a.to_frame().shape[0] == 1


def test_errors() -> None:
    with pytest.raises(InputError, match="level"):
        krippendorff_alpha([[1, 2], [1, 2]], level="cardinal")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="rated at least twice"):
        krippendorff_alpha([[1, np.nan], [np.nan, 2]])
    with pytest.raises(InputError, match="'ratings'"):
        krippendorff_alpha(pd.DataFrame({"item": [1], "rating": [1]}), value="ratings", unit="item")
