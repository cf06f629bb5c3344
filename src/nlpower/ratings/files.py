"""Loading a rating file as a table, and naming its rows as an editor shows them.

The first stage of :func:`nlpower.ratings.read_ratings`: the format is taken
from the extension (``.csv``, ``.tsv``, ``.json``, ``.jsonl``, ``.parquet``;
text formats may be gzipped), and every later message points at a row by
its :class:`Origin` -- ``line 7`` of a CSV file is the seventh line an editor
shows (1-based, the header is line 1), ``record 3`` of a JSON array, ``row 5``
(the index label) of a data frame.  Nothing is validated or fitted here.

A file that cannot be read is refused in words that say why and what to do:
text in another encoding (with a hint when the bytes look like UTF-16 or
latin-1, the encodings spreadsheet programs write: pass ``encoding=``), a
damaged gzip archive, a binary file, malformed CSV or JSON (a ``sep=`` hint
only when the header suggests another delimiter).
"""

from __future__ import annotations

import codecs
import gzip
import os
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from .._inputs import BINARY_MAGIC, decoding_hint
from ..errors import RatingsError

__all__ = ["ORIGIN_ATTR", "READERS", "Origin", "check_encoding", "load_table", "read_table", "rows_at",
           "sep_hint"]

#: ``DataFrame.attrs`` key of the :class:`Origin` of a frame :func:`read_table` read
ORIGIN_ATTR = "nlpower_origin"

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
_SEPARATORS = {";": "semicolon", "\t": "tab", "|": "pipe"}


@dataclass(frozen=True)
class Origin:
    """Where the rows came from, to name a row as the user would find it.

    ``kind`` is the reader (``"csv"``, ``"tsv"``, ``"json"``, ``"jsonl"``,
    ``"parquet"``) or ``"frame"`` for a data frame; ``name`` is the path or
    ``"<DataFrame>"``; ``sep`` the delimiter of a CSV or TSV file.  Row labels are the table's index as loaded (0-based
    positions for files, the user's labels for a data frame).
    """

    name: str
    kind: str
    sep: str | None = None   # the delimiter a text table was read with

    @property
    def is_frame(self) -> bool:
        return self.kind == "frame"

    def where(self, label: Any) -> str:
        """``line 7`` (text files: 1-based, header counted), ``record 3``, ``row 5``."""
        if self.kind in ("csv", "tsv"):
            return f"line {int(label) + 2}"
        if self.kind == "jsonl":
            return f"line {int(label) + 1}"
        if self.kind == "json":
            return f"record {int(label) + 1}"
        if self.kind == "parquet":
            return f"row {int(label) + 1}"
        return f"row {label}"

    def rows(self, labels: Iterable[Any]) -> str:
        """Up to five rows as :meth:`where` names them, e.g. ``lines 3, 7, ...``."""
        labels = list(labels)
        shown = [self.where(i) for i in labels[:_MAX_SHOWN]]
        if len(shown) > 1:
            word, _, _ = shown[0].partition(" ")
            shown = [f"{word}s {shown[0].partition(' ')[2]}"] + [s.partition(" ")[2] for s in shown[1:]]
        return ", ".join(shown) + (", ..." if len(labels) > _MAX_SHOWN else "")

    @property
    def legend(self) -> str:
        """How rows are counted, for a message: ``(lines as an editor shows them, ...)``."""
        return {"csv": " (line numbers as an editor shows them; the header is line 1)",
                "tsv": " (line numbers as an editor shows them; the header is line 1)",
                "jsonl": " (line numbers as an editor shows them)",
                "json": " (records counted from 1)",
                "parquet": " (rows counted from 1)",
                "frame": " (rows by the data frame's index)"}[self.kind]


def _suffixes(path: Path) -> tuple[str, bool]:
    """(format extension, gzipped?) of a path, e.g. ``a.csv.gz`` -> (".csv", True)."""
    suffixes = [s.lower() for s in path.suffixes]
    gz = bool(suffixes) and suffixes[-1] == ".gz"
    if gz:
        suffixes = suffixes[:-1]
    return (suffixes[-1] if suffixes else ""), gz


def check_encoding(encoding: Any) -> str | None:
    """``encoding`` as a codec name Python knows (``None``: UTF-8), or a RatingsError."""
    if encoding is None:
        return None
    if not isinstance(encoding, str):
        raise RatingsError(f"encoding must be the name of a text encoding, e.g. 'utf-8', "
                           f"'latin-1' or 'utf-16'; got {encoding!r}.")
    try:
        return codecs.lookup(encoding).name
    except LookupError:
        raise RatingsError(f"encoding={encoding!r} is not a text encoding Python knows; use e.g. "
                           "'utf-8', 'latin-1', 'cp1252' or 'utf-16'.") from None


def _head(path: Path, gz: bool, size: int = 4096) -> bytes:
    """The first bytes of the file (decompressed for ``.gz``); empty if unreadable."""
    try:
        with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
            return bytes(fh.read(size))
    except (OSError, EOFError, zlib.error):
        return b""


def load_table(path: Path, sep: str | None,
               encoding: str | None = None) -> tuple[pd.DataFrame, Origin]:
    """The file as a table (index: 0-based data rows as in the file) and its :class:`Origin`.

    Blank lines of a text file are kept while reading (so the index still
    counts the file's lines) and then dropped.  ``encoding`` is the text
    files' encoding (default UTF-8).
    """
    ext, gz = _suffixes(path)
    kind = READERS.get(ext)
    if kind is None:
        allowed = ", ".join(sorted(READERS)) + " (text formats may end in .gz)"
        raise RatingsError(
            f"source: cannot tell the format of {str(path)!r} from its extension "
            f"{(ext + ('.gz' if gz else '')) or '(none)'!r}. Allowed extensions: {allowed}. "
            "Rename the file (or convert it to CSV)."
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
    compression: Literal["gzip"] | None = "gzip" if gz else None
    if kind != "parquet" and encoding is None:
        head = _head(path, gz)
        if b"\x00" in head or head.startswith(BINARY_MAGIC):
            raise RatingsError(f"source: {str(path)!r} is not {kind.upper()} text; "
                               f"{decoding_hint(head)}.")
    try:
        if kind in ("csv", "tsv"):
            delim = sep if sep is not None else ("," if kind == "csv" else "\t")
            table = pd.read_csv(path, sep=delim, compression=compression, skip_blank_lines=False,
                                encoding=encoding)
            if not isinstance(table.index, pd.RangeIndex):
                raise RatingsError(_extra_fields(path, delim, len(table.columns), sep, encoding))
            table = table.loc[~table.isna().all(axis=1)] if len(table.columns) else table
        elif kind == "json":
            table = pd.read_json(path, compression=compression, encoding=encoding)
        elif kind == "jsonl":
            table = pd.read_json(path, lines=True, compression=compression, encoding=encoding)
        else:
            table = pd.read_parquet(path)
    except RatingsError:
        raise
    except pd.errors.EmptyDataError as exc:
        raise RatingsError(
            f"source: {str(path)!r} is empty (no header, no rows). Give the file that holds "
            "the ratings."
        ) from exc
    except ImportError as exc:  # pragma: no cover - pyarrow is a dev dependency
        raise RatingsError(
            f"source: reading {str(path)!r} needs an optional library ({exc}); install "
            "nlpower[parquet] or convert the file to CSV."
        ) from exc
    except UnicodeError as exc:
        shown = f" (byte {exc.object[exc.start:exc.start + 1]!r})" \
            if isinstance(exc, UnicodeDecodeError) else ""
        raise RatingsError(
            f"source: {str(path)!r} is not {encoding or 'UTF-8'} text{shown}; "
            f"{decoding_hint(_head(path, gz))}."
        ) from None
    except (gzip.BadGzipFile, zlib.error, EOFError) as exc:
        raise RatingsError(
            f"source: {str(path)!r} is not a complete gzip archive ({exc or type(exc).__name__}): "
            "it is damaged or was cut short. Compress the file again (or rename it without "
            ".gz if it is not compressed)."
        ) from None
    except PermissionError:
        raise RatingsError(f"source: cannot read {str(path)!r}: permission denied. Check the "
                           "file's permissions.") from None
    except Exception as exc:  # malformed content
        raise RatingsError(_malformed(path, kind, gz, sep, encoding, exc)) from exc
    return table, Origin(str(path), kind, _delimiter(path, sep))


def _extra_fields(path: Path, delim: str, n_columns: int, sep: str | None,
                  encoding: str | None) -> str:
    """Rows with more fields than the header: pandas would take the first ones as row labels."""
    hint = sep_hint(path, sep, encoding)
    if hint:
        return f"source: {str(path)!r} cannot be split into columns with sep={delim!r}.{hint}"
    return (f"source: {str(path)!r}: some lines have more fields than the header's {n_columns} "
            f"(read with sep={delim!r}). Quote fields that hold the delimiter (e.g. a decimal "
            "comma: \"3,5\"), remove trailing delimiters, or pass the right sep=.")


def _malformed(path: Path, kind: str, gz: bool, sep: str | None, encoding: str | None,
               exc: Exception) -> str:
    """Why a file is not valid CSV/JSON, and a hint only where one is likely to help."""
    head = _head(path, gz)
    if b"\x00" in head:
        return f"source: {str(path)!r} is not {kind.upper()} text; {decoding_hint(head)}."
    detail = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() \
        else type(exc).__name__
    hint = sep_hint(path, sep, encoding) if kind in ("csv", "tsv") else ""
    if kind in ("json", "jsonl") and not hint:
        hint = (" A .json file holds one array of records ([{...}, {...}]); a .jsonl file one "
                "record per line.")
    return (f"source: could not read {str(path)!r} as {kind.upper()}{' (gzip)' if gz else ''}: "
            f"{detail}. Check that the file is a valid {kind.upper()} file.{hint}")


def _delimiter(path: Path, sep: str | None) -> str | None:
    """The delimiter a text file was (or will be) read with; None for JSON or Parquet."""
    ext, _ = _suffixes(path)
    kind = READERS.get(ext)
    if kind not in ("csv", "tsv"):
        return None
    return sep if sep is not None else ("," if kind == "csv" else "\t")


def sep_hint(path: Path, sep: str | None, encoding: str | None = None) -> str:
    """' The file looks semicolon-separated ...; pass sep=';'.' when its header says so, else ''."""
    used = _delimiter(path, sep)
    if used is None:
        return ""
    try:
        _, gz = _suffixes(path)
        with (gzip.open(path, "rt", encoding=encoding or "utf-8", errors="replace") if gz
              else open(path, encoding=encoding or "utf-8", errors="replace")) as fh:
            header = fh.readline()
    except (OSError, UnicodeDecodeError, EOFError, zlib.error, LookupError):
        return ""
    counts = {c: header.count(c) for c in _SEPARATORS if c != used}
    best = max(counts, key=lambda c: counts[c]) if counts else None
    if best is None or counts[best] == 0 or header.count(used) >= counts[best]:
        return ""
    return (f" The file looks {_SEPARATORS[best]}-separated (its header line is "
            f"{header.rstrip(chr(10) + chr(13))!r}) but was read with sep={used!r}: pass "
            f"sep={best!r}.")


def read_table(path: str | os.PathLike[str], what: str, *, sep: str | None = None,
               encoding: str | None = None, options: bool = True) -> pd.DataFrame:
    """A table file other than a rating file (votes, judgements, batches), read like one.

    :func:`load_table` with its messages about ``what`` (e.g. ``"votes"``);
    the frame's ``attrs[ORIGIN_ATTR]`` is the :class:`Origin`, so later
    messages can name a row as the line an editor shows.  A text file that
    reads as one column whose header holds another delimiter is refused.
    ``options=False``: the caller takes no ``sep=``/``encoding=``, so the
    advice is to save the file as UTF-8 CSV instead.
    """
    p = os.fspath(path)
    if not os.path.exists(p):
        raise RatingsError(f"{what} file {p!r} does not exist; pass the path of a CSV, TSV, "
                           "JSON-lines or Parquet file.")
    try:
        frame, origin = load_table(Path(p), sep, check_encoding(encoding))
    except RatingsError as exc:
        text = str(exc).replace("source: ", f"{what} file: ", 1).replace(
            "Give the file that holds the ratings", f"Give the right {what} file")
        if not options:
            text = re.sub(r"pass encoding='[^']*'( if that is its encoding)?",
                          "save it as UTF-8 text", text)
        elif "encoding=" in text:
            text += " Or save the file as UTF-8 text."
        raise RatingsError(text) from None
    if len(frame.columns) == 1:
        hint = sep_hint(Path(p), sep, encoding)
        if hint:
            hint = hint if options else ""
            raise RatingsError(f"{what} file: {p!r} holds a single column "
                               f"{str(frame.columns[0])!r}.{hint} Save it comma-separated "
                               "(or as TSV with a .tsv name).")
    frame.attrs[ORIGIN_ATTR] = origin
    return frame


def rows_at(frame: pd.DataFrame, positions: Any) -> str:
    """Rows at 0-based ``positions`` as the user finds them, with how they are counted.

    Lines of a file :func:`read_table` read (``line 7 (line numbers as an
    editor shows them ...)``), index labels of any other data frame.
    """
    origin = frame.attrs.get(ORIGIN_ATTR)
    if not isinstance(origin, Origin):
        origin = Origin("<DataFrame>", "frame")
    return origin.rows(frame.index[np.asarray(positions, dtype=np.int64)]) + origin.legend
