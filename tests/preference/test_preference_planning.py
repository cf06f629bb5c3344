"""MDE, sample size, grid and figure of the one-judgement head-to-head test."""

from __future__ import annotations

import pytest

from nlpower.errors import InputError
from nlpower.preference import figure1, mde, plot_preference_grid, power, power_grid, sample_size


@pytest.mark.parametrize("kw", [{}, {"p_draw": 0.2, "ties": "split"}, {"test": "z"},
                                {"alternative": "less", "p_draw": 0.1}])
def test_mde_is_where_power_reaches_the_target(kw):
    r = mde(80, **kw)
    assert r.achieved == pytest.approx(0.8, abs=1e-6)
    p_draw = kw.get("p_draw", 0.0)
    pub = {k: v for k, v in kw.items() if k != "p_draw"}
    assert power(80, r.p_win, p_draw=p_draw, **pub).power == pytest.approx(0.8, abs=1e-6)
    step = -0.005 if kw.get("alternative") != "less" else 0.005
    assert power(80, r.p_win + step, p_draw=p_draw, **pub).power < 0.8
    assert (r.effect > 0) == (kw.get("alternative") != "less")


def test_mde_too_few_judges():
    with pytest.raises(InputError, match="Increase n"):
        mde(3)


@pytest.mark.parametrize("p_win,p_draw", [(0.65, 0.0), (0.4, 0.3), (0.3, 0.0)])
def test_sample_size_is_the_first_n_with_enough_power(p_win, p_draw):
    r = sample_size(p_win, p_draw=p_draw)
    assert power(r.n, p_win, p_draw=p_draw).power >= 0.8
    assert r.n == 1 or power(r.n - 1, p_win, p_draw=p_draw).power < 0.8
    assert r.n <= r.n_stable <= r.n_checked
    assert r.n_stable == 1 or power(r.n_stable - 1, p_win, p_draw=p_draw).power < 0.8
    for n in range(r.n_stable, min(r.n_stable + 25, r.n_checked)):
        assert power(n, p_win, p_draw=p_draw).power >= 0.8


def test_sample_size_refuses_no_effect_and_the_wrong_side():
    with pytest.raises(InputError, match="no preference"):
        sample_size(0.4, p_draw=0.2)
    with pytest.raises(InputError, match="no preference"):
        sample_size(0.4, alternative="greater")
    with pytest.raises(InputError, match="n_max"):
        sample_size(0.501, n_max=1000)
    with pytest.raises(InputError, match="power"):
        sample_size(0.6, power=1.0)


def test_grid_exact_and_simulated_same_for_any_n_jobs():
    g = power_grid([25, 100], 0.65, progress=False)
    assert [round(p, 3) for p in g.to_frame()["power"]] == [
        round(power(25, 0.65).power, 3), round(power(100, 0.65).power, 3)]
    kw = {"method": "simulate", "n_sims": 500, "rng": 5, "progress": False}
    a = power_grid([25, 50], [0.6, 0.7], p_draw=[0.0, 0.2], **kw).to_frame()
    b = power_grid([25, 50], [0.6, 0.7], p_draw=[0.0, 0.2], n_jobs=2, **kw).to_frame()
    assert a["power"].tolist() == b["power"].tolist()


def test_grid_checks_every_cell_first():
    with pytest.raises(InputError, match="grid cell"):
        power_grid([25], [0.6, 0.9], p_draw=0.2, progress=False)


def test_figures_draw():
    fig = figure1()
    assert len(fig.axes) == 2 and "power 0.83" in fig.axes[0].get_title()
    g = power_grid([25, 50, 100], [0.6, 0.65], p_draw=[0.0, 0.2], progress=False)
    assert len(plot_preference_grid(g).axes) == 2
