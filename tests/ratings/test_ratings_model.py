"""Model choice for rating files (nlpower.ratings.model): level order, baseline, formula, nesting."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower import CrossedDesign, simulate
from nlpower.errors import RatingsError
from nlpower.ratings import FORMULA, RatingsFit, choose_model, fit_ratings, read_ratings
from ratings_helpers import FIXTURES, _read_sim, fit_pilot


@pytest.fixture(scope="module")
def pilot() -> RatingsFit:
    return fit_pilot()


# ----------------------------------------------------------------- errors and choices
def test_error_unknown_baseline():
    r = read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))
    with pytest.raises(RatingsError, match=r"baseline 'a' is not one of the systems 'A', 'B'. Did you mean 'A'\?"):
        fit_ratings(r, baseline="a")


def test_error_half_coding_needs_two_systems():
    r = read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5))
    with pytest.raises(RatingsError, match="coding='half'.*needs exactly 2 systems; the data have 4"):
        fit_ratings(r, coding="half")


def test_baseline_and_codings_give_the_same_model(pilot):
    r = read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))
    other = fit_ratings(r, baseline="B")
    assert other.systems == ("A", "B")
    assert other.fixef["system[A]"] == pytest.approx(-pilot.fixef["system[B]"], abs=1e-6)
    half = fit_ratings(r, coding="half")
    assert half.fixef["system[B]"] == pytest.approx(2 * pilot.fixef["system[B]"], abs=1e-6)
    treat = fit_ratings(r, coding="treatment")
    assert treat.systems == ("A", "B")
    ident = pilot.identifiable().systems.set_index("system")
    assert treat.fixef["(Intercept)"] == pytest.approx(ident.loc["A", "mean"], abs=1e-6)
    assert treat.fixef["systemB"] == pytest.approx(ident.loc["B", "mean"] - ident.loc["A", "mean"],
                                                   abs=1e-6)
    assert "beta1 (systemB) = mean(B) - mean(A)" in treat.legend()
    for f in (other, half, treat):
        assert f.fit.deviance == pytest.approx(pilot.fit.deviance, abs=1e-4)


def test_error_paper_model_on_small_nested_design():
    # 180 ratings, 60 items x 4 per-system indicators = 240 item effects: lme4 refuses it too
    r = read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5))
    with pytest.raises(RatingsError, match=r"cannot fit .*number of observations \(=180\) <= number "
                                           r"of random effects \(=240\).*model='auto'"):
        fit_ratings(r, model="paper")
    with pytest.raises(RatingsError, match="model must be one of 'auto', 'paper'; got 'full'"):
        fit_ratings(r, model="full")


def test_paper_model_on_larger_nested_design_agrees_with_auto_on_identified_quantities():
    from nlpower.params import MultiSystemParams

    true = MultiSystemParams(beta0=0.5, effects=(0.05, -0.02), sd_worker=0.05,
                             sd_worker_systems=(0.05, 0.08, 0.03), sd_item=0.0,
                             sd_item_systems=(0.10, 0.20, 0.15), sigma=0.15)
    df = simulate(CrossedDesign(8, 60, 3, items="nested"), true, rng=11)
    r = _read_sim(df)
    auto = fit_ratings(r)
    paper = fit_ratings(r, model="paper")
    assert auto.reduced == ("item",) and paper.reduced == ()
    assert paper.fit.deviance == pytest.approx(auto.fit.deviance, abs=2e-3)
    ia, ip = auto.identifiable(), paper.identifiable()
    cols = ["mean", "effect", "sd_worker_total", "sd_item_total"]
    np.testing.assert_allclose(ia.systems[cols].to_numpy(), ip.systems[cols].to_numpy(), atol=3e-3)


def test_choose_model_orders_levels_and_detects_nesting():
    """No fit: the level order of each coding, the formula, and which factors are reduced."""
    pilot_r = read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))
    m = choose_model(pilot_r)
    assert m.levels == ("B", "A") and m.baseline == "A"         # sum coding: baseline last
    assert m.formula == FORMULA and m.reduced == ()
    assert list(m.data["system"].cat.categories) == ["B", "A"]
    assert m.pairs["worker"].all() and m.pairs["item"].all()     # fully crossed pilot
    t = choose_model(pilot_r, coding="treatment", baseline="B")
    assert t.levels == ("B", "A") and t.baseline == "B"         # treatment: baseline first
    nested_r = read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5))
    n = choose_model(nested_r)
    assert n.reduced == ("item",)
    assert n.formula == ("rating ~ system + (system || worker) + "
                         "(0 + is_sys1 + is_sys2 + is_sys3 + is_sys4 || item)")
    codes = n.data["system"].cat.codes.to_numpy()
    np.testing.assert_array_equal(n.data["is_sys2"].to_numpy(), (codes == 1).astype(float))
    assert not n.pairs["item"][0, 1] and n.pairs["worker"][0, 1]
    assert choose_model(nested_r, model="paper").formula == FORMULA
    with pytest.raises(RatingsError, match=r"model must be one of 'auto', 'paper'; got 'Auto'\. "
                                           r"Did you mean 'auto'\?"):
        choose_model(nested_r, model="Auto")


def test_an_unidentified_item_slope_suggests_a_model_that_fits():
    """Workers nested in systems, each (item, system) rated once: the item slope has as many
    effects as ratings; the suggested formula drops it and fits the nested workers' intercept."""
    import pandas as pd

    rng = np.random.default_rng(5)
    rows = [(f"J{s}{w}", f"d{i}", sys, int(rng.integers(1, 6)))
            for i in range(60) for s, sys in enumerate(("base", "tuned"))
            for w in [int(rng.integers(0, 6))]]
    df = pd.DataFrame(rows, columns=["worker", "item", "system", "rating"])
    r = read_ratings(df, scale=(1, 5))
    with pytest.raises(RatingsError, match="simpler model") as err:
        fit_ratings(r)
    suggested = str(err.value).split("model=")[-1].rstrip(".").strip("'")
    assert suggested == "rating ~ system + (1 | worker) + (1 | item)"
    assert fit_ratings(r, model=suggested).fit.loglik < 0     # the suggestion fits
