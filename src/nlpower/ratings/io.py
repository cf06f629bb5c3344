"""Read and validate a raw rating file (one row per rating).

A thin edge plus validation: the file is read with pandas, columns are mapped
to ``worker, item, system, rating``, ratings are checked and rescaled to
[0, 1] as in Card et al. (2020, App. H.3): ``(r - lo) / (hi - lo)``.
Nothing is fitted here.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._choices import Duplicates, check_choice
from .._validation import closest_name
from ..errors import InputError, NlpowerWarning, RatingsError
from .report import DesignReport, design_report

__all__ = ["Ratings", "RatingsWarning", "read_ratings", "READERS"]


class RatingsWarning(NlpowerWarning):
    """Something about a rating file worth a look (dropped rows, inferred scale)."""


# extension -> reader kind; ".gz" may follow any text format
READERS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}

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


def _suffixes(path: Path) -> tuple[str, bool]:
    """(format extension, gzipped?) of a path, e.g. ``a.csv.gz`` -> (".csv", True)."""
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    if gz:
        suffixes = suffixes[:-1]
    return (suffixes[-1] if suffixes else ""), gz


def _read_file(path: Path, sep: str | None) -> pd.DataFrame:
    ext, gz = _suffixes(path)
    kind = READERS.get(ext)
    if kind is None:
        allowed = ", ".join(sorted(READERS)) + " (text formats may end in .gz)"
        raise RatingsError(
            f"source: cannot tell the format of {str(path)!r} from its extension "
            f"{(ext + ('.gz' if gz else '')) or '(none)'!r}. Allowed extensions: {allowed}. "
            "Rename the file, or read it yourself and pass a pandas DataFrame."
        )
    if kind == "parquet" and gz:
        raise RatingsError(
            f"source: {str(path)!r}: gzipped Parquet is not supported (Parquet compresses "
            "internally); decompress it or write it without the .gz wrapper."
        )
    if not path.exists():
        raise RatingsError(f"source: file {str(path)!r} does not exist. Check the path.")
    if path.is_dir():
        raise RatingsError(f"source: {str(path)!r} is a directory, not a rating file.")
    try:
        if kind in ("csv", "tsv"):
            delim = sep if sep is not None else ("," if kind == "csv" else "\t")
            return pd.read_csv(path, sep=delim, compression="gzip" if gz else None)
        if kind == "json":
            return pd.read_json(path, compression="gzip" if gz else None)
        if kind == "jsonl":
            return pd.read_json(path, lines=True, compression="gzip" if gz else None)
        return pd.read_parquet(path)
    except pd.errors.EmptyDataError as exc:
        raise RatingsError(
            f"source: {str(path)!r} is empty (no header, no rows). Point read_ratings at the "
            "file that holds the ratings."
        ) from exc
    except ImportError as exc:  # pragma: no cover - pyarrow is a dev dependency
        raise RatingsError(
            f"source: reading {str(path)!r} needs an optional library ({exc}); install "
            "nlpower[parquet] or convert the file to CSV."
        ) from exc
    except Exception as exc:  # unreadable: permissions, bad encoding, malformed content
        raise RatingsError(
            f"source: could not read {str(path)!r} as {kind.upper()}"
            f"{' (gzip)' if gz else ''}: {type(exc).__name__}: {exc}. Check that the file is "
            f"a valid {kind.upper()} file (for a delimiter other than the default, pass sep=)."
        ) from exc


def _check_scale(scale: Any) -> tuple[float, float]:
    if isinstance(scale, str):
        raise RatingsError(
            f"scale must be a pair (lo, hi) of numbers such as (1, 5), or 'identity' to use the "
            f"ratings as given; got {scale!r}."
        )
    try:
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


def _rows(index: pd.Index) -> str:
    shown = ", ".join(str(i) for i in index[:_MAX_SHOWN])
    return shown + (", ..." if len(index) > _MAX_SHOWN else "")


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
) -> Ratings:
    """Read a rating file (or data frame) into a validated :class:`Ratings`.

    Parameters
    ----------
    source : path or DataFrame
        One row per rating.  The format is taken from the extension:
        ``.csv``, ``.tsv``/``.tab``, ``.json`` (records), ``.jsonl``/``.ndjson``
        (JSON Lines), ``.parquet``/``.pq``; text formats may be gzipped
        (``ratings.csv.gz``).
    worker, item, system, rating : str
        Names of the columns holding the worker id, the item (input) id, the
        system that produced the rated output, and the Likert rating.
    scale : (lo, hi), optional
        The Likert range, e.g. ``(1, 5)``.  Ratings are rescaled to [0, 1]
        as ``(r - lo) / (hi - lo)`` (Card et al. 2020, App. H.3).  When
        omitted, the range is inferred from the observed min and max (with
        a :class:`RatingsWarning` when that looks doubtful, e.g. non-integer
        bounds or a minimum other than 0 or 1); pass it whenever you know it,
        because the rescaled effects and SDs depend on it.  ``"identity"``:
        use the ratings as given, without rescaling or range checks (for
        continuous scores already on the scale you want to model, e.g.
        simulated ones).
    duplicates : {"error", "keep", "mean"}
        What to do with several ratings of the same (worker, item, system):
        raise (default), keep them all as independent replicates (the model
        has no worker x item x system term), or average them.
    sep : str, optional
        Delimiter for text files (default ``,`` for CSV and tab for TSV).

    Returns
    -------
    Ratings
        ``.data`` with columns worker, item, system, rating, rating_raw;
        ``.report`` (:class:`DesignReport`).  System categories are in sorted
        order of the labels (numbers as numbers), like R's ``factor()``.

    Raises
    ------
    RatingsError
        Unreadable or empty file, unknown extension, missing columns (with the
        closest available name), missing identifiers, non-numeric ratings,
        ratings outside ``scale``, all ratings equal (no scale to infer),
        duplicated ratings with ``duplicates="error"``, a single worker, item
        or system.

    Warns
    -----
    RatingsWarning
        Rows dropped because the rating is missing (with their count), or an
        inferred scale that looks doubtful.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"w": ["a", "a", "b", "b"], "i": [1, 1, 1, 1],
    ...                    "s": ["x", "y", "x", "y"], "r": [1, 5, 2, 4]})
    >>> r = read_ratings(df, worker="w", item="i", system="s", rating="r", scale=(1, 5),
    ...                  duplicates="error")  # doctest: +SKIP
    """
    ratings_choice("duplicates", duplicates, Duplicates)
    names = {"worker": worker, "item": item, "system": system, "rating": rating}
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
    lohi = None if (scale is None or identity) else _check_scale(scale)

    if isinstance(source, pd.DataFrame):
        raw = source
        source_name = "<DataFrame>"
    elif isinstance(source, (str, os.PathLike)):
        path = Path(source)
        raw = _read_file(path, sep)
        source_name = str(path)
    else:
        raise RatingsError(
            f"source must be a file path or a pandas DataFrame; got {type(source).__name__}."
        )

    if len(raw) == 0:
        where = "the data frame" if source_name == "<DataFrame>" else f"{source_name!r}"
        raise RatingsError(
            f"source: {where} has no rows"
            + (f" (only a header: {', '.join(map(repr, map(str, raw.columns)))})" if len(raw.columns) else "")
            + ". There is nothing to fit; check that you are reading the right file."
        )

    available = [str(c) for c in raw.columns]
    missing = [(arg, col) for arg, col in names.items() if col not in available]
    if missing:
        parts = []
        for arg, col in missing:
            close = closest_name(col, available)
            hint = f" (did you mean {close!r}? pass {arg}={close!r})" if close else ""
            parts.append(f"{arg}={col!r}{hint}")
        raise RatingsError(
            f"source: column{'s' if len(missing) > 1 else ''} not found: {'; '.join(parts)}. "
            f"Available columns: {', '.join(map(repr, available))}. Map your column names with "
            "read_ratings(..., worker=, item=, system=, rating=)."
        )

    df = raw.rename(columns=lambda c: str(c))[[worker, item, system, rating]]
    df.columns = pd.Index(["worker", "item", "system", "rating_raw"])
    df = df.reset_index(drop=True)

    # identifiers must be present
    for arg in ("worker", "item", "system"):
        bad = df.index[df[arg].isna()]
        if len(bad):
            raise RatingsError(
                f"{arg} column {names[arg]!r} has {len(bad)} missing value(s) at data row(s) "
                f"{_rows(bad)} (0-based, header excluded). Fill in or remove those rows."
            )

    # ratings: numeric, finite; missing ones are dropped with a count
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
        examples = ", ".join(f"row {i}: {_show(values.iloc[i])}" for i in bad[:_MAX_SHOWN])
        raise RatingsError(
            f"rating column {rating!r} has {len(bad)} non-numeric or infinite value(s) ({examples}"
            f"{', ...' if len(bad) > _MAX_SHOWN else ''}; rows are 0-based, header excluded). "
            "Ratings must be numbers (Likert points); fix or remove those rows, or pick the "
            "right column with rating=."
        )
    df["rating_raw"] = numeric.astype(float)
    missing_rating = df["rating_raw"].isna()
    n_dropped = int(missing_rating.sum())
    if n_dropped:
        warnings.warn(
            f"read_ratings: dropped {n_dropped} row(s) with a missing rating "
            f"(data rows {_rows(df.index[missing_rating])}).",
            RatingsWarning,
            stacklevel=2,
        )
        df = df.loc[~missing_rating].reset_index(drop=True)
    if len(df) == 0:
        raise RatingsError(
            f"rating column {rating!r} has no non-missing value ({n_dropped} rows, all missing). "
            "Check that rating= names the column with the scores."
        )

    # scale
    notes: list[str] = []
    obs_lo, obs_hi = float(df["rating_raw"].min()), float(df["rating_raw"].max())
    if identity:
        lo, hi = 0.0, 1.0
        scale_inferred = False
    elif lohi is not None:
        lo, hi = lohi
        out = df.index[(df["rating_raw"] < lo) | (df["rating_raw"] > hi)]
        if len(out):
            examples = ", ".join(f"row {i}: {df['rating_raw'].iloc[i]:g}" for i in out[:_MAX_SHOWN])
            raise RatingsError(
                f"rating column {rating!r} has {len(out)} value(s) outside scale={lohi} "
                f"({examples}{', ...' if len(out) > _MAX_SHOWN else ''}; observed range "
                f"{obs_lo:g}..{obs_hi:g}). Pass the scale the ratings were collected on, or fix "
                "those rows."
            )
        scale_inferred = False
    else:
        lo, hi = obs_lo, obs_hi
        scale_inferred = True
        if lo == hi:
            raise RatingsError(
                f"rating column {rating!r}: every rating equals {lo:g}, so the Likert range "
                "cannot be inferred (and there is no variation to model). Pass scale=(lo, hi) "
                "if this is really the data."
            )
        odd = []
        if lo != round(lo) or hi != round(hi):
            odd.append("the bounds are not whole numbers")
        if lo not in (0.0, 1.0):
            odd.append(f"the lowest rating is {lo:g}, not 0 or 1")
        if df["rating_raw"].nunique() < 3:
            odd.append("only two distinct ratings were seen")
        if odd:
            msg = (
                f"read_ratings: Likert scale inferred from the data as {lo:g}..{hi:g}, but "
                + "; ".join(odd)
                + ". Rescaled effects and SDs depend on the scale: pass scale=(lo, hi)."
            )
            warnings.warn(msg, RatingsWarning, stacklevel=2)
            notes.append("scale inferred and doubtful: " + "; ".join(odd))

    # identifiers as strings; system as a categorical in sorted label order
    sys_order = _sort_labels(df["system"])
    sys_labels = [str(s) for s in sys_order]
    if len(set(sys_labels)) < len(sys_labels):
        raise RatingsError(
            f"system column {system!r} has labels that coincide as text "
            f"({sys_order!r}); make the labels distinct."
        )
    df["worker"] = df["worker"].astype(str)
    df["item"] = df["item"].astype(str)
    df["system"] = pd.Categorical(df["system"].astype(str), categories=sys_labels)

    # duplicates
    key = ["worker", "item", "system"]
    dup_mask = df.duplicated(key, keep=False)
    n_dup_groups = int(df.loc[dup_mask, key].drop_duplicates().shape[0]) if dup_mask.any() else 0
    n_dup_rows = int(df.duplicated(key, keep="first").sum())
    if n_dup_groups:
        first = df.loc[dup_mask].iloc[0]
        same = df.loc[(df["worker"] == first["worker"]) & (df["item"] == first["item"])
                      & (df["system"] == first["system"])]
        example = (
            f"worker {first['worker']!r}, item {first['item']!r}, system {first['system']!r} "
            f"at data rows {_rows(same.index)} with ratings "
            f"{', '.join(f'{v:g}' for v in same['rating_raw'])}"
        )
        if duplicates == "error":
            raise RatingsError(
                f"{n_dup_groups} (worker, item, system) combination(s) are rated more than once "
                f"({n_dup_rows} surplus rows); e.g. {example}. Pass duplicates='keep' to treat "
                "repeated ratings as independent replicates, duplicates='mean' to average them, "
                "or remove them."
            )
        if duplicates == "mean":
            df = (
                df.groupby(key, observed=True, sort=False)["rating_raw"].mean().reset_index()
            )
            df["system"] = pd.Categorical(df["system"].astype(str), categories=sys_labels)
        notes.append(
            f"{n_dup_groups} duplicated (worker, item, system) combinations, handled with "
            f"duplicates={duplicates!r}"
        )

    df["rating"] = (df["rating_raw"] - lo) / (hi - lo)
    df = df[["worker", "item", "system", "rating", "rating_raw"]].reset_index(drop=True)

    for arg, what in (("worker", "workers"), ("item", "items"), ("system", "systems")):
        n = df[arg].nunique()
        if n < 2:
            value = df[arg].iloc[0]
            advice = {
                "worker": "Worker variance cannot be estimated from one worker: collect ratings "
                          "from more workers, or check that worker= names the worker id column.",
                "item": "Item variance cannot be estimated from one item: rate more items, or "
                        "check that item= names the item (input) id column.",
                "system": "There is nothing to compare with one system: include the ratings of "
                          "the baseline system, or check that system= names the right column.",
            }[arg]
            raise RatingsError(
                f"{arg} column {names[arg]!r} has a single value ({value!r}); at least 2 "
                f"{what} are needed. {advice}"
            )

    report = design_report(
        df,
        n_duplicate_groups=n_dup_groups,
        n_duplicate_rows=n_dup_rows,
        duplicates=duplicates,
        n_dropped=n_dropped,
        scale=None if identity else (lo, hi),
        scale_inferred=scale_inferred,
        source=source_name,
        extra_notes=tuple(notes),
    )
    return Ratings(data=df, scale=None if identity else (lo, hi), scale_inferred=scale_inferred, n_dropped=n_dropped,
                   report=report)
