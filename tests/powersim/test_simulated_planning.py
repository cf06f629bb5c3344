"""mde() and plan() for outcomes without analytic power: the simulated curve, searched.

Checks against *independent* simulations (another seed), with tolerances of 3 Monte Carlo
SEs of those simulations: what the search returns must hold beyond the seed it searched with.
"""

from __future__ import annotations

import math

import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.errors import DesignError, InputError
from nlpower.outcomes import HeadToHeadParams
from nlpower.powersim import mde, plan

CHECK = 600  # replicates of each independent check


def _se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.01) / n)


def _power(design, effect, *, rng, n_sims=CHECK):
    return nlpower.power(design, presets.high_variance(effect), outcome="likert", levels=5,
                         n_sims=n_sims, rng=rng).power


def test_likert_mde_and_its_monte_carlo_interval_hold_on_fresh_replicates():
    d = CrossedDesign(5, 30)
    m = mde(d, presets.high_variance(), outcome="likert", levels=5, n_sims=200, rng=1)
    assert m.effect_ci is not None and m.simulated is not None
    assert m.effect_ci.low <= m.effect <= m.effect_ci.high
    assert m.simulated.power >= 0.8 and m.outcome == "likert" and m.method == "simulation"
    # beyond the search's seed: above the interval power reaches the target, below it does not
    tol = 3 * _se(0.8, CHECK)
    assert _power(d, m.effect_ci.high * 1.05, rng=99) >= 0.8 - tol
    assert _power(d, m.effect_ci.low * 0.95, rng=98) <= 0.8 + tol
    assert "Monte Carlo interval" in m.summary() and "latent scale" in m.summary()
    again = mde(d, presets.high_variance(), outcome="likert", levels=5, n_sims=200, rng=1)
    assert again.effect == m.effect                      # same seed, same answer
    # four times the workers (worker variance dominates the high-variance scenario): smaller
    more = mde(CrossedDesign(20, 30), presets.high_variance(), outcome="likert", levels=5,
               n_sims=200, rng=1)
    assert more.effect_ci.high < m.effect_ci.low


def test_likert_plan_returns_the_fewest_items_that_reach_the_target():
    res = plan(presets.high_variance(), effect=0.2, outcome="likert", levels=5, n_sims=200,
               rng=3, min_workers=6, max_workers=6, max_items=400)
    assert res.n_workers == 6 and res.simulated is not None and res.power == res.simulated.power
    assert res.power >= 0.8                              # on the search's own seed, by construction
    fewer = res.frontier["power_one_item_fewer"].iloc[0]
    assert fewer < 0.8
    # on fresh replicates: the chosen design within MC error of the target or above, one item
    # fewer within MC error of it or below
    tol = 3 * _se(0.8, CHECK) + 3 * _se(0.8, 200)
    assert _power(CrossedDesign(6, res.n_items), 0.2, rng=11) >= 0.8 - tol
    assert _power(CrossedDesign(6, res.n_items - 1), 0.2, rng=12) <= 0.8 + tol
    assert "simulated power" in res.summary()


def test_likert_plan_chooses_the_cheapest_worker_count():
    res = plan(presets.low_variance(), effect=0.1, outcome="likert", levels=5, n_sims=100,
               rng=2, min_workers=3, max_workers=5, max_items=300)
    ok = res.frontier[res.frontier["cost"] < float("inf")]
    assert res.cost == ok["cost"].min() and set(res.frontier["n_workers"]) == {3, 4, 5}


def test_preference_mde_on_the_logit_scale():
    p = HeadToHeadParams.from_share(0.6, sd_worker=0.3)
    m = mde(CrossedDesign(6, 20), p, outcome="preference", n_sims=10, rng=5)
    assert m.analysis == "glmer" and m.test == "z" and m.simulated is not None
    assert m.effect_ci.low <= m.effect and m.simulated.power >= 0.8
    assert m.effect_ci.high == math.inf      # 10 of 10 has a Wilson interval reaching down to 0.72
    assert "logit" in m.summary()


def test_a_simulated_mde_whose_power_falls_at_large_effects_says_why():
    # 4 workers x 10 pairs: the Wald z's SE grows near separation, so power peaks below the
    # target (0.70 at logit 1.6 on these replicates) and falls at larger effects
    p = HeadToHeadParams.from_share(0.6, sd_worker=0.3)
    with pytest.raises(DesignError, match="peaks below 0.8"):
        mde(CrossedDesign(4, 10), p, outcome="preference", n_sims=20, rng=5)


@pytest.mark.parametrize("fn,kwargs,match", [
    (mde, {"outcome": "likert", "levels": 5, "coding": "half"}, "does not take coding"),
    (mde, {"outcome": "preference"}, "needs HeadToHeadParams"),
    (mde, {"levels": 5}, "outcome='gaussian' does not take levels"),
    (mde, {"outcome": "likert", "levels": 5, "test": "kenward"}, "test must be one of"),
    (mde, {"outcome": "likert", "levels": 5, "analysis": "clmm", "test": "satterthwaite"},
     "not a test of outcome='likert', analysis='clmm'"),
    (plan, {"outcome": "likert"}, "levels=K"),
    (plan, {"outcome": "likert", "levels": 5, "contrast": "B"}, "does not take contrast"),
    (plan, {"outcome": "ordinal"}, "outcome must be one of"),
])
def test_errors(fn, kwargs, match):
    with pytest.raises(InputError, match=match):
        if fn is mde:
            mde(CrossedDesign(3, 10), presets.high_variance(), n_sims=5, **kwargs)
        else:
            plan(presets.high_variance(), effect=0.1, n_sims=5, max_workers=3, **kwargs)


def test_a_simulated_plan_searches_near_its_answer_not_the_largest_designs(monkeypatch):
    # each simulated design costs its replicates: the search gallops up from the fewest items
    # (then from the neighbouring worker count's answer) instead of simulating max_items first
    from nlpower.powersim import simsearch

    seen: list[int] = []
    call = simsearch.SimulatedPower.__call__

    def spy(self, design, effect):
        seen.append(design.n_items)
        return call(self, design, effect)

    monkeypatch.setattr(simsearch.SimulatedPower, "__call__", spy)
    p = plan(presets.high_variance(), effect=0.5, outcome="likert", levels=5, n_sims=40,
             rng=1, max_workers=6, max_items=5000)
    assert p.power >= 0.8
    assert max(seen) <= 4 * p.n_items + 8       # the old search simulated 5,000 items per count
