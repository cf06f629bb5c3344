"""nlpower.accuracy.power_grid on the problem-agnostic runner, and Figures 3, 7, 8."""

from __future__ import annotations

import pickle

import pytest

from nlpower.accuracy import AccuracyProblem, figure3, figure7, figure8, power, power_grid
from nlpower.errors import InputError


def test_exact_grid_cells_equal_power_calls():
    g = power_grid([200, 1000], [0.02, 0.04], [0.9, "glue"], baseline=0.85, progress=False)
    frame = g.to_frame()
    assert list(frame.columns[:4]) == ["n", "delta", "agreement", "baseline"]
    assert len(frame) == 8
    for _, row in frame.iterrows():
        r = power(int(row["n"]), row["delta"], row["agreement"], baseline=0.85)
        assert row["power"] == r.power and row["type_m"] == r.type_m
    assert "exact" in g.summary()


def test_simulated_grid_reproducible_and_resumable(tmp_path):
    kw = dict(n=[300, 600], delta=0.03, agreement=0.9, method="simulate", n_sims=500, rng=4,
              progress=False)
    a = power_grid(**kw).to_frame()
    ckpt = tmp_path / "acc.jsonl"
    b = power_grid(**kw, checkpoint=ckpt).to_frame()
    resumed = power_grid(**kw, checkpoint=ckpt)
    assert a["power"].tolist() == b["power"].tolist() == resumed.to_frame()["power"].tolist()
    assert resumed.n_resumed == 2


def test_problem_is_picklable_and_named():
    p = AccuracyProblem(test="mid-p")
    assert pickle.loads(pickle.dumps(p)) == p
    assert p.name == "accuracy" and "power" in p.result_columns
    assert p.fingerprint()["test"] == "mid-p"


def test_grid_rejects_impossible_cell_before_running():
    with pytest.raises(InputError, match=r"grid cell \(n=100, delta=0.2, agreement=0.9\): "
                                         r"delta=0.2 with agreement=0.9 is impossible"):
        power_grid(100, [0.02, 0.2], 0.9, progress=False)


@pytest.mark.parametrize("kw,msg", [
    ({"test": "z"}, "test must be one of"),
    ({"n_jobs": 0}, "n_jobs must be a positive number"),
    ({"n": [10, 2.5]}, "n must be an integer"),
])
def test_grid_option_errors(kw, msg):
    args = {"n": [100], "delta": 0.02, "agreement": 0.9, "progress": False, **kw}
    with pytest.raises(InputError, match=msg):
        power_grid(**args)


def test_figures_draw_one_panel_per_agreement():
    plt = pytest.importorskip("matplotlib.pyplot")
    g = power_grid([200, 500, 2000], [0.02, 0.04], [0.9, 0.95], progress=False)
    for fig_fn, label in ((figure3, "Fig. 3"), (figure7, "Fig. 7"), (figure8, "Fig. 8")):
        fig = fig_fn(g)
        assert len(fig.axes) == 2
        assert label in fig._suptitle.get_text()
        assert fig.axes[0].get_xscale() == "log"
        plt.close(fig)
