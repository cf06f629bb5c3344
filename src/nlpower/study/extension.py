"""Larger designs from a pilot's rows: simr's ``extend`` (along a variable, or within groups).

* ``along=g, n=N`` for a grouping factor ``g`` with ``W`` levels: levels
  ``0..N-1``; new level ``k`` gets a copy of the rows of pilot level
  ``k mod W`` (in order of appearance), so each new worker rates what a pilot
  worker rated.  The pilot's labels are kept; new levels are ``g.W+1``, ...
  (or ``values``).  ``N < W`` keeps the first ``N`` levels.
* ``along=x`` for a numeric covariate: the values ``1..N`` (or ``values``);
  value ``k`` copies the rows of the pilot's ``k mod W``-th distinct value.
* ``within="g + x", n=N``: every combination of the columns gets ``N`` rows,
  row ``k`` a copy of the combination's row ``k mod m``.

A factor in the fixed part cannot be extended along (its new levels would
have no coefficient), as in simr.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._memory import BYTES_PER_RATING, check_fits
from .._validation import closest_name
from ..errors import InputError
from ..formula import parse

__all__ = ["extend_rows"]


def _count(n: Any, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"n must be a positive integer ({what}); got {n!r}.")
    return int(n)


def _check_column(data: pd.DataFrame, name: str) -> None:
    if name not in data.columns:
        hint = closest_name(name, list(map(str, data.columns)))
        raise InputError(f"extend: no column {name!r} in the model's data" +
                         (f"; did you mean {hint!r}?" if hint else
                          f" (columns: {', '.join(map(str, data.columns))})."))


def _check_size(data: pd.DataFrame, rows: int, how: str, n: int) -> None:
    """Refuse, before building it, an extended design that cannot fit in memory."""
    per_row = max(BYTES_PER_RATING, int(data.memory_usage(deep=True).sum() / max(len(data), 1)))
    check_fits(rows, f"extend({how}, n={n:,})", bytes_per_row=per_row,
               hint=" Extend to fewer levels or rows.")


def _fixed_factor(data: pd.DataFrame, formula: str, name: str) -> bool:
    numeric = pd.api.types.is_numeric_dtype(data[name]) and not pd.api.types.is_bool_dtype(
        data[name])
    return name in parse(formula).fixed.variables and not numeric


def _along(data: pd.DataFrame, along: str, n: int, values: Sequence[Any] | None) -> pd.DataFrame:
    col = data[along]
    old = pd.unique(col)
    numeric = pd.api.types.is_numeric_dtype(col) and not isinstance(col.dtype, pd.CategoricalDtype)
    if values is not None:
        new = list(values)
        if len(new) != n or len(set(map(str, new))) != n:
            raise InputError(f"values must be {n} distinct labels (one per level of {along!r}).")
    elif numeric:
        new = list(range(1, n + 1))
    else:
        taken = set(map(str, old))
        new = [old[k] if k < len(old) else None for k in range(n)]
        for k in range(len(old), n):
            label, j = f"{along}.{k + 1}", k + 1
            while label in taken:
                j += 1
                label = f"{along}.{j}"
            taken.add(label)
            new[k] = label
    groups = {v: np.flatnonzero((col == v).to_numpy()) for v in old}
    parts = []
    for k, label in enumerate(new):
        rows = data.iloc[groups[old[k % len(old)]]].copy()
        if isinstance(col.dtype, pd.CategoricalDtype):
            rows[along] = rows[along].astype(object)
        rows[along] = label
        parts.append(rows)
    out = pd.concat(parts, ignore_index=True)
    if isinstance(col.dtype, pd.CategoricalDtype):
        out[along] = pd.Categorical(out[along], categories=list(dict.fromkeys(new)))
    return out


def _within(data: pd.DataFrame, within: Sequence[str], n: int) -> pd.DataFrame:
    key = data[list(within)].astype(str).agg("\x1f".join, axis=1)
    parts = []
    for _, idx in key.groupby(key, sort=False).groups.items():
        pos = data.index.get_indexer(idx)
        parts.append(data.iloc[pos[np.arange(n) % len(pos)]])
    return pd.concat(parts, ignore_index=True)


def extend_rows(data: pd.DataFrame, formula: str, *, along: str | None, n: int | None,
                within: str | Sequence[str] | None, values: Sequence[Any] | None
                ) -> pd.DataFrame:
    """The rows of ``data`` extended (module docstring).

    Examples
    --------
    >>> d = pd.DataFrame({"y": [1.0, 2, 3, 4], "x": [1, 2, 1, 2], "g": ["a", "a", "b", "b"]})
    >>> extend_rows(d, "y ~ x + (1 | g)", along="g", n=3, within=None, values=None).g.tolist()
    ['a', 'a', 'b', 'b', 'g.3', 'g.3']
    >>> len(extend_rows(d, "y ~ x + (1 | g)", along=None, n=5, within="g + x", values=None))
    20
    """
    if (along is None) == (within is None):
        raise InputError("extend needs exactly one of along= (a grouping factor or a numeric "
                         "covariate) and within= (columns whose combinations get n rows each).")
    if n is None:
        if values is None:
            raise InputError("extend needs n= (the new number of levels or rows) or values=.")
        n = len(values)
    n = _count(n, "levels along, or rows within each group")
    if within is not None:
        cols = [c.strip() for c in within.split("+")] if isinstance(within, str) else list(within)
        for c in cols:
            _check_column(data, c)
        _check_size(data, data[cols].drop_duplicates().shape[0] * n, f"within={within!r}", n)
        return _within(data, cols, n)
    assert along is not None
    _check_column(data, along)
    if along == parse(formula).response:
        raise InputError(f"cannot extend along {along!r}: it is the model's response (simulated "
                         "afresh for every replicate). Extend along a grouping factor or a "
                         "numeric covariate, or use within=.")
    sizes = data.groupby(data[along], sort=False, observed=True).size().to_numpy()
    if sizes.size:
        _check_size(data, int(n // sizes.size * sizes.sum() + sizes[:n % sizes.size].sum()),
                    f"along={along!r}", n)
    if _fixed_factor(data, formula, along):
        raise InputError(f"cannot extend along {along!r}: it is a factor in the fixed part of "
                         "the model (its new levels would have no coefficient). Extend along a "
                         "grouping factor or a numeric covariate, or use within=.")
    return _along(data, along, n, values)
