"""The ordinal response: an ordered factor or integer scores -> category codes.

Categories are the ordered ``Categorical``'s categories, or the sorted
distinct integer scores (or the scores of a declared scale, ``levels=``).  Categories nobody used are dropped from the fit
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


def _plain(v: Any) -> Any:
    """A numpy scalar as the Python value (messages show ``5.5``, not ``np.float64(5.5)``)."""
    return v.item() if isinstance(v, np.generic) else v


def _listing(labels: tuple[str, ...], most: int = 10) -> str:
    shown = ", ".join(map(repr, labels[:most]))
    return shown if len(labels) <= most else f"{shown} and {len(labels) - most} more"


def _label(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _declared_levels(levels: Any, name: str) -> np.ndarray:
    """``levels=``: the integer scores of the rating scale, in increasing order."""
    try:
        lv = np.asarray(list(levels), dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"levels must be the integer scores of the rating scale, such as "
                         f"range(1, 6); got {levels!r}.") from None
    if lv.ndim != 1 or lv.size < 2 or not np.all(np.isfinite(lv) & (lv == np.round(lv))) \
            or np.any(np.diff(lv) <= 0):
        raise InputError(f"levels must be two or more increasing integer scores of the rating "
                         f"scale for {name!r}, such as range(1, 6); got "
                         f"{[_plain(x) for x in np.asarray(list(levels)).ravel()]!r}.")
    return lv


def _n_missing(s: pd.Series) -> int:
    """Missing values in ``s`` (numpy integer and bool columns have none: no pass over them)."""
    if isinstance(s.dtype, np.dtype) and s.dtype.kind in "iub":
        return 0
    return int(s.isna().sum())


def _integer_scores(v: np.ndarray) -> OrdinalResponse | None:
    """:func:`ordinal_response` of numpy integer scores without ``levels=`` (the common case).

    Every score given is a used category, so there is nothing to merge or
    report; the codes, labels and scores are those of the general path.
    ``None``: not such scores, or a single category (the general path's error).
    """
    if v.ndim != 1 or not isinstance(v.dtype, np.dtype) or v.dtype.kind not in "iu":
        return None
    x = np.asarray(v, dtype=float)
    uniq = np.array(sorted(set(x.tolist()))) if x.size <= 2000 else np.unique(x)
    if uniq.size < 2:
        return None
    scores = tuple(uniq.tolist())
    labels = tuple(_label(u) for u in scores)
    return OrdinalResponse(np.searchsorted(uniq, x), labels, (), labels, scores)


def ordinal_response(y: Any, name: str = "response", *, warn: bool = True,
                     levels: Any = None) -> OrdinalResponse:
    """Validate an ordinal response and code its categories.

    Parameters
    ----------
    y : pandas Series, array
        An *ordered* pandas ``Categorical`` or integer scores (e.g. Likert 1-5).
    name : str
        Column name, for messages.
    levels : sequence of int, optional
        The scores of the rating scale for integer scores, e.g. ``range(1, 6)``
        for a 1-5 Likert scale: scores of the scale nobody gave are then
        reported as unused (default: the scale is the distinct scores given).
        A score outside ``levels`` is an error.  Not for a ``Categorical``,
        whose categories are the scale.

    Raises
    ------
    InputError
        Unordered categorical or text responses, non-integer scores,
        missing values, scores outside ``levels``, or fewer than two used
        categories.

    Examples
    --------
    >>> r = ordinal_response(pd.Series([1, 2, 2, 5]), warn=False)
    >>> r.codes.tolist(), r.levels
    ([0, 1, 1, 2], ('1', '2', '5'))
    >>> r = ordinal_response(pd.Categorical(["lo", "hi"], categories=["lo", "mid", "hi"],
    ...                                      ordered=True), warn=False)
    >>> r.levels, r.unused
    (('lo', 'hi'), ('mid',))
    >>> ordinal_response(pd.Series([1, 3, 5]), levels=range(1, 6), warn=False).unused
    ('2', '4')
    """
    if levels is None and isinstance(y, np.ndarray | pd.Series) and isinstance(y.dtype, np.dtype):
        fast = _integer_scores(np.asarray(y))
        if fast is not None:
            return fast
    s = y if isinstance(y, pd.Series) else pd.Series(y)
    n_missing = _n_missing(s)
    if n_missing:
        raise InputError(f"the response {name!r} has {n_missing} missing values; "
                         "drop those rows first.")
    scores: tuple[float, ...] | None = None
    if isinstance(s.dtype, pd.CategoricalDtype):
        all_levels, raw = _categorical_codes(s, name, levels)
    elif pd.api.types.is_bool_dtype(s.dtype) or not pd.api.types.is_numeric_dtype(s.dtype):
        raise InputError(
            f"the response {name!r} has dtype {s.dtype} (e.g. {_plain(s.iloc[0])!r}); an ordinal model "
            "needs an ordered pandas Categorical or integer scores such as Likert 1-5. Convert "
            "it with pd.Categorical(values, categories=[...], ordered=True).")
    else:
        all_levels, raw, scores = _score_codes(s, name, levels)
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
            f"the response {name!r} has categories nobody used ({_listing(unused)}); "
            "they are dropped from the fit and the thresholds either side merge (as ordinal::clm).",
            NlpowerWarning, stacklevel=3)
    remap = np.cumsum(used) - 1
    if scores is not None:
        scores = tuple(sc for sc, u in zip(scores, used, strict=True) if u)
    return OrdinalResponse(remap[raw].astype(np.intp), levels, unused, all_levels, scores)


def _categorical_codes(s: pd.Series, name: str, levels: Any
                       ) -> tuple[tuple[str, ...], np.ndarray]:
    """``(all categories, codes)`` of an ordered Categorical response (its categories: the scale)."""
    if levels is not None:
        raise InputError(
            f"levels= is for integer scores; the response {name!r} is a Categorical, whose "
            "categories are the scale. Drop levels=, or set the categories with "
            "pd.CategoricalDtype([...], ordered=True).")
    if not s.cat.ordered:
        raise InputError(
            f"the response {name!r} is an unordered categorical; an ordinal model needs the "
            "category order. Make it ordered, e.g. data[col] = data[col].astype("
            "pd.CategoricalDtype(['bad', 'ok', 'good'], ordered=True)), or use integer scores.")
    return tuple(_label(c) for c in s.cat.categories), s.cat.codes.to_numpy()


def _score_codes(s: pd.Series, name: str, levels: Any
                 ) -> tuple[tuple[str, ...], np.ndarray, tuple[float, ...]]:
    """``(all levels, codes, scores)`` of numeric scores: the distinct scores, or ``levels``."""
    integral = isinstance(s.dtype, np.dtype) and s.dtype.kind in "iu"
    # numpy integer scores: no pandas conversion, and every value is a finite integer
    v = np.asarray(s.to_numpy(), dtype=float) if integral else s.to_numpy(dtype=float)
    if not integral and (not np.all(np.isfinite(v)) or not np.all(v == np.round(v))):
        bad = v[~(np.isfinite(v) & (v == np.round(v)))][0]
        raise InputError(
            f"the response {name!r} must hold integer scores (e.g. Likert 1-5); got {float(bad)!r}. "
            "Round or map the values to integers, or pass an ordered Categorical.")
    uniq = np.unique(v)
    if levels is not None:
        declared = _declared_levels(levels, name)
        outside = np.setdiff1d(uniq, declared)
        if outside.size:
            raise InputError(
                f"the response {name!r} has scores outside levels "
                f"({', '.join(_label(float(u)) for u in outside[:5])}; levels are "
                f"{', '.join(_label(float(u)) for u in declared)}). Correct the scores or "
                "the declared scale.")
        uniq = declared
    return (tuple(_label(float(u)) for u in uniq), np.searchsorted(uniq, v),
            tuple(float(u) for u in uniq))
