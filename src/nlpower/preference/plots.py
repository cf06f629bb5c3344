"""Figure 1 of Card et al. (2020) and head-to-head power grids.  A thin edge: no statistics here.

:func:`figure1` draws, for each sample size, the exact sampling distribution
of the observed share preferring B (bars, significant outcomes in red), the
null value (dashed) and the mean of the significant outcomes (dotted) -- the
middle and right panels of the paper's Fig. 1, with numbers from
:func:`nlpower.preference.power`.  :func:`plot_preference_grid` is
:func:`nlpower.plots.plot_grid` with the head-to-head axes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from ..plots import _pyplot, plot_grid
from .power import power
from .rules import thresholds

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["figure1", "plot_preference_grid"]


def plot_preference_grid(grid: Any, y: str = "power", **kwargs: Any) -> Figure:
    """``y`` against the number of judges, one line per ``p_win`` (panels by ``p_draw``).

    Extra keyword arguments go to :func:`nlpower.plots.plot_grid`.
    """
    frame = grid.to_frame() if hasattr(grid, "to_frame") else grid
    options: dict[str, Any] = {"x": "n", "hue": "p_win",
                               "cols": "p_draw" if "p_draw" in frame.columns else None,
                               "rows": None, "title": "Head-to-head power (Card et al. 2020, Fig. 1)"}
    options.update(kwargs)
    return plot_grid(grid, y=y, **options)


def figure1(p_win: float = 0.65, n: Sequence[int] = (100, 25), *, alpha: float = 0.05) -> Figure:
    """Card et al. (2020), Fig. 1: the sampling distribution of the share preferring B.

    One panel per sample size (one judgement per person, no draws, the exact
    binomial test): the probability of each observed share, significant
    outcomes in red, the null 0.5 dashed, the true share solid and the mean
    share of significant samples dotted.  The title gives the exact power.

    Examples
    --------
    >>> fig = figure1()
    >>> len(fig.axes)
    2
    """
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(n), figsize=(4.2 * len(n), 3.2), squeeze=False, sharey=False)
    for ax, size in zip(axes[0], n, strict=True):
        res = power(int(size), p_win, alpha=alpha)
        w = np.arange(int(size) + 1)
        prob = stats.binom.pmf(w, int(size), p_win)
        lower, upper = thresholds(np.array([int(size)]), "binomial", alpha, "two-sided")
        sig = (w <= lower[0]) | (w >= upper[0])
        share = w / int(size)
        ax.bar(share[~sig], prob[~sig], width=0.8 / int(size), color="0.6")
        ax.bar(share[sig], prob[sig], width=0.8 / int(size), color="tab:red")
        ax.axvline(0.5, ls="--", color="k", lw=1)
        ax.axvline(p_win, ls="-", color="k", lw=1)
        ax.axvline(res.mean_significant, ls=":", color="tab:red", lw=1.5)
        ax.set_title(f"n = {size}: power {res.power:.2f}, Type-M {res.type_m:.2f}")
        ax.set_xlabel("share preferring B")
    axes[0][0].set_ylabel("probability")
    fig.suptitle(f"{p_win:.0%} prefer B (Card et al. 2020, Fig. 1)")
    fig.tight_layout()
    return fig
