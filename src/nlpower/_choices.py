"""Every allowed value of a string option, as ``Literal`` types, and one check.

One place lists what ``coding=``, ``test=``, ``alternative=``, ``method=``,
``engine=``, ``backend=`` and ``on_error=`` accept, so the API, the CLI and
the error messages never disagree.  :func:`check_choice` validates a value
against a ``Literal`` (or any iterable of allowed values) at the public
boundary.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from ._validation import allowed, check_choice

__all__ = [
    "Alternative",
    "AnalyticMethod",
    "Backend",
    "Coding",
    "Duplicates",
    "EngineName",
    "FailurePolicy",
    "GlmerFamily",
    "ItemScheme",
    "LaplaceWeights",
    "MDEMethod",
    "OnError",
    "PowerMethod",
    "RatingsModel",
    "RatingsTest",
    "AssuranceMethod",
    "UnequalSDs",
    "allowed",
    "check_choice",
]

# --- shared by every power calculation -------------------------------------------------

#: scipy's ``alternative``.  Power counts only sign-correct rejections.
Alternative: TypeAlias = Literal["two-sided", "greater", "less"]
#: What a grid does with a cell that raises: keep it as a failed cell, also warn, or stop.
OnError: TypeAlias = Literal["record", "warn", "raise"]
#: Where grid cells run: joblib/loky processes or a Dask cluster.
Backend: TypeAlias = Literal["loky", "dask"]

# --- human ratings (designs, mixed models, power) ---------------------------------------

#: How the system indicator is coded: x = +-1 (the paper's), +-0.5, or 0/1.
Coding: TypeAlias = Literal["sum", "half", "treatment"]
#: How items relate to systems: each item rendered by every system, or one system's output.
ItemScheme: TypeAlias = Literal["paired", "nested"]
#: What read_ratings does with repeated (worker, item, system) ratings.
Duplicates: TypeAlias = Literal["error", "keep", "mean"]
#: Mixed-model fitters: the embedded native engine, or lme4 through rpy2.
EngineName: TypeAlias = Literal["native", "lme4"]
#: Families ``glmer`` fits (the CLI's ``--family`` of GLMMs).
GlmerFamily: TypeAlias = Literal["binomial", "poisson", "negative_binomial"]
#: The weights of a GLMM's Laplace approximation at the mode: PIRLS's expected (Fisher)
#: information, as lme4's ``glmer``, or the observed information, as glmmTMB (they differ
#: for non-canonical links only, e.g. probit or the negative binomial's log link).
LaplaceWeights: TypeAlias = Literal["expected", "observed"]
#: How power is computed: balanced fast path when exact, else simulate; or forced.
PowerMethod: TypeAlias = Literal["auto", "balanced", "simulate", "analytic"]
#: Tests of the system effect in a mixed model: Wald t with Satterthwaite or Kenward-Roger df
#: (REML), Wald z, likelihood ratio against chi^2_1, parametric-bootstrap likelihood ratio (ML).
#: ``"calibrated"``: Satterthwaite prepivoted by a bootstrap from the REML null fit.
RatingsTest: TypeAlias = Literal["satterthwaite", "kenward-roger", "z", "lrt", "pblrt", "calibrated"]
#: What power() does when replicate fits fail: count them as non-detections (recorded in the
#: result), also warn, or stop with an error naming the replicate (STYLE 6).
FailurePolicy: TypeAlias = Literal["ignore", "warn", "raise"]
#: How analytic_power() gets the estimate's variance and df: expected mean squares of the
#: balanced design, expected information of any design, or the first when it applies.
AnalyticMethod: TypeAlias = Literal["auto", "balanced", "information"]
#: How mde() answers: the analytic power curve alone, or also a simulation at the MDE.
MDEMethod: TypeAlias = Literal["analytic", "simulation"]
#: What a conversion to +-1 parameters does when the two systems' SDs differ
#: (``nlpower.params.pm1_random_effects``): stop, warn when material, or drop silently.
UnequalSDs: TypeAlias = Literal["raise", "warn", "ignore"]
#: Which model ``fit_ratings`` fits: identified per-system variances for nested factors, or always the paper's.
RatingsModel: TypeAlias = Literal["auto", "paper"]

# --- pilot -> plan (nlpower.pilot) -------------------------------------------------------

#: How a pilot's sampling distribution of variance components is described.
AssuranceMethod: TypeAlias = Literal["bootstrap", "asymptotic"]

# --- accuracy (McNemar) -----------------------------------------------------------------

#: McNemar tests of a paired accuracy difference: exact conditional (statsmodels'
#: ``mcnemar`` default, the paper's), mid-p, asymptotic chi-square without / with
#: continuity correction, and Suissa & Shuster's (1991) exact unconditional test.
McNemarTest: TypeAlias = Literal["exact", "mid-p", "chi2", "chi2-cc", "exact-unconditional"]
#: How accuracy power is computed: exact enumeration of the table, or the paper's simulation.
AccuracyMethod: TypeAlias = Literal["exact", "simulate"]
#: Tests an accuracy MDE / sample size can be solved for: the McNemar tests (exact power),
#: the normal-approximation McNemar power (Connor 1987), the unpaired two-proportion test
#: (R ``power.prop.test``) and the no-prior Lachenbruch (1992) bounds.
AccuracyPlanTest: TypeAlias = Literal[
    "exact", "mid-p", "chi2", "chi2-cc", "exact-unconditional", "mcnemar-normal",
    "two-proportion", "lachenbruch",
]
#: Sample-size formula behind the Lachenbruch bounds: biostatUZH's ``sampleSizeMcNemar``
#: (the one Card et al. used for Table 9) or Connor's (1987).
LachenbruchFormula: TypeAlias = Literal["biostatuzh", "connor"]
#: Which Lachenbruch (1992) bound: minimal, middle or maximal discordance.
LachenbruchBound: TypeAlias = Literal["lower", "mid", "upper"]
#: Regression priors for the agreement rate (Card et al. 2020, Tables 5 and 6).
AgreementPrior: TypeAlias = Literal["glue", "squad"]
#: Classification metrics with a paired randomization test (Card et al. 2020, App. F).
ClassMetric: TypeAlias = Literal["f1", "macro-f1", "mcc", "accuracy"]

# --- BLEU (randomization test) ----------------------------------------------------------

#: How BLEU power tests each simulated comparison: the Monte Carlo randomization test
#: (the paper's), or its normal limit (the permutation null's exact mean and variance).
BleuMethod: TypeAlias = Literal["randomization", "normal"]
#: sacrebleu's BLEU smoothing methods (``exp`` is sacrebleu's default for corpus BLEU).
BleuSmooth: TypeAlias = Literal["exp", "floor", "add-k", "none"]
#: Table 3 of Card et al. (2020): one row per MT comparison, and their average.
BleuPreset: TypeAlias = Literal["TF19-TF18", "TF18-TF16", "TF16-Conv17", "TF16-Conv14", "average"]

# --- paired score comparison and replicability -------------------------------------------

#: Tests of two systems' paired scores (NLPStatTest, Zhu et al. 2020, sec. 3.2).
PairedTest: TypeAlias = Literal[
    "t", "wilcoxon", "sign", "bootstrap_t", "bootstrap_percentile", "permutation"]
#: Tests that retrospective power can simulate (vectorised over replicates).
PairedPowerTest: TypeAlias = Literal["t", "wilcoxon", "sign"]
#: How an evaluation unit (EU) of m instances is summarised.
EUStat: TypeAlias = Literal["mean", "median"]
#: The central tendency a paired comparison is about.
Center: TypeAlias = Literal["mean", "median"]
#: Retrospective power: simulate from a normal, or resample the observed differences.
RetroPowerMethod: TypeAlias = Literal["normal", "bootstrap"]
#: Family-wise adjustment of many pairwise comparisons.
PairwiseAdjust: TypeAlias = Literal["holm", "bonferroni", "none"]
#: Partial-conjunction combination of per-dataset p-values (Dror et al. 2017).
ReplicabilityMethod: TypeAlias = Literal["bonferroni", "fisher"]
