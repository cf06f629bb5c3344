"""Figures 3, 7 and 8 of Card et al. (2020): power, Type-M and Type-S against n.

Thin wrappers over :func:`nlpower.plots.plot_grid` (x = test-set size, one
line per accuracy gain, one panel per agreement rate).  No statistics here.
The paper does not list its exact grid; :data:`FIGURE_AXES` is a grid of the
same shape (the App. C example's delta 0.02 and Pa 0.9 included).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..plots import plot_grid

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["FIGURE_AXES", "figure3", "figure7", "figure8", "plot_accuracy_grid"]

#: A grid shaped like Figures 3, 7 and 8 (n on the x axis, delta as lines, Pa as panels).
FIGURE_AXES: dict[str, list[Any]] = {
    "n": [100, 200, 500, 1000, 2000, 5000, 10000],
    "delta": [0.01, 0.02, 0.03, 0.05],
    "agreement": [0.8, 0.9, 0.95],
}

_TITLES = {"power": "Power (Card et al. 2020, Fig. 3)",
           "type_m": "Type-M error (Card et al. 2020, Fig. 7)",
           "type_s": "Type-S error (Card et al. 2020, Fig. 8)"}


def plot_accuracy_grid(grid: Any, y: str = "power", *, log_n: bool = True,
                       **kwargs: Any) -> Figure:
    """``y`` against ``n`` (log scale), one line per ``delta``, one panel per ``agreement``.

    Extra keyword arguments go to :func:`nlpower.plots.plot_grid`.
    """
    options: dict[str, Any] = {"x": "n", "hue": "delta", "cols": "agreement", "rows": None,
                               "title": _TITLES.get(y)}
    options.update(kwargs)
    fig = plot_grid(grid, y=y, **options)
    if log_n and options["x"] == "n":
        frame = grid.to_frame() if hasattr(grid, "to_frame") else grid
        ticks = sorted({int(v) for v in frame["n"]})
        for ax in fig.axes:
            ax.set_xscale("log")
            ax.set_xticks(ticks, [f"{t:,}" for t in ticks], rotation=45)
            ax.minorticks_off()
    return fig


def figure3(grid: Any, **kwargs: Any) -> Figure:
    """Power against test-set size (Card et al. 2020, Fig. 3) from an accuracy power grid."""
    return plot_accuracy_grid(grid, "power", **kwargs)


def figure7(grid: Any, **kwargs: Any) -> Figure:
    """Type-M error against test-set size (Card et al. 2020, Fig. 7)."""
    return plot_accuracy_grid(grid, "type_m", **kwargs)


def figure8(grid: Any, **kwargs: Any) -> Figure:
    """Type-S error against test-set size (Card et al. 2020, Fig. 8)."""
    return plot_accuracy_grid(grid, "type_s", **kwargs)
