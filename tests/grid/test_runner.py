"""The problem-agnostic grid runner on a toy problem: order, seeds, backends, failures, checkpoints."""

from __future__ import annotations

import pandas as pd
import pytest

from grid_helpers import AXES, CoinProblem, CoinResult
from nlpower.errors import CheckpointError, InputError, NlpowerWarning
from nlpower.grid import CellFailure, GridResult, PowerProblem, cell_seed, run_grid


def test_problem_satisfies_the_protocol_and_cells_follow_the_axes():
    assert isinstance(CoinProblem(), PowerProblem)
    res = run_grid(CoinProblem(), AXES, rng=3, progress=False)
    frame = res.to_frame()
    assert isinstance(res, GridResult) and res.problem == "coin"
    assert list(frame.columns) == ["scale", "p", "power", "ci_low", "ci_high", "se", "n_sims"]
    assert list(frame[["scale", "p"]].itertuples(index=False, name=None)) == [
        (s, p) for s in AXES["scale"] for p in AXES["p"]]
    assert all(isinstance(c.result, CoinResult) for c in res.cells)  # typed results, not dicts
    cell = res.cells[4]
    direct = CoinProblem().run_cell(cell.key, cell_seed(3, cell.key))
    assert direct == cell.result
    assert "Power grid: 6 cells, 50 simulated experiments per cell (coin)" in res.summary()


def test_loky_and_dask_worker_processes_give_the_serial_numbers():
    distributed = pytest.importorskip("distributed")
    serial = run_grid(CoinProblem(), AXES, rng=11, progress=False).to_frame()
    loky = run_grid(CoinProblem(), AXES, rng=11, n_jobs=2, progress=False).to_frame()
    pd.testing.assert_frame_equal(serial, loky)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dask = run_grid(CoinProblem(), AXES, rng=11, backend="dask", client=client,
                        progress=False).to_frame()
    pd.testing.assert_frame_equal(serial, dask)


def test_failure_policy_raise_warn_record(tmp_path):
    bad = CoinProblem(fail_at=0.4)
    with pytest.raises(ArithmeticError, match="cannot flip") as info:
        run_grid(bad, AXES, rng=1, progress=False)
    assert any("coin grid cell scale=0.5, p=0.4" in n for n in info.value.__notes__)
    with pytest.warns(NlpowerWarning, match=r"grid cell \(scale=(0.5|1.0), p=0.4\) failed: ArithmeticError"):
        warned = run_grid(bad, AXES, rng=1, progress=False, on_error="warn")
    recorded = run_grid(bad, AXES, rng=1, progress=False, on_error="record",
                        checkpoint=tmp_path / "c.ckpt")
    assert recorded.n_failed_cells == 2 == warned.n_failed_cells
    frame = recorded.to_frame()
    failed = frame[frame.p == 0.4]
    assert failed["power"].isna().all() and failed["error"].str.contains("cannot flip").all()
    good = run_grid(CoinProblem(), AXES, rng=1, progress=False).to_frame()
    ok = frame.p != 0.4
    pd.testing.assert_series_equal(frame.loc[ok, "power"], good.loc[ok, "power"])
    assert isinstance(recorded.cells[1].result, CellFailure)
    assert "2 cells failed" in recorded.summary()
    # failed cells are not checkpointed: a resume (same fingerprint) computes only them
    lines = (tmp_path / "c.ckpt").read_text().splitlines()
    assert len(lines) == 1 + 4


def test_checkpoint_resume_is_bit_identical_and_guards_the_problem(tmp_path):
    path = tmp_path / "g.ckpt"
    first = run_grid(CoinProblem(), AXES, rng=5, progress=False, checkpoint=path)
    again = run_grid(CoinProblem(), AXES, rng=5, progress=False, checkpoint=path)
    assert again.n_resumed == 6 and all(c.resumed for c in again.cells)
    pd.testing.assert_frame_equal(first.to_frame(), again.to_frame())
    with pytest.raises(CheckpointError, match="n_sims is 50 in the file but 60 now"):
        run_grid(CoinProblem(n_sims=60), AXES, rng=5, progress=False, checkpoint=path)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"backend": "ray"}, "backend must be one of 'loky', 'dask'"),
        ({"on_error": "ignore"}, "on_error must be one of 'record', 'warn', 'raise'"),
        ({"n_jobs": 0}, "n_jobs must be a positive number"),
        ({"client": object()}, "client is only used with backend='dask'"),
    ],
)
def test_bad_run_options(kwargs, match):
    with pytest.raises(InputError, match=match):
        run_grid(CoinProblem(), AXES, progress=False, **kwargs)


def test_plot_any_grid_and_y_choices():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = run_grid(CoinProblem(), AXES, rng=2, progress=False)
    fig = res.plot()  # x = last numeric axis (p), one line per scale
    ax = fig.axes[0]
    assert len(fig.axes) == 1 and len(ax.containers) == 2 and ax.get_xlabel() == "p"
    with pytest.raises(InputError, match="y must be one of 'power', 'type_m', 'type_s'"):
        res.plot(y="rate")
    plt.close("all")


def test_wide_table_and_print():
    res = run_grid(CoinProblem(), AXES, rng=4, progress=False)
    wide = res.table()
    frame = res.to_frame()
    assert list(wide.columns) == [0.2, 0.4, 0.8] and list(wide.index) == [0.5, 1.0]
    first = frame.iloc[0]
    assert wide.loc[0.5, 0.2] == f"{first.power:.3f} [{first.ci_low:.3f}, {first.ci_high:.3f}]"
    text = str(res)
    assert "power [95% Monte Carlo interval]" in text and wide.loc[1.0, 0.8] in text
    assert res.table(ci=False).loc[1.0, 0.8] == f"{frame.iloc[-1].power:.3f}"
    with pytest.raises(InputError, match="value='rate' is not a column of this grid"):
        res.table("rate")
