"""Figures of a paired comparison (matplotlib, imported lazily).  No statistics here.

* :func:`plot_histograms`: A, B and A - B (NLPStatTest Figure 2);
* :func:`plot_power_curve`: power against the number of evaluation units
  with its Monte Carlo band (NLPStatTest Figure 3);
* :func:`plot_pairwise`: adjusted p-values of all system pairs, dark green
  where significant (NLPStatTest Figure 4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..plots import _pyplot

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from .compare import CompareResult
    from .pairwise import PairwiseResult
    from .power import PowerCurveResult

__all__ = ["plot_histograms", "plot_pairwise", "plot_power_curve"]

SIGNIFICANT = "#1b7837"      # dark green (NLPStatTest Figure 4)
NOT_SIGNIFICANT = "#a6dba0"  # light green


def plot_histograms(result: CompareResult, *, bins: int | str = "auto") -> Figure:
    """Histograms of the EU scores of A, B and of A - B, with mean and median marked."""
    plt = _pyplot()
    a, b = result.units.a, result.units.b
    names = result.names
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2), constrained_layout=True)
    for ax, x, title in zip(axes, (a, b, a - b),
                            (names[0], names[1], f"{names[0]} - {names[1]}"), strict=True):
        ax.hist(x, bins=bins, color="#7fa7c9", edgecolor="white")
        ax.axvline(float(np.mean(x)), color="black", lw=1.2, label="mean")
        ax.axvline(float(np.median(x)), color="black", lw=1.2, ls="--", label="median")
        ax.set_title(title)
        ax.set_xlabel("score per evaluation unit")
    axes[0].set_ylabel("count")
    axes[2].legend(frameon=False, fontsize="small")
    fig.suptitle(f"{result.n} evaluation units; skewness of the difference "
                 f"{result.analysis.skewness:.2f} ({result.analysis.skew})", fontsize="medium")
    return fig


def plot_power_curve(curve: PowerCurveResult, *, ax: Any = None,
                     target: float | None = 0.8) -> Figure:
    """Power vs number of evaluation units, with the 95% Monte Carlo band when simulated."""
    plt = _pyplot()
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 3.6), constrained_layout=True)
    else:
        fig = ax.figure
    frame = curve.to_frame()
    ax.plot(frame["n"], frame["power"], marker="o", color="#2166ac",
            label=f"{curve.test} test ({curve.method})")
    if curve.method != "exact":
        ax.fill_between(frame["n"], frame["ci_low"], frame["ci_high"], color="#2166ac", alpha=0.2,
                        lw=0)
    if target is not None:
        ax.axhline(target, color="grey", ls="--", lw=1)
    if curve.n_observed is not None:
        ax.axvline(curve.n_observed, color="black", ls=":", lw=1, label="observed n")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("evaluation units (n)")
    ax.set_ylabel("power")
    ax.legend(frameon=False, fontsize="small")
    return fig


def plot_pairwise(result: PairwiseResult, *, ax: Any = None, annotate: bool = True) -> Figure:
    """Heatmap of adjusted p-values between all systems (NLPStatTest Figure 4)."""
    plt = _pyplot()
    from matplotlib.colors import ListedColormap  # lazy with matplotlib itself

    names = list(result.systems)
    k = len(names)
    pmat = result.matrix().to_numpy(dtype=float)
    if ax is None:
        size = max(3.5, 0.45 * k + 1.5)
        fig, ax = plt.subplots(figsize=(size + 1.4, size + 0.4), constrained_layout=True)
    else:
        fig = ax.figure
    code = np.where(np.isnan(pmat), np.nan, (pmat < result.alpha).astype(float))
    image = ax.imshow(code, cmap=ListedColormap([NOT_SIGNIFICANT, SIGNIFICANT]), vmin=0, vmax=1)
    bar = fig.colorbar(image, ax=ax, ticks=[0.25, 0.75], fraction=0.046, pad=0.04)
    bar.ax.set_yticklabels([f"p \u2265 {result.alpha:g}", f"p < {result.alpha:g}"])
    ax.set_xticks(range(k), names, rotation=90)
    ax.set_yticks(range(k), names)
    if annotate and k <= 20:
        for i in range(k):
            for j in range(k):
                if i != j and np.isfinite(pmat[i, j]):
                    ax.text(j, i, f"{pmat[i, j]:.2g}", ha="center", va="center", fontsize=7,
                            color="white" if pmat[i, j] < result.alpha else "black")
    ax.set_title(f"{result.test_label}\np-values, {result.adjust}-adjusted", fontsize="medium",
                 wrap=True)
    return fig
