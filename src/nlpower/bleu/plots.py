"""BLEU power figures like Card et al. (2020) Figs. 4 and 17: thin wrappers over
:func:`nlpower.plots.plot_grid` (no statistics here; matplotlib is imported lazily there).

The paper's exact axis values are not printed; :data:`FIGURE4_AXES` and
:data:`FIGURE17_AXES` span the ranges its text describes (test sets up to
5,000 sentences, differences around 1 BLEU point, P0 and b0 around Table 3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..plots import plot_grid

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["FIGURE17_AXES", "FIGURE4_AXES", "figure17", "figure4"]

#: Figure 4: power against dB, one line per test-set size, P0 and b0 at the Table 3 averages.
FIGURE4_AXES: dict[str, Any] = {"n": [500, 1000, 2000, 3000, 5000],
                                "delta": [0.25, 0.5, 1.0, 1.5, 2.0, 3.0]}
#: Figure 17: the same, one panel per P0 (b0 = 25.8) or per b0 (P0 = 0.13).
FIGURE17_AXES: dict[str, Any] = {"p0": [0.05, 0.13, 0.3, 0.5], "b0": [15.0, 25.8, 40.0, 60.0]}


def figure4(grid: Any, *, y: str = "power", title: str | None = None) -> Figure:
    """Power against dB (BLEU points), one line per test-set size ``n`` (Fig. 4)."""
    return plot_grid(grid, x="delta", y=y, hue="n", rows=None, cols=None, figsize=(7.0, 4.2),
                     title=title if title is not None else "BLEU power (x: dB, BLEU points)")


def figure17(grid: Any, *, by: str = "p0", y: str = "power", title: str | None = None) -> Figure:
    """Power against dB, one line per ``n``, one panel per value of ``by`` ("p0" or "b0") (Fig. 17)."""
    return plot_grid(grid, x="delta", y=y, hue="n", cols=by, rows=None,
                     title=title if title is not None else f"BLEU power by {by} (x: dB, BLEU points)")
