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
