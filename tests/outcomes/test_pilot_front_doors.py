"""power / power_grid / mde / plan from ordinal (clmm) and binary (glmer) pilot fits.

The front doors take the variance components (and thresholds) from the pilot
through :mod:`nlpower.convert_outcomes` and the effect from the user: a run
from the fit must equal a run from the converter's parameters, same seed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower import CrossedDesign, fit_ratings, read_ratings
from nlpower.convert_outcomes import OrdinalPilot, binary_params
from nlpower.errors import InputError
from nlpower.glmm import glmer
from nlpower.outcomes import HeadToHeadParams, LikertParams, simulate_likert
from nlpower.outcomes.headtohead import _pairs, simulate_judgements

pytestmark = pytest.mark.filterwarnings("ignore::nlpower.pm1.ConversionWarning")

TRUTH = LikertParams(thresholds=(-1.5, -0.5, 0.5, 1.5), effect=0.4, sd_worker=0.5,
                     sd_worker_slope=0.3, sd_item=0.7, sd_item_slope=0.3, link="logit")


@pytest.fixture(scope="module")
def ordinal_fit():
    df = simulate_likert(CrossedDesign(6, 25), TRUTH, rng=11).drop(columns="x")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_ratings(read_ratings(df, scale=(1, 5)), family="ordinal")


@pytest.fixture(scope="module")
def binary_fit():
    d = CrossedDesign(8, 30)
    p = HeadToHeadParams(effect=0.4, sd_worker=0.6, sd_item=0.5, position=0.3, p_draw=0.15)
    win, draw = simulate_judgements(d, p, np.random.default_rng(5))
    df = _pairs(d)[3].assign(win=win.astype(float), w=(~draw).astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glmer("win ~ 1 + pos + (1 | worker) + (1 | item)", df, weights="w")


def _likert_params(fit) -> LikertParams:
    pilot = OrdinalPilot(fit)
    return pilot.to_params(pilot.clmm)


def test_power_from_an_ordinal_pilot_equals_power_from_its_params(ordinal_fit):
    d = CrossedDesign(4, 12)
    kw = dict(outcome="likert", analysis="lmm", n_sims=6, rng=7, progress=False)
    a = nlpower.power(d, ordinal_fit, effect=0.8, **kw)
    b = nlpower.power(d, _likert_params(ordinal_fit), effect=0.8, **kw)
    assert a.power == b.power and a.effect == b.effect
    assert np.array_equal(a.replicates.pvalue, b.replicates.pvalue, equal_nan=True)
    # the user's effect, not the pilot's estimate (about 0.4 on the latent scale)
    c = nlpower.power(d, ordinal_fit, effect=0.3, **kw)
    assert not np.array_equal(a.replicates.pvalue, c.replicates.pvalue, equal_nan=True)


def test_power_from_a_binary_pilot_equals_power_from_its_params(binary_fit):
    d = CrossedDesign(4, 10)
    kw = dict(outcome="preference", n_sims=4, rng=3, progress=False)
    a = nlpower.power(d, binary_fit, effect=0.7, **kw)
    b = nlpower.power(d, binary_params(binary_fit), effect=0.7, **kw)
    assert a.power == b.power
    assert np.array_equal(a.replicates.pvalue, b.replicates.pvalue, equal_nan=True)
    assert binary_params(binary_fit).with_effect(0.7).effect == pytest.approx(a.effect)


def test_a_pilot_without_effect_is_refused(ordinal_fit, binary_fit):
    d = CrossedDesign(4, 10)
    with pytest.raises(InputError, match="effect is required"):
        nlpower.power(d, ordinal_fit, outcome="likert", n_sims=2, rng=1)
    with pytest.raises(InputError, match="effect is required"):
        nlpower.power(d, binary_fit, outcome="preference", n_sims=2, rng=1)


def test_pilot_outcome_mismatch_says_which_outcome(ordinal_fit, binary_fit):
    d = CrossedDesign(4, 10)
    with pytest.raises(InputError, match="outcome='likert'"):
        nlpower.power(d, ordinal_fit, effect=0.5, n_sims=2, rng=1)
    with pytest.raises(InputError):
        nlpower.power(d, binary_fit, outcome="likert", effect=0.5, n_sims=2, rng=1)
    with pytest.raises(InputError, match="levels"):
        nlpower.power(d, ordinal_fit, outcome="likert", levels=7, effect=0.5, n_sims=2, rng=1)


def test_power_grid_and_mde_take_an_ordinal_pilot(ordinal_fit):
    g = nlpower.power_grid(ordinal_fit, n_workers=[3, 4], n_items=10, effect=0.8,
                           outcome="likert", n_sims=3, rng=5, progress=False)
    one = nlpower.power_grid(_likert_params(ordinal_fit), n_workers=[3, 4], n_items=10,
                             effect=0.8, outcome="likert", n_sims=3, rng=5, progress=False)
    pd.testing.assert_series_equal(g.to_frame()["power"], one.to_frame()["power"])
    with pytest.raises(InputError, match="effect is required"):
        nlpower.power_grid(ordinal_fit, n_workers=3, n_items=10, outcome="likert", n_sims=2,
                           rng=1, progress=False)
    m = nlpower.mde(CrossedDesign(3, 8), ordinal_fit, outcome="likert", n_sims=4, rng=2)
    m2 = nlpower.mde(CrossedDesign(3, 8), _likert_params(ordinal_fit).with_effect(1.0),
                     outcome="likert", n_sims=4, rng=2)
    assert m.effect == m2.effect and m.effect > 0


def test_plan_runs_from_ordinal_and_binary_pilots(ordinal_fit, binary_fit):
    kw = dict(n_sims=4, max_workers=4, max_items=12, rng=4)
    p = nlpower.plan(ordinal_fit, outcome="likert", effect=2.0, **kw)
    q = nlpower.plan(_likert_params(ordinal_fit), outcome="likert", effect=2.0, **kw)
    assert (p.design.n_workers, p.design.n_items) == (q.design.n_workers, q.design.n_items)
    assert p.power == q.power and p.power >= 0.8
    r = nlpower.plan(binary_fit, outcome="preference", effect=2.0, **kw)
    assert r.power >= 0.8 and r.design.n_workers <= 4
