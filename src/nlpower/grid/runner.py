"""``run_grid``: any :class:`PowerProblem` over a Cartesian grid of axes.

Validate the run settings, derive every cell's seed from its key, read back
what a checkpoint already holds, run the rest on the chosen backend with a
progress bar, append each finished cell to the checkpoint, and assemble the
:class:`GridResult`.  The problem computes; the runner only schedules.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from .. import __version__
from .._choices import Backend, OnError, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int
from ..errors import InputError, NlpowerWarning
from . import checkpoint as _ckpt
from .axes import axis_values, cell_keys, cell_seed, cell_token
from .batchfile import CellBatches
from .problem import CellFailure, CellResult, PowerProblem
from .result import GridCell, GridResult
from .schedule import Job, run_jobs

__all__ = ["RunOptions", "check_run_options", "parse_shard", "run_grid"]


def check_run_options(n_jobs: Any, backend: Any, client: Any, on_error: Any) -> int:
    """Validate the scheduling options shared by every grid; returns ``n_jobs`` resolved."""
    check_choice("backend", backend, Backend)
    check_choice("on_error", on_error, OnError)
    n_jobs = check_int("n_jobs", n_jobs, min=-1)
    if n_jobs == 0:
        raise InputError("n_jobs must be a positive number of parallel jobs, or -1 for all cores; got 0.")
    if client is not None and backend != "dask":
        raise InputError(f"client is only used with backend='dask'; got backend={backend!r}. "
                         "Pass backend='dask' or drop client.")
    return (os.cpu_count() or 1) if n_jobs == -1 else n_jobs


def parse_shard(shard: Any) -> tuple[int, int] | None:
    """``"i/N"`` or ``(i, N)`` as ``(i, N)`` with ``1 <= i <= N``; ``None`` stays ``None``."""
    if shard is None:
        return None
    parts: Any = shard.split("/") if isinstance(shard, str) else shard
    try:
        i, n = (int(str(p).strip()) for p in parts)
    except (TypeError, ValueError):
        i = n = 0
    if not (isinstance(parts, (list, tuple)) and len(parts) == 2 and 1 <= i <= n):
        raise InputError(f"shard must be 'i/N' with 1 <= i <= N (shard i of N equal parts), "
                         f"e.g. '1/4' ... '4/4'; got {shard!r}.")
    return i, n


@dataclass(frozen=True)
class RunOptions:
    """How a grid's cells are scheduled: the options every grid front end shares.

    Validated once, when built (:func:`check_run_options`); a front end builds
    one and passes it to :func:`run_grid` as ``run=``.  None of them changes a
    number: cell seeds derive from the cells' keys.

    Attributes
    ----------
    n_jobs : int
        Cells run in parallel (``-1``: all cores; :attr:`workers` resolves it).
    backend : {"loky", "dask"}
    client : distributed.Client, optional
        Only with ``backend="dask"``.
    checkpoint : path, optional
        JSON-lines file of finished cells (resumed when it exists); the
        unfinished cells keep their finished batches of replicates in
        ``<checkpoint>.cells/`` (:mod:`nlpower.grid.batchfile`).
    progress : bool
        A tqdm progress bar on stderr.
    on_error : {"raise", "warn", "record"}
        What a cell that raises does to the grid.
    shard : "i/N" or (i, N), optional
        Run only shard ``i`` of ``N`` (``1 <= i <= N``): the cells whose
        index in Cartesian order is ``i - 1`` modulo ``N`` (one array job of
        a cluster).  Needs a ``checkpoint`` (the shard's output) and a fixed
        ``rng``; every cell keeps its key-derived seed, so
        :func:`nlpower.grid.merge` of the ``N`` shard files is the
        single-machine grid, bit for bit.  Stored as ``(i, N)``.

    Examples
    --------
    >>> RunOptions(n_jobs=2, progress=False).backend
    'loky'
    """

    n_jobs: int = 1
    backend: Backend = "loky"
    client: Any = None
    checkpoint: str | os.PathLike[str] | None = None
    progress: bool = True
    on_error: OnError = "raise"
    shard: str | tuple[int, int] | None = None

    def __post_init__(self) -> None:
        check_run_options(self.n_jobs, self.backend, self.client, self.on_error)
        part = parse_shard(self.shard)
        if part is not None and self.checkpoint is None:
            raise InputError(
                f"shard={self.shard!r} needs checkpoint= (the file this shard writes, one per "
                "shard). Merge the shard files afterwards with nlpower.grid.merge "
                "(CLI: nlpower grid merge)."
            )
        object.__setattr__(self, "shard", part)

    @property
    def workers(self) -> int:
        """``n_jobs`` with ``-1`` resolved to the number of cores."""
        return (os.cpu_count() or 1) if self.n_jobs == -1 else int(self.n_jobs)

    @property
    def in_process(self) -> bool:
        """Cells run in this process (serial loky), so per-cell progress bars can show."""
        return self.n_jobs == 1 and self.backend == "loky"


def run_grid(
    problem: PowerProblem,
    axes: Mapping[str, Any],
    *,
    rng: RNGLike = None,
    run: RunOptions | None = None,
    desc: str = "power grid",
    **options: Any,
) -> GridResult:
    """Evaluate ``problem`` on every cell of the Cartesian product of ``axes``.

    Parameters
    ----------
    problem : PowerProblem
        What to compute per cell (picklable for ``n_jobs > 1`` or Dask).
    axes : mapping of str to value or list of values
        Ordered axes; a list makes an axis, a scalar a fixed column.  Cells
        run in Cartesian order, the last axis varying fastest.
    rng : RNGLike
        Root seed (``nlpower._rng`` policy: a Generator is consumed).  Cell
        ``key`` gets ``cell_seed(root, key)``, so results do not depend on
        ``n_jobs``, ``backend``, resuming, or the order of axis values.
    run : RunOptions, optional
        The scheduling options (validated once, when built).
    desc : str
        Label of the progress bar.
    **options
        Or the fields of :class:`RunOptions` as keywords (not together with
        ``run``):

        ``n_jobs`` -- cells run in parallel (``-1``: all cores);
        ``backend`` -- ``"loky"`` (joblib processes) or ``"dask"``
        (``client``, the current default client, or a temporary
        ``LocalCluster`` of ``n_jobs`` worker processes);
        ``checkpoint`` -- JSON-lines file to which each finished cell is
        appended (fsync'd); if it exists, its cells are read back and only the
        rest are run; a file from another grid raises
        :class:`~nlpower.errors.CheckpointError`; with ``rng=None`` a resumed
        run reuses the seed stored in the file; a cell whose replicate loop
        runs in batches (:func:`nlpower.powersim.batches.run_batches`) keeps
        each finished batch in ``<checkpoint>.cells/`` and resumes mid-cell,
        with the same numbers; ``progress`` -- a tqdm bar on
        stderr; ``on_error`` -- a cell that raises stops the grid (the error
        names the cell), or is kept as a :class:`CellFailure` (NaN power, its
        error in the frame), with a warning for ``"warn"``; failed cells are
        not checkpointed; ``shard`` -- ``"i/N"``: only that part of the
        cells (needs ``checkpoint`` and a fixed ``rng``; the result holds only
        the shard's cells; :func:`nlpower.grid.merge` joins the shards).

    Returns
    -------
    GridResult

    Examples
    --------
    >>> from nlpower.accuracy import AccuracyProblem
    >>> res = run_grid(AccuracyProblem(), {"n": [500, 2000], "delta": 0.02, "agreement": 0.9},
    ...                rng=1, run=RunOptions(progress=False))
    >>> res.to_frame()["power"].round(3).tolist()
    [0.249, 0.791]
    """
    run = _run_options(run, options)
    checkpoint = run.checkpoint
    part = run.shard if isinstance(run.shard, tuple) else None
    values = {name: axis_values(name, value) for name, value in axes.items()}
    keys = cell_keys(values)
    root = _root(rng, part, _ckpt.read_header(checkpoint) if checkpoint is not None else None)
    seed = seed_record(root)
    fingerprint = {"problem": problem.name, "axes": {k: list(v) for k, v in values.items()},
                   **problem.fingerprint(), "seed": seed, "version": __version__}
    mine = [i for i in range(len(keys)) if part is None or i % part[1] == part[0] - 1]
    ckpt, finished = _resume(problem, checkpoint, fingerprint, values, keys, mine, root, part)
    n_resumed = len(finished)
    batches = None
    if checkpoint is not None:  # batch files of unfinished cells (checkpoints within a cell)
        batches = _cell_batches(checkpoint, fingerprint, keys, mine, finished, root)
    _run_cells(problem, run, keys, mine, finished, root, ckpt, batches, desc)
    cells = tuple(finished[i] for i in mine)
    return GridResult(
        problem=problem.name, columns=tuple(values), axes=values, cells=cells,
        result_columns=tuple(problem.result_columns), settings=problem.fingerprint(),
        seed=seed, version=__version__, n_resumed=n_resumed,
        checkpoint=None if checkpoint is None else str(Path(checkpoint)),
    )


def _run_options(run: Any, options: Mapping[str, Any]) -> RunOptions:
    """``run``, or the :class:`RunOptions` of the keyword options (not both)."""
    if run is None:
        unknown = set(options) - set(RunOptions.__dataclass_fields__)
        if unknown:
            raise InputError(f"run_grid got unknown option(s) {sorted(unknown)}; allowed: "
                             f"{', '.join(RunOptions.__dataclass_fields__)}.")
        return RunOptions(**options)
    if options:
        raise InputError(f"pass run= (a RunOptions) or the options {sorted(options)} as keywords, "
                         "not both.")
    if not isinstance(run, RunOptions):
        raise InputError(f"run must be a RunOptions; got {type(run).__name__}.")
    return run


def _root(rng: RNGLike, part: tuple[int, int] | None,
          header: Mapping[str, Any] | None) -> np.random.SeedSequence:
    """The grid's root seed: ``rng``'s, or (``rng=None``) the one a checkpoint stored."""
    if part is not None and rng is None and header is None:
        raise InputError(
            f"shard='{part[0]}/{part[1]}' needs a fixed seed rng= shared by every shard; got "
            "rng=None. Merge the shard files afterwards with nlpower.grid.merge "
            "(CLI: nlpower grid merge)."
        )
    root = root_seed(rng)
    if rng is None and header is not None:
        stored = header.get("fingerprint", {}).get("seed", {})
        root = np.random.SeedSequence(stored.get("entropy"), spawn_key=tuple(stored.get("spawn_key", ())))
    return root


def _resume(problem: PowerProblem, checkpoint: Any, fingerprint: dict[str, Any],
            values: Mapping[str, Any], keys: Sequence[Any], mine: Sequence[int],
            root: np.random.SeedSequence,
            part: tuple[int, int] | None) -> tuple[Any, dict[int, GridCell]]:
    """The checkpoint opened for appending (or ``None``), and the cells it already holds."""
    finished: dict[int, GridCell] = {}
    if checkpoint is None:
        return None, finished
    layout = {"columns": list(values), "result_columns": list(problem.result_columns),
              "settings": list(problem.fingerprint()), "shard": None if part is None else list(part)}
    expected = {cell_token(keys[i]): (i, list(cell_seed(root, keys[i]).spawn_key)) for i in mine}
    ckpt, done = _ckpt.open_checkpoint(checkpoint, fingerprint, layout=layout,
                                       expected=expected, parse=problem.from_record)
    for index in mine:
        key = keys[index]
        stored_cell = done.get(cell_token(key))
        if stored_cell is not None:
            finished[index] = GridCell(index, key, tuple(cell_seed(root, key).spawn_key),
                                       stored_cell["result"], resumed=True)
    return ckpt, finished


def _cell_batches(checkpoint: Any, fingerprint: dict[str, Any], keys: Sequence[Any],
                  mine: Sequence[int], finished: Mapping[int, GridCell],
                  root: np.random.SeedSequence) -> CellBatches:
    """The finished batches of the unfinished cells; finished cells' leftovers removed."""
    batches = CellBatches.for_checkpoint(checkpoint, fingerprint)
    for index in mine:
        token = cell_token(keys[index])
        if index in finished:
            batches.remove(token)      # left over if a kill came between record and delete
        elif batches.path(token).exists():
            batches.open(token, cell_seed(root, keys[index]).spawn_key)  # refused before any work
    return batches


def _run_cells(problem: PowerProblem, run: RunOptions, keys: Sequence[Any], mine: Sequence[int],
               finished: dict[int, GridCell], root: np.random.SeedSequence, ckpt: Any,
               batches: CellBatches | None, desc: str) -> None:
    """Run the cells of ``mine`` not yet ``finished``; each is recorded (and checkpointed) as it ends."""
    bar = tqdm(total=len(mine), initial=len(finished), desc=desc, unit="cell",
               disable=not run.progress, file=sys.stderr)

    def on_done(index: int, result: CellResult) -> None:
        key = keys[index]
        spawn_key = tuple(cell_seed(root, key).spawn_key)
        finished[index] = GridCell(index, key, spawn_key, result)
        if isinstance(result, CellFailure):
            if run.on_error == "warn":
                where = ", ".join(f"{k}={v!r}" for k, v in key.items())
                warnings.warn(f"grid cell ({where}) failed: {result.error}: {result.message}",
                              NlpowerWarning, stacklevel=5)
        elif ckpt is not None:
            ckpt.append(cell_token(key), index, list(spawn_key), result.to_record())
            if batches is not None:
                batches.remove(cell_token(key))
        bar.update(1)

    jobs: Sequence[Job] = [(i, keys[i], cell_seed(root, keys[i])) for i in mine if i not in finished]
    try:
        run_jobs(problem, jobs, on_error=run.on_error, n_jobs=run.workers, backend=run.backend,
                 client=run.client, on_done=on_done, batches=batches)
    finally:
        bar.close()
        if ckpt is not None:
            ckpt.close()
        if batches is not None:
            batches.tidy()
