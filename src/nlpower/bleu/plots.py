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


XLABEL = "true difference dB (BLEU points)"


def _title(grid: Any, head: str, fixed: tuple[str, ...]) -> str:
    """``head`` with the fixed P0/b0, the replicates and swap sets per point (as Figure 6's title)."""
    frame = grid.to_frame() if hasattr(grid, "to_frame") else grid
    parts = []
    for col, name in (("p0", "P0"), ("b0", "b0")):
        if col in fixed and col in frame.columns and frame[col].nunique() == 1:
            parts.append(f"{name} = {float(frame[col].iloc[0]):g}")
    if "n_sims" in frame.columns and frame["n_sims"].nunique() == 1:
        sims = f"{int(frame['n_sims'].iloc[0])} replicates per point"
        if "n_resamples" in frame.columns and frame["n_resamples"].nunique() == 1 \
                and int(frame["n_resamples"].iloc[0]) > 0:
            sims += f", {int(frame['n_resamples'].iloc[0])} swap sets each"
        parts.append(sims)
    return head + (" (" + "; ".join(parts) + ")" if parts else "")


def _relabel(fig: Figure) -> Figure:
    for ax in fig.axes:
        if ax.get_xlabel():
            ax.set_xlabel(XLABEL)
    return fig


def figure4(grid: Any, *, y: str = "power", title: str | None = None) -> Figure:
    """Power against dB (BLEU points), one line per test-set size ``n`` (Fig. 4)."""
    head = _title(grid, "BLEU power, paired randomization test", ("p0", "b0"))
    return _relabel(plot_grid(grid, x="delta", y=y, hue="n", rows=None, cols=None,
                              figsize=(7.0, 4.2), title=title if title is not None else head))


def figure17(grid: Any, *, by: str = "p0", y: str = "power", title: str | None = None) -> Figure:
    """Power against dB, one panel per ``by`` (``"p0"`` or ``"b0"``), lines per ``n`` (Fig. 17)."""
    other = "b0" if by == "p0" else "p0"
    head = _title(grid, f"BLEU power by {'P0' if by == 'p0' else 'b0'}", (other,))
    return _relabel(plot_grid(grid, x="delta", y=y, hue="n", rows=None, cols=by,
                              title=title if title is not None else head))
