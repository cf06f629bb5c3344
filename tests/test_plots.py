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
    title = " ".join(fig._suptitle.get_text().split())  # wrapped to the figure's width
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


# --- readable axes, unclipped titles, tests that do not hold alpha, a plan's curve ----------


def _inside(fig, artist) -> bool:
    box = artist.get_window_extent(fig.canvas.get_renderer())
    return box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height


def _tick_labels_apart(fig, ax) -> bool:
    renderer = fig.canvas.get_renderer()
    boxes = sorted((t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()),
                   key=lambda b: b.x0)
    return all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False))


def test_item_counts_on_a_log_axis_with_their_own_labels(tmp_path):
    rows = [{"n_items": i, "effect": 0.1, "power": i / 200, "ci_low": i / 250, "ci_high": i / 170,
             "n_sims": 100, "test": "z", "alternative": "two-sided", "coding": "sum"}
            for i in (10, 20, 40, 80, 160)]
    fig = plot_grid(pd.DataFrame(rows), x="n_items", hue=None, rows=None, cols=None)
    fig.savefig(tmp_path / "items.png")  # draws the figure
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["10", "20", "40", "80", "160"]
    assert _tick_labels_apart(fig, ax)
    assert "effect β1 = 0.1" in " ".join(fig._suptitle.get_text().split())


def test_effects_stay_on_a_linear_axis():
    fig = plot_grid(figure6_frame())
    assert fig.axes[0].get_xscale() == "linear"


def test_a_one_panel_title_is_inside_the_figure_when_saved_plainly(tmp_path):
    frame = figure6_frame()
    one = frame[(frame.scenario == "low variance") & (frame.n_workers == 10)]
    fig = plot_grid(one.drop(columns=["scenario", "n_workers"]))
    fig.savefig(tmp_path / "one.png")  # the README's way: no bbox_inches="tight"
    assert fig._suptitle.get_text()
    assert _inside(fig, fig._suptitle)
    assert _inside(fig, fig.legends[0])


def _sized(frame: pd.DataFrame) -> pd.DataFrame:
    """Figure 6's frame with a measured Type I error: 0.15 [0.11, 0.20] with 3 workers, 0.05 else."""
    frame = frame.copy()
    few = frame["n_workers"] == 3
    frame["alpha"] = 0.05
    frame["type1"] = [0.15 if f else 0.05 for f in few]
    frame["type1_ci_low"] = [0.11 if f else 0.03 for f in few]
    frame["type1_ci_high"] = [0.20 if f else 0.08 for f in few]
    return frame


def test_curves_whose_test_does_not_hold_alpha_are_marked_once(tmp_path):
    fig = plot_grid(_sized(figure6_frame()))
    for ax in fig.axes:
        styles = {c.lines[0].get_linestyle() for c in ax.containers}
        assert styles == ({":"} if "3 workers" in ax.get_title() else {"-"})
    notes = [t for t in fig.texts if "does not hold alpha=0.05" in t.get_text()]
    assert len(notes) == 1
    assert "3 workers" in notes[0].get_text() and "0.15" in notes[0].get_text()
    fig.savefig(tmp_path / "sized.png")
    assert _inside(fig, notes[0])
    legend_styles = {h.get_linestyle() for h in fig.legends[0].legend_handles}
    assert legend_styles == {"-"}


def test_no_mark_when_the_test_holds_alpha():
    frame = _sized(figure6_frame())
    frame["type1_ci_low"] = 0.03
    fig = plot_grid(frame)
    assert not [t for t in fig.texts if "does not hold" in t.get_text()]
    assert all(c.lines[0].get_linestyle() == "-" for ax in fig.axes for c in ax.containers)


def test_plan_plot_shows_the_curve_target_and_chosen_design(tmp_path):
    import nlpower
    from nlpower import presets

    plan = nlpower.plan(presets.low_variance(), effect=0.1)
    fig = plan.plot()
    ax = fig.axes[0]
    curve = plan.curve.sort_values("n_items")
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == list(curve["n_items"].astype(float))
    assert list(line.get_ydata()) == pytest.approx(list(curve["power"]))
    chosen = [ln for ln in ax.get_lines() if list(ln.get_xdata()) == [plan.n_items]]
    assert len(chosen) == 1 and list(chosen[0].get_ydata()) == [plan.power]
    assert any(list(ln.get_ydata()) == [plan.target_power] * 2 for ln in ax.get_lines())
    title = " ".join(ax.get_title().split())
    assert "effect β1 = 0.1 (sum coding)" in title and "systems B vs A" in title
    fig.savefig(tmp_path / "plan.png")
    assert _inside(fig, ax.title)
    assert _tick_labels_apart(fig, ax)
    with pytest.raises(InputError, match="plot_plan needs a PlanResult"):
        from nlpower.plots import plot_plan
        plot_plan(figure6_frame())
