"""Checkpoint files for grids: finished cells survive an interrupt.

A checkpoint is a JSON-lines file.  The first line is a header holding the
*fingerprint* of the grid (axes, parameter sets, design template, ``n_sims``,
``alpha``, test, alternative, engine, root seed and package version); every
further line is one finished cell::

    {"format": "nlpower-grid-checkpoint", "format_version": 3, "fingerprint": {...}, "layout": {...}, "sha256": "..."}
    {"cell": "<canonical key>", "index": 0, "seed": [...], "record": {...}, "sha256": "..."}
    ...

The header's ``layout`` (axis order, result columns, the shard) lets
:func:`nlpower.grid.merge` rebuild the grid from files alone.  The header
carries the SHA-256 of the rest of its line: a header whose settings were
edited (``alpha``, ``n_sims``, the test) would relabel numbers computed under
the old settings, so such a file is refused.  Each record
carries the SHA-256 of the rest of its line and is validated on reading
(:mod:`nlpower.grid.records`): a record that was edited, damaged, duplicated
with other values, holds an impossible value, lacks a field or names a cell
or seed that is not this grid's is dropped with a warning naming its line,
and its cell is computed again (its key-derived seed gives the numbers it
should have had).  The file is never trusted into a wrong grid.

Writes are crash-safe: the header is written to a temporary file and moved
into place with :func:`os.replace` (atomic, :func:`nlpower._outputs.atomic_output`),
and each cell record is appended
as one line followed by ``flush`` and ``os.fsync``.  An interrupt can at worst
leave a torn *last* line, which :func:`open_checkpoint` drops (with a warning)
before resuming; the cells before it are kept.

Resuming against a checkpoint written for a different grid raises
:class:`~nlpower.errors.CheckpointError` naming every field that differs; so
does a path that is a directory, unreadable, or not an nlpower checkpoint.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from .._outputs import atomic_output
from ..errors import CheckpointError, NlpowerWarning, OutputError
from .records import canonical, check_line, line_digest

FORMAT = "nlpower-grid-checkpoint"
FORMAT_VERSION = 3

__all__ = ["Checkpoint", "fingerprint_diff", "normalize", "open_checkpoint", "read_header", "read_records"]

#: ``{cell token: (index, seed spawn key)}`` of every cell of a grid.
Expected = Mapping[str, tuple[int, list[int]]]
#: Turns a stored record into the problem's typed result (raises if it cannot).
Parse = Callable[[Mapping[str, Any]], Any]


def normalize(obj: Any) -> Any:
    """``obj`` as plain JSON types (tuples -> lists, numpy scalars -> Python)."""
    return json.loads(json.dumps(obj, default=_json_default))


def _json_default(obj: Any) -> Any:
    # numpy scalars and arrays, without importing numpy at module level
    if hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return obj.item()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in a checkpoint")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, default=_json_default, sort_keys=True, separators=(",", ":"))


def fingerprint_diff(stored: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Human-readable differences between two fingerprints (empty if equal)."""
    stored = normalize(stored)
    current = normalize(current)
    out = []
    for key in sorted(set(stored) | set(current)):
        if key not in stored:
            out.append(f"{key} is not in the file but is {_short(current[key])} now")
        elif key not in current:
            out.append(f"{key} is {_short(stored[key])} in the file but absent now")
        elif stored[key] != current[key]:
            out.append(f"{key} is {_short(stored[key])} in the file but {_short(current[key])} now")
    return out


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(path: Path) -> str:
    return f"checkpoint={str(path)!r}"


def read_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The header of the checkpoint at ``path``, or ``None`` if there is none yet.

    A missing or empty file has no header.  A directory, an unreadable file or
    a file that is not an nlpower checkpoint raises
    :class:`~nlpower.errors.CheckpointError`.
    """
    path = Path(path)
    if path.is_dir():
        raise CheckpointError(
            f"{_describe(path)} is a directory; a checkpoint is a file. "
            f"Pass a file path such as {str(path / 'grid.ckpt')!r}."
        )
    try:
        if not path.exists() or path.stat().st_size == 0:
            return None
        with path.open("rb") as fh:
            first = fh.readline()
    except OSError as exc:
        raise CheckpointError(f"cannot read {_describe(path)}: {exc.strerror or exc}. "
                              "Check the path and its permissions.") from None
    try:
        header = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        shown = first[:60].decode("utf-8", errors="replace").rstrip("\r\n")
        raise CheckpointError(
            f"{_describe(path)} exists but is not an nlpower grid checkpoint "
            f"(its first line is {shown!r}). Pass a new path for the checkpoint, "
            "or delete the file if it is safe to do so."
        )
    if header.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"{_describe(path)} has format version {header.get('format_version')!r}; "
            f"this nlpower reads version {FORMAT_VERSION} (a checksummed header and records). "
            "Start a new checkpoint file."
        )
    if header.get("sha256") != line_digest(header):
        raise CheckpointError(
            f"{_describe(path)}: its header's checksum does not match its contents -- the "
            "header was edited or damaged, so the settings it states (alpha, n_sims, the test, "
            "the seed ...) are not the ones its cells were computed under. Do not edit a "
            "checkpoint: start a new checkpoint file (or delete this one) and run again."
        )
    return header


def seal(header: Mapping[str, Any]) -> dict[str, Any]:
    """``header`` as plain JSON with the SHA-256 of its other fields in ``sha256``."""
    head = normalize({k: v for k, v in header.items() if k != "sha256"})
    head["sha256"] = line_digest(head)
    return head


class Checkpoint:
    """An open checkpoint: ``append()`` one finished cell at a time.

    Use :func:`open_checkpoint` to create one; close it (or use it as a
    context manager) when the grid is done.
    """

    def __init__(self, path: Path, fh: IO[str]):
        self.path = path
        self._fh = fh

    def append(self, cell: str, index: int, seed: Any, record: Mapping[str, Any]) -> None:
        """Append one finished cell, with its checksum, and force it to disk (flush + fsync)."""
        self._fh.write(entry_line(cell, index, seed, record) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Checkpoint({str(self.path)!r})"


def entry_line(cell: str, index: int, seed: Any, record: Mapping[str, Any]) -> str:
    """One record line (without its newline): the entry and its SHA-256."""
    entry = normalize({"cell": cell, "index": int(index), "seed": seed, "record": dict(record)})
    entry["sha256"] = line_digest(entry)
    return _dumps(entry)


def write_checkpoint(path: Path, header: Mapping[str, Any], lines: list[str]) -> None:
    """Write a whole checkpoint atomically (temporary file + :func:`os.replace`).

    The header is sealed with its checksum (:func:`seal`).
    """
    with atomic_output(path, what="checkpoint") as fh:
        fh.write("\n".join([_dumps(seal(header)), *lines]) + "\n")


def open_checkpoint(
    path: str | os.PathLike[str], fingerprint: Mapping[str, Any], *,
    layout: Mapping[str, Any] | None = None, expected: Expected | None = None,
    parse: Parse | None = None,
) -> tuple[Checkpoint, dict[str, dict[str, Any]]]:
    """Open (or create) the checkpoint at ``path`` for the grid ``fingerprint``.

    Returns the open :class:`Checkpoint` and the valid finished cells already
    in the file, as ``{cell key: {"index", "seed", "record", "result"}}``
    (``result`` is ``parse(record)``, or the record without ``parse``).
    Invalid records (see :func:`read_records`) are dropped from the file with
    a warning naming their lines, so their cells are computed again.

    Parameters
    ----------
    layout : mapping, optional
        Axis order, result columns and shard, stored in a new file's header;
        resuming with another shard raises.
    expected : mapping, optional
        ``{cell token: (index, spawn key)}`` of the grid's cells.
    parse : callable, optional
        Rebuilds a typed result from a record; a record it cannot rebuild is
        invalid.

    Raises
    ------
    CheckpointError
        The file belongs to a different grid or shard (the message lists what
        differs), is not a checkpoint, is a directory, or cannot be read.
    """
    path = Path(path)
    header = read_header(path)
    done: dict[str, dict[str, Any]] = {}
    try:
        if header is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            head = {"format": FORMAT, "format_version": FORMAT_VERSION,
                    "fingerprint": normalize(fingerprint)}
            if layout is not None:
                head["layout"] = normalize(layout)
            write_checkpoint(path, head, [])
        else:
            diff = fingerprint_diff(header.get("fingerprint", {}), fingerprint)
            if diff:
                raise CheckpointError(
                    f"{_describe(path)} was written for a different grid: " + "; ".join(diff)
                    + ". Resume with the original arguments, or pass a new checkpoint path "
                    "(or delete the file) to start this grid afresh."
                )
            stored_shard = (header.get("layout") or {}).get("shard")
            shard = None if layout is None else normalize(layout).get("shard")
            if stored_shard != shard:
                raise CheckpointError(
                    f"{_describe(path)} holds {_shard_text(stored_shard)} but this run is "
                    f"{_shard_text(shard)}. Give each shard its own checkpoint file."
                )
            done, bad, keep = read_records(path, expected, parse, header.get("fingerprint"))
            for line_no, reason in bad:
                warnings.warn(f"checkpoint {str(path)!r}, line {line_no}: {reason}; "
                              "the record is dropped and its cell will be computed again.",
                              NlpowerWarning, stacklevel=4)
            if bad or not _ends_with_newline(path):
                write_checkpoint(path, header, keep)
        fh = path.open("a", encoding="utf-8")
    except OutputError as exc:
        raise CheckpointError(str(exc)) from None
    except OSError as exc:
        raise CheckpointError(f"cannot write {_describe(path)}: {exc.strerror or exc}. "
                              "Check the path and its permissions.") from None
    return Checkpoint(path, fh), done


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


def _shard_text(shard: Any) -> str:
    return "the whole grid" if shard is None else f"shard {shard[0]}/{shard[1]}"


def read_records(
    path: Path, expected: Expected | None = None, parse: Parse | None = None,
    settings: Mapping[str, Any] | None = None,
) -> tuple[dict[str, dict[str, Any]], list[tuple[int, str]], list[str]]:
    """The valid cells of a checkpoint, the invalid lines, and the lines worth keeping.

    Returns ``(done, bad, keep)``: ``done`` maps each cell token to its
    ``index``, ``seed``, ``record`` and ``result``; ``bad`` lists
    ``(line number, reason)`` for every line that is not valid UTF-8 JSON,
    fails its checksum or :func:`nlpower.grid.records.check_line`, cannot be
    ``parse``-d, contradicts itself, the grid's ``settings`` (its fingerprint:
    ``n_sims``, ``alpha``, test, alternative) or its own cell
    (:func:`nlpower.grid.records.check_consistent`), or disagrees with another
    line for the same cell (both are
    bad then); ``keep`` holds the text of the valid lines, without repeats.
    Line numbers count the header as line 1, as an editor shows them.
    """
    with path.open("rb") as fh:
        raw = fh.read().split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()  # a file written by us ends with a newline
    body = raw[1:]
    bad: list[tuple[int, str]] = []
    found: dict[str, tuple[int, dict[str, Any] | None, str]] = {}
    for n, data in enumerate(body):
        line_no = n + 2
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.append((line_no, f"it is not UTF-8 text (byte {exc.start})"))
            continue
        try:
            entry = json.loads(text)
        except ValueError:
            last = n == len(body) - 1
            bad.append((line_no, "it is an incomplete last record (the run was interrupted "
                        "while writing it)" if last else "it is not valid JSON"))
            continue
        reason = check_line(entry, expected, settings)
        if reason is None and parse is not None:
            try:
                entry["result"] = parse(entry["record"])
            except Exception as exc:  # any failure to rebuild makes the record invalid
                reason = f"its record cannot be read back ({type(exc).__name__}: {exc})"
        if reason is not None:
            cell = entry.get("cell") if isinstance(entry, dict) else None
            if isinstance(cell, str) and cell not in reason:
                reason = f"{reason} (cell {cell})"
            bad.append((line_no, reason))
            continue
        token = entry["cell"]
        if token in found:
            first_no, first, first_text = found[token]
            if first is not None and canonical(first["record"]) == canonical(entry["record"]):
                continue  # the same cell twice with the same numbers: keep one
            if first is not None:
                bad.append((first_no, f"cell {token} is stored again at line {line_no} "
                            "with other values"))
            bad.append((line_no, f"cell {token} is stored again (first at line {first_no}) "
                        "with other values"))
            found[token] = (first_no, None, first_text)
            continue
        found[token] = (line_no, entry, text)
    done: dict[str, dict[str, Any]] = {}
    keep: list[str] = []
    for token, (_, entry, text) in found.items():
        if entry is None:
            continue
        done[token] = {"index": entry["index"], "seed": entry["seed"], "record": entry["record"],
                       "result": entry.get("result", entry["record"])}
        keep.append(text)
    bad.sort()
    return done, bad, keep
