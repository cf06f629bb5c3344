"""``GridResult``: one typed result per cell of a grid, as a tidy frame, a table or a plot."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import InputError
from .problem import CellFailure, CellResult

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["GridCell", "GridResult"]


@dataclass(frozen=True, repr=False)
class GridCell:
    """One finished cell: its index, key (axis values), child seed and typed result."""

    index: int
    key: Mapping[str, Any]
    spawn_key: tuple[int, ...]
    result: CellResult
    resumed: bool = False

    @property
    def record(self) -> dict[str, Any]:
        """The result's flat record (what the frame and the checkpoint hold)."""
        return self.result.to_record()

    @property
    def failed(self) -> bool:
        return isinstance(self.result, CellFailure)

    def __repr__(self) -> str:
        keys = ", ".join(f"{k}={v!r}" for k, v in self.key.items())
        if self.failed:
            return f"GridCell({keys}: {self.result!r})"
        return f"GridCell({keys}: power={_fmt(self.record.get('power'), '.3f')})"


@dataclass(frozen=True, repr=False)
class GridResult:
    """Power over a grid: one :class:`GridCell` per cell, in grid order.

    Attributes
    ----------
    problem : str
        Kind of problem (``"ratings"``, ``"accuracy"``, ``"bleu"``).
    columns : tuple of str
        Axis columns, in the order of the grid (the last varies fastest).
    axes : dict
        Every axis with its values (one value for fixed arguments).
    cells : tuple of GridCell
    result_columns : tuple of str
        Record keys shown after the axis columns by :meth:`to_frame`.
    settings : dict
        The problem's fingerprint: settings shared by every cell (test, alpha, ...).
    seed : dict
        Root seed record (``entropy``, ``spawn_key``); with it and a cell's key,
        :func:`nlpower.grid.cell_seed` recomputes that cell alone.
    version : str
        nlpower version that computed the grid.
    n_resumed : int
        Cells read back from a checkpoint rather than computed in this call.
    checkpoint : str or None
    """

    problem: str
    columns: tuple[str, ...]
    axes: Mapping[str, tuple[Any, ...]]
    cells: tuple[GridCell, ...]
    result_columns: tuple[str, ...]
    settings: Mapping[str, Any]
    seed: Mapping[str, Any]
    version: str
    n_resumed: int = 0
    checkpoint: str | None = field(default=None)

    def __len__(self) -> int:
        return len(self.cells)

    @property
    def n_failed_cells(self) -> int:
        """Cells whose computation raised (kept with ``on_error="record"``/``"warn"``)."""
        return sum(cell.failed for cell in self.cells)

    def __repr__(self) -> str:
        shape = " x ".join(f"{c}[{len(self.axes[c])}]" for c in self.columns if len(self.axes[c]) > 1)
        shown = ", ".join(f"{k}={v!r}" for k, v in self.settings.items()
                          if k in ("n_sims", "test", "alternative", "method"))
        failed = f"; {self.n_failed_cells} failed" if self.n_failed_cells else ""
        return f"GridResult({self.problem}, {len(self.cells)} cells: {shape or 'single cell'}; {shown}{failed})"

    def to_frame(self) -> pd.DataFrame:
        """Tidy frame, one row per cell: axis columns, then the result columns.

        A failed cell has NaN results and its error in an ``error`` column
        (present only when some cell failed).
        """
        columns = [*self.columns, *self.result_columns]
        if self.n_failed_cells:
            columns.append("error")
        rows = []
        for cell in self.cells:
            record = cell.record
            row = {c: cell.key[c] for c in self.columns}
            row.update({c: record.get(c) for c in columns[len(self.columns):]})
            rows.append(row)
        return pd.DataFrame(rows, columns=columns)

    def _column(self, name: str) -> list[Any]:
        """Every cell's record value ``name`` (``None`` where a record lacks it), in cell order."""
        return [cell.record.get(name) for cell in self.cells]

    def table(self, value: str = "power", *, ci: bool = True, digits: int = 3) -> pd.DataFrame:
        """Wide table: the last varying axis across, the other varying axes down.

        Each entry is ``value`` (default power) with its 95% interval when
        ``ci`` (power only) -- Figure 6 in numbers.  Fixed axes are left out
        (see :meth:`summary`).
        """
        frame = self.to_frame()
        if value not in frame:
            raise InputError(f"value={value!r} is not a column of this grid; "
                             f"choose one of {', '.join(map(repr, self.result_columns))}.")
        varying = [c for c in self.columns if len(self.axes[c]) > 1] or list(self.columns[-1:])
        across, down = varying[-1], varying[:-1]
        with_ci = ci and value == "power"
        frame["_entry"] = [
            _fmt(v, f".{digits}f") + (f" [{_fmt(lo, f'.{digits}f')}, {_fmt(hi, f'.{digits}f')}]"
                                      if with_ci and _finite(v) else "")
            for v, lo, hi in zip(frame[value], self._column("ci_low"), self._column("ci_high"),
                                 strict=True)
        ]
        if not down:
            return frame.set_index(across)[["_entry"]].T.rename(index={"_entry": value})
        wide = frame.pivot_table(index=down, columns=across, values="_entry", aggfunc="first", sort=False)
        wide.columns.name = across
        return wide

    def __str__(self) -> str:
        lines = [repr(self)]
        fixed = [c for c in self.columns if len(self.axes[c]) == 1]
        if fixed:
            lines.append("fixed: " + ", ".join(f"{c}={self.axes[c][0]!r}" for c in fixed))
        lines.append("power [95% Monte Carlo interval]" if any(c.record.get("n_sims") for c in self.cells)
                     else "power")
        lines.append(self.table().to_string())
        if self.n_failed_cells:
            lines.append(f"{self.n_failed_cells} cells failed: see .to_frame()['error']")
        return "\n".join(lines)

    def summary(self) -> str:
        """Text table of power with its 95% interval per cell, and the shared settings."""
        frame = self.to_frame()
        varying = [c for c in self.columns if len(self.axes[c]) > 1] or list(self.columns)
        fixed = [c for c in self.columns if c not in varying]
        table = frame[varying].copy()
        power = self._column("power")
        table["power"] = [_fmt(p, ".3f") for p in power]
        table["95% CI"] = [f"[{_fmt(lo, '.3f')}, {_fmt(hi, '.3f')}]" for lo, hi in
                           zip(self._column("ci_low"), self._column("ci_high"), strict=True)]
        for col, spec in (("type_m", ".2f"), ("type_s", ".3f")):
            if col in frame:
                table[col] = [_fmt(v, spec) for v in frame[col]]
        if "rejection_rate" in frame and not all(_finite(p) for p in power):
            table["rejection rate"] = [_fmt(r, ".3f") for r in frame["rejection_rate"]]
        if "error" in frame:
            table["error"] = frame["error"].fillna("")
        sims = {int(n) for n in self._column("n_sims") if _finite(n) and n}
        how = (f"{sims.pop()} simulated experiments per cell" if len(sims) == 1
               else "no cell computed" if self.n_failed_cells == len(self.cells)
               else "exact" if not sims else "simulated experiments per cell vary")
        lines = [f"Power grid: {len(self.cells)} cells, {how} ({self.problem})"]
        shown = {k: v for k, v in self.settings.items()
                 if k not in ("n_sims", "version", "seed") and isinstance(v, (str, int, float, bool))}
        if shown:
            lines.append(", ".join(f"{k}={v!r}" + _used(frame, k, v) for k, v in shown.items()))
        if fixed:
            lines.append("fixed: " + ", ".join(f"{c}={self.axes[c][0]!r}" for c in fixed))
        seed = f"seed: entropy={self.seed.get('entropy')!r}"
        if self.seed.get("spawn_key"):
            seed += f", spawn_key={tuple(self.seed['spawn_key'])}"
        lines.append(f"{seed}; nlpower {self.version}")
        if self.n_resumed:
            lines.append(f"{self.n_resumed} of {len(self.cells)} cells read from checkpoint {self.checkpoint}")
        lines += ["", table.to_string(index=False)]
        counts = [c for c in ("n_failed", "n_singular", "n_nonconverged") if c in frame]
        if counts:
            total = int(sum(n for n in self._column("n_sims") if _finite(n)))
            lines += ["", ", ".join(f"{c[2:].replace('_', ' ')} fits: {int(frame[c].fillna(0).sum())}"
                                    for c in counts) + f" (of {total} simulated experiments)"]
        if "rejection_rate" in frame:
            lines.append("power counts rejections whose estimate has the true sign; the rejection "
                         "rate counts any p <= alpha (at effect 0: the Type I error)")
        if self.n_failed_cells:
            lines.append(f"{self.n_failed_cells} cells failed (see the error column; "
                         "a resumed run tries them again)")
        return "\n".join(lines)

    def plot(self, **kwargs: Any) -> Figure:
        """Power (or ``y=``) against an axis, by :func:`nlpower.plots.plot_grid`."""
        from ..plots import plot_grid  # matplotlib is imported only when plotting

        return plot_grid(self, **kwargs)


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, numbers.Real) and math.isfinite(float(x))


def _fmt(x: Any, spec: str) -> str:
    return format(float(x), spec) if _finite(x) else "-"


def _used(frame: Any, key: str, asked: Any) -> str:
    """`` (used: balanced)`` when the cells ran otherwise than asked (method='auto', engine ...)."""
    if key not in ("method", "engine") or key not in frame:
        return ""
    used = sorted({str(v) for v in frame[key] if isinstance(v, str) and v})
    if key == "engine" and not used:
        return " (not used: no cell refitted a model)"
    if not used or used == [str(asked)]:
        return ""
    return f" (used: {', '.join(used)})"
