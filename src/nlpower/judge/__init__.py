"""An LLM judge beside human raters: prediction-powered estimates and power.

:func:`fit` estimates system differences on the human scale from crossed
human ratings (workers x items) on a subset of items and judge scores on all
items, by PPI++ with the rectifier fitted as a crossed mixed model;
:func:`ppi_mean` and :func:`ppi_mean_difference` (two independent groups)
are prediction-powered inference for i.i.d. labels (PPI / PPI++, equal to
``ppi-python``); :func:`simulate_study` draws such studies;
:func:`judge_power`, :func:`judge_mde` and :func:`judge_plan` give closed-form
power, detectable effects and the cheapest design with and without the judge.
"""

from __future__ import annotations

from .assurance import JudgeAssurance, judge_assurance
from .data import JudgeData, prepare
from .difference import ppi_mean_difference
from .fit import fit
from .grid import JudgeProblem, simulate_judge_power
from .iid import MeanEstimate, ppi_mean, tuned_lambda
from .plots import plot_power_curve, power_curve_data
from .power import JudgeDesign, JudgePower, judge_mde, judge_plan, judge_power
from .result import JudgeFit
from .simulate import simulate_study

__all__ = ["JudgeAssurance", "JudgeData", "JudgeDesign", "JudgeFit", "JudgePower", "JudgeProblem", "MeanEstimate",
           "fit", "judge_assurance", "judge_mde", "judge_plan", "judge_power", "plot_power_curve", "power_curve_data",
           "ppi_mean", "ppi_mean_difference", "prepare",
           "simulate_judge_power", "simulate_study", "tuned_lambda"]
