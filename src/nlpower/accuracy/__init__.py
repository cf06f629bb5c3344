"""Power for comparing two classifiers on accuracy (Card et al. 2020, section 3, App. C, E, F).

A paired test set of ``n`` items, two models, McNemar's test:

* :func:`power` -- power, Type-M and Type-S, exactly (enumeration) or by the
  paper's simulation; :func:`power_bounds` when only the accuracies are known;
* :func:`mde`, :func:`sample_size`, :func:`closed_form_power` -- planning with
  the McNemar tests, the normal approximation, Lachenbruch's (1992) no-prior
  bounds or the unpaired two-proportion test; :func:`table9` reproduces the
  paper's Table 9;
* the paper's priors: :func:`glue_agreement`, :func:`squad_agreement`
  (Tables 5-6), :func:`glue_effect`, :func:`squad_effect` (Tables 7-8), and
  :func:`fit_agreement_prior` / :func:`fit_effect_prior` to refit them from a
  user's own table;
* :func:`estimate` / :func:`plan_from_dev` -- from two models' predictions;
* :func:`metric_power` -- F1, macro-F1, MCC by a paired randomization test (App. F);
* :func:`power_grid` and the figures in :mod:`nlpower.accuracy.plots` (Figs 3, 7, 8).
"""

from __future__ import annotations

from .estimate import AccuracyEstimateResult, estimate, plan_from_dev
from .fitprior import (
    AgreementPriorFit,
    EffectPriorFit,
    fit_agreement_prior,
    fit_effect_prior,
    paper_agreement_prior,
)
from .grid import AccuracyProblem, power_grid
from .mcnemar import McNemarResult, mcnemar, mcnemar_pvalue
from .metrics import MetricPowerResult, metric_power
from .planning import (
    AccuracyMDEResult,
    AccuracySampleSizeResult,
    closed_form_power,
    lachenbruch_discordance,
    mde,
    sample_size,
    table9,
)
from .plots import figure3, figure7, figure8
from .power import AccuracyPowerResult, PowerBoundsResult, power, power_bounds
from .priors import (
    TABLE9,
    agreement_prior,
    glue_agreement,
    glue_effect,
    squad_agreement,
    squad_effect,
)
from .table import AgreementBounds, PairedTable, agreement_bounds, paired_table

__all__ = [
    "TABLE9",
    "AccuracyEstimateResult",
    "AccuracyProblem",
    "AccuracyMDEResult",
    "AccuracyPowerResult",
    "AccuracySampleSizeResult",
    "AgreementBounds",
    "AgreementPriorFit",
    "EffectPriorFit",
    "McNemarResult",
    "MetricPowerResult",
    "PairedTable",
    "PowerBoundsResult",
    "agreement_bounds",
    "agreement_prior",
    "closed_form_power",
    "estimate",
    "figure3",
    "fit_agreement_prior",
    "fit_effect_prior",
    "figure7",
    "figure8",
    "glue_agreement",
    "glue_effect",
    "lachenbruch_discordance",
    "mcnemar",
    "mcnemar_pvalue",
    "mde",
    "metric_power",
    "paired_table",
    "paper_agreement_prior",
    "plan_from_dev",
    "power",
    "power_bounds",
    "power_grid",
    "sample_size",
    "squad_agreement",
    "squad_effect",
    "table9",
]
