"""The shared weighted factorisation reproduces the Gaussian fitter's profiled deviance.

``nlpower.mixed.blocked`` (glmer's and clmm's factorisation) and the Gaussian
fitter's own (``lmm/native/``) are written independently; with unit weights
and ``[X y]`` joined as the fixed columns, the last pivot of the former is
``r``, the square root of the penalised residual sum of squares, so both give
lme4's profiled ML deviance (Bates et al. 2015, eq. 34).  lme4's own value on
``sleepstudy`` is checked elsewhere (the validation corpus).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native.model import NativeModel
from nlpower.mixed.blocked import BlockedLayout, factor
from nlpower.mixed.native.blocks import group_blocks


def _blocked_deviance(model: NativeModel, theta: np.ndarray) -> float:
    blocks = group_blocks(model.layout)
    X, y = np.asarray(model.spec.X, dtype=float), np.asarray(model.spec.y, dtype=float)
    n, p = X.shape
    lay = BlockedLayout([b.codes for b in blocks], [b.q for b in blocks], [b.m for b in blocks],
                        p + 1)
    zl = np.concatenate([b.Z @ b.lam(theta) for b in blocks], axis=1)
    Xy = np.column_stack([X, y])
    fac = factor(lay, lay.products(zl), np.ones(n), Xy, lay.x_products(Xy, zl))
    assert fac.L2 is not None
    r2 = float(fac.L2[-1, -1]) ** 2
    return fac.logdet + n * (1.0 + math.log(2.0 * math.pi * r2 / n))


@pytest.mark.parametrize("formula", [
    "rating ~ x + (1 | worker) + (1 | item)",
    "rating ~ x + (1 + x || worker) + (1 + x | item)",
    "rating ~ x + (x || worker) + (1 | item) + (0 + x | item)",
])
@pytest.mark.parametrize("workers_per_item", [None, 3])
def test_blocked_gives_the_gaussian_deviance(formula: str, workers_per_item: int | None) -> None:
    design = CrossedDesign(12, 40, 2, workers_per_item=workers_per_item)
    df = simulate(design, presets.high_variance(0.2), rng=7)
    model = NativeModel(model_frame(formula, df))
    rng = np.random.default_rng(3)
    lower = model.lower
    for _ in range(3):
        theta = np.where(lower == 0, rng.uniform(0.05, 1.5, lower.size),
                         rng.normal(0, 0.3, lower.size))
        d_native = model.deviance(theta)
        d_blocked = _blocked_deviance(model, theta)
        assert d_blocked == pytest.approx(d_native, rel=1e-10, abs=1e-8)
