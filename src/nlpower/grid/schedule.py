"""Where grid cells run: in this process, in loky processes, or on a Dask cluster.

Each backend calls :func:`run_cell` (module level, so it pickles) and hands
every finished cell to ``on_done`` as soon as it finishes, in any order; the
caller makes the results independent of that order through key-derived seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed

from .._choices import OnError
from ..errors import EngineUnavailableError
from .axes import cell_token
from .batchfile import CellBatches, active
from .problem import CellFailure, CellResult, PowerProblem

__all__ = ["Job", "run_cell", "run_jobs"]

#: One cell to run: (index, key, seed).
Job = tuple[int, Mapping[str, Any], np.random.SeedSequence]
OnDone = Callable[[int, CellResult], None]


def run_cell(problem: PowerProblem, index: int, key: Mapping[str, Any],
             seed: np.random.SeedSequence, on_error: OnError,
             batches: CellBatches | None = None) -> tuple[int, CellResult]:
    """Run one cell; an error is re-raised naming the cell, or kept as a :class:`CellFailure`.

    With ``batches`` the cell's batch file (:mod:`nlpower.grid.batchfile`) is
    current while it runs, so its replicate loops checkpoint every batch.
    """
    try:
        if batches is None:
            return index, problem.run_cell(key, seed)
        with active(batches.open(cell_token(key), seed.spawn_key)):
            return index, problem.run_cell(key, seed)
    except Exception as exc:
        if on_error == "raise":
            where = ", ".join(f"{k}={v!r}" for k, v in key.items())
            exc.add_note(f"(in {problem.name} grid cell {where})")
            raise
        return index, CellFailure(type(exc).__name__, str(exc))


def run_jobs(problem: PowerProblem, jobs: Sequence[Job], *, on_error: OnError, n_jobs: int,
             backend: str, client: Any, on_done: OnDone,
             batches: CellBatches | None = None) -> None:
    """Run ``jobs`` on ``backend`` with ``n_jobs`` workers, calling ``on_done`` per cell."""
    if backend == "dask":
        _run_dask(problem, jobs, on_error, n_jobs, client, on_done, batches)
    elif n_jobs == 1 or len(jobs) <= 1:
        for index, key, seed in jobs:
            on_done(*run_cell(problem, index, key, seed, on_error, batches))
    else:
        _run_loky(problem, jobs, on_error, n_jobs, on_done, batches)


def _run_loky(problem: PowerProblem, jobs: Sequence[Job], on_error: OnError, n_jobs: int,
              on_done: OnDone, batches: CellBatches | None) -> None:
    par = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered")
    for index, result in par(delayed(run_cell)(problem, i, k, s, on_error, batches)
                             for i, k, s in jobs):
        on_done(index, result)


def _run_dask(problem: PowerProblem, jobs: Sequence[Job], on_error: OnError, n_jobs: int,
              client: Any, on_done: OnDone, batches: CellBatches | None) -> None:
    try:  # optional extra: imported only when backend="dask" is asked for
        import distributed
    except ImportError as exc:  # pragma: no cover - dask is installed in the dev env
        raise EngineUnavailableError(
            "backend='dask' needs dask.distributed, which is not installed. "
            "Install it with: pip install 'nlpower[dask]' (or use backend='loky')."
        ) from exc
    own_client = own_cluster = None
    if client is None:
        try:
            client = distributed.get_client()
        except ValueError:
            own_cluster = distributed.LocalCluster(n_workers=n_jobs, threads_per_worker=1,
                                                   processes=True, dashboard_address=None)
            client = own_client = distributed.Client(own_cluster)
    futures = [client.submit(run_cell, problem, i, k, s, on_error, batches, pure=False)
               for i, k, s in jobs]
    try:
        for fut in distributed.as_completed(futures):
            index, result = fut.result()
            on_done(index, result)
    finally:
        client.cancel([f for f in futures if not f.done()])
        if own_client is not None:
            own_client.close()
        if own_cluster is not None:
            own_cluster.close()
