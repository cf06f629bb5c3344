"""Figures of leaderboard simulations (matplotlib, imported lazily).  No statistics here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._validation import check_choice
from ..plots import _pyplot

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from ..grid import GridResult

__all__ = ["plot_ranking"]

_COLUMNS = {"top1": ("p_top1", "P(correct top-1)"), "topk": ("p_topk", "P(correct top-k order)"),
            "ranking": ("p_ranking", "P(correct ranking)")}


def plot_ranking(result: GridResult, *, measure: str = "top1", target: float | None = 0.8,
                 ax: Any = None) -> Figure:
    """Probability of a correct leaderboard against votes, one line per allocation.

    ``result`` is :func:`nlpower.arena.arena_power`'s grid; the band is the
    95% Wilson Monte Carlo interval (top-1 and top-k).
    """
    check_choice("measure", measure, tuple(_COLUMNS))
    column, label = _COLUMNS[measure]
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 3.6), constrained_layout=True)
    else:
        fig = ax.figure
    frame = result.to_frame()
    for alloc, part in frame.groupby("allocation", sort=False):
        part = part.sort_values("votes")
        line = ax.plot(part["votes"], part[column], marker="o", label=str(alloc))[0]
        if f"{column}_low" in part:
            ax.fill_between(part["votes"], part[f"{column}_low"], part[f"{column}_high"],
                            color=line.get_color(), alpha=0.2, lw=0)
    if target is not None:
        ax.axhline(target, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("votes")
    ax.set_ylabel(label)
    ax.legend(title="allocation", frameon=False)
    return fig
