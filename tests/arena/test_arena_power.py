"""Leaderboard power by simulation (arena_power, votes_needed, plot_ranking)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from nlpower.arena import ArenaPowerResult, arena_power, plot_ranking, votes_needed
from nlpower.errors import InputError


def test_two_systems_top1_and_pair_power_match_the_binomial():
    # K = 2 without ties: the fitted order is right when the better system wins more
    # than half of n votes; the Wald test of the logit difference rejects when
    # |logit(W/n)| / sqrt(1 / (n p (1 - p))) >= z -- both exact sums over W ~ Bin(n, p)
    n, d, sims = 101, 0.25, 400
    g = arena_power({"a": 0.0, "b": d}, n, compare=("b", "a"), top_k=1, n_sims=sims, rng=3,
                    progress=False)
    row = g.to_frame().iloc[0]
    p = 1 / (1 + math.exp(-d))
    w = np.arange(1, n)                       # W = 0 or n: no finite fit, counted as failures
    pmf = stats.binom.pmf(w, n, p)
    top1 = pmf[w > n / 2].sum()
    ph = w / n
    z = np.log(ph / (1 - ph)) * np.sqrt(n * ph * (1 - ph))
    power = pmf[z >= stats.norm.isf(0.025)].sum()
    for got, want in ((row["p_top1"], top1), (row["pair_power"], power)):
        assert abs(got - want) < 3 * math.sqrt(want * (1 - want) / sims)
    assert row["p_topk"] == row["p_top1"]


def test_same_seed_same_frame_and_record_round_trip():
    kwargs = dict(votes=[300, 600], allocation=["uniform", "adaptive"], tie_rate=0.3, n_sims=10,
                  rng=4, progress=False, compare=("s3", "s2"))
    f1 = arena_power([0.0, 0.2, 0.4, 0.6], **kwargs).to_frame()
    g2 = arena_power([0.0, 0.2, 0.4, 0.6], **kwargs)
    assert f1.equals(g2.to_frame())
    cell = g2.cells[0].result
    assert ArenaPowerResult.from_record(cell.to_record()).to_record() == cell.to_record()
    assert "P(correct top-1)" in cell.summary()


def test_more_votes_narrow_the_intervals():
    f = arena_power(np.linspace(0, 1, 5), [200, 3200], n_sims=10, rng=2, progress=False).to_frame()
    # half-widths shrink like 1 / sqrt(votes): a 16-fold budget gives about a quarter
    assert f["max_halfwidth"].iloc[1] / f["max_halfwidth"].iloc[0] == pytest.approx(0.25, rel=0.2)


def test_votes_needed_interpolates_between_bracketing_budgets():
    g = arena_power([0.0, 0.4, 0.8], [50, 400, 3200], n_sims=30, rng=5, progress=False)
    f = g.to_frame()
    need = votes_needed(g, target=0.7)["uniform"]
    p = f["p_top1"].to_numpy()
    hit = int(np.flatnonzero(p >= 0.7)[0])
    assert (need == 50.0) if hit == 0 else (f["votes"].iloc[hit - 1] < need <= f["votes"].iloc[hit])
    assert math.isnan(votes_needed(g, target=0.999999, measure="ranking")["uniform"]) or p.max() > 0.999


def test_plot_ranking_draws_one_line_per_allocation():
    g = arena_power([0.0, 0.5, 1.0], [100, 400], allocation=["uniform", "adaptive"], n_sims=5,
                    rng=1, progress=False)
    fig = plot_ranking(g, measure="topk")
    assert len(fig.axes[0].get_lines()) == 3          # two allocations and the target line


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"scores": [1.0]}, "two or more finite"),
    ({"compare": ("s1", "zz")}, "compare must name two different systems"),
    ({"allocation": "greedy"}, "allocation"),
    ({"tie_rate": 1.0}, "tie_rate"),
    ({"top_k": 5}, "top_k must be <= 3"),
    ({"votes": 0}, "votes must be >= 1"),
])
def test_errors(kwargs, message):
    args = {"scores": [0.0, 0.1, 0.2], "votes": 100, **kwargs}
    with pytest.raises(InputError, match=message):
        arena_power(args.pop("scores"), args.pop("votes"), n_sims=2, progress=False, **args)


def test_votes_needed_for_an_interval_width():
    g = arena_power(np.linspace(0, 1, 5), [200, 800, 3200], n_sims=8, rng=2, progress=False)
    f = g.to_frame()
    target = float(f["max_halfwidth"].iloc[1])          # reached exactly at 800 votes
    assert votes_needed(g, target, measure="width")["uniform"] == pytest.approx(800.0)
    assert math.isnan(votes_needed(g, 1e-6, measure="width")["uniform"])
