"""What the grid runner runs: a :class:`PowerProblem` and its :class:`CellResult`.

The runner knows nothing about mixed models, McNemar or BLEU.  A *problem*
is a small picklable description (a frozen dataclass) of everything shared by
the cells of a grid -- the test, alpha, the number of replicates -- that can
compute one cell from that cell's axis values and a seed.  Its results are
typed objects that flatten to a JSON-able record for frames and checkpoints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["CellFailure", "CellResult", "PowerProblem"]


@runtime_checkable
class CellResult(Protocol):
    """The result of one cell: anything that flattens to a JSON-able record.

    The record holds at least ``power``, ``ci_low``, ``ci_high``, ``se``,
    ``type_m``, ``type_s`` and ``n_sims`` (0 for an exact calculation).
    """

    def to_record(self) -> dict[str, Any]: ...


@runtime_checkable
class PowerProblem(Protocol):
    """A power calculation the grid runner can evaluate cell by cell.

    Attributes
    ----------
    name : str
        Kind of problem (``"ratings"``, ``"accuracy"``, ``"bleu"``), stored in
        checkpoints so a file from another kind of grid is refused.
    result_columns : tuple of str
        Record keys shown by :meth:`GridResult.to_frame`, in order.
    """

    @property
    def name(self) -> str: ...

    @property
    def result_columns(self) -> tuple[str, ...]: ...

    def fingerprint(self) -> dict[str, Any]:
        """JSON-able settings shared by every cell (the axes are added by the runner)."""
        ...

    def run_cell(self, key: Mapping[str, Any], rng: np.random.SeedSequence) -> CellResult:
        """Compute the cell with axis values ``key`` from its own seed ``rng``."""
        ...

    def from_record(self, record: Mapping[str, Any]) -> CellResult:
        """Rebuild a cell result from :meth:`CellResult.to_record` (checkpoint read-back)."""
        ...


@dataclass(frozen=True)
class CellFailure:
    """A cell whose computation raised (kept with ``on_error="record"`` or ``"warn"``).

    Its record has NaN power and the error's type and message, so a grid
    with failed cells still gives a complete frame; failed cells are not
    written to the checkpoint, so resuming the grid tries them again.
    """

    error: str
    message: str

    def to_record(self) -> dict[str, Any]:
        nan = math.nan
        return {"power": nan, "ci_low": nan, "ci_high": nan, "se": nan, "type_m": nan,
                "type_s": nan, "n_sims": 0, "error": f"{self.error}: {self.message}"}

    def __repr__(self) -> str:
        return f"CellFailure({self.error}: {self.message})"
