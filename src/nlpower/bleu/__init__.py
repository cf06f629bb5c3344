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

from .estimate import BleuEstimateResult, SubsetCheck, estimate
from .grid import BleuProblem, power_grid
from .plots import figure4, figure17
from .power import BleuMDEResult, BleuPowerResult, mde, power
from .presets import TABLE3, BleuParams, preset
from .process import DeltaLaplaceFit, draw_effects, fit_delta_laplace

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
