"""Read paired system scores from files (NLPStatTest's input formats).

* two files with one score per line (system A, system B), paired by line;
* one file with a pair of scores per line (whitespace, tab or comma
  separated, as NLPStatTest's uploads), or a CSV with a header whose two
  columns are chosen by name (``columns=``) or are the first two.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .._inputs import read_text
from ..errors import InputError
from .units import as_pairs

__all__ = ["PairedScores", "read_scores"]


@dataclass(frozen=True, eq=False)
class PairedScores:
    """Scores of two systems read from disk, paired by position."""

    a: np.ndarray
    b: np.ndarray
    names: tuple[str, str]

    def __repr__(self) -> str:
        return f"PairedScores(names={self.names!r}, n={self.a.size})"


def _lines(path: Path) -> list[tuple[int, str]]:
    text = read_text(path, "score file")
    return [(i, ln.strip()) for i, ln in enumerate(text.splitlines(), 1)
            if ln.strip() and not ln.lstrip().startswith("#")]


def _one_per_line(path: Path) -> np.ndarray:
    values = []
    for lineno, line in _lines(path):
        try:
            values.append(float(line))
        except ValueError:
            raise InputError(
                f"{path}: line {lineno} is {line!r}, not one number. A score file has one score "
                "per line; for two columns pass a single file (nlpower compare scores.csv).") from None
        if not np.isfinite(values[-1]):
            raise InputError(
                f"{path}: line {lineno} is {line!r}, not a finite score. Scores are paired by "
                "line: remove that instance from both files (or impute its score) first.")
    if not values:
        raise InputError(f"{path}: no scores found (the file is empty).")
    return np.array(values)


def _delimiter(line: str) -> str:
    if "," in line:
        return ","
    if "\t" in line:
        return "\t"
    return r"\s+"


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _table(path: Path, columns: tuple[str, str] | None) -> tuple[np.ndarray, np.ndarray, tuple[str, str]]:
    lines = _lines(path)
    if not lines:
        raise InputError(f"{path}: no scores found (the file is empty).")
    sep = _delimiter(lines[0][1])
    first = [f.strip() for f in pd.Series([lines[0][1]]).str.split(sep, regex=sep != ",")[0]]
    header = 0 if not all(_is_number(f) for f in first) else None
    try:
        frame = pd.read_csv(io.StringIO("\n".join(line for _, line in lines)), sep=sep,
                            header=header, comment="#", skip_blank_lines=True, engine="python")
    except (ValueError, pd.errors.ParserError) as exc:
        raise InputError(f"{path}: cannot be read as a table of two score columns ({exc}). Give "
                         "two numbers per line, separated by a comma, a tab or spaces.") from None
    if header is None:
        frame.columns = [f"column {i + 1}" for i in range(frame.shape[1])]
    names = [str(c) for c in frame.columns]
    if columns is not None:
        if len(columns) != 2:
            raise InputError(f"columns must name two columns (system A, system B); got {columns!r}.")
        missing = [c for c in columns if c not in names]
        if missing:
            raise InputError(f"{path}: column(s) {missing} not found; the file has {names}. "
                             "Pass columns=(A, B) with two of these names.")
        chosen = (str(columns[0]), str(columns[1]))
    else:
        if frame.shape[1] < 2:
            raise InputError(
                f"{path}: found {frame.shape[1]} column, need two (scores of A and B per line). "
                "For one score per line give two files: nlpower compare A.txt B.txt.")
        chosen = (names[0], names[1])
    out = []
    for col in chosen:
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = values.isna()
        bad = bad | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raw = frame[col].iloc[row]
            shown = "empty" if pd.isna(raw) else f"{str(raw)!r}, not a finite number"
            lineno = lines[row + (1 if header == 0 else 0)][0]
            advice = ("it looks like a decimal comma: save the file with '.' as the decimal "
                      "mark" if re.fullmatch(r"\s*[+-]?\d+,\d+\s*", str(raw)) else
                      "remove that instance (or impute its score) first")
            raise InputError(f"{path}: column {col!r} on line {lineno} is {shown} "
                             f"({int(bad.sum())} such line(s) in all); every line needs two "
                             f"numeric scores: {advice}.")
        out.append(values.to_numpy(dtype=float))
    label = chosen if header == 0 else ("A", "B")
    return out[0], out[1], label


def read_scores(path_a: str | Path, path_b: str | Path | None = None, *,
                columns: tuple[str, str] | None = None) -> PairedScores:
    """Read the scores of systems A and B (NLPStatTest's file formats).

    Parameters
    ----------
    path_a, path_b : path
        Two files with one score per line, or ``path_a`` alone holding two
        columns (pairs per line, or a CSV with a header).
    columns : (str, str), optional
        The two columns of a single headed file (default: the first two).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "A.txt").write_text("0.5\\n0.7\\n0.9\\n"); _ = (d / "B.txt").write_text("0.4\\n0.7\\n0.6\\n")
    >>> read_scores(d / "A.txt", d / "B.txt")
    PairedScores(names=('A', 'B'), n=3)
    """
    pa = Path(path_a)
    if path_b is not None:
        if columns is not None:
            raise InputError("columns= selects two columns of one file; with two files each "
                             "holds one score per line. Drop columns= or give one file.")
        pb = Path(path_b)
        a, b = _one_per_line(pa), _one_per_line(pb)
        names = (pa.stem, pb.stem) if pa.stem != pb.stem else (str(pa), str(pb))
    else:
        a, b, names = _table(pa, columns)
    try:
        a, b = as_pairs(a, b)
    except InputError as exc:
        raise InputError(f"{exc} (files: {path_a}{'' if path_b is None else ', ' + str(path_b)})") \
            from None
    return PairedScores(a=a, b=b, names=names)
