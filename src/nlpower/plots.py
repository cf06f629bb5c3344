"""Figures (matplotlib, imported lazily).  A thin edge: no statistics here.

:func:`plot_grid` draws any grid (:class:`nlpower.grid.GridResult` or its
tidy frame): power (or Type-M / Type-S) with its Monte Carlo interval against
one axis, one line per value of another, facets by the rest.  For the
human-rating grid of Card et al. (2020), Figure 6 the defaults give the
paper's layout: facets scenario (rows) x number of workers (columns), one
line per number of items, power against the effect, and a dashed line at
the target power (80%).  The accuracy and BLEU figures (Figs. 3, 4, 7, 8,
17) are the same function with other axes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._validation import check_choice, check_columns, check_real
from .errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_grid"]

_LABELS = {
    "n_workers": "workers",
    "n_items": "items",
    "effect": "effect",
    "workers_per_item": "workers per item",
    "scenario": "",
    "n": "test items",
    "delta": "dB",
    "agreement": "agreement",
    "p0": "P0",
    "b0": "b0",
}
#: Columns labelled as ``name = value`` (parameters) rather than ``value name`` (counts).
_EQUATIONS = {"p0", "b0", "delta", "effect", "agreement"}

_Y_LABELS = {"power": "power", "type_m": "Type-M (exaggeration)", "type_s": "Type-S (wrong sign)"}
AUTO = "auto"


def _pyplot() -> Any:
    """pyplot, switching to the Agg backend first when there is no display."""
    import matplotlib

    if (
        "matplotlib.pyplot" not in sys.modules
        and not os.environ.get("MPLBACKEND")
        and sys.platform.startswith("linux")
        and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    ):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _as_frame(data: Any) -> pd.DataFrame:
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    to_frame = getattr(data, "to_frame", None)
    if callable(to_frame):
        frame = to_frame()
        if isinstance(frame, pd.DataFrame):
            return frame
    raise InputError(
        f"plot_grid needs a GridResult or its .to_frame() DataFrame; got {type(data).__name__}. "
        "Pass the result of nlpower.power_grid(...)."
    )


def _label(col: str, value: Any) -> str:
    if col == "scenario":
        return str(value)
    name = _LABELS.get(col, col)
    shown = f"{value:g}" if isinstance(value, float) else f"{value}"
    return f"{name} = {shown}" if col in _EQUATIONS else f"{shown} {name}"


def _auto_roles(data: Any) -> dict[str, str | None]:
    """x, hue, cols, rows from a grid's varying axes (last = x); Figure 6 defaults for a frame."""
    axes = getattr(data, "axes", None)
    columns = getattr(data, "columns", None)
    if not isinstance(axes, dict) or not isinstance(columns, tuple):
        return {"x": "effect", "hue": "n_items", "cols": "n_workers", "rows": "scenario"}
    varying = [c for c in columns if len(axes[c]) > 1] or list(columns[-1:])
    numeric = [c for c in varying if all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                          for v in axes[c])]
    x = numeric[-1] if numeric else varying[-1]
    rest = [c for c in varying if c != x]
    roles: dict[str, str | None] = {"x": x, "hue": None, "cols": None, "rows": None}
    for role in ("hue", "cols", "rows"):
        roles[role] = rest.pop() if rest else None
    return roles


def plot_grid(
    data: Any,
    *,
    x: str = AUTO,
    y: str = "power",
    rows: str | None = AUTO,
    cols: str | None = AUTO,
    hue: str | None = AUTO,
    target: float | None = 0.8,
    errorbars: bool = True,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
    sharex: bool = True,
) -> Figure:
    """Power (or Type-M / Type-S) of every grid cell against one axis.

    With the defaults, a human-rating grid is drawn in Figure 6's layout
    (Card et al. 2020, Fig. 6).

    Parameters
    ----------
    data : GridResult or DataFrame
        A grid result or its ``to_frame()`` (columns ``y``, ``ci_low``,
        ``ci_high`` and the axis columns named below).
    x : str
        Column on the horizontal axis.  ``"auto"``: the grid's last varying
        numeric axis (``"effect"`` for a frame).
    y : {"power", "type_m", "type_s"}
        What to draw; intervals and the target line are drawn for power only.
    rows, cols : str or None
        Columns that facet the figure into rows and columns.  ``"auto"``: the
        grid's remaining varying axes (``"scenario"`` and ``"n_workers"`` for
        a frame).  A column absent from the frame, or ``None``, gives a
        single row / column.
    hue : str or None
        One line per value of this column (``"auto"``: the varying axis before
        ``x``; ``"n_items"`` for a frame).
    target : float or None
        Draw a dashed horizontal line at this power (default 0.8); ``None``: none.
    errorbars : bool
        Draw the Monte Carlo intervals (``ci_low``, ``ci_high``) as error bars.
    title : str, optional
        Figure title.  By default, the test and number of simulations.
    figsize : (width, height), optional
    sharex : bool
        Share the x axis across facets.

    Returns
    -------
    matplotlib.figure.Figure
        One axes per facet, in row-major order (``fig.axes``).
    """
    frame = _as_frame(data)
    roles = _auto_roles(data)
    x = roles["x"] or "effect" if x == AUTO else x
    auto = {k for k, v in (("rows", rows), ("cols", cols), ("hue", hue)) if v == AUTO}
    rows = roles["rows"] if rows == AUTO else rows
    cols = roles["cols"] if cols == AUTO else cols
    hue = roles["hue"] if hue == AUTO else hue
    check_choice("y", y, tuple(_Y_LABELS))
    if y != "power":
        errorbars, target = False, None
    if target is not None:
        target = check_real("target", target, min=0.0, max=1.0)
    optional = [c for c in (rows, cols, hue) if c is not None and c not in frame.columns
                and (c in ("scenario", "n_workers") or c in auto)]
    rows = None if rows in optional else rows
    cols = None if cols in optional else cols
    hue = None if hue in optional else hue
    needed = [x, y] + [c for c in (rows, cols, hue) if c is not None]
    if errorbars:
        needed += ["ci_low", "ci_high"]
    check_columns("plot_grid", needed, list(frame.columns))
    if frame.empty:
        raise InputError("plot_grid: the grid frame has no rows; there is nothing to plot.")

    def levels(col: str | None) -> Sequence[Any]:
        return [None] if col is None else list(dict.fromkeys(frame[col]))

    row_levels, col_levels, hue_levels = levels(rows), levels(cols), levels(hue)
    plt = _pyplot()
    if figsize is None:
        figsize = (3.6 * len(col_levels) + 1.4, 2.9 * len(row_levels) + 0.6)
    fig, axes = plt.subplots(len(row_levels), len(col_levels), figsize=figsize,
                             squeeze=False, sharex=sharex, sharey=True)
    cmap = plt.get_cmap("viridis")
    colors = [cmap(0.85 * j / max(1, len(hue_levels) - 1)) for j in range(len(hue_levels))]
    markers = "osD^v<>ph"
    for r, rv in enumerate(row_levels):
        for c, cv in enumerate(col_levels):
            ax = axes[r][c]
            sub = frame
            if rows is not None:
                sub = sub[sub[rows] == rv]
            if cols is not None:
                sub = sub[sub[cols] == cv]
            for j, hv in enumerate(hue_levels):
                line = sub if hue is None else sub[sub[hue] == hv]
                line = line.sort_values(x)
                if line.empty:
                    continue
                label = None if hue is None else _label(hue, hv)
                xs = line[x].to_numpy(dtype=float)
                ys = line[y].to_numpy(dtype=float)
                if errorbars:
                    err = [ys - line["ci_low"].to_numpy(dtype=float),
                           line["ci_high"].to_numpy(dtype=float) - ys]
                    ax.errorbar(xs, ys, yerr=err, color=colors[j], marker=markers[j % len(markers)],
                                markersize=4, capsize=3, linewidth=1.4, label=label)
                else:
                    ax.plot(xs, ys, color=colors[j], marker=markers[j % len(markers)],
                            markersize=4, linewidth=1.4, label=label)
            if target is not None:
                ax.axhline(target, color="0.35", linestyle="--", linewidth=1.0)
            xs_all = sorted(set(frame[x]))
            if len(xs_all) <= 8:
                ax.set_xticks([float(v) for v in xs_all])
            if y != "type_m":
                ax.set_ylim(-0.02, 1.02)
            ax.grid(True, color="0.92")
            facet = [_label(k, v) for k, v in ((rows, rv), (cols, cv)) if k is not None]
            if facet:
                ax.set_title(", ".join(facet), fontsize=10)
            if c == 0:
                ax.set_ylabel(_Y_LABELS[y])
            if r == len(row_levels) - 1:
                ax.set_xlabel(_xlabel(frame, x))
    legend = None
    if hue is not None:
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            legend = fig.legend(handles, labels, loc="center right", title=_LABELS.get(hue, hue),
                                frameon=False)
    if title is None:
        title = _default_title(frame, target) if y == "power" else ""
    if title:
        fig.suptitle(title, fontsize=11)
    _layout(fig, legend)
    return fig


def _layout(fig: Any, legend: Any) -> None:
    """Tight layout with the legend (if any) in its own strip, never over an axis."""
    if legend is None:
        fig.tight_layout()
        return
    fig.draw_without_rendering()  # sizes the legend text
    width = legend.get_window_extent().width / fig.bbox.width
    fig.tight_layout(rect=(0, 0, max(0.5, 0.99 - width), 1))


def _xlabel(frame: pd.DataFrame, x: str) -> str:
    if x != "effect":
        return _LABELS.get(x, x)
    codings = set(frame["coding"].dropna()) if "coding" in frame.columns else set()
    if codings == {"sum"}:
        return "effect β1 (sum coding, x = ±1)"
    if len(codings) == 1:
        return f"effect β1 ({codings.pop()} coding)"
    return "effect β1"


def _default_title(frame: pd.DataFrame, target: float | None) -> str:
    parts = []
    if "test" in frame.columns and frame["test"].nunique() == 1:
        test = frame["test"].iloc[0]
        alt = frame["alternative"].iloc[0] if "alternative" in frame.columns else None
        parts.append(f"test={test}" + (f", {alt}" if alt else ""))
    if "n_sims" in frame.columns and frame["n_sims"].nunique() == 1:
        parts.append(f"{int(frame['n_sims'].iloc[0])} simulations per point")
    if target is not None:
        parts.append(f"dashed: power {target:g}")
    return "Power (95% Monte Carlo intervals); " + "; ".join(parts) if parts else ""
