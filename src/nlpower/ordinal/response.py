"""The ordinal response: an ordered factor or integer scores -> category codes.

Categories are the ordered ``Categorical``'s categories, or the sorted
distinct integer scores.  Categories nobody used are dropped from the fit
(as ``ordinal::clm`` does: the thresholds either side merge, ``"2|4"``) and
reported; the fit needs at least two used categories.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError, NlpowerWarning

__all__ = ["OrdinalResponse", "ordinal_response"]


@dataclass(frozen=True, eq=False)
class OrdinalResponse:
    """Codes ``0 .. K-1`` of the used categories, their labels and the unused ones."""

    codes: np.ndarray
    levels: tuple[str, ...]
    unused: tuple[str, ...]
    all_levels: tuple[str, ...]
    scores: tuple[float, ...] | None   # numeric value of each used level (integer scores)


def _label(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def ordinal_response(y: Any, name: str = "response", *, warn: bool = True) -> OrdinalResponse:
    """Validate an ordinal response and code its categories.

    Parameters
    ----------
    y : pandas Series, array
        An *ordered* pandas ``Categorical`` or integer scores (e.g. Likert 1-5).
    name : str
        Column name, for messages.

    Raises
    ------
    InputError
        Unordered categorical or text responses, non-integer scores,
        missing values, or fewer than two used categories.

    Examples
    --------
    >>> r = ordinal_response(pd.Series([1, 2, 2, 5]), warn=False)
    >>> r.codes.tolist(), r.levels
    ([0, 1, 1, 2], ('1', '2', '5'))
    >>> r = ordinal_response(pd.Categorical(["lo", "hi"], categories=["lo", "mid", "hi"],
    ...                                      ordered=True), warn=False)
    >>> r.levels, r.unused
    (('lo', 'hi'), ('mid',))
    """
    s = y if isinstance(y, pd.Series) else pd.Series(y)
    if s.isna().any():
        raise InputError(f"the response {name!r} has {int(s.isna().sum())} missing values; "
                         "drop those rows first.")
    scores: tuple[float, ...] | None = None
    if isinstance(s.dtype, pd.CategoricalDtype):
        if not s.cat.ordered:
            raise InputError(
                f"the response {name!r} is an unordered categorical; an ordinal model needs the "
                "category order. Make it ordered, e.g. data[col] = data[col].astype("
                "pd.CategoricalDtype(['bad', 'ok', 'good'], ordered=True)), or use integer scores.")
        all_levels = tuple(_label(c) for c in s.cat.categories)
        raw = s.cat.codes.to_numpy()
    elif pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
        raise InputError(
            f"the response {name!r} has dtype {s.dtype} (e.g. {s.iloc[0]!r}); an ordinal model "
            "needs an ordered pandas Categorical or integer scores such as Likert 1-5. Convert "
            "it with pd.Categorical(values, categories=[...], ordered=True).")
    else:
        v = s.to_numpy(dtype=float)
        if not np.all(np.isfinite(v)) or not np.all(v == np.round(v)):
            bad = v[~(np.isfinite(v) & (v == np.round(v)))][0]
            raise InputError(
                f"the response {name!r} must hold integer scores (e.g. Likert 1-5); got {bad!r}. "
                "Round or map the values to integers, or pass an ordered Categorical.")
        uniq = np.unique(v)
        all_levels = tuple(_label(float(u)) for u in uniq)
        raw = np.searchsorted(uniq, v)
        scores = tuple(float(u) for u in uniq)
    counts = np.bincount(raw, minlength=len(all_levels))
    used = counts > 0
    levels = tuple(lv for lv, u in zip(all_levels, used, strict=True) if u)
    unused = tuple(lv for lv, u in zip(all_levels, used, strict=True) if not u)
    if len(levels) < 2:
        raise InputError(
            f"the response {name!r} has a single used category ({levels[0]!r} in all {len(s)} "
            "rows); an ordinal model needs ratings in at least two categories.")
    if unused and warn:
        warnings.warn(
            f"the response {name!r} has categories nobody used ({', '.join(map(repr, unused))}); "
            "they are dropped from the fit and the thresholds either side merge (as ordinal::clm).",
            NlpowerWarning, stacklevel=3)
    remap = np.cumsum(used) - 1
    if scores is not None:
        scores = tuple(sc for sc, u in zip(scores, used, strict=True) if u)
    return OrdinalResponse(remap[raw].astype(np.intp), levels, unused, all_levels, scores)
