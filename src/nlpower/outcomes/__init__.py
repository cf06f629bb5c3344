"""Outcomes beyond Gaussian ratings: Likert (ordinal) ratings and their power.

:class:`LikertParams` is the latent crossed worker x item model with
thresholds (from the user, or mapped from the paper's presets by
:meth:`LikertParams.from_preset`); :func:`simulate_likert` draws ratings;
:func:`likert_power` runs simulate -> analyse -> test with the paper's LMM
on [0, 1] (``analysis="lmm"``) or the cumulative link mixed model
(``"clmm"``), several on the same replicates.  :class:`HeadToHeadParams` and
:func:`headtohead_power`: repeated head-to-head judgements from a logistic
crossed model, analysed by glmer.  See ``docs/power.md``.
"""

from .headtohead import HeadToHeadParams, headtohead_power
from .likert import LikertParams, check_levels, simulate_likert, simulate_likert_y
from .power import AnalysisComparison, likert_power

__all__ = [
    "AnalysisComparison",
    "HeadToHeadParams",
    "headtohead_power",
    "LikertParams",
    "check_levels",
    "likert_power",
    "simulate_likert",
    "simulate_likert_y",
]
