"""power_grid: axes, Cartesian order, key-derived seeds, parallel backends, errors.

Most tests use a small fake cell function (a binomial draw from the cell's
seed) so they check the grid machinery alone, fast; the tests marked
``real_power`` run the package's own ``nlpower.power`` on the fast path.
"""

from __future__ import annotations

import importlib

import numpy as np
import pandas as pd
import pytest

from conftest import fake_power_result
from nlpower import presets
from nlpower.design import CrossedDesign
from nlpower.errors import DesignError, InputError
from nlpower.grid import GridResult, cell_seed
from nlpower.params import LMMParams
from nlpower.powersim.grid import FIGURE6_AXES, power_grid

CALLS: list[tuple] = []


def fake_power(design, params, *, n_sims, alpha, test, alternative, engine, rng, method="auto"):
    """A deterministic stand-in for nlpower.power: Binomial(n_sims, p) from rng."""
    CALLS.append((design.n_workers, design.n_items, params.effect, params.sigma))
    g = np.random.default_rng(rng)
    p = min(0.95, 0.02 + params.effect * design.n_workers * design.n_items / 300)
    k = int(g.binomial(n_sims, p))
    est = k / n_sims
    return fake_power_result(**{"power": est, "ci": (max(0.0, est - 0.1), min(1.0, est + 0.1)), "se": 0.01,
            "type_m": 1.5, "type_s": 0.0, "mean_estimate": float(g.normal(params.effect, 0.01)),
            "n_failed": 0, "n_singular": int(g.integers(0, 3)), "n_sims": n_sims,
            "n_rejected": k, "test": test, "engine": "fake", "alternative": alternative,
            "alpha": alpha, "coding": params.coding, "effect": params.effect})


SCEN = {"low variance": presets.low_variance(), "high variance": presets.high_variance()}


def small_grid(**kw):
    args = dict(n_workers=[3, 10], n_items=[20, 50], effect=[0.05, 0.1], n_sims=40, rng=7,
                power_fn=fake_power, progress=False)
    args.update(kw)
    return power_grid(SCEN, **args)


def has_real_power() -> bool:
    try:
        mod = importlib.import_module("nlpower.powersim")
    except ImportError:
        return False
    return hasattr(mod, "power")


real_power = pytest.mark.skipif(not has_real_power(), reason="nlpower.powersim.power not available yet")


# --------------------------------------------------------------------------- layout


def test_cartesian_order_and_columns():
    res = small_grid()
    frame = res.to_frame()
    assert isinstance(res, GridResult) and len(res) == 2 * 2 * 2 * 2
    assert list(frame.columns[:4]) == ["scenario", "n_workers", "n_items", "effect"]
    assert list(frame.columns[4:8]) == ["power", "ci_low", "ci_high", "se"]
    for col in ("type_m", "type_s", "mean_estimate", "n_failed", "n_singular", "n_sims", "test", "engine"):
        assert col in frame.columns
    expected = [(s, w, i, e) for s in SCEN for w in (3, 10) for i in (20, 50) for e in (0.05, 0.1)]
    got = list(frame[["scenario", "n_workers", "n_items", "effect"]].itertuples(index=False, name=None))
    assert got == expected
    assert (frame["n_sims"] == 40).all() and (frame["test"] == "satterthwaite").all()
    assert res.axes["n_items"] == (20, 50)


def test_each_cell_gets_its_own_design_and_params():
    CALLS.clear()
    small_grid(sigma=0.3)
    assert sorted(set(CALLS)) == sorted(
        {(w, i, e, 0.3) for w in (3, 10) for i in (20, 50) for e in (0.05, 0.1)})
    assert len(CALLS) == 16  # two scenarios


def test_scalar_arguments_are_fixed_columns():
    res = power_grid(presets.high_variance(0.1), n_workers=3, n_items=[20, 50], n_sims=10, rng=1,
                     power_fn=fake_power, progress=False)
    frame = res.to_frame()
    assert list(frame.columns[:3]) == ["n_workers", "n_items", "effect"]
    assert (frame["n_workers"] == 3).all() and (frame["effect"] == 0.1).all()
    assert "scenario" not in frame.columns and len(frame) == 2


def test_design_template_and_extra_axes():
    CALLS.clear()
    seen = []

    def spy(design, params, **kw):
        seen.append((design.n_workers, design.workers_per_item, params.sd_item_slope))
        return fake_power(design, params, **kw)

    res = power_grid(presets.low_variance(0.1), design=CrossedDesign(10, 40),
                     workers_per_item=[3, 5], sd_item_slope=[0.1, 0.2], n_sims=10, rng=3,
                     power_fn=spy, progress=False)
    frame = res.to_frame()
    assert list(frame.columns[:5]) == ["n_workers", "n_items", "effect", "workers_per_item", "sd_item_slope"]
    assert seen == [(10, 3, 0.1), (10, 3, 0.2), (10, 5, 0.1), (10, 5, 0.2)]
    assert (frame["n_items"] == 40).all()


def test_params_list_gives_numbered_scenarios():
    res = power_grid([presets.low_variance(), presets.high_variance()], n_workers=3, n_items=20,
                     effect=0.1, n_sims=5, rng=0, power_fn=fake_power, progress=False)
    assert list(res.to_frame()["scenario"]) == ["params[0]", "params[1]"]


def test_effect_taken_from_each_scenario_when_not_given():
    res = power_grid({"a": presets.low_variance(0.05), "b": presets.high_variance(0.2)},
                     n_workers=3, n_items=20, n_sims=5, rng=0, power_fn=fake_power, progress=False)
    assert list(res.to_frame()["effect"]) == [0.05, 0.2]


# --------------------------------------------------------------------------- seeds


def test_same_seed_same_frame_other_seed_differs():
    a, b, c = small_grid(), small_grid(), small_grid(rng=8)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())
    assert not a.to_frame()["power"].equals(c.to_frame()["power"])
    assert a.seed["entropy"] == 7


def test_cells_keep_their_results_when_axes_change():
    a = small_grid(effect=[0.05, 0.1]).to_frame()
    b = small_grid(effect=[0.2, 0.1, 0.05], n_items=[50, 20, 100]).to_frame()
    keys = ["scenario", "n_workers", "n_items", "effect"]
    merged = a.merge(b, on=keys, suffixes=("_a", "_b"))
    assert len(merged) == len(a)
    np.testing.assert_array_equal(merged["power_a"], merged["power_b"])


def test_cell_equals_a_direct_call_with_cell_seed():
    res = small_grid()
    cell = res.cells[5]
    params = SCEN[cell.key["scenario"]].with_effect(cell.key["effect"])
    design = CrossedDesign(cell.key["n_workers"], cell.key["n_items"])
    direct = fake_power(design, params, n_sims=40, alpha=0.05, test="satterthwaite",
                        alternative="two-sided", engine="native", rng=cell_seed(7, cell.key))
    assert direct.power == cell.record["power"]
    assert cell.spawn_key == tuple(cell_seed(7, cell.key).spawn_key)


def test_parallel_loky_and_dask_match_serial():
    distributed = pytest.importorskip("distributed")
    serial = small_grid(n_jobs=1).to_frame()
    loky = small_grid(n_jobs=2).to_frame()
    pd.testing.assert_frame_equal(serial, loky)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dask = small_grid(backend="dask", client=client).to_frame()
    pd.testing.assert_frame_equal(serial, dask)


@real_power
def test_real_power_parallel_matches_serial_and_direct_call():
    from nlpower.powersim import power

    kw = dict(n_workers=[3, 5], n_items=[20], effect=[0.1, 0.2], n_sims=30, test="z",
              alternative="greater", method="balanced", rng=11, progress=False)
    serial = power_grid(SCEN, **kw)
    loky = power_grid(SCEN, n_jobs=2, **kw)
    pd.testing.assert_frame_equal(serial.to_frame(), loky.to_frame())
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dask = power_grid(SCEN, backend="dask", client=client, **kw)
    pd.testing.assert_frame_equal(serial.to_frame(), dask.to_frame())
    cell = serial.cells[3]
    direct = power(CrossedDesign(cell.key["n_workers"], cell.key["n_items"]),
                   SCEN[cell.key["scenario"]].with_effect(cell.key["effect"]),
                   n_sims=30, test="z", alternative="greater", method="balanced",
                   rng=cell_seed(11, cell.key))
    assert direct.power == cell.record["power"]
    assert direct.n_sims == 30


# --------------------------------------------------------------------------- output


def test_summary_repr_and_progress(capsys):
    res = small_grid(progress=True)
    err = capsys.readouterr().err
    assert "power grid" in err and "16/16" in err
    text = res.summary()
    assert "16 cells" in text and "40 simulated experiments" in text
    first = res.to_frame().iloc[0]
    assert f"{first['power']:.3f}" in text
    assert "scenario[2] x n_workers[2]" in repr(res)


def test_no_progress_output(capsys):
    small_grid(progress=False)
    assert capsys.readouterr().err == ""


def test_plot_method_returns_figure():
    fig = small_grid().plot()
    assert len(fig.axes) == 4


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_wrokers": [3]}, "unknown grid axis n_wrokers.*Did you mean 'n_workers'"),
        ({"sigma_item": [0.1]}, "unknown grid axis sigma_item"),
        ({"effect": []}, "effect: an axis needs at least one value"),
        ({"n_items": [20, 20]}, "must be distinct; 20 appears more than once"),
        ({"n_sims": 0}, "n_sims must be >= 1"),
        ({"alpha": 1.5}, "alpha must be strictly between 0 and 1"),
        ({"test": "wald"}, "test must be one of"),
        ({"alternative": "bigger"}, "alternative must be one of"),
        ({"engine": "nativ"}, "engine must be one of.*Did you mean 'native'"),
        ({"backend": "ray"}, "backend must be one of 'loky', 'dask'"),
        ({"n_jobs": 0}, "n_jobs must be a positive number"),
        ({"client": object()}, "client is only used with backend='dask'"),
        ({"power_fn": 3}, "power_fn must be a callable"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(InputError, match=match):
        small_grid(**kwargs)


def test_missing_sizes_without_design():
    with pytest.raises(InputError, match=r"n_items is required when design is None"):
        power_grid(SCEN, n_workers=[3], power_fn=fake_power, progress=False)


@pytest.mark.parametrize(
    "params, match",
    [
        ({}, "an empty dict gives no scenarios"),
        ([], "an empty list gives no scenarios"),
        ({1: presets.low_variance()}, "scenario names must be strings"),
        ("high-variance", "params must be an LMMParams"),
        ({"a": 0.1}, "params must be an LMMParams"),
    ],
)
def test_bad_params(params, match):
    with pytest.raises(InputError, match=match):
        power_grid(params, n_workers=3, n_items=20, power_fn=fake_power, progress=False)


def test_impossible_cell_names_the_cell():
    with pytest.raises(DesignError, match=r"grid cell \(n_workers=3.*workers_per_item=5"):
        power_grid(presets.low_variance(), n_workers=[3, 10], n_items=20, effect=0.1,
                   workers_per_item=5, power_fn=fake_power, progress=False)


def test_bad_parameter_value_names_the_cell():
    with pytest.raises(InputError, match=r"grid cell .*sigma=-0.1"):
        power_grid(presets.low_variance(), n_workers=3, n_items=20, effect=0.1, sigma=[0.1, -0.1],
                   power_fn=fake_power, progress=False)


def test_effect_axis_needs_an_effect_field():
    from nlpower.params import MultiSystemParams

    multi = MultiSystemParams(beta0=0.5, effects=(0.05, 0.0), sd_worker=0.1,
                              sd_worker_systems=(0.05,) * 3, sd_item=0.1,
                              sd_item_systems=(0.1,) * 3, sigma=0.2)
    with pytest.raises(InputError, match=r"effect=\[0.1\].*no single 'effect' field"):
        power_grid(multi, n_workers=3, n_items=20, effect=[0.1], power_fn=fake_power, progress=False)


def test_figure6_axes_constant():
    assert FIGURE6_AXES == {"n_workers": (3, 10), "n_items": (50, 100, 500),
                            "effect": (0.05, 0.10, 0.15, 0.20)}
    assert isinstance(presets.low_variance(), LMMParams)


def test_failing_cell_is_named_in_the_traceback():
    from nlpower.errors import FitError

    def failing(design, params, **kw):
        if design.n_workers == 10:
            raise FitError("boom")
        return fake_power(design, params, **kw)

    with pytest.raises(FitError, match="boom") as info:
        power_grid(presets.low_variance(), n_workers=[3, 10], n_items=20, effect=0.1, n_sims=5,
                   power_fn=failing, progress=False)
    assert any("n_workers=10" in note for note in getattr(info.value, "__notes__", []))


def test_dask_without_client_uses_a_temporary_local_cluster():
    pytest.importorskip("distributed")
    serial = small_grid(n_items=[20], effect=[0.1]).to_frame()
    dask = small_grid(n_items=[20], effect=[0.1], backend="dask", n_jobs=1).to_frame()
    pd.testing.assert_frame_equal(serial, dask)


def test_reml_and_likert_are_passed_only_when_given():
    seen = []

    def spy(design, params, **kw):
        seen.append({k: kw[k] for k in ("REML", "likert") if k in kw})
        return fake_power(design, params, **{k: v for k, v in kw.items() if k not in ("REML", "likert")})

    base = dict(n_workers=3, n_items=20, effect=0.1, n_sims=5, rng=0, power_fn=spy, progress=False)
    power_grid(presets.low_variance(), **base)
    power_grid(presets.low_variance(), REML=True, likert=5, **base)
    assert seen == [{}, {"REML": True, "likert": 5}]


@real_power
def test_figure6_takeaways_hold_within_monte_carlo_error():
    """Card et al. (2020), Sec. 5 / Fig. 6, on the cells that carry the two takeaways.

    4000 replicates per cell (fast path) so every comparison with 0.8 is > 4 MC SEs away.
    """
    kw = dict(n_items=100, n_sims=4000, test="z", alternative="two-sided", method="balanced",
              rng=2020, progress=False)
    high = power_grid(presets.high_variance(), n_workers=3, effect=[0.05, 0.1, 0.15, 0.2], **kw)
    low = power_grid(presets.low_variance(), n_workers=[3, 10], effect=0.05, **kw)
    hf, lf = high.to_frame(), low.to_frame()
    # 1. high variance, 3 workers x 100 items: underpowered unless beta1 >= 0.2
    below = hf[hf.effect < 0.2]
    assert ((below.power + 4 * below.se) < 0.8).all(), below[["effect", "power", "se"]]
    at02 = hf[hf.effect == 0.2].iloc[0]
    assert at02.power - 4 * at02.se > 0.8
    # 2. low variance, beta1 = 0.05 at 100 items: 3 workers far from 0.8, 10 workers much closer
    p3, p10 = lf.iloc[0], lf.iloc[1]
    assert p3.power + 4 * p3.se < 0.8
    assert p10.power - p3.power > 4 * np.hypot(p3.se, p10.se)
    assert abs(p10.power - 0.8) < 0.1


@real_power
def test_effect_zero_cells_report_the_rejection_rate():
    res = power_grid(presets.low_variance(), n_workers=3, n_items=20, effect=[0.0, 0.1], n_sims=200,
                     test="z", method="balanced", rng=3, progress=False)
    frame = res.to_frame()
    zero, pos = frame.iloc[0], frame.iloc[1]
    assert np.isnan(zero.power) and 0.0 <= zero.rejection_rate <= 1.0
    assert pos.rejection_rate >= pos.power  # sign-correct rejections are a subset
    assert "rejection rate" in res.summary()
    # ML z rule with 3 workers: not below nominal size (anti-conservative), well under 0.5
    se = np.sqrt(0.05 * 0.95 / 200)
    assert 0.05 - 4 * se < zero.rejection_rate < 0.5
