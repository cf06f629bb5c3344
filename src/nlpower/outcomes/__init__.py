"""Outcomes beyond Gaussian ratings: Likert (ordinal) ratings and their power.

:class:`LikertParams` is the latent crossed worker x item model with
thresholds (from the user, or mapped from the paper's presets by
:meth:`LikertParams.from_preset`); :func:`simulate_likert` draws ratings;
:func:`likert_power` runs simulate -> analyse -> test with the paper's LMM
on [0, 1] (``analysis="lmm"``).  See ``docs/power.md``.
"""

from .likert import LikertParams, check_levels, simulate_likert, simulate_likert_y
from .power import AnalysisComparison, likert_power

__all__ = [
    "AnalysisComparison",
    "LikertParams",
    "check_levels",
    "likert_power",
    "simulate_likert",
    "simulate_likert_y",
]
