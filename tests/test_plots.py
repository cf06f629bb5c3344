"""plot_grid: Figure 6's layout from a grid frame (no statistics in plots)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from nlpower.errors import InputError  # noqa: E402
from nlpower.plots import plot_grid  # noqa: E402


def figure6_frame() -> pd.DataFrame:
    rows = []
    for s, scen in enumerate(["high variance", "low variance"]):
        for w in (3, 10):
            for i in (50, 100, 500):
                for e in (0.05, 0.10, 0.15, 0.20):
                    p = min(1.0, e * w * i / (300 * (1 + s)))
                    rows.append({"scenario": scen, "n_workers": w, "n_items": i, "effect": e,
                                 "power": p, "ci_low": max(0.0, p - 0.05), "ci_high": min(1.0, p + 0.05),
                                 "n_sims": 200, "test": "z", "alternative": "greater", "coding": "sum"})
    return pd.DataFrame(rows)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_figure6_layout_and_png(tmp_path):
    frame = figure6_frame()
    fig = plot_grid(frame)
    assert len(fig.axes) == 4  # 2 scenarios x 2 worker counts
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["high variance, 3 workers", "high variance, 10 workers",
                      "low variance, 3 workers", "low variance, 10 workers"]
    for ax in fig.axes:
        # 3 item counts, each an errorbar line, plus the dashed target line
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
        assert len(dashed) == 1 and list(dashed[0].get_ydata()) == [0.8, 0.8]
        assert len(ax.containers) == 3
    ax = fig.axes[1]
    sub = frame[(frame.scenario == "high variance") & (frame.n_workers == 10) & (frame.n_items == 100)]
    plotted = ax.containers[1].lines[0]
    assert list(plotted.get_xdata()) == list(sub["effect"])
    assert list(plotted.get_ydata()) == pytest.approx(list(sub["power"]))
    assert "sum coding" in fig.axes[-1].get_xlabel()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["50 items", "100 items", "500 items"]
    out = tmp_path / "fig6.png"
    fig.savefig(out, dpi=80)
    assert out.stat().st_size > 10_000 and out.read_bytes()[:4] == b"\x89PNG"


def test_single_scenario_and_no_errorbars():
    frame = figure6_frame()
    frame = frame[frame.scenario == "low variance"].drop(columns="scenario")
    fig = plot_grid(frame, errorbars=False, target=None, title="")
    assert len(fig.axes) == 2
    for ax in fig.axes:
        assert len(ax.get_lines()) == 3 and not ax.containers
    assert fig._suptitle is None


def test_custom_facets():
    fig = plot_grid(figure6_frame(), rows=None, cols="n_items", hue="n_workers")
    assert len(fig.axes) == 3
    # both scenarios are drawn within each facet, per worker count: still one line per hue level
    assert all(len(ax.containers) == 2 for ax in fig.axes)


def test_errors():
    with pytest.raises(InputError, match="needs a GridResult or its .to_frame"):
        plot_grid([1, 2, 3])
    with pytest.raises(InputError, match=r"column 'n_item' \(did you mean 'n_items'\?\) not found"):
        plot_grid(figure6_frame(), hue="n_item")
    with pytest.raises(InputError, match="no rows"):
        plot_grid(figure6_frame().iloc[:0])
    with pytest.raises(InputError, match="target must be <= 1.0"):
        plot_grid(figure6_frame(), target=80)


# --- issue 23, item 16: figures say what they show and nothing covers an axis --------------


def _overlaps(fig, legend) -> bool:
    fig.canvas.draw()
    box = legend.get_window_extent()
    return any(box.overlaps(ax.get_window_extent()) for ax in fig.axes)


def test_bleu_figures_title_axis_and_legend():
    from nlpower import bleu

    grid = bleu.power_grid([500, 2000], [0.5, 1.0, 2.0], 0.13, 25.8, n_sims=20, method="normal",
                           rng=1, progress=False)
    fig = bleu.figure4(grid)
    title = fig._suptitle.get_text()
    assert "P0 = 0.13" in title and "b0 = 25.8" in title and "20 replicates per point" in title
    assert fig.axes[0].get_xlabel() == "true difference dB (BLEU points)"
    assert not _overlaps(fig, fig.legends[0])
    wide = bleu.power_grid([500, 2000], [0.5, 1.0], [0.05, 0.3], 25.8, n_sims=20,
                           method="normal", rng=1, progress=False)
    fig17 = bleu.figure17(wide, by="p0")
    assert "b0 = 25.8" in fig17._suptitle.get_text() and "P0 =" not in fig17._suptitle.get_text()
    assert not _overlaps(fig17, fig17.legends[0])


def test_pairwise_heatmap_has_a_colour_bar_and_an_unclipped_title():
    import numpy as np

    from nlpower import paired

    rng = np.random.default_rng(1)
    systems = {name: rng.normal(0.5, 0.2, 40) for name in ("alpha_system", "beta", "gamma")}
    fig = paired.pairwise(systems, n_resamples=99, rng=1).plot()
    ax, bar = fig.axes
    assert [t.get_text() for t in bar.get_yticklabels()] == ["p \u2265 0.05", "p < 0.05"]
    fig.canvas.draw()
    title = ax.title.get_window_extent()
    assert title.x0 >= 0 and title.x1 <= fig.bbox.width  # inside the figure
