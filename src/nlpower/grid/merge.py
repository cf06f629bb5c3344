"""``merge``: the checkpoint files of a sharded grid, back into the one grid.

A grid run as ``N`` shards (``run_grid(..., shard="i/N")``, or
``nlpower grid ... --shard i/N`` as a cluster array job) leaves ``N``
checkpoint files.  :func:`merge` reads them, checks that they belong to one
grid (same fingerprint and layout), validates every record as a resume does
(checksum, cell, seed, values), refuses conflicting or missing cells with a
message that says which shard to run again, and returns the
:class:`GridResult` the single-machine run gives -- the same cells, seeds and
numbers, bit for bit, because every cell's seed derives from its key alone.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._outputs import check_distinct
from ..errors import CheckpointError, InputError, OutputError
from . import checkpoint as _ckpt
from .axes import cell_keys, cell_seed, cell_token
from .problem import PowerProblem
from .records import canonical
from .result import GridCell, GridResult

__all__ = ["StoredResult", "merge"]

#: Typed results of the package's own problems, by problem name (imported lazily).
RESULT_TYPES = {
    "ratings": ("nlpower.powersim.result", "PowerResult"),
    "accuracy": ("nlpower.accuracy.power", "AccuracyPowerResult"),
    "bleu": ("nlpower.bleu.power", "BleuPowerResult"),
}


@dataclass(frozen=True)
class StoredResult:
    """A cell result known only by its record (a problem whose result type is not registered)."""

    record: Mapping[str, Any]

    def to_record(self) -> dict[str, Any]:
        return dict(self.record)


def _parser(name: str, problem: PowerProblem | None) -> Any:
    if problem is not None:
        if problem.name != name:
            raise InputError(f"problem is a {problem.name!r} problem but the files hold a "
                             f"{name!r} grid; pass the matching problem or none.")
        return problem.from_record
    if name in RESULT_TYPES:
        module, cls = RESULT_TYPES[name]
        return getattr(importlib.import_module(module), cls).from_record
    return StoredResult


def merge(paths: Sequence[str | os.PathLike[str]], *, out: str | os.PathLike[str] | None = None,
          problem: PowerProblem | None = None) -> GridResult:
    """The grid held by the checkpoint files ``paths`` (the shards of one grid).

    Parameters
    ----------
    paths : sequence of path
        Checkpoint files of one grid: the ``N`` shards of a sharded run, or
        any files that together hold every cell (a cell in two files must
        have the same numbers in both).
    out : path, optional
        Also write the merged grid as one checkpoint (a new file): a later
        ``run_grid(..., checkpoint=out)`` with the original arguments reads
        every cell back instead of computing it.
    problem : PowerProblem, optional
        Rebuilds typed results; by default the package's ratings, accuracy
        and BLEU results are rebuilt by name and any other problem's cells
        are kept as their records (:class:`StoredResult`).

    Returns
    -------
    GridResult
        Identical, cell by cell and in :meth:`~GridResult.to_frame`, to the
        grid computed on one machine with the same arguments and seed.

    Raises
    ------
    CheckpointError
        A file is missing, not a checkpoint, from another grid, has an invalid
        record, two files disagree on a cell, or some cells are in no file
        (the message lists the shards to run).

    Examples
    --------
    Two shards of a BLEU grid, merged, give the grid one run computes:

    >>> import pathlib, tempfile
    >>> from nlpower.bleu import power_grid
    >>> tmp = pathlib.Path(tempfile.mkdtemp())
    >>> kw = dict(n=[200, 400], delta=[0.5, 1.0], p0=0.125, b0=25.8, n_sims=50,
    ...           method="normal", rng=3, progress=False)
    >>> for i in (1, 2):
    ...     part = power_grid(**kw, checkpoint=tmp / f"s{i}.ckpt", shard=f"{i}/2")
    >>> len(part.cells)
    2
    >>> merged = merge([tmp / "s1.ckpt", tmp / "s2.ckpt"])
    >>> merged.to_frame().equals(power_grid(**kw).to_frame())
    True
    """
    files = [Path(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths)]
    if not files:
        raise InputError("merge needs at least one checkpoint file; got none.")
    check_distinct({"out": out}, {"paths": files})
    headers = [_header(path) for path in files]
    layout = _one_grid(files, headers)
    fp = headers[0]["fingerprint"]
    columns = list(layout["columns"])
    axes = {c: tuple(fp["axes"][c]) for c in columns}
    keys = cell_keys(axes)
    seed = fp["seed"]
    root = np.random.SeedSequence(seed.get("entropy"), spawn_key=tuple(seed.get("spawn_key", ())))
    spawn = [list(cell_seed(root, key).spawn_key) for key in keys]
    tokens = [cell_token(key) for key in keys]
    expected = {tok: (i, spawn[i]) for i, tok in enumerate(tokens)}
    found = _read_cells(files, expected, _parser(fp["problem"], problem), fp)
    missing = [i for i, tok in enumerate(tokens) if tok not in found]
    if missing:
        raise CheckpointError(
            f"{len(missing)} of {len(keys)} cells are in none of the files (the first is "
            f"{tokens[missing[0]]}).{_missing_shards(files, headers)} Run the missing shards (or "
            "finish an interrupted one by running its command again), then merge again."
        )
    cells = tuple(GridCell(i, keys[i], tuple(spawn[i]), found[tok][1]["result"], resumed=True)
                  for i, tok in enumerate(tokens))
    if out is not None:
        _write_merged(Path(out), headers[0], layout,
                      [_ckpt.entry_line(tok, i, spawn[i], found[tok][1]["record"])
                       for i, tok in enumerate(tokens)])
    return GridResult(
        problem=fp["problem"], columns=tuple(columns), axes=axes, cells=cells,
        result_columns=tuple(layout["result_columns"]),
        settings={k: fp[k] for k in layout["settings"] if k in fp},
        seed={"entropy": seed.get("entropy"), "spawn_key": tuple(seed.get("spawn_key", ()))},
        version=fp["version"], checkpoint=None if out is None else str(out),
    )


def _header(path: Path) -> dict[str, Any]:
    """A shard file's header, refused when there is none or it has no layout."""
    header = _ckpt.read_header(path)
    if header is None:
        raise CheckpointError(f"checkpoint={str(path)!r} does not exist or is empty; run its "
                              "shard first (or leave the file out).")
    if not isinstance(header.get("layout"), dict):
        raise CheckpointError(f"checkpoint={str(path)!r} has no layout in its header (written "
                              "by an older nlpower); rerun that shard to merge it.")
    return header


def _one_grid(files: Sequence[Path], headers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The layout the files share (without the shard); a file of another grid is refused."""
    fp = headers[0]["fingerprint"]
    layout = {k: v for k, v in headers[0]["layout"].items() if k != "shard"}
    for path, header in zip(files[1:], headers[1:], strict=True):
        diff = _ckpt.fingerprint_diff(fp, header["fingerprint"])
        other = {k: v for k, v in header["layout"].items() if k != "shard"}
        if other != layout:
            diff.append(f"the axis order or columns differ ({other} against {layout})")
        if diff:
            raise CheckpointError(f"checkpoint={str(path)!r} belongs to another grid than "
                                  f"{str(files[0])!r}: " + "; ".join(diff)
                                  + ". Merge only the shards of one grid.")
    return layout


def _read_cells(files: Sequence[Path], expected: Mapping[str, Any], parse: Any,
                fp: Mapping[str, Any]) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every valid cell of the files, by token (a cell in two files must agree)."""
    found: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in files:
        done, bad, _ = _ckpt.read_records(path, expected, parse, fp)
        if bad:
            lines = "; ".join(f"line {n}: {why}" for n, why in bad[:5])
            more = f" (and {len(bad) - 5} more)" if len(bad) > 5 else ""
            raise CheckpointError(
                f"checkpoint={str(path)!r} has invalid records -- {lines}{more}. Run that shard's "
                "command again with the same arguments and checkpoint: it drops those records "
                "and recomputes their cells. Then merge again."
            )
        for token, stored in done.items():
            if token in found and canonical(found[token][1]["record"]) != canonical(stored["record"]):
                raise CheckpointError(f"cell {token} has different results in "
                                      f"{str(found[token][0])!r} and {str(path)!r}; one of them "
                                      "was not computed for this grid. Merge only one of them.")
            found.setdefault(token, (path, stored))
    return found


def _missing_shards(files: Sequence[Path], headers: Sequence[Mapping[str, Any]]) -> str:
    """The hint naming the shards not given (when the files are shards of one split), or ''."""
    shards = {tuple(h["layout"]["shard"]) for h in headers if h["layout"].get("shard")}
    counts = {n for _, n in shards}
    if len(counts) == 1 and len(shards) == len(files):
        n = counts.pop()
        absent = [f"{i}/{n}" for i in range(1, n + 1) if (i, n) not in shards]
        return f" Missing shards: {', '.join(absent)}." if absent else ""
    return ""


def _write_merged(path: Path, header: Mapping[str, Any], layout: Mapping[str, Any],
                  lines: list[str]) -> None:
    if path.is_dir() or (path.exists() and path.stat().st_size > 0):
        raise CheckpointError(f"out={str(path)!r} already exists; the merged checkpoint is "
                              "written to a new file. Pass another path.")
    head = {**header, "layout": {**layout, "shard": None}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _ckpt.write_checkpoint(path, head, lines)
    except OutputError as exc:
        raise CheckpointError(str(exc)) from None
    except OSError as exc:
        raise CheckpointError(f"cannot write out={str(path)!r}: {exc.strerror or exc}.") from None
