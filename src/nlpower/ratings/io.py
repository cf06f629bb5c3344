"""Read and validate a raw rating file (one row per rating).

A thin edge plus validation, in named stages (each a function you can call
and test alone): :func:`load_source` (the file by its extension, or a data
frame) -> :func:`select_columns` -> :func:`check_identifiers` ->
:func:`parse_ratings` -> :func:`resolve_scale` -> :func:`encode_labels` ->
:func:`resolve_duplicates` -> rescale to [0, 1] as in Card et al. (2020,
App. H.3), ``(r - lo) / (hi - lo)`` -> :func:`check_levels` -> the design
report.  Nothing is fitted here.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._choices import Duplicates, check_choice
from .._validation import LARGEST, closest_name
from ..errors import InputError, NlpowerWarning, RatingsError
from .files import READERS, Origin, check_encoding, load_table, sep_hint
from .report import DesignReport, design_report

__all__ = ["READERS", "Ratings", "RatingsWarning", "check_arguments", "check_identifiers",
           "check_levels", "encode_labels", "load_source", "parse_ratings", "read_ratings",
           "read_selected",
           "resolve_duplicates", "resolve_scale", "select_columns"]


class RatingsWarning(NlpowerWarning):
    """Something about a rating file worth a look (dropped rows, inferred scale)."""


_MAX_SHOWN = 5


def ratings_choice(name: str, value: Any, choices: Any, hint: str = "") -> Any:
    """:func:`nlpower._choices.check_choice`, raising :class:`~nlpower.errors.RatingsError`."""
    try:
        return check_choice(name, value, choices)
    except InputError as exc:
        raise RatingsError(f"{exc}{hint}") from None


@dataclass(frozen=True)
class Ratings:
    """A validated rating data set.

    Attributes
    ----------
    data : DataFrame
        Columns ``worker`` (str), ``item`` (str), ``system`` (categorical
        of str; categories in *sorted* order of the original labels --
        numeric labels sorted as numbers -- like R's ``factor()``, so fits
        match lme4 on the same data; the baseline is chosen at fit time),
        ``rating`` (rescaled to [0, 1]) and ``rating_raw`` (as read; with
        ``duplicates="mean"``, the mean of the duplicated raw ratings).
    scale : tuple of float or None
        Likert range (lo, hi) used for rescaling; ``None`` with
        ``scale="identity"`` (ratings used as given).
    scale_inferred : bool
        True when ``scale`` was inferred from the observed min and max.
    n_dropped : int
        Rows dropped because the rating was missing.
    report : DesignReport
        Counts and layout (see :class:`DesignReport`).
    """

    data: pd.DataFrame
    scale: tuple[float, float] | None
    scale_inferred: bool
    n_dropped: int
    report: DesignReport

    def __repr__(self) -> str:
        r = self.report
        return (
            f"Ratings(n_ratings={r.n_ratings}, n_workers={r.n_workers}, n_items={r.n_items}, "
            f"systems={list(r.systems)}, scale={self.scale})"
        )

    @property
    def systems(self) -> tuple[str, ...]:
        return self.report.systems

    def summary(self) -> str:
        return self.report.summary()

    def to_frame(self) -> pd.DataFrame:
        """The tidy data (a copy)."""
        return self.data.copy()


def _check_scale(scale: Any) -> tuple[float, float]:
    if isinstance(scale, str):
        raise RatingsError(
            f"scale must be a pair (lo, hi) of numbers such as (1, 5), or 'identity' to use the "
            f"ratings as given; got {scale!r}."
        )
    try:
        if any(isinstance(v, (bool, np.bool_)) or v is None for v in scale):
            raise TypeError("a boolean or None is not a bound")
        lo, hi = (float(v) for v in scale)
    except (TypeError, ValueError) as exc:
        raise RatingsError(
            f"scale must be a pair (lo, hi) of numbers such as (1, 5); got {scale!r}."
        ) from exc
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo >= hi:
        raise RatingsError(
            f"scale must be a pair (lo, hi) of finite numbers with lo < hi, such as (1, 5); "
            f"got {scale!r}."
        )
    return lo, hi


def _show(value: Any) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value)


def _sort_labels(values: pd.Series) -> list[Any]:
    uniq = pd.unique(values)
    try:
        nums = pd.to_numeric(pd.Series(uniq), errors="raise")
        order = np.argsort(nums.to_numpy(), kind="stable")
        return [uniq[i] for i in order]
    except (ValueError, TypeError):
        return sorted(uniq, key=str)


def read_ratings(
    source: str | os.PathLike[str] | pd.DataFrame,
    *,
    worker: str = "worker",
    item: str = "item",
    system: str = "system",
    rating: str = "rating",
    scale: tuple[float, float] | str | None = None,
    duplicates: Duplicates = "error",
    sep: str | None = None,
    encoding: str | None = None,
) -> Ratings:
    """Read a rating file (or data frame) into a validated :class:`Ratings`.

    Parameters
    ----------
    source : path or DataFrame
        One row per rating: ``.csv``, ``.tsv``, ``.json``, ``.jsonl``, ``.parquet`` (text
        formats may be gzipped), or a data frame.
    worker : str, default "worker"
        Column of the worker ids.
    item : str, default "item"
        Column of the item (input) ids.
    system : str, default "system"
        Column of the system that produced the rated output.
    rating : str, default "rating"
        Column of the (Likert) ratings.
    scale : (lo, hi) or "identity", optional
        The Likert range, e.g. ``(1, 5)``: ratings become ``(r - lo) / (hi - lo)``.  Inferred
        from the data when omitted (pass it whenever you know it); ``"identity"``: as given.
    duplicates : {"error", "keep", "mean"}
        Several ratings of the same (worker, item, system): raise, keep all, or average them.
    sep : str, optional
        Delimiter for text files (default ``,`` for CSV and tab for TSV).
    encoding : str, optional
        Text encoding of a CSV, TSV or JSON file (default UTF-8), e.g. ``"cp1252"``.

    Returns
    -------
    Ratings
        ``.data`` with columns worker, item, system, rating, rating_raw;
        ``.report`` (:class:`DesignReport`).

    Raises
    ------
    RatingsError
        A file or rating that cannot be read as asked; the message names the line and what to
        do.  Every case: ``docs/api.md``, "Rating files".

    Warns
    -----
    RatingsWarning
        Rows dropped because the rating is missing (with their count), or an
        inferred scale that looks doubtful.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"w": ["a", "a", "b", "b"], "i": [1, 2, 1, 2],
    ...                    "s": ["x", "y", "y", "x"], "r": [1, 5, 2, 4]})
    >>> r = read_ratings(df, worker="w", item="i", system="s", rating="r", scale=(1, 5))
    >>> r.scale, list(r.data["rating"])
    ((1.0, 5.0), [0.0, 1.0, 0.25, 0.75])
    """

    return read_selected(source, None, worker=worker, item=item, system=system, rating=rating,
                         scale=scale, duplicates=duplicates, sep=sep, encoding=encoding)[0]


def read_selected(
    source: str | os.PathLike[str] | pd.DataFrame,
    select: Callable[[tuple[str, ...]], Sequence[str]] | None,
    *,
    worker: str = "worker",
    item: str = "item",
    system: str = "system",
    rating: str = "rating",
    scale: tuple[float, float] | str | None = None,
    duplicates: Duplicates = "error",
    sep: str | None = None,
    encoding: str | None = None,
) -> tuple[Ratings, tuple[int, int]]:
    """:func:`read_ratings`, keeping the rows of the systems ``select(labels)`` names.

    ``select`` gets the file's system labels (sorted as :attr:`Ratings.systems`)
    and returns those to keep (``None``: all).  The scale is resolved on the
    whole file; repeated ratings and levels are checked on the kept rows only,
    so a duplicate of a system that is not kept does not stop the reading.

    Returns
    -------
    (Ratings, (n_rows, n_systems))
        The ratings kept, and the file's rated rows and systems before the selection.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"worker": ["a", "a", "b", "b", "b"], "item": [1, 2, 1, 2, 2],
    ...                    "system": ["x", "y", "y", "x", "z"], "rating": [1, 5, 2, 4, 3]})
    >>> r, (n, k) = read_selected(df, lambda labels: labels[:2], scale=(1, 5))
    >>> r.systems, r.report.n_ratings, n, k
    (('x', 'y'), 4, 5, 3)
    """
    lohi, identity = check_arguments(names := {"worker": worker, "item": item, "system": system,
                                               "rating": rating}, scale, duplicates)
    raw, origin = load_source(source, sep, check_encoding(encoding))
    df = select_columns(raw, names, origin, sep)
    check_identifiers(df, names, origin)
    df, n_dropped = parse_ratings(df, rating, origin)
    lo, hi, scale_inferred, notes = resolve_scale(df, lohi, identity, rating, origin)
    df, sys_labels = encode_labels(df, system)
    before = (len(df), len(sys_labels))
    if select is not None and len(kept := [str(s) for s in select(tuple(sys_labels))]) < len(sys_labels):
        sys_labels = [s for s in sys_labels if s in kept]
        df = df.loc[df["system"].astype(str).isin(kept)]
        df = df.assign(system=pd.Categorical(df["system"].astype(str), categories=sys_labels))
        notes.append(f"kept the {len(df)} ratings of {', '.join(sys_labels)} out of {before[0]} "
                     f"ratings of {before[1]} systems; the other systems' rows are not used "
                     "(nor checked for repeated ratings).")
    df, n_dup_groups, n_dup_rows, dup_notes = resolve_duplicates(df, duplicates, sys_labels, origin,
                                                                 names)
    df["rating"] = (df["rating_raw"] - lo) / (hi - lo)
    df = df[["worker", "item", "system", "rating", "rating_raw"]].reset_index(drop=True)
    check_levels(df, names)
    used = None if identity else (lo, hi)
    report = design_report(
        df, n_duplicate_groups=n_dup_groups, n_duplicate_rows=n_dup_rows, duplicates=duplicates,
        n_dropped=n_dropped, scale=used, scale_inferred=scale_inferred, source=origin.name,
        extra_notes=tuple(notes + dup_notes),
    )
    return Ratings(data=df, scale=used, scale_inferred=scale_inferred, n_dropped=n_dropped,
                   report=report), before


# --- the stages ---------------------------------------------------------------------------


def check_arguments(names: dict[str, Any], scale: Any,
                    duplicates: Any) -> tuple[tuple[float, float] | None, bool]:
    """Stage 0: the arguments alone. Returns (the given scale or None, identity?)."""
    ratings_choice("duplicates", duplicates, Duplicates)
    for arg, col in names.items():
        if not isinstance(col, str):
            raise RatingsError(f"{arg} must be a column name (str); got {col!r}.")
    if len(set(names.values())) < 4:
        raise RatingsError(
            "worker, item, system and rating must name four different columns; got "
            + ", ".join(f"{k}={v!r}" for k, v in names.items())
            + "."
        )
    identity = isinstance(scale, str) and scale == "identity"
    return (None if (scale is None or identity) else _check_scale(scale)), identity


def load_source(source: Any, sep: str | None,
                encoding: str | None = None) -> tuple[pd.DataFrame, Origin]:
    """Stage 1: the table (a file read by its extension, or the data frame) and its origin."""
    if isinstance(source, pd.DataFrame):
        raw, origin = source, Origin("<DataFrame>", "frame")
    elif isinstance(source, (str, os.PathLike)):
        raw, origin = load_table(Path(source), sep, encoding)
    else:
        raise RatingsError(
            f"source must be a file path or a pandas DataFrame; got {type(source).__name__}."
        )
    if len(raw) == 0:
        where = "the data frame" if origin.is_frame else f"{origin.name!r}"
        raise RatingsError(
            f"source: {where} has no rows"
            + (f" (only a header: {', '.join(map(repr, map(str, raw.columns)))})" if len(raw.columns) else "")
            + ". There is nothing to fit; check that you are reading the right file."
        )
    return raw, origin


def select_columns(raw: pd.DataFrame, names: dict[str, str], origin: Origin,
                   sep: str | None = None) -> pd.DataFrame:
    """Stage 2: the four columns, renamed worker, item, system, rating_raw (index kept)."""
    available = [str(c) for c in raw.columns]
    missing = [(arg, col) for arg, col in names.items() if col not in available]
    if missing:
        parts = []
        for arg, col in missing:
            close = closest_name(col, available)
            hint = f" (did you mean {close!r}? pass {arg}={close!r})" if close else ""
            parts.append(f"{arg}={col!r}{hint}")
        hint = "" if origin.is_frame else sep_hint(Path(origin.name), sep)
        if hint:  # one column holding the whole header: the delimiter is wrong, not the names
            raise RatingsError(f"source: column{'s' if len(missing) > 1 else ''} "
                               f"{', '.join(repr(c) for _, c in missing)} not found in "
                               f"{origin.name!r}.{hint}")
        raise RatingsError(
            f"source: column{'s' if len(missing) > 1 else ''} not found: {'; '.join(parts)}. "
            f"Available columns: {', '.join(map(repr, available))}. Name your columns with "
            "worker=, item=, system=, rating=."
        )
    df = raw.rename(columns=lambda c: str(c))[[names[k] for k in ("worker", "item", "system", "rating")]]
    df.columns = pd.Index(["worker", "item", "system", "rating_raw"])
    return df


def check_identifiers(df: pd.DataFrame, names: dict[str, str], origin: Origin) -> None:
    """Stage 3: every rating names its worker, item and system."""
    for arg in ("worker", "item", "system"):
        bad = df.index[df[arg].isna()]
        if len(bad):
            raise RatingsError(
                f"{arg} column {names[arg]!r} has {len(bad)} missing value(s) at "
                f"{origin.rows(bad)}{origin.legend}. Fill in or remove those rows."
            )


_DECIMAL_COMMA = r"^\s*[+-]?\d+,\d+\s*$"
_LABELLED = r"^\s*[+-]?\d+(?:\.\d+)?\s*(?:[-\u2013\u2014:=.)(]|\s)\s*\D"


def _text_hint(bad: pd.Series, rating: str, origin: Origin) -> str:
    """What to do when the non-numeric ratings share a recognisable form (else nothing)."""
    text = bad.astype(str)
    if text.str.match(_DECIMAL_COMMA).all():
        if origin.sep is None:
            return (" They look like numbers with a decimal comma ('4,5'): convert them, e.g. "
                    f"df[{rating!r}] = df[{rating!r}].str.replace(',', '.').astype(float) in "
                    "pandas.")
        return (" They look like numbers with a decimal comma ('4,5'): save the file with '.' as "
                f"the decimal mark, or read it with pandas.read_csv(path, delimiter={origin.sep!r}, "
                "decimal=',') and pass the data frame to nlpower.read_ratings.")
    if text.str.match(_LABELLED).all():
        return (" They look like labelled scale points ('4 - good'): keep the leading number, "
                f"e.g. df[{rating!r}] = df[{rating!r}].str.extract(r'^\\s*([+-]?\\d+(?:\\.\\d+)?)', "
                "expand=False).astype(float) in pandas, then save the file again or pass the "
                "data frame to nlpower.read_ratings.")
    return ""


def parse_ratings(df: pd.DataFrame, rating: str, origin: Origin) -> tuple[pd.DataFrame, int]:
    """Stage 4: ratings as finite floats; rows with a missing rating dropped (with a warning)."""
    values = df["rating_raw"]
    if values.dtype == bool:
        raise RatingsError(
            f"rating column {rating!r} holds booleans, not Likert ratings. Map true/false to "
            "numbers (e.g. 1/0) first, or pick the right column with rating=."
        )
    numeric = pd.to_numeric(values, errors="coerce")
    if not pd.api.types.is_numeric_dtype(values.dtype):
        # text or mixed objects; True/False objects become 1.0/0.0 under to_numeric: refuse them
        numeric = numeric.where(~values.map(lambda v: isinstance(v, (bool, np.bool_))), np.nan)
        blank = values.map(lambda v: isinstance(v, str) and v.strip() == "")
    else:
        blank = pd.Series(False, index=values.index)
    nonnum = numeric.isna() & values.notna() & ~blank
    infinite = np.isinf(numeric.to_numpy(dtype=float, na_value=np.nan))
    if nonnum.any() or infinite.any():
        bad = df.index[nonnum.to_numpy() | infinite]
        examples = ", ".join(f"{origin.where(i)}: {_show(values.loc[i])}" for i in bad[:_MAX_SHOWN])
        raise RatingsError(
            f"rating column {rating!r} has {len(bad)} non-numeric or infinite value(s) ({examples}"
            f"{', ...' if len(bad) > _MAX_SHOWN else ''}){origin.legend}. "
            "Ratings must be numbers (Likert points); fix or remove those rows, or pick the "
            f"right column with rating=.{_text_hint(values.loc[bad], rating, origin)}"
        )
    df = df.assign(rating_raw=numeric.astype(float))
    huge = df.index[df["rating_raw"].abs() > LARGEST]
    if len(huge):
        examples = ", ".join(f"{origin.where(i)}: {df['rating_raw'].loc[i]:g}" for i in huge[:_MAX_SHOWN])
        raise RatingsError(
            f"rating column {rating!r} has {len(huge)} value(s) too large to compute with "
            f"({examples}{', ...' if len(huge) > _MAX_SHOWN else ''}){origin.legend}; ratings "
            f"must be at most {LARGEST:g} in magnitude. Fix those rows (a typo?)."
        )
    missing_rating = df["rating_raw"].isna()
    n_dropped = int(missing_rating.sum())
    if n_dropped:
        warnings.warn(
            f"read_ratings: dropped {n_dropped} row(s) with a missing rating "
            f"({origin.rows(df.index[missing_rating])}).",
            RatingsWarning,
            stacklevel=3,
        )
        df = df.loc[~missing_rating]
    if len(df) == 0:
        raise RatingsError(
            f"rating column {rating!r} has no non-missing value ({n_dropped} rows, all missing). "
            "Check that rating= names the column with the scores."
        )
    return df, n_dropped


#: An inferred scale is refused when its top (bottom) rating lies more than this many times
#: the spread of all the other ratings beyond them: one value would set the scale.
DOMINANCE = 10.0


def resolve_scale(df: pd.DataFrame, lohi: tuple[float, float] | None, identity: bool,
                  rating: str, origin: Origin) -> tuple[float, float, bool, list[str]]:
    """Stage 5: the Likert range (given, inferred, or identity). Returns (lo, hi, inferred?, notes)."""
    raw = df["rating_raw"]
    obs_lo, obs_hi = float(raw.min()), float(raw.max())
    if identity:
        return 0.0, 1.0, False, []
    if lohi is not None:
        lo, hi = lohi
        out = df.index[(raw < lo) | (raw > hi)]
        if len(out):
            examples = ", ".join(f"{origin.where(i)}: {raw.loc[i]:g}" for i in out[:_MAX_SHOWN])
            raise RatingsError(
                f"rating column {rating!r} has {len(out)} value(s) outside scale={lohi} "
                f"({examples}{', ...' if len(out) > _MAX_SHOWN else ''}; observed range "
                f"{obs_lo:g}..{obs_hi:g}){origin.legend}. Pass the scale the ratings were "
                "collected on, or fix those rows."
            )
        return lo, hi, False, []
    lo, hi = obs_lo, obs_hi
    if lo == hi:
        raise RatingsError(
            f"rating column {rating!r}: every rating equals {lo:g}, so the Likert range "
            "cannot be inferred (and there is no variation to model). Pass scale=(lo, hi) "
            "if this is really the data."
        )
    _refuse_dominated_scale(raw, rating, origin)
    odd = []
    if lo != round(lo) or hi != round(hi):
        odd.append("the bounds are not whole numbers")
    if lo not in (0.0, 1.0):
        odd.append(f"the lowest rating is {lo:g}, not 0 or 1")
    if raw.nunique() < 3:
        odd.append("only two distinct ratings were seen")
    odd += _isolated_ends(raw)
    notes = []
    if odd:
        warnings.warn(
            f"read_ratings: Likert scale inferred from the data as {lo:g}..{hi:g}, but "
            + "; ".join(odd)
            + ". Rescaled effects and SDs depend on the scale: pass scale=(lo, hi).",
            RatingsWarning, stacklevel=3)
        notes.append("scale inferred and doubtful: " + "; ".join(odd))
    return lo, hi, True, notes


def _isolated_ends(raw: pd.Series) -> list[str]:
    """Whole-number ratings whose top (bottom) value sits 2+ unused points, and a quarter of
    the range, from the rest: a typo (a 9 among 1..5) would set the inferred scale without a
    word otherwise."""
    values = raw.to_numpy(dtype=float)
    distinct = np.unique(values)
    if len(distinct) < 3 or not np.all(values == np.round(values)):
        return []
    out, span = [], distinct[-1] - distinct[0]
    for value, near, side in ((distinct[-1], distinct[-2], "highest"),
                              (distinct[0], distinct[1], "lowest")):
        if abs(value - near) > 2 and abs(value - near) >= 0.25 * span:
            out.append(f"the {side} rating, {value:g} ({int((values == value).sum())} rating(s)), "
                       f"is {abs(value - near) - 1:g} unused scale points away from the next "
                       f"({near:g})")
    return out


def _refuse_dominated_scale(raw: pd.Series, rating: str, origin: Origin) -> None:
    """An inferred range that one outlying value sets (1..5 and a 1e308) is refused."""
    distinct = np.unique(raw.to_numpy())
    if len(distinct) < 3:
        return
    rest_top = distinct[-2] - distinct[0]
    rest_bottom = distinct[-1] - distinct[1]
    for value, gap, rest, side in ((distinct[-1], distinct[-1] - distinct[-2], rest_top, "highest"),
                                   (distinct[0], distinct[1] - distinct[0], rest_bottom, "lowest")):
        if gap > DOMINANCE * rest:
            where = origin.rows(raw.index[raw == value])
            others = (f"{distinct[0]:g}..{distinct[-2]:g}" if side == "highest"
                      else f"{distinct[1]:g}..{distinct[-1]:g}")
            raise RatingsError(
                f"rating column {rating!r}: the {side} rating, {value:g} ({where}), lies far "
                f"outside all the others ({others}), so an inferred Likert scale would be set by "
                f"that one value and rescale every other rating to almost nothing{origin.legend}. "
                "Fix that rating if it is a typo, or pass scale=(lo, hi) if it is real."
            )


def encode_labels(df: pd.DataFrame, system: str) -> tuple[pd.DataFrame, list[str]]:
    """Stage 6: identifiers as text; system a categorical in sorted label order (as R's factor)."""
    sys_order = _sort_labels(df["system"])
    sys_labels = [str(s) for s in sys_order]
    if len(set(sys_labels)) < len(sys_labels):
        raise RatingsError(
            f"system column {system!r} has labels that coincide as text "
            f"({sys_order!r}); make the labels distinct."
        )
    df = df.assign(worker=df["worker"].astype(str), item=df["item"].astype(str),
                   system=pd.Categorical(df["system"].astype(str), categories=sys_labels))
    return df, sys_labels


def resolve_duplicates(df: pd.DataFrame, duplicates: str, sys_labels: list[str],
                       origin: Origin, names: dict[str, str] | None = None
                       ) -> tuple[pd.DataFrame, int, int, list[str]]:
    """Stage 7: repeated (worker, item, system) ratings refused, kept or averaged.

    ``names`` (the file's column names) label the message.  Returns (data, duplicated
    combinations, surplus rows, notes).
    """
    key = ["worker", "item", "system"]
    w, i, s = (str((names or {}).get(k, k)) for k in key)
    dup_mask = df.duplicated(key, keep=False)
    if not dup_mask.any():
        return df, 0, 0, []
    n_dup_groups = int(df.loc[dup_mask, key].drop_duplicates().shape[0])
    n_dup_rows = int(df.duplicated(key, keep="first").sum())
    first = df.loc[dup_mask].iloc[0]
    same = df.loc[(df["worker"] == first["worker"]) & (df["item"] == first["item"])
                  & (df["system"] == first["system"])]
    example = (
        f"{w} {first['worker']!r}, {i} {first['item']!r}, {s} {first['system']!r} "
        f"at {origin.rows(same.index)} with ratings "
        f"{', '.join(f'{v:g}' for v in same['rating_raw'])}"
    )
    if duplicates == "error":
        raise RatingsError(
            f"{n_dup_groups} ({w}, {i}, {s}) combination(s) are rated more than once "
            f"({n_dup_rows} surplus rows); e.g. {example}{origin.legend}. Pass duplicates='keep' "
            "to treat repeated ratings as independent replicates, duplicates='mean' to average "
            "them, or remove them."
        )
    if duplicates == "mean":
        df = df.groupby(key, observed=True, sort=False)["rating_raw"].mean().reset_index()
        df["system"] = pd.Categorical(df["system"].astype(str), categories=sys_labels)
    note = (f"{n_dup_groups} duplicated (worker, item, system) combinations, handled with "
            f"duplicates={duplicates!r}")
    return df, n_dup_groups, n_dup_rows, [note]


_ADVICE = {
    "worker": "Worker variance cannot be estimated from one worker: collect ratings "
              "from more workers, or check that worker= names the worker id column.",
    "item": "Item variance cannot be estimated from one item: rate more items, or "
            "check that item= names the item (input) id column.",
    "system": "There is nothing to compare with one system: include the ratings of "
              "the baseline system, or check that system= names the right column.",
}


def check_levels(df: pd.DataFrame, names: dict[str, str]) -> None:
    """Stage 8: at least two workers, items and systems."""
    for arg, what in (("worker", "workers"), ("item", "items"), ("system", "systems")):
        if df[arg].nunique() < 2:
            raise RatingsError(
                f"{arg} column {names[arg]!r} has a single value ({df[arg].iloc[0]!r}); at least "
                f"2 {what} are needed. {_ADVICE[arg]}"
            )
