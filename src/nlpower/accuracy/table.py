"""The 2x2 table of two classifiers on one test item, from (baseline, delta, agreement).

Card et al. (2020), section 3.1 and App. C: with ``delta`` the expected gain in
accuracy of the new model (M2) over the old one (M1) and ``agreement`` (Pa) the
share of items on which both are right or both wrong,

    p(only new correct) = (1 - Pa + delta) / 2
    p(only old correct) = (1 - Pa - delta) / 2

McNemar's test looks only at these two cells; the baseline accuracy fills the
diagonal (``both correct = baseline - p(only old)``) and is needed only to
check that the whole table exists.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .._validation import check_real
from ..errors import InputError

__all__ = ["AgreementBounds", "PairedTable", "agreement_bounds", "paired_table"]

#: Cells may be negative by this much (rounding in user input) before it is an error.
_TOL = 1e-12


@dataclass(frozen=True)
class PairedTable:
    """Cell probabilities of two classifiers on one item (Card et al. 2020, Table 1).

    ``both_correct`` and ``both_wrong`` are ``None`` when no baseline accuracy
    was given (McNemar's test does not need them).
    """

    delta: float
    agreement: float
    only_new: float
    only_old: float
    baseline: float | None = None
    both_correct: float | None = None
    both_wrong: float | None = None

    @property
    def discordant(self) -> float:
        """Probability that exactly one model is right: ``1 - agreement``."""
        return self.only_new + self.only_old

    @property
    def new_accuracy(self) -> float | None:
        return None if self.baseline is None else self.baseline + self.delta

    def to_frame(self) -> pd.DataFrame:
        """The table as in Card et al. (2020), Table 4: rows M2 (new), columns M1 (old)."""
        return pd.DataFrame(
            {"old correct": [self.both_correct, self.only_old],
             "old incorrect": [self.only_new, self.both_wrong]},
            index=pd.Index(["new correct", "new incorrect"]),
        )

    def __repr__(self) -> str:
        diag = "" if self.baseline is None else (
            f", both_correct={self.both_correct:.4g}, both_wrong={self.both_wrong:.4g}")
        return (f"PairedTable(only_new={self.only_new:.4g}, only_old={self.only_old:.4g}{diag})")


def paired_table(delta: float, agreement: float, baseline: float | None = None) -> PairedTable:
    """The 2x2 table implied by ``delta``, ``agreement`` and (optionally) ``baseline``.

    Parameters
    ----------
    delta : float
        Expected accuracy of the new model minus the old (baseline) model.
    agreement : float
        Expected share of items where both models are right or both wrong (Pa).
    baseline : float, optional
        Expected accuracy of the old model; fills the diagonal.

    Raises
    ------
    InputError
        When a cell would be negative, naming it and the largest allowed value.

    Examples
    --------
    Card et al. (2020), Table 4:

    >>> paired_table(0.02, 0.9, baseline=0.64)
    PairedTable(only_new=0.06, only_old=0.04, both_correct=0.6, both_wrong=0.3)
    """
    delta = check_real("delta", delta, min=-1.0, max=1.0)
    agreement = check_real("agreement", agreement, min=0.0, max=1.0)
    only_new = (1.0 - agreement + delta) / 2.0
    only_old = (1.0 - agreement - delta) / 2.0
    if min(only_new, only_old) < -_TOL:
        cell = "p(only old correct) = (1 - agreement - delta)/2" if only_old < only_new else \
            "p(only new correct) = (1 - agreement + delta)/2"
        raise InputError(
            f"delta={delta:g} with agreement={agreement:g} is impossible: {cell} = "
            f"{min(only_new, only_old):.4g} < 0. |delta| can be at most 1 - agreement = "
            f"{1 - agreement:.4g}; lower |delta| or the agreement."
        )
    only_new, only_old = max(only_new, 0.0), max(only_old, 0.0)
    if baseline is None:
        return PairedTable(delta, agreement, only_new, only_old)
    baseline = check_real("baseline", baseline, min=0.0, max=1.0)
    both_correct = baseline - only_old
    both_wrong = 1.0 - baseline - only_new
    if both_correct < -_TOL or both_wrong < -_TOL:
        lo, hi = agreement_bounds(baseline, delta) if 0 <= baseline + delta <= 1 else (None, None)
        hint = ("the new accuracy baseline + delta must lie in [0, 1]" if lo is None else
                f"with baseline={baseline:g} and delta={delta:g} the agreement must lie in "
                f"[{lo:.4g}, {hi:.4g}] (nlpower.accuracy.agreement_bounds)")
        cell = "both_correct = baseline - p(only old correct)" if both_correct < -_TOL else \
            "both_wrong = 1 - baseline - p(only new correct)"
        value = both_correct if both_correct < -_TOL else both_wrong
        raise InputError(
            f"baseline={baseline:g}, delta={delta:g}, agreement={agreement:g} is impossible: "
            f"{cell} = {value:.4g} < 0; {hint}."
        )
    return PairedTable(delta, agreement, only_new, only_old, baseline,
                       max(both_correct, 0.0), max(both_wrong, 0.0))


@dataclass(frozen=True)
class AgreementBounds:
    """Smallest and largest agreement two accuracies allow (Card et al. 2020 notebook)."""

    low: float
    high: float
    baseline: float
    delta: float

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter((self.low, self.high))

    def __repr__(self) -> str:
        return f"AgreementBounds(low={self.low:.4g}, high={self.high:.4g})"


def agreement_bounds(baseline: float, delta: float) -> AgreementBounds:
    """The range of agreement Pa compatible with accuracies ``baseline`` and ``baseline + delta``.

    With accuracies a1 (old) and a2 (new), the discordant share ranges from
    ``|a2 - a1|`` (one model is right whenever the other is: maximal agreement
    ``1 - |delta|``) to ``min(a2, 1 - a1) + min(a1, 1 - a2)`` (the models' errors
    overlap as little as possible: minimal agreement).  These are the bounds of
    Card et al.'s accuracy notebook and of Lachenbruch (1992).

    Examples
    --------
    >>> agreement_bounds(0.8, 0.02)
    AgreementBounds(low=0.62, high=0.98)
    """
    baseline = check_real("baseline", baseline, min=0.0, max=1.0)
    delta = check_real("delta", delta, min=-1.0, max=1.0)
    a1, a2 = baseline, baseline + delta
    if not 0.0 <= a2 <= 1.0:
        raise InputError(
            f"baseline + delta = {a2:g} is not an accuracy: with baseline={baseline:g}, delta "
            f"must lie in [{-baseline:g}, {1 - baseline:g}]."
        )
    max_discordant = min(a2, 1.0 - a1) + min(a1, 1.0 - a2)
    return AgreementBounds(1.0 - max_discordant, 1.0 - abs(delta), baseline, delta)
