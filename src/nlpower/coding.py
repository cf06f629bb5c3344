"""The numeric coding of the system indicator ``x`` (two systems).

``"sum"`` (x = -1 baseline, +1 other system; Card et al. 2020's), ``"half"``
(x = -0.5 / +0.5: the coefficient is the mean difference) or ``"treatment"``
(x = 0 / 1: the intercept is the baseline mean) -- the values of
:data:`nlpower._choices.Coding`.  :func:`check_coding` is the one check of a
``coding=`` argument (parameters, designs, rating fits).
"""

from __future__ import annotations

from typing import Any, cast

from ._choices import Coding, allowed, check_choice
from .errors import InputError

__all__ = ["CODINGS", "X_VALUES", "check_coding", "x_values"]

#: The codings of ``x`` (:data:`nlpower._choices.Coding`).
CODINGS: tuple[str, ...] = allowed(Coding)

#: Numeric value of x for (baseline, other system) under each coding.
X_VALUES: dict[str, tuple[float, float]] = {
    "sum": (-1.0, 1.0),
    "half": (-0.5, 0.5),
    "treatment": (0.0, 1.0),
}

_CODING_HELP = (
    "'sum' (x = -1 for the baseline, +1 for the other system; Card et al.'s coding), "
    "'half' (x = -0.5 / +0.5, effect = mean difference) or "
    "'treatment' (x = 0 / 1, intercept = baseline mean)"
)


def check_coding(coding: Any, *, error: type[InputError] = InputError) -> Coding:
    """``coding`` if it is one of :data:`~nlpower._choices.Coding`, else ``error`` saying what each means.

    The one check of ``coding=`` (parameters, designs, rating fits; ``error``
    lets :func:`~nlpower.ratings.fit_ratings` raise its
    :class:`~nlpower.errors.RatingsError`).
    """
    try:
        return cast(Coding, check_choice("coding", coding, Coding))
    except InputError as exc:
        raise error(f"{exc} Use {_CODING_HELP}.") from None


def x_values(coding: Coding) -> tuple[float, float]:
    """Numeric ``x`` of (baseline, other system) under ``coding``."""
    return X_VALUES[check_coding(coding)]
