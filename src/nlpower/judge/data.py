"""Read and align human ratings and judge scores (no statistics here).

Human ratings: one row per (worker, item, system) rating on the labelled
items.  Judge scores: one row per (item, system) score on every item, or
several rows per pair (several samples or several judges), which are
averaged into one judge score per item and system.  Items with judge scores
but no human rating are the unlabelled items.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._validation import check_columns
from ..errors import InputError, InputTypeError
from ..ratings.files import read_table, rows_at

SINGLE = "(all)"


@dataclass(frozen=True)
class JudgeData:
    """Human ratings joined with judge scores, and the unlabelled judge scores.

    Attributes
    ----------
    systems : tuple of str
        The systems, baseline first (one pseudo-system ``"(all)"`` when the
        files have no system column, e.g. preference outcomes).
    labelled : DataFrame
        Columns ``worker, item, system, y, f``: each human rating with the
        judge score of its item and system.
    judge_unlabelled : ndarray, shape (N, K)
        Judge scores of the items without a human rating (rows: items,
        columns: ``systems``).
    judge_labelled : ndarray, shape (n, K)
        Judge scores of the labelled items (rows in ``labelled_items`` order).
    labelled_items : tuple
        The labelled items.
    """

    systems: tuple[str, ...]
    labelled: pd.DataFrame
    judge_unlabelled: np.ndarray
    judge_labelled: np.ndarray
    labelled_items: tuple[Any, ...]

    @property
    def n_labelled(self) -> int:
        return len(self.labelled_items)

    @property
    def n_unlabelled(self) -> int:
        return int(self.judge_unlabelled.shape[0])

    def item_means(self) -> np.ndarray:
        """Mean human rating per labelled item and system, shape (n, K) (NaN where unrated)."""
        tab = self.labelled.pivot_table(index="item", columns="system", values="y", aggfunc="mean",
                                        observed=True)
        return tab.reindex(index=list(self.labelled_items), columns=list(self.systems)).to_numpy()


def _frame(name: str, source: Any) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.exists():
            raise InputError(f"{name}: file {str(path)!r} not found.")
        return read_table(path, name, options=False)
    raise InputTypeError(f"{name} must be a DataFrame or the path of a CSV, TSV, JSON (lines) "
                         f"or Parquet file; got {type(source).__name__}.")


def _keys(name: str, frame: pd.DataFrame, columns: list[str]) -> None:
    """Refuse rows whose worker, item or system cell is empty: whose rating would it be?"""
    for col in columns:
        empty = np.flatnonzero(frame[col].isna().to_numpy())
        if empty.size:
            raise InputError(f"{name}: column {col!r} is empty at {rows_at(frame, empty)}; "
                             "every row needs it. Fill in or drop those rows.")


def _numeric(name: str, col: str, values: pd.Series) -> np.ndarray:
    num = pd.to_numeric(values, errors="coerce")
    bad = num.isna() | ~np.isfinite(num.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        first = values[bad].iloc[0]
        raise InputError(f"{name}: column {col!r} must hold numbers; {int(bad.sum())} value(s) "
                         f"are missing or not numeric (first: {first!r}). Drop or fix those rows.")
    return num.to_numpy(dtype=float)


def _systems(human: pd.DataFrame, system: str | None, baseline: Any) -> tuple[str, ...]:
    if system is None:
        return (SINGLE,)
    levels = sorted(human["system"].unique(), key=str)
    if baseline is not None:
        if str(baseline) not in levels:
            raise InputError(f"baseline {baseline!r} is not a system in the human ratings; "
                             f"systems: {levels}.")
        levels.remove(str(baseline))
        levels.insert(0, str(baseline))
    return tuple(levels)


def prepare(human: Any, judge: Any, *, worker: str = "worker", item: str = "item",
            system: str | None = "system", rating: str = "rating", score: str = "score",
            baseline: Any = None) -> JudgeData:
    """Validate both inputs and align each human rating with its judge score.

    ``system=None``: the files have no system column (one quantity, e.g. the
    share of comparisons a system wins).
    """
    h, j = _frame("human", human), _frame("judge", judge)
    keys = [c for c in (worker, item, system) if c is not None]
    check_columns("human", [*keys, rating], list(map(str, h.columns)))
    check_columns("judge", [c for c in (item, system, score) if c is not None],
                  list(map(str, j.columns)))
    _keys("human", h, keys)
    _keys("judge", j, [c for c in (item, system) if c is not None])
    hv = pd.DataFrame({"worker": h[worker].astype(str), "item": h[item].astype(str),
                       "system": h[system].astype(str) if system else SINGLE,
                       "y": _numeric("human", rating, h[rating])})
    jv = pd.DataFrame({"item": j[item].astype(str),
                       "system": j[system].astype(str) if system else SINGLE,
                       "f": _numeric("judge", score, j[score])})
    if hv.empty:
        raise InputError("human has no ratings; it needs rows of (worker, item, system, rating).")
    if jv.empty:
        raise InputError("judge has no scores; it needs rows of (item, system, score) for every "
                         "item the judge scored.")
    systems = _systems(hv, system, baseline)
    judge_sys = set(jv["system"])
    missing_sys = [s for s in systems if s not in judge_sys]
    if missing_sys:
        raise InputError(f"judge: no scores for system(s) {missing_sys}; the judge must score "
                         "every system the humans rated.")
    wide = jv.groupby(["item", "system"], observed=True)["f"].mean().unstack("system")
    wide = wide.reindex(columns=list(systems))
    items_h = tuple(sorted(hv["item"].unique(), key=str))
    unjudged = [i for i in items_h if i not in wide.index or wide.loc[i].isna().any()]
    if unjudged:
        raise InputError(f"judge: {len(unjudged)} human-rated item(s) lack a judge score for some "
                         f"system (first: {unjudged[0]!r}); the judge must score every "
                         "labelled item for every system.")
    unl = wide.drop(index=list(items_h)).dropna()
    if len(unl) < 2:
        raise InputError(f"judge: {len(unl)} item(s) are scored by the judge for every system but "
                         "rated by no human; prediction-powered estimates need the judge's "
                         "scores on (many) more items than the humans rated.")
    f_lab = wide.loc[list(items_h)]
    long = pd.Series(wide.stack(), name="f")
    merged = hv.join(long, on=["item", "system"])
    merged = merged[merged["system"].isin(systems)]
    return JudgeData(systems, merged.reset_index(drop=True), unl.to_numpy(dtype=float),
                     f_lab.to_numpy(dtype=float), items_h)
