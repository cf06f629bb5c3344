"""Checkpoints within a cell: finished batches of replicates survive a killed job.

A grid checkpoint (:mod:`nlpower.grid.checkpoint`) keeps finished *cells*; a
cell of 1,000 ordinal fits can take an hour, so a killed array job would lose
it all.  A *batch file* keeps the finished batches of replicates of one
computation -- a grid cell, or one :func:`nlpower.power` call with
``checkpoint=`` -- so the computation resumes at its first unfinished batch.
The replicate loops use it through :func:`nlpower.powersim.batches.run_batches`;
because every batch is computed from its own replicates' seeds with its own
warm start, the resumed result equals the uninterrupted one bit for bit.

The file is JSON lines: a header with the computation's *fingerprint*, then
one line per finished batch::

    {"format": "nlpower-batch-checkpoint", "format_version": 1, "fingerprint": {...}}
    {"run": "<run id>", "batch": 0, "start": 0, "stop": 50, "columns": {...}, "sha256": "..."}

``run`` names one replicate loop of the computation (the main run and the
effect-0 run of a cell, each analysis of a Likert cell); ``columns`` holds the
batch's per-replicate values (floats as JSON numbers, which read back to the
same bits).  Every line carries the SHA-256 of the rest of the line; a line
that fails it, is torn by a kill, holds a value no replicate can have (a
p-value outside [0, 1], a non-finite estimate of a replicate not marked
failed, a flag that is not ``true``/``false``), or disagrees with another line
for the same batch is dropped with a warning and its batch computed again.  A file whose
fingerprint differs (another grid, cell, seed, or other settings) raises
:class:`~nlpower.errors.CheckpointError` naming what differs.

In a grid with ``checkpoint="grid.ckpt"`` each unfinished cell has its batch
file in the directory ``grid.ckpt.cells/`` (named by a hash of the cell's
key), written by the process that runs the cell (on a cluster: a shared file
system); it is deleted once the cell's record is in ``grid.ckpt``.  The runner
makes the cell's file *current* (:func:`current`) while the cell runs, so the
problem's replicate loops find it without being told.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._outputs import atomic_output
from ..errors import CheckpointError, NlpowerWarning, OutputError
from .checkpoint import fingerprint_diff, normalize
from .records import canonical, line_digest

FORMAT = "nlpower-batch-checkpoint"
FORMAT_VERSION = 1

__all__ = ["BatchFile", "CellBatches", "active", "current", "digest", "read_fingerprint"]

_CURRENT: ContextVar[BatchFile | None] = ContextVar("nlpower_batch_file", default=None)


def digest(obj: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``obj``: a short identity for fingerprints."""
    return hashlib.sha256(canonical(normalize(obj)).encode("utf-8")).hexdigest()


def current() -> BatchFile | None:
    """The batch file of the computation running in this context (``None``: no checkpoint)."""
    return _CURRENT.get()


@contextmanager
def active(batch_file: BatchFile | None) -> Iterator[BatchFile | None]:
    """Make ``batch_file`` current while the block runs (``None`` turns checkpoints off)."""
    token = _CURRENT.set(batch_file)
    try:
        yield batch_file
    finally:
        _CURRENT.reset(token)


Key = tuple[str, int]


def read_fingerprint(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The fingerprint in the header of the batch file at ``path`` (``None``: no such file)."""
    try:
        with Path(path).open("rb") as fh:
            header = _json(fh.readline())
    except OSError:
        return None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    fp = header.get("fingerprint")
    return fp if isinstance(fp, dict) else None


class BatchFile:
    """The finished batches of one computation, read back on opening; ``put`` appends one.

    Opening reads an existing file (refusing one written for another
    fingerprint); the file is created with its header at the first
    :meth:`put`, so a computation that never batches leaves no file.
    """

    def __init__(self, path: str | os.PathLike[str], fingerprint: Mapping[str, Any]):
        self.path = Path(path)
        self.fingerprint = normalize(fingerprint)
        self._done: dict[Key, dict[str, Any]] = {}
        self.n_read = 0  #: batches served from the file so far
        self._load()

    # -- reading --------------------------------------------------------------------------
    def _load(self) -> None:
        path = self.path
        if path.is_dir():
            raise CheckpointError(f"batch checkpoint {str(path)!r} is a directory; pass a file "
                                  "path such as 'run.ckpt'.")
        try:
            if not path.exists() or path.stat().st_size == 0:
                return
            raw = path.read_bytes().split(b"\n")
        except OSError as exc:
            raise CheckpointError(f"cannot read batch checkpoint {str(path)!r}: "
                                  f"{exc.strerror or exc}. Check the path and its permissions.") from None
        header = _json(raw[0])
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            shown = raw[0][:60].decode("utf-8", errors="replace")
            raise CheckpointError(
                f"{str(path)!r} exists but is not an nlpower batch checkpoint (its first line is "
                f"{shown!r}). Pass a new path, or delete the file if it is safe to do so.")
        if header.get("format_version") != FORMAT_VERSION:
            raise CheckpointError(f"{str(path)!r} has batch checkpoint format version "
                                  f"{header.get('format_version')!r}; this nlpower reads version "
                                  f"{FORMAT_VERSION}. Start a new checkpoint file.")
        diff = _diff(header.get("fingerprint", {}), self.fingerprint)
        if diff:
            raise CheckpointError(
                f"batch checkpoint {str(path)!r} was written for a different computation: "
                + "; ".join(diff) + ". Resume with the original arguments, or delete the file "
                "(or pass a new path) to start afresh.")
        body = raw[1:-1] if raw[-1] == b"" else raw[1:]
        bad, keep = self._read_lines(body)
        for line_no, reason in bad:
            warnings.warn(f"batch checkpoint {str(path)!r}, line {line_no}: {reason}; the batch "
                          "will be computed again.", NlpowerWarning, stacklevel=4)
        if bad or raw[-1] != b"":
            _write_atomic(path, [canonical(header), *keep])

    def _read_lines(self, body: Sequence[bytes]) -> tuple[list[tuple[int, str]], list[str]]:
        bad: list[tuple[int, str]] = []
        found: dict[Key, tuple[int, dict[str, Any] | None, str]] = {}
        for n, data in enumerate(body):
            line_no = n + 2
            entry = _json(data)
            reason = _check(entry) if entry is not None else (
                "it is an incomplete last record (the run was killed while writing it)"
                if n == len(body) - 1 else "it is not valid JSON")
            if reason is not None:
                bad.append((line_no, reason))
                continue
            key = (entry["run"], entry["batch"])
            if key in found:
                first_no, first, _ = found[key]
                if first is not None and canonical(first) == canonical(entry):
                    continue
                bad.append((line_no, f"batch {key[1]} of run {key[0]} is stored again (first at "
                            f"line {first_no}) with other values"))
                found[key] = (first_no, None, "")
                continue
            found[key] = (line_no, entry, data.decode("utf-8"))
        keep = []
        for key, (_, entry, text) in found.items():
            if entry is not None:
                self._done[key] = entry
                keep.append(text)
        return sorted(bad), keep

    def get(self, run: str, batch: int, start: int, stop: int) -> dict[str, list[Any]] | None:
        """The stored columns of batch ``batch`` (replicates ``start:stop``) of ``run``, or None."""
        entry = self._done.get((run, batch))
        if entry is None or entry["start"] != start or entry["stop"] != stop:
            return None
        self.n_read += 1
        return dict(entry["columns"])

    def __len__(self) -> int:
        return len(self._done)

    # -- writing --------------------------------------------------------------------------
    def put(self, run: str, batch: int, start: int, stop: int,
            columns: Mapping[str, Sequence[Any]]) -> None:
        """Append one finished batch and force it to disk; creates the file at the first batch.

        The file is opened for each batch and closed again (a batch takes
        seconds to minutes), so nothing needs closing afterwards.
        """
        entry = normalize({"run": run, "batch": int(batch), "start": int(start),
                           "stop": int(stop), "columns": dict(columns)})
        entry["sha256"] = line_digest(entry)
        try:
            if not self.path.exists() or self.path.stat().st_size == 0:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                _write_atomic(self.path, [canonical({"format": FORMAT,
                                                     "format_version": FORMAT_VERSION,
                                                     "fingerprint": self.fingerprint})])
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(canonical(entry) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        except OutputError as exc:
            raise CheckpointError(str(exc)) from None
        except OSError as exc:
            raise CheckpointError(f"cannot write batch checkpoint {str(self.path)!r}: "
                                  f"{exc.strerror or exc}. Check the path and its permissions.") from None
        self._done[(entry["run"], entry["batch"])] = entry

    def __repr__(self) -> str:
        return f"BatchFile({str(self.path)!r}, {len(self._done)} batches)"


def _diff(stored: Any, now: Any, where: str = "") -> list[str]:
    """Differences of two fingerprints, nested fields named by dotted paths."""
    if isinstance(stored, dict) and isinstance(now, dict):
        out = []
        for key in sorted(set(stored) | set(now)):
            if key in stored and key in now:
                out += _diff(stored[key], now[key], f"{where}{key}.")
            else:
                out += fingerprint_diff({f"{where}{key}": v for k, v in stored.items() if k == key},
                                        {f"{where}{key}": v for k, v in now.items() if k == key})
        return out
    return [] if stored == now else fingerprint_diff({where[:-1]: stored}, {where[:-1]: now})


def _json(data: bytes) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def _check(entry: Any) -> str | None:
    """What is wrong with a parsed batch line, in words, or ``None``."""
    if not isinstance(entry, dict):
        return "the line is not a JSON object"
    missing = [k for k in ("run", "batch", "start", "stop", "columns", "sha256") if k not in entry]
    if missing:
        return "the line lacks " + ", ".join(missing)
    if entry["sha256"] != line_digest(entry):
        return "its checksum does not match its contents (the line was edited or damaged)"
    start, stop, cols = entry["start"], entry["stop"], entry["columns"]
    if not (isinstance(entry["run"], str) and all(isinstance(v, int) and not isinstance(v, bool)
                                                  for v in (entry["batch"], start, stop))
            and 0 <= start < stop and isinstance(cols, dict)):
        return "its run, batch or replicate range is malformed"
    for name, values in cols.items():
        if not isinstance(values, list) or len(values) != stop - start:
            return f"column {name!r} does not hold {stop - start} values"
    return _check_values(cols, start)


#: Per-replicate columns that are flags, and that are numbers (see ``powersim.batches``).
FLAGS = ("converged", "singular", "failed")
NUMBERS = ("estimate", "se", "statistic", "df", "pvalue")


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_values(cols: Mapping[str, list[Any]], start: int) -> str | None:
    """A value no replicate can hold, in words (replicates numbered as in the run), or None."""
    for name in FLAGS:
        for i, v in enumerate(cols.get(name, ())):
            if not isinstance(v, bool):
                return f"replicate {start + i}: {name} is {v!r}, not true or false"
    for name in NUMBERS:
        for i, v in enumerate(cols.get(name, ())):
            if not (_number(v) or v is None):
                return f"replicate {start + i}: {name} is {v!r}, not a number"
    failed = cols.get("failed") or [False] * len(cols.get("estimate", ()))
    for i, p in enumerate(cols.get("pvalue", ())):
        if _number(p) and not math.isnan(p) and not 0.0 <= p <= 1.0:
            return f"replicate {start + i}: p-value {p!r} is outside [0, 1]"
    for i, est in enumerate(cols.get("estimate", ())):
        if not failed[i] and not (_number(est) and math.isfinite(est)):
            return (f"replicate {start + i}: estimate {est!r} is not finite, but the replicate "
                    "is not marked failed")
    return None


def _write_atomic(path: Path, lines: list[str]) -> None:
    with atomic_output(path, what="batch checkpoint") as fh:
        fh.write("\n".join(lines) + "\n")


@dataclass(frozen=True)
class CellBatches:
    """Where the cells of one checkpointed grid keep their batch files (picklable).

    ``directory`` is ``<checkpoint>.cells``; ``grid`` the digest of the grid's
    fingerprint.  A cell's file is named by a hash of its key and its
    fingerprint is ``{"grid", "cell", "seed"}``, so a file of another grid,
    cell or seed is refused.
    """

    directory: str
    grid: str

    @classmethod
    def for_checkpoint(cls, checkpoint: str | os.PathLike[str],
                       fingerprint: Mapping[str, Any]) -> CellBatches:
        return cls(str(checkpoint) + ".cells", digest(fingerprint))

    def path(self, token: str) -> Path:
        """The batch file of the cell whose canonical key is ``token``."""
        return Path(self.directory) / (hashlib.sha256(token.encode("utf-8")).hexdigest()[:24]
                                       + ".jsonl")

    def fingerprint(self, token: str, spawn_key: Sequence[int]) -> dict[str, Any]:
        return {"grid": self.grid, "cell": token, "seed": [int(k) for k in spawn_key]}

    def open(self, token: str, spawn_key: Sequence[int]) -> BatchFile:
        """The cell's batch file (read back; refused if it is another grid's, cell's or seed's)."""
        return BatchFile(self.path(token), self.fingerprint(token, spawn_key))

    def remove(self, token: str) -> None:
        """Delete a finished cell's batch file (its record is in the grid checkpoint)."""
        self.path(token).unlink(missing_ok=True)

    def tidy(self) -> None:
        """Remove the directory when no cell file is left in it."""
        try:
            Path(self.directory).rmdir()
        except OSError:
            pass
