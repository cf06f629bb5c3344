"""The paper's regression priors and the benchmark data behind Table 9.

Card et al. (2020), App. E.2, fitted by OLS on the GLUE leaderboard and on
SQuAD 2.0 submissions (coefficients as printed; all accuracies here are
fractions in [0, 1]):

* agreement (overlap) of two models, Table 5 (GLUE, R^2 0.966) and Table 6
  (SQuAD 2.0, R^2 0.944): ``overlap = b0 + b1 min_acc + b2 acc_diff``;
* the expected gain of the next SOTA claim, Table 7 (GLUE, by task, in
  percentage points) and Table 8 (SQuAD 2.0): ``effect = b0 + b1 baseline``.

``TABLE9`` holds the test-set sizes, SOTA accuracies (May 6th, 2020) and the
printed Table 9 columns, so :func:`nlpower.accuracy.table9` can set what the
package computes beside what the paper printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._choices import AgreementPrior, check_choice
from .._validation import check_real
from ..errors import InputError

__all__ = [
    "AGREEMENT_PRIORS",
    "GLUE_EFFECT_TASKS",
    "TABLE9",
    "Table9Row",
    "agreement_prior",
    "glue_agreement",
    "glue_effect",
    "squad_agreement",
    "squad_effect",
]

#: (constant, min_acc, acc_diff) of the overlap regressions, Tables 5 and 6.
AGREEMENT_PRIORS: dict[str, tuple[float, float, float]] = {
    "glue": (0.4142, 0.5819, -0.4662),
    "squad": (0.4339, 0.5932, -1.2849),
}

#: Table 7: task dummies (MNLI-m is the reference level), percentage points.
GLUE_EFFECT_TASKS: dict[str, float] = {
    "MNLI-m": 0.0, "MNLI-mm": 0.150, "MRPC": 0.023, "QNLI": 2.139, "QQP": -0.195,
    "RTE": 1.018, "SST-2": 1.536, "WNLI": -0.520,
}
_GLUE_EFFECT_CONST, _GLUE_EFFECT_SLOPE = 24.342, -0.264   # Table 7, percentage points
_SQUAD_EFFECT = (0.1331, -0.1408)                           # Table 8, fractions


def glue_agreement(min_acc: Any, acc_diff: Any) -> Any:
    """Expected agreement of two GLUE models, Card et al. (2020) Table 5 / eq. (2).

    ``0.4142 + 0.5819 min_acc - 0.4662 acc_diff``; vectorised.

    Examples
    --------
    >>> round(glue_agreement(0.92, 0.0162), 4)
    0.942
    """
    return _overlap("glue", min_acc, acc_diff)


def squad_agreement(min_acc: Any, acc_diff: Any) -> Any:
    """Expected agreement of two SQuAD 2.0 models, Card et al. (2020) Table 6.

    ``0.4339 + 0.5932 min_acc - 1.2849 acc_diff``; vectorised.

    Examples
    --------
    >>> round(squad_agreement(0.90724, 0.00556), 4)
    0.9649
    """
    return _overlap("squad", min_acc, acc_diff)


def _overlap(prior: str, min_acc: Any, acc_diff: Any) -> Any:
    b0, b1, b2 = AGREEMENT_PRIORS[prior]
    out = b0 + b1 * np.asarray(min_acc, dtype=float) + b2 * np.asarray(acc_diff, dtype=float)
    return float(out) if np.ndim(out) == 0 else out


def agreement_prior(prior: AgreementPrior, baseline: float, delta: float) -> float:
    """Agreement from a named prior for models with accuracies ``baseline`` and ``baseline + delta``.

    ``min_acc`` is the lower of the two accuracies and ``acc_diff`` their absolute gap,
    as in the regressions.

    Examples
    --------
    >>> round(agreement_prior("glue", 0.8, 0.02), 4)
    0.8704
    """
    prior = check_choice("agreement", prior, AgreementPrior)
    baseline = check_real("baseline", baseline, min=0.0, max=1.0)
    return float(_overlap(prior, min(baseline, baseline + delta), abs(delta)))


def glue_effect(task: str, previous_best: float) -> float:
    """Expected gain of the next SOTA claim on a GLUE task, Card et al. (2020) Table 7.

    ``(24.342 - 0.264 * 100 previous_best + task dummy) / 100`` -- a fraction of
    accuracy (the regression is in percentage points).  The printed slope is
    rounded: the table's own Delta-hat column is about 0.04 points lower.

    Examples
    --------
    >>> round(100 * glue_effect("RTE", 0.917), 3)
    1.151
    """
    if task not in GLUE_EFFECT_TASKS:
        raise InputError(
            f"task must be one of {', '.join(map(repr, GLUE_EFFECT_TASKS))} (Table 7); "
            f"got {task!r}."
        )
    previous_best = check_real("previous_best", previous_best, min=0.0, max=1.0)
    pp = _GLUE_EFFECT_CONST + _GLUE_EFFECT_SLOPE * 100.0 * previous_best + GLUE_EFFECT_TASKS[task]
    return pp / 100.0


def squad_effect(baseline: float) -> float:
    """Expected gain of the next SQuAD 2.0 SOTA, Card et al. (2020) Table 8: ``0.1331 - 0.1408 baseline``.

    Examples
    --------
    >>> round(100 * squad_effect(0.90724), 3)
    0.536
    """
    baseline = check_real("baseline", baseline, min=0.0, max=1.0)
    return _SQUAD_EFFECT[0] + _SQUAD_EFFECT[1] * baseline


@dataclass(frozen=True)
class Table9Row:
    """One row of Card et al. (2020) Table 9 as printed (percentage points)."""

    task: str
    n: int
    sota: float                 # fraction
    prior: str                  # agreement prior used for the regression MDE
    mde_binomial: float
    mde_lachenbruch: float
    mde_lachenbruch_lower: float
    mde_lachenbruch_upper: float
    mde_regression: float
    delta_hat: float


#: Card et al. (2020) Table 9 (and Table 2) as printed.
TABLE9: tuple[Table9Row, ...] = (
    Table9Row("WNLI", 147, 0.945, "glue", 5.38, 5.42, 5.36, 5.45, 5.26, -1.17),
    Table9Row("MRPC", 1725, 0.920, "glue", 2.40, 1.91, 0.45, 2.48, 1.62, 0.03),
    Table9Row("SST-2", 1821, 0.972, "glue", 1.34, 1.10, 0.43, 1.35, 1.02, 0.18),
    Table9Row("RTE", 3000, 0.917, "glue", 1.89, 1.48, 0.26, 1.96, 1.23, 1.11),
    Table9Row("QNLI", 5463, 0.975, "glue", 0.77, 0.60, 0.14, 0.78, 0.55, 0.69),
    Table9Row("MNLI-m", 9796, 0.916, "glue", 1.08, 0.82, 0.08, 1.12, 0.67, 0.12),
    Table9Row("MNLI-mm", 9847, 0.913, "glue", 1.09, 0.84, 0.08, 1.14, 0.68, 0.34),
    Table9Row("QQP", 390965, 0.910, "glue", 0.18, 0.13, 8.45e-5, 0.19, 0.11, 0.08),
    Table9Row("SQuAD 2.0", 8862, 0.90724, "squad", 1.18, 0.91, 0.09, 1.23, 0.556, 0.528),
)
