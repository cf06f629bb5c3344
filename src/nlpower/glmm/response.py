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
from ..lmm.family import Family

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
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = [c for c in col.cat.categories if (col == c).any()]
        if len(cats) != 2:
            raise InputError(
                f"the response {name!r} is a factor with {len(cats)} used level(s) "
                f"({', '.join(map(repr, cats[:5]))}); a binomial response needs exactly two "
                "(the first is failure, 0). Recode it, e.g. (data[col] == 'yes').astype(int).")
        return (col == cats[1]).to_numpy(dtype=float)
    if pd.api.types.is_bool_dtype(col.dtype):
        return col.to_numpy(dtype=float)
    if not pd.api.types.is_numeric_dtype(col.dtype):
        vals = sorted(map(str, pd.unique(col.dropna())))
        if len(vals) != 2:
            raise InputError(
                f"the response {name!r} has {len(vals)} distinct values "
                f"({', '.join(map(repr, vals[:5]))}{' ...' if len(vals) > 5 else ''}); a binomial "
                "response is 0/1, a two-level factor or proportions with weights=.")
        return (col.astype(str) == vals[1]).to_numpy(dtype=float)
    return col.to_numpy(dtype=float)


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
    if family.name == "binomial":
        if np.any((y < 0) | (y > 1)):
            bad = np.unique(y[(y < 0) | (y > 1)])[:5]
            raise InputError(
                f"a binomial response must be 0/1 (or proportions in [0, 1] with weights= the "
                f"numbers of trials); {name!r} has values {', '.join(map(repr, bad.tolist()))}. "
                "Recode it, e.g. (y > 0).astype(int), or pass successes / trials with weights=trials.")
        frac = (y > 0) & (y < 1)
        if np.any(frac) and np.all(wt == 1.0):
            raise InputError(
                f"the response {name!r} has proportions between 0 and 1 but no weights=: give the "
                "numbers of trials, glmer('p ~ ...', data, weights='trials') (R: cbind(k, n - k)).")
        k = y * wt
        if np.any(np.abs(k - np.round(k)) > 1e-7 * np.maximum(1.0, wt)):
            raise InputError(
                f"the response {name!r} times weights= is not a whole number of successes in some "
                "rows; the binomial needs successes / trials with weights = trials.")
        used = wt > 0
        if np.all(y[used] == 0) or np.all(y[used] == 1):
            v = int(y[used][0])
            raise InputError(
                f"the response {name!r} is {v} in every row: a binomial model cannot be fitted "
                "when every outcome is the same (all successes or all failures). Check the "
                "coding, or pool more data.")
    else:
        if np.any(y < 0) or np.any(np.abs(y - np.round(y)) > 1e-9):
            bad = y[(y < 0) | (np.abs(y - np.round(y)) > 1e-9)][:5]
            raise InputError(
                f"a {family.display_name} response must be non-negative whole counts; {name!r} has "
                f"{', '.join(map(repr, bad.tolist()))}. Use counts, or another family.")
        if np.all(y == 0):
            raise InputError(f"the response {name!r} is 0 in every row: a {family.display_name} model "
                             "cannot be fitted to all-zero counts.")
