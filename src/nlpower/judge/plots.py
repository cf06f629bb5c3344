"""Power against human ratings for several judge qualities (matplotlib, imported lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..params import LMMParams
from .power import JudgeDesign, judge_power


def power_curve_data(params: LMMParams, *, n_labelled: Sequence[int],
                     judge_r: Sequence[float] = (0.0, 0.5, 0.8, 0.95),
                     workers_per_item: int = 3, n_workers: int | None = None,
                     n_unlabelled: int = 1000, alpha: float = 0.05) -> dict[float, np.ndarray]:
    """Closed-form power per ``judge_r`` (0: humans only) at each ``n_labelled``."""
    out = {}
    for r in judge_r:
        out[float(r)] = np.array([
            judge_power(JudgeDesign(int(n), workers_per_item, n_unlabelled, n_workers), params,
                        judge_r=r, alpha=alpha).power for n in n_labelled])
    return out


def plot_power_curve(params: LMMParams, *, n_labelled: Sequence[int] = tuple(range(10, 401, 10)),
                     judge_r: Sequence[float] = (0.0, 0.5, 0.8, 0.95), workers_per_item: int = 3,
                     n_workers: int | None = None, n_unlabelled: int = 1000,
                     alpha: float = 0.05, ax: Any = None) -> Any:
    """Power against the number of human ratings, one line per judge quality.

    Examples
    --------
    >>> from nlpower import presets
    >>> ax = plot_power_curve(presets.high_variance(effect=0.05), n_workers=60)
    >>> [t.get_text() for t in ax.get_legend().get_texts()][:2]
    ['humans only', 'judge r = 0.5']
    """
    from ..plots import _pyplot

    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    data = power_curve_data(params, n_labelled=n_labelled, judge_r=judge_r,
                            workers_per_item=workers_per_item, n_workers=n_workers,
                            n_unlabelled=n_unlabelled, alpha=alpha)
    ratings = 2 * workers_per_item * np.asarray(n_labelled)
    for r, pw in data.items():
        ax.plot(ratings, pw, label="humans only" if r == 0 else f"judge r = {r:g}")
    ax.axhline(0.8, color="grey", lw=0.8, ls="--")
    ax.set_xlabel(f"human ratings ({workers_per_item} workers per item, 2 systems)")
    ax.set_ylabel("power")
    ax.set_title(f"PPI++ with {n_unlabelled} judge-only items")
    ax.legend()
    return ax
