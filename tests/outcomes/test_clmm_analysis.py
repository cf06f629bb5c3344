"""The cumulative-link (clmm) analysis of simulated Likert ratings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.outcomes import LikertParams, likert_power
from nlpower.outcomes.analyses import clmm_replicates
from nlpower.outcomes.power import _simulate
from nlpower.powersim.options import power_options


def test_replicate_fit_is_nlpower_clmm_on_the_same_data():
    from nlpower.ordinal import clmm

    lp = LikertParams.from_preset(presets.high_variance(0.1), 5, link="logit")
    design = CrossedDesign(4, 12)
    y = _simulate(design, lp, np.random.SeedSequence(7), 1)
    reps = clmm_replicates(design, y, lp, power_options(n_sims=1, test="z", method="simulate"))
    df = design.layout().assign(rating=y[0])
    fit = clmm("rating ~ x + (1 + x || worker) + (1 + x || item)", df)
    assert reps.estimate[0] == pytest.approx(float(fit.fixef["x"]), rel=1e-3, abs=1e-4)


def test_unused_category_is_dropped_not_failed():
    lp = LikertParams(thresholds=[-1.0, 0.0, 1.0, 50.0], effect=0.3, sd_item=0.5)
    design = CrossedDesign(3, 10)
    y = _simulate(design, lp, np.random.SeedSequence(1), 2)
    assert y.max() <= 4          # category 5 is never used
    reps = clmm_replicates(design, y, lp, power_options(n_sims=2, test="z", method="simulate"))
    assert not reps.failed.any() and np.all(np.isfinite(reps.statistic))


def test_both_analyses_see_the_same_replicates():
    lp = LikertParams.from_preset(presets.low_variance(0.15), 5, link="logit")
    c = likert_power(CrossedDesign(3, 10), lp, analysis="both", n_sims=3, rng=2)
    lmm, cl = c["lmm"], c["clmm"]
    assert lmm.seed == cl.seed and cl.test == "z" and lmm.test == "satterthwaite"
    # same data: the two estimates have the same sign in each replicate (a strong effect)
    assert np.all(np.sign(lmm.replicates.estimate) == np.sign(cl.replicates.estimate))
    assert cl.effect == pytest.approx(lp.effect / lp.scale)


@pytest.mark.slow
def test_type1_of_clmm_at_ten_workers_within_3_mc_se():
    lp = LikertParams.from_preset(presets.high_variance(0.0), 5, link="logit")
    n_sims = 400
    r = likert_power(CrossedDesign(10, 20), lp, analysis="clmm", n_sims=n_sims, rng=5)
    assert abs(r.type1 - 0.05) < 3 * math.sqrt(0.05 * 0.95 / n_sims)


def test_a_replicate_without_a_positive_se_is_a_failed_fit(monkeypatch):
    # a fit whose Hessian is not positive definite has SE 0: counted as a failed fit (or
    # raised with on_failure="raise"), never a ZeroDivisionError that ends the whole run
    import nlpower
    from nlpower.errors import FitError
    from nlpower.ordinal.model import ClmmCore

    monkeypatch.setattr(ClmmCore, "se", property(lambda self: np.zeros(self.beta.size)))
    kw = dict(n_sims=4, rng=1, outcome="likert", levels=5, analysis="clmm", test="z")
    res = nlpower.power(CrossedDesign(3, 6), presets.high_variance(0.3), **kw)
    assert res.n_failed == 4 and res.power == 0.0
    with pytest.raises(FitError, match="no positive SE"):
        nlpower.power(CrossedDesign(3, 6), presets.high_variance(0.3), on_failure="raise", **kw)
