"""Alpha- and beta-spending functions of Lan and DeMets (1983) and Hwang, Shih and DeCani (1990).

A spending function ``f(t)`` gives the error spent by information fraction
``t`` in ``[0, 1]``, rising from ``f(0) = 0`` to ``f(1) = level``:

* ``"obf"``: O'Brien-Fleming type, ``2 - 2 Phi(z_{1 - level/2} / sqrt(t))``;
* ``"pocock"``: Pocock type, ``level * log(1 + (e - 1) t)``;
* ``"hsd"``: Hwang-Shih-DeCani, ``level * (1 - exp(-gamma t)) / (1 - exp(-gamma))``
  (``level * t`` when ``gamma = 0``; ``gamma = -4`` is close to O'Brien-Fleming,
  ``gamma = 1`` to Pocock).

These are rpact's ``asOF``, ``asP`` and ``asHSD`` (``bsOF``, ``bsP``,
``bsHSD`` for beta spending).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

__all__ = ["SPENDING", "spend"]

SPENDING = ("obf", "pocock", "hsd")


def spend(kind: str, t: np.ndarray, level: float, gamma: float = -4.0) -> np.ndarray:
    """Cumulative error spent at information fractions ``t`` (see the module docstring)."""
    t = np.clip(np.asarray(t, dtype=float), 0.0, 1.0)
    if kind == "obf":
        with np.errstate(divide="ignore"):
            z = stats.norm.isf(level / 2) / np.sqrt(t)
        return np.where(t > 0, 2 * stats.norm.sf(z), 0.0)
    if kind == "pocock":
        return level * np.log1p((math.e - 1) * t)
    if gamma == 0:
        return level * t
    return level * (-np.expm1(-gamma * t)) / (-math.expm1(-gamma))
