"""Paired comparison of two systems' scores: NLPStatTest in nlpower's style.

Zhu et al. (2020), *NLPStatTest: A Toolkit for Comparing NLP System
Performance* (AACL demo): evaluation units, data analysis (skewness rule,
Shapiro-Wilk, recommended tests), paired significance tests with p-values and
intervals, effect sizes, prospective and retrospective power, pairwise
comparisons of many systems with a family-wise adjustment, and a report.

>>> import numpy as np
>>> from nlpower import paired
>>> gen = np.random.default_rng(0)
>>> b = gen.uniform(0.2, 0.8, 200); a = b + gen.normal(0.05, 0.1, 200)
>>> res = paired.compare(a, b, rng=1)
>>> res.test, round(res.effect_sizes.cohens_d, 2)
('wilcoxon', 0.4)
"""

from __future__ import annotations

from .analysis import DataAnalysisResult, Recommendation
from .compare import CompareResult, analyze, compare
from .effects import EffectSizes, effect_sizes, hedges_j, hodges_lehmann, wilcoxon_z
from .io import PairedScores, read_scores
from .pairwise import PairwiseResult, adjust_pvalues, pairwise
from .plots import plot_histograms, plot_pairwise, plot_power_curve
from .power import (
    PairedPowerResult,
    PowerCurveResult,
    SampleSizeResult,
    observed_power,
    power_curve,
    retrospective_power,
    sample_size,
    t_power,
)
from .units import EvaluationUnits, evaluation_units

__all__ = [
    "CompareResult",
    "DataAnalysisResult",
    "EffectSizes",
    "EvaluationUnits",
    "PairedPowerResult",
    "PairedScores",
    "PairwiseResult",
    "PowerCurveResult",
    "Recommendation",
    "SampleSizeResult",
    "adjust_pvalues",
    "analyze",
    "compare",
    "effect_sizes",
    "evaluation_units",
    "hedges_j",
    "hodges_lehmann",
    "observed_power",
    "pairwise",
    "plot_histograms",
    "plot_pairwise",
    "plot_power_curve",
    "power_curve",
    "read_scores",
    "retrospective_power",
    "sample_size",
    "t_power",
    "wilcoxon_z",
]
