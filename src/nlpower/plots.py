"""Figures (matplotlib, imported lazily).  A thin edge: no statistics here.

:func:`plot_grid` draws any grid (:class:`nlpower.grid.GridResult` or its
tidy frame): power (or Type-M / Type-S) with its Monte Carlo interval against
one axis, one line per value of another, facets by the rest.  For the
human-rating grid of Card et al. (2020), Figure 6 the defaults give the
paper's layout: facets scenario (rows) x number of workers (columns), one
line per number of items, power against the effect, and a dashed line at
the target power (80%).  The accuracy and BLEU figures (Figs. 3, 4, 7, 8,
17) are the same function with other axes.  :func:`plot_plan` draws a
plan's power curve (:meth:`nlpower.powersim.PlanResult.plot`).

Counts (workers, items) spanning a factor of four or more go on a log axis
labelled with the counts themselves; a curve whose test does not hold
``alpha`` (the grid measured its Type I error at effect 0, and the lower end
of its 95% interval is above ``alpha``) is dotted with open markers, and a
note under the figure says so once.  Titles are wrapped to the figure's
width, so a figure saved with a plain ``savefig(path)`` shows all of them.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._validation import check_choice, check_columns, check_real
from .errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["plot_grid", "plot_plan"]

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
#: Columns that count something: a log axis when they span a factor of four or more.
_COUNTS = {"n_workers", "n_items", "n", "workers_per_item", "n_labelled"}
#: Columns that name the systems compared, when a grid has them.
_SYSTEM_COLUMNS = ("compared", "contrast", "systems")

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
    check_choice("y", y, tuple(_Y_LABELS))
    if y != "power":
        errorbars, target = False, None
    if target is not None:
        target = check_real("target", target, min=0.0, max=1.0)
    x, rows, cols, hue = _grid_roles(data, frame, x, y, rows, cols, hue, errorbars)
    row_levels, col_levels, hue_levels = (_levels(frame, k) for k in (rows, cols, hue))
    plt = _pyplot()
    if figsize is None:
        figsize = (3.6 * len(col_levels) + 1.4, 2.9 * len(row_levels) + 0.6)
    fig, axes = plt.subplots(len(row_levels), len(col_levels), figsize=figsize,
                             squeeze=False, sharex=sharex, sharey=True)
    cmap = plt.get_cmap("viridis")
    styles = [(cmap(0.85 * j / max(1, len(hue_levels) - 1)), _MARKERS[j % len(_MARKERS)])
              for j in range(len(hue_levels))]
    for r, rv in enumerate(row_levels):
        for c, cv in enumerate(col_levels):
            ax = axes[r][c]
            sub = frame
            if rows is not None:
                sub = sub[sub[rows] == rv]
            if cols is not None:
                sub = sub[sub[cols] == cv]
            _draw_lines(ax, sub, x, y, hue, hue_levels, styles, errorbars)
            if target is not None:
                ax.axhline(target, color="0.35", linestyle="--", linewidth=1.0)
            _x_ticks(ax, x, list(frame[x]))
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
    legend = None if hue is None else _hue_legend(fig, hue, hue_levels, styles)
    if title is None:
        title = _default_title(frame, x, target) if y == "power" else ""
    if title:
        fig.suptitle(_wrap(fig, title, 11), fontsize=11)
    _layout(fig, legend, _size_note(frame))
    return fig


_MARKERS = "osD^v<>ph"


def _levels(frame: pd.DataFrame, col: str | None) -> Sequence[Any]:
    """A facet column's values in order of appearance (``[None]``: no such facet)."""
    return [None] if col is None else list(dict.fromkeys(frame[col]))


def _grid_roles(data: Any, frame: pd.DataFrame, x: str, y: str, rows: str | None,
                cols: str | None, hue: str | None, errorbars: bool
                ) -> tuple[str, str | None, str | None, str | None]:
    """:func:`plot_grid`'s ``(x, rows, cols, hue)``: ``"auto"`` resolved from the grid, an
    automatic (or a frame's default) facet absent from the frame dropped, the columns checked."""
    roles = _auto_roles(data)
    x = roles["x"] or "effect" if x == AUTO else x
    auto = {k for k, v in (("rows", rows), ("cols", cols), ("hue", hue)) if v == AUTO}
    rows = roles["rows"] if rows == AUTO else rows
    cols = roles["cols"] if cols == AUTO else cols
    hue = roles["hue"] if hue == AUTO else hue
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
    return x, rows, cols, hue


def _draw_lines(ax: Any, sub: pd.DataFrame, x: str, y: str, hue: str | None,
                hue_levels: Sequence[Any], styles: Sequence[tuple[Any, str]],
                errorbars: bool) -> None:
    """One facet's curves: one per ``hue`` level, with Monte Carlo error bars if asked."""
    for j, hv in enumerate(hue_levels):
        line = sub if hue is None else sub[sub[hue] == hv]
        line = line.sort_values(x)
        if line.empty:
            continue
        label = None if hue is None else _label(hue, hv)
        xs = line[x].to_numpy(dtype=float)
        ys = line[y].to_numpy(dtype=float)
        style = _line_style(*styles[j], oversized=_oversized(line).any())
        if errorbars:
            err = [ys - line["ci_low"].to_numpy(dtype=float),
                   line["ci_high"].to_numpy(dtype=float) - ys]
            ax.errorbar(xs, ys, yerr=err, capsize=3, label=label, **style)
        else:
            ax.plot(xs, ys, label=label, **style)


def _hue_legend(fig: Any, hue: str, hue_levels: Sequence[Any],
                styles: Sequence[tuple[Any, str]]) -> Any:
    """Solid keys: a dotted curve is explained by the note, not the legend."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], **_line_style(*styles[j], oversized=False))
               for j in range(len(hue_levels))]
    labels = [_label(hue, hv) for hv in hue_levels]
    return fig.legend(handles, labels, loc="center right", title=_LABELS.get(hue, hue),
                      frameon=False)


def _oversized(frame: pd.DataFrame) -> Any:
    """Per row: does the grid's measured Type I error say the test does not hold ``alpha``?

    The grid's own verdict (the lower end of the 95% interval of the Type I
    error above ``alpha``, as :func:`nlpower.powersim.power` warns); all False
    when the grid did not measure it.
    """
    import pandas as pd

    if "type1_ci_low" not in frame.columns or "alpha" not in frame.columns:
        return pd.Series(False, index=frame.index)
    low = frame["type1_ci_low"].astype(float)
    return low.notna() & (low > frame["alpha"].astype(float))


def _line_style(color: Any, marker: str, *, oversized: bool) -> dict[str, Any]:
    """A curve's look; dotted with open markers when its test does not hold alpha."""
    style = {"color": color, "marker": marker, "markersize": 4, "linewidth": 1.4}
    if oversized:
        style.update(linestyle=":", markerfacecolor="white")
    return style


def _size_note(frame: pd.DataFrame) -> str | None:
    """One sentence for every curve drawn dotted (None when there are none)."""
    bad = frame[_oversized(frame)]
    if bad.empty:
        return None
    alpha = float(bad["alpha"].iloc[0])
    lo, hi = float(bad["type1"].min()), float(bad["type1"].max())
    rate = f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f}-{hi:.2f}"
    where = ""
    if "n_workers" in bad.columns:
        workers = ", ".join(str(w) for w in sorted(set(bad["n_workers"])))
        where = f" with {workers} workers"
    test = f"test={bad['test'].iloc[0]}" if "test" in bad.columns else "the test"
    return (f"Dotted, open markers: {test} does not hold alpha={alpha:g}{where} (Type I error "
            f"{rate} at effect 0), so these curves overstate power.")


def _x_ticks(ax: Any, x: str, values: Sequence[Any]) -> None:
    """Ticks at the grid's values; counts spanning a factor of 4+ on a log axis."""
    from matplotlib.ticker import LogLocator, NullLocator, StrMethodFormatter

    numeric = sorted({float(v) for v in values})
    log = x in _COUNTS and numeric[0] > 0 and numeric[-1] / numeric[0] >= 4
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    if len(numeric) <= 8:
        ax.set_xticks(numeric, labels=[f"{v:g}" for v in numeric])
    elif log:  # many counts: 1-2-5 steps, labelled plainly (20, 50, 100, ...)
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    if log:
        ax.set_xlim(numeric[0] / 1.25, numeric[-1] * 1.25)


def _wrap(fig: Any, text: str, fontsize: float) -> str:
    """``text`` broken into lines that fit the figure's width at ``fontsize`` points."""
    width_pt = fig.get_figwidth() * 72
    per_line = max(20, int(width_pt / (0.55 * fontsize)))  # an average character's advance
    return "\n".join(textwrap.fill(part, per_line) for part in text.split("\n"))


def _layout(fig: Any, legend: Any, note: str | None = None) -> None:
    """Tight layout with the legend (if any) in its own strip, never over an axis.

    A ``note`` goes under the axes, wrapped to the figure's width.
    """
    bottom = 0.0
    if note is not None:
        text = fig.text(0.01, 0.01, _wrap(fig, note, 8.5), fontsize=8.5, ha="left", va="bottom",
                        color="0.25")
        fig.draw_without_rendering()
        bottom = text.get_window_extent().height / fig.bbox.height + 0.02
    right = 1.0
    if legend is not None:
        fig.draw_without_rendering()  # sizes the legend text
        width = legend.get_window_extent().width / fig.bbox.width
        right = max(0.5, 0.99 - width)
    fig.tight_layout(rect=(0, bottom, right, 1))


def _xlabel(frame: pd.DataFrame, x: str) -> str:
    if x != "effect":
        return _LABELS.get(x, x)
    codings = set(frame["coding"].dropna()) if "coding" in frame.columns else set()
    if codings == {"sum"}:
        return "effect β1 (sum coding, x = ±1)"
    if len(codings) == 1:
        return f"effect β1 ({codings.pop()} coding)"
    return "effect β1"


def _default_title(frame: pd.DataFrame, x: str, target: float | None) -> str:
    parts = []
    compared = _compared(frame)
    if compared:
        parts.append(compared)
    if x != "effect" and "effect" in frame.columns and frame["effect"].nunique() == 1:
        coding = frame["coding"].iloc[0] if "coding" in frame.columns else None
        parts.append(f"effect β1 = {float(frame['effect'].iloc[0]):g}"
                     + (f" ({coding} coding)" if coding else ""))
    if "test" in frame.columns and frame["test"].nunique() == 1:
        test = frame["test"].iloc[0]
        alt = frame["alternative"].iloc[0] if "alternative" in frame.columns else None
        parts.append(f"test={test}" + (f", {alt}" if alt else ""))
    if "n_sims" in frame.columns and frame["n_sims"].nunique() == 1:
        parts.append(f"{int(frame['n_sims'].iloc[0])} simulations per point")
    if target is not None:
        parts.append(f"dashed: power {target:g}")
    return "Power (95% Monte Carlo intervals); " + "; ".join(parts) if parts else ""


def _compared(frame: pd.DataFrame) -> str | None:
    """``"systems compared: B vs A"`` from a grid column that names them, if there is one."""
    for col in _SYSTEM_COLUMNS:
        if col in frame.columns and frame[col].nunique() == 1:
            value = frame[col].iloc[0]
            if isinstance(value, (tuple, list)) and len(value) == 2:
                value = f"{value[0]} vs {value[1]}"
            return f"systems compared: {value}"
    return None


def plot_plan(plan: Any, *, ax: Any = None) -> Any:
    """A plan's power curve: power of its number of workers against the number of items.

    Draws ``PlanResult.curve`` (analytic
    power of the chosen number of workers over item counts around the chosen
    one), the target power (dashed) and the chosen design (a filled dot).
    The title gives the effect, its coding, the test and the systems compared.

    Parameters
    ----------
    plan : PlanResult
        The result of :func:`nlpower.plan`.
    ax : matplotlib Axes, optional
        Draw here; by default a new figure.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import nlpower
    >>> from nlpower import presets
    >>> p = nlpower.plan(presets.low_variance(), effect=0.1)
    >>> fig = p.plot()
    >>> fig.axes[0].get_xlabel()
    'items'
    """
    curve = getattr(plan, "curve", None)
    if curve is None or not {"n_items", "power"} <= set(getattr(curve, "columns", ())):
        raise InputError(f"plot_plan needs a PlanResult (with a power curve); got "
                         f"{type(plan).__name__}. Pass the result of nlpower.plan(...).")
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
    else:
        fig = ax.figure
    curve = curve.sort_values("n_items")
    ax.plot(curve["n_items"].to_numpy(dtype=float), curve["power"].to_numpy(dtype=float),
            color="tab:blue", marker="o", markersize=4, linewidth=1.4,
            label=f"{plan.n_workers} workers")
    ax.axhline(plan.target_power, color="0.35", linestyle="--", linewidth=1.0,
               label=f"target power {plan.target_power:g}")
    ax.plot([plan.n_items], [plan.power], marker="o", markersize=9, color="tab:red",
            linestyle="none", label=f"chosen: {plan.n_workers} workers x {plan.n_items} items")
    _x_ticks(ax, "n_items", list(curve["n_items"]))
    ax.set_ylim(-0.02, 1.02)
    ax.grid(True, color="0.92")
    ax.set_xlabel("items")
    ax.set_ylabel("power (analytic)")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title(_wrap(fig, _plan_title(plan), 10), fontsize=10)
    fig.tight_layout()
    return fig


def _plan_title(plan: Any) -> str:
    compared = getattr(plan, "compared", None)
    systems = getattr(getattr(plan, "design", None), "system_names", None)
    if compared is not None:
        who = f"{compared[0]} vs {compared[1]}"
    elif systems is not None and len(systems) == 2:
        who = f"{systems[1]} vs {systems[0]}"
    else:
        who = None
    parts = [f"effect β1 = {plan.effect:g} ({plan.coding} coding)"]
    if who:
        parts.append(f"systems {who}")
    parts.append(f"test={plan.test}, {plan.alternative}, alpha {plan.alpha:g}")
    return "Power of the plan: " + "; ".join(parts)
