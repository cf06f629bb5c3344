"""Checkpoint files for grids: finished cells survive an interrupt.

A checkpoint is a JSON-lines file.  The first line is a header holding the
*fingerprint* of the grid (axes, parameter sets, design template, ``n_sims``,
``alpha``, test, alternative, engine, root seed and package version); every
further line is one finished cell::

    {"format": "nlpower-grid-checkpoint", "format_version": 1, "fingerprint": {...}}
    {"cell": "<canonical key>", "index": 0, "seed": [...], "record": {...}}
    ...

Writes are crash-safe: the header is written to a temporary file and moved
into place with :func:`os.replace` (atomic), and each cell record is appended
as one line followed by ``flush`` and ``os.fsync``.  An interrupt can at worst
leave a torn *last* line, which :func:`open_checkpoint` drops (with a warning)
before resuming; the cells before it are kept.

Resuming against a checkpoint written for a different grid raises
:class:`~nlpower.errors.CheckpointError` naming every field that differs.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from ..errors import CheckpointError, NlpowerWarning

FORMAT = "nlpower-grid-checkpoint"
FORMAT_VERSION = 1

__all__ = ["Checkpoint", "fingerprint_diff", "normalize", "open_checkpoint", "read_header"]


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


def read_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The header of the checkpoint at ``path``, or ``None`` if there is none yet.

    A missing or empty file has no header.  A file that is not an nlpower
    checkpoint raises :class:`~nlpower.errors.CheckpointError`.
    """
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return None
    with path.open("r", encoding="utf-8") as fh:
        first = fh.readline()
    try:
        header = json.loads(first)
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CheckpointError(
            f"checkpoint={str(path)!r} exists but is not an nlpower grid checkpoint "
            f"(its first line is {first[:60]!r}). Pass a new path for the checkpoint, "
            "or delete the file if it is safe to do so."
        )
    if header.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint={str(path)!r} has format version {header.get('format_version')!r}; "
            f"this nlpower reads version {FORMAT_VERSION}. Start a new checkpoint file."
        )
    return header


class Checkpoint:
    """An open checkpoint: ``append()`` one finished cell at a time.

    Use :func:`open_checkpoint` to create one; close it (or use it as a
    context manager) when the grid is done.
    """

    def __init__(self, path: Path, fh: IO[str]):
        self.path = path
        self._fh = fh

    def append(self, cell: str, index: int, seed: Any, record: Mapping[str, Any]) -> None:
        """Append one finished cell and force it to disk (flush + fsync)."""
        line = _dumps({"cell": cell, "index": int(index), "seed": seed, "record": dict(record)})
        self._fh.write(line + "\n")
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


def open_checkpoint(
    path: str | os.PathLike[str], fingerprint: Mapping[str, Any]
) -> tuple[Checkpoint, dict[str, dict[str, Any]]]:
    """Open (or create) the checkpoint at ``path`` for the grid ``fingerprint``.

    Returns the open :class:`Checkpoint` and the finished cells already in the
    file, as ``{cell key: {"index", "seed", "record"}}``.

    Raises
    ------
    CheckpointError
        The file belongs to a different grid (the message lists what differs),
        is not a checkpoint, or is corrupted before its last line.
    """
    path = Path(path)
    header = read_header(path)
    done: dict[str, dict[str, Any]] = {}
    if header is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        head = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "fingerprint": normalize(fingerprint)}
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(_dumps(head) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    else:
        diff = fingerprint_diff(header.get("fingerprint", {}), fingerprint)
        if diff:
            raise CheckpointError(
                f"checkpoint={str(path)!r} was written for a different grid: "
                + "; ".join(diff)
                + ". Resume with the original arguments, or pass a new checkpoint path "
                "(or delete the file) to start this grid afresh."
            )
        done = _read_records(path)
    return Checkpoint(path, path.open("a", encoding="utf-8")), done


def _read_records(path: Path) -> dict[str, dict[str, Any]]:
    with path.open("r", encoding="utf-8") as fh:
        text = fh.read()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a file written by us ends with a newline
    header, body = lines[0], lines[1:]
    done: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(body):
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or not {"cell", "index", "record"} <= set(rec):
                raise ValueError("a record needs the fields cell, index and record")
        except ValueError as exc:
            if n == len(body) - 1:
                warnings.warn(
                    f"checkpoint {str(path)!r}: dropped an incomplete last record "
                    "(the run was interrupted while writing it); that cell will be rerun.",
                    NlpowerWarning, stacklevel=3,
                )
                _rewrite(path, [header, *body[:-1]])
                return done
            raise CheckpointError(
                f"checkpoint={str(path)!r} is corrupted at line {n + 2} ({exc}). "
                "Delete the file (or pass a new path) and rerun the grid."
            ) from None
        done[rec["cell"]] = {"index": rec["index"], "seed": rec.get("seed"), "record": rec["record"]}
    if not text.endswith("\n"):
        _rewrite(path, lines)  # complete last record without its newline: repair
    return done


def _rewrite(path: Path, lines: list[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
