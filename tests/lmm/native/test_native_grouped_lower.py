"""Grouped levels with the Schur products on the block-lower entries only (block1.GroupedLower)."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel

FORMULA = "rating ~ system + (system || worker) + (system || item)"


@pytest.fixture(scope="module")
def spec():
    df = simulate(CrossedDesign(6, 40, 4), presets.dataset("hashimoto-reddit").params, rng=5)
    return model_frame(FORMULA, df, contrasts={"system": "sum"})


def _thetas(model: NativeModel, n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    lay = model.layout
    return [lay.diag * rng.uniform(0.1, 1.5, lay.size) + ~lay.diag * rng.normal(0, 0.3, lay.size)
            for _ in range(n)]


def test_grouped_lower_equals_the_level_by_level_factor_before_and_after_a_new_response(spec):
    grouped, dense = NativeModel(spec), NativeModel(spec, mode="dense")
    # the path under test: grouped levels, correlated (non-diagonal) rest blocks
    assert grouped.ev._grp is not None and grouped.ev._Q is None
    assert dense.ev._grp is None
    for REML in (False, True):
        for th in _thetas(grouped, 3, 1):
            assert grouped.deviance(th, REML=REML) == pytest.approx(
                dense.deviance(th, REML=REML), rel=1e-11)
    y2 = spec.y[::-1].copy()                     # the y row of the kept entries is refreshed
    for m in (grouped, dense):
        m.refit_core(y2)
    for th in _thetas(grouped, 3, 2):
        assert grouped.deviance(th) == pytest.approx(dense.deviance(th), rel=1e-11)
        fg, gg, _ = grouped.value_and_gradient(th)
        fd, gd, _ = dense.value_and_gradient(th)
        assert fg == pytest.approx(fd, rel=1e-11)
        np.testing.assert_allclose(gg, gd, rtol=1e-7, atol=1e-7)
