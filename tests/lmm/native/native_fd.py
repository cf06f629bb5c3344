"""The reference the native gradient tests compare with: central differences of the deviance."""

from __future__ import annotations

import numpy as np

STEP = 1e-6


def central_gradient(model, th: np.ndarray, REML: bool, step: float = STEP) -> np.ndarray:
    """``d deviance / d theta`` by central differences (``model.deviance``, one pair per theta)."""
    out = np.empty(th.size)
    for j in range(th.size):
        e = np.zeros(th.size)
        e[j] = step
        out[j] = (model.deviance(th + e, REML=REML) - model.deviance(th - e, REML=REML)) / (2 * step)
    return out
