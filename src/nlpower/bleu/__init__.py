"""BLEU: randomization-test power for MT comparisons (Card et al. 2020, §4 and App. G).

* :func:`power` / :func:`mde` / :func:`power_grid` -- power of the paired
  randomization test under the Delta–Laplace process of per-sentence swap
  effects, with Table 3's parameters in :func:`preset`.
* :func:`estimate` -- P0 and b0 (and the real paired randomization test)
  from two systems' outputs and the references, through sacrebleu's
  sufficient statistics (``pip install 'nlpower[bleu]'``).

Sign convention: ``dB = BLEU(A) - BLEU(B)``; the swap effects satisfy
``dB_hat = -sum(delta_i) / 2`` (swapping every sentence reverses the difference).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .power import BleuMDEResult, BleuPowerResult, mde, power
from .presets import TABLE3, BleuParams, preset
from .process import DeltaLaplaceFit, draw_effects, fit_delta_laplace

if TYPE_CHECKING:  # pragma: no cover
    from .estimate import BleuEstimateResult, SubsetCheck, estimate
    from .grid import BleuProblem, power_grid
    from .plots import figure4, figure17

# Imported on first use, so that ``bleu.power`` costs no pandas, tqdm or
# matplotlib import: name -> submodule.
_LAZY = {
    "BleuEstimateResult": ".estimate", "SubsetCheck": ".estimate", "estimate": ".estimate",
    "BleuProblem": ".grid", "power_grid": ".grid", "figure4": ".plots", "figure17": ".plots",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'nlpower.bleu' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(types.ModuleType):
    """Importing the submodule ``nlpower.bleu.estimate`` must not hide the function ``estimate``."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "TABLE3",
    "BleuEstimateResult",
    "BleuMDEResult",
    "BleuParams",
    "BleuPowerResult",
    "BleuProblem",
    "DeltaLaplaceFit",
    "SubsetCheck",
    "draw_effects",
    "estimate",
    "figure17",
    "figure4",
    "fit_delta_laplace",
    "mde",
    "power",
    "power_grid",
    "preset",
]
