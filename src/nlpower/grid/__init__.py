"""The problem-agnostic grid runner: any power calculation over a grid of settings.

A :class:`PowerProblem` computes one cell from its axis values and a seed;
:func:`run_grid` runs the cells (serially, in loky processes or on Dask),
with key-derived seeds, a progress bar, checkpoints and a failure policy,
and returns a :class:`GridResult`; ``shard="i/N"`` runs one of N parts
(one cluster array job) and :func:`merge` joins the parts' checkpoints.  ``nlpower.power_grid`` (human ratings),
``nlpower.accuracy.power_grid`` and ``nlpower.bleu.power_grid`` are thin
front ends that build their problem and axes.  See ``docs/grids.md``.
"""

from __future__ import annotations

from .axes import cell_seed
from .merge import merge
from .problem import CellFailure, CellResult, PowerProblem
from .result import GridCell, GridResult
from .runner import RunOptions, check_run_options, parse_shard, run_grid

__all__ = [
    "CellFailure",
    "CellResult",
    "GridCell",
    "GridResult",
    "PowerProblem",
    "RunOptions",
    "cell_seed",
    "check_run_options",
    "merge",
    "parse_shard",
    "run_grid",
]
