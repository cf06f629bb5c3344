"""The response of a GLMM: forms, prior weights, offset, and the conditional log-likelihood.

Response forms, as R's ``glm``/lme4's ``glmer``:

* binomial: 0/1 numbers or bools; a two-level factor (strings or a pandas
  Categorical: the *first* level is failure, 0, as R); or proportions in
  [0, 1] with ``weights=`` the numbers of trials (``cbind(successes,
  failures)`` in R is ``successes / trials`` with ``weights = trials``);
* poisson and negative binomial: non-negative integer counts.

Every check raises :class:`~nlpower.errors.InputError` with what to do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..lmm.family import Binomial, Family

__all__ = ["binary_response", "check_response", "cond_m2loglik", "prior_weights", "offset_vector"]


def cond_m2loglik(family: Family, y: np.ndarray, mu: np.ndarray, wt: np.ndarray) -> float:
    """``-2 log p(y | mu)``: R's ``family()$aic`` without the ``2 * rank`` term.

    The family's own (its ``m2loglik``).  Binomial: ``-2 sum (wt/m) log
    dbinom(round(m y), round(m), mu)`` with ``m = wt`` (so binary data with
    unit weights give ``-2 sum log dbinom(y, 1, mu)``); Poisson: ``-2 sum wt
    log dpois(y, mu)``; negative binomial: ``-2 sum wt log dnbinom(y, theta, mu)``.

    Examples
    --------
    >>> from nlpower.lmm.family import Binomial
    >>> round(cond_m2loglik(Binomial(), np.array([1.0, 0.0]), np.array([0.5, 0.5]), np.ones(2)), 6)
    2.772589
    """
    return float(family.m2loglik(y, mu, wt))  # type: ignore[attr-defined]


def binary_response(col: pd.Series, name: str) -> np.ndarray:
    """A binomial response column as floats: 0/1, bools, proportions or a two-level factor."""
    return Binomial().response_column(col, name)


def prior_weights(weights: Any, data: pd.DataFrame, n: int, keep: np.ndarray | None) -> np.ndarray:
    """``weights=`` as an array: a column name, an array of length ``len(data)``, or ``None`` (ones)."""
    return _vector("weights", weights, data, n, keep, default=1.0, nonneg=True)


def offset_vector(offset: Any, data: pd.DataFrame, n: int, keep: np.ndarray | None) -> np.ndarray:
    """``offset=`` as an array (a column name or an array; ``None``: zeros)."""
    return _vector("offset", offset, data, n, keep, default=0.0, nonneg=False)


def _vector(what: str, value: Any, data: pd.DataFrame, n: int, keep: np.ndarray | None, *,
            default: float, nonneg: bool) -> np.ndarray:
    if value is None:
        return np.full(n, default)
    if isinstance(value, str):
        if value not in data.columns:
            raise InputError(f"{what}={value!r} is not a column of the data; give a column name "
                             f"or an array with one value per row.")
        arr = pd.to_numeric(data[value], errors="coerce").to_numpy(dtype=float)
    else:
        arr = np.asarray(value, dtype=float).ravel()
        if arr.shape != (len(data),):
            raise InputError(f"{what} must have one value per row of data ({len(data)}); got "
                             f"shape {np.shape(value)}.")
    if keep is not None:
        arr = arr[keep]
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what} has missing or infinite values; drop those rows first.")
    if nonneg and np.any(arr < 0):
        raise InputError(f"{what} must be non-negative (numbers of trials); got a minimum of "
                         f"{float(arr.min()):g}.")
    return arr


def check_response(family: Family, y: np.ndarray, wt: np.ndarray, name: str = "y") -> None:
    """The response values a family accepts (lme4's checks and the all-0/all-1 case)."""
    if not np.all(np.isfinite(y)):
        raise InputError(f"the response {name!r} has missing or infinite values; drop those rows.")
    family.check_values(y, wt, name)  # type: ignore[attr-defined]
