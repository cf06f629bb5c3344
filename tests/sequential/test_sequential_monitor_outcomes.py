"""Interim looks at Likert ratings and head-to-head judgements (Monitor with outcome=).

Each look must equal the public fitter on the same rows, and -- on data
simulated as a sequential design simulates them -- the statistic that design
computes for the same replicate at the same look.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import CrossedDesign, clmm, glmer, lmer
from nlpower.errors import InputError
from nlpower.outcomes import HeadToHeadParams, LikertParams
from nlpower.outcomes.headtohead import _draw, _pairs
from nlpower.outcomes.power import _simulate
from nlpower.sequential import Monitor, group_sequential
from nlpower.sequential.outcomes import look_statistics

DESIGN = CrossedDesign(4, 24)
ITEMS = np.array([12, 24])
LIKERT = LikertParams(thresholds=[-1.0, 0.0, 1.0, 2.0], effect=0.3, sd_worker=0.5, sd_item=0.5)
LIKERT_FORMULA = "rating ~ x + (1 + x || worker) + (1 + x || item)"


@pytest.fixture(scope="module")
def likert_frame():
    y = _simulate(DESIGN, LIKERT, np.random.SeedSequence(5), 1)[0]
    return DESIGN.layout(coding=LIKERT.coding).assign(rating=y)


@pytest.mark.parametrize("analysis", ["lmm", "clmm"])
def test_likert_look_is_the_sequential_designs_statistic(likert_frame, analysis):
    sim = look_statistics(DESIGN, LIKERT, ITEMS, analysis, 1, np.random.SeedSequence(5))
    mon = Monitor(group_sequential(2), outcome="likert", analysis=analysis, levels=5,
                  formula=LIKERT_FORMULA, max_items=24,
                  link=LIKERT.link if analysis == "clmm" else "logit")
    look = mon.update(likert_frame.iloc[:12 * 8])
    assert look.information_fraction == pytest.approx(0.5)
    assert look.estimate == pytest.approx(sim.estimate[0, 0], abs=1e-4)
    assert look.statistic == pytest.approx(sim.z[0, 0], abs=1e-3)
    assert math.isinf(look.df) == (analysis == "clmm")


def test_likert_lmm_rescales_and_clmm_is_the_public_fit(likert_frame):
    part = likert_frame.iloc[:96]
    look = Monitor(group_sequential(2), outcome="likert", levels=5, formula=LIKERT_FORMULA,
                   max_items=24).update(part)
    row = lmer(LIKERT_FORMULA, part.assign(rating=(part["rating"] - 1) / 4)).coef_table(
        ddf="satterthwaite").loc["x"]
    assert look.estimate == pytest.approx(row["estimate"], rel=1e-6)
    assert look.se == pytest.approx(row["std_error"], rel=1e-6)
    raw = Monitor(group_sequential(2), outcome="likert", formula=LIKERT_FORMULA,
                  max_items=24).update(part)
    assert raw.estimate == pytest.approx(4 * look.estimate, rel=1e-6)   # levels= only rescales
    assert raw.statistic == pytest.approx(look.statistic, rel=1e-6)
    ordinal = Monitor(group_sequential(2), outcome="likert", analysis="clmm",
                      formula=LIKERT_FORMULA, max_items=24).update(part)
    fit = clmm(LIKERT_FORMULA, part).coef_table().loc["x"]
    assert ordinal.statistic == pytest.approx(fit["z"], rel=1e-6)


@pytest.fixture(scope="module")
def judged():
    params = HeadToHeadParams(effect=0.3, sd_worker=0.5, sd_item=0.5, p_draw=0.1)
    w, i, pos, frame = _pairs(DESIGN)
    seed = np.random.SeedSequence(7).spawn(1)[0]
    win, draw = _draw(w, i, pos, DESIGN.n_workers, DESIGN.n_items, params,
                      np.random.Generator(np.random.PCG64(seed)))
    return params, frame.assign(win=win.astype(float), weight=(~draw).astype(float))


def test_preference_look_is_the_glmer_wald_z(judged):
    params, frame = judged
    part = frame.iloc[:12 * 4]
    look = Monitor(group_sequential(2), outcome="preference", max_items=24).update(part)
    fit = glmer("win ~ 1 + (1 | worker) + (1 | item)", part, weights="weight").coef_table()
    assert look.statistic == pytest.approx(fit.loc["(Intercept)", "z"], rel=1e-6)
    assert math.isinf(look.df) and look.n_items == 12 and look.n_ratings == 48
    # the sequential design's model (with the display-order term): the same estimate
    formula = "win ~ 1 + pos + (1 | worker) + (1 | item)"
    sim = look_statistics(DESIGN, params, ITEMS, "glmer", 1, np.random.SeedSequence(7))
    mine = Monitor(group_sequential(2), outcome="preference", formula=formula,
                   max_items=24).update(part)
    assert mine.estimate == pytest.approx(sim.estimate[0, 0], abs=1e-4)


def test_preference_decisions_follow_the_boundaries(judged):
    _, frame = judged
    strong = frame.assign(win=1.0 - frame["win"] * 0.0)      # everyone prefers the second system
    strong.loc[strong.index[::5], "win"] = 0.0                 # 80% of judgements
    mon = Monitor(group_sequential(2), outcome="preference", max_items=24)
    look = mon.update(strong.iloc[:48])
    assert look.statistic >= look.efficacy and look.decision == "stop: efficacy"
    down = Monitor(group_sequential(2), outcome="preference", alternative="less",
                   max_items=24).update(strong.iloc[:48])
    assert down.statistic == pytest.approx(-look.statistic)
    assert down.decision == "continue"


def test_outcome_errors(likert_frame):
    d = group_sequential(2)
    with pytest.raises(InputError, match="outcome must be one of"):
        Monitor(d, outcome="binary", formula="y ~ x", max_items=3)
    with pytest.raises(InputError, match="needs formula="):
        Monitor(d, outcome="likert", max_items=3)
    with pytest.raises(InputError, match="analysis must be one of 'lmm', 'clmm'"):
        Monitor(d, outcome="likert", analysis="glmer", formula=LIKERT_FORMULA, max_items=3)
    with pytest.raises(InputError, match="levels="):
        Monitor(d, outcome="preference", levels=5, max_items=3)
    with pytest.raises(InputError, match="link='probit'"):
        Monitor(d, outcome="likert", link="probit", formula=LIKERT_FORMULA, max_items=3)
    with pytest.raises(InputError, match="response 'win' is not a column"):
        Monitor(d, outcome="preference", max_items=24).update(likert_frame)
