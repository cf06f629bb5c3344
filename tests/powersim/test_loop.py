"""The one replicate loop: generator -> analysis -> test, the same for every outcome."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import FitError
from nlpower.outcomes import analyses
from nlpower.outcomes.likert import LikertParams
from nlpower.outcomes.power import _simulate
from nlpower.powersim import loop
from nlpower.powersim.models import build_model
from nlpower.powersim.options import power_options
from nlpower.powersim.replicate import run_simulate
from nlpower.powersim.rules import get_test

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")
HV = presets.high_variance


def _fields(r, k):
    return (r.estimate[k], r.se[k], r.statistic[k], r.df[k], r.pvalue[k], r.failed[k])


def test_a_replicate_is_the_same_alone_or_inside_a_run():
    design, params = CrossedDesign(4, 10, items="nested"), HV(0.2)
    opts = power_options(n_sims=6, test="satterthwaite", method="simulate")
    seeds = np.random.SeedSequence(5).spawn(6)
    full = run_simulate(design, params, seeds, opts)
    analysis = loop.EngineAnalysis(build_model(design, params), get_test(opts.test), opts,
                                   "with engine='native'")
    gen = loop.GaussianRatings(design.arrays(), params)
    one = loop.replicate_batch(gen, analysis, opts, 4, 5, n_sims=6, seeds=seeds)
    assert _fields(one, 0) == _fields(full, 4)


def test_likert_analyses_run_on_the_loop_over_drawn_rows():
    lp = LikertParams.from_preset(HV(0.3), 4)
    design = CrossedDesign(3, 8)
    y = _simulate(design, lp, np.random.SeedSequence(2), 5)
    opts = power_options(n_sims=5, test="z", method="simulate")
    run = analyses.clmm_batch(design, y, lp, opts)
    alone = loop.replicate_batch(loop.Responses(y[3:4], first=3),
                                 analyses.ClmmAnalysis(design, lp, opts), opts, 3, 4, n_sims=5)
    np.testing.assert_array_equal(alone.estimate, run.estimate[3:4])
    np.testing.assert_array_equal(alone.pvalue, run.pvalue[3:4])


def test_a_failing_analysis_is_named_with_the_replicate_of_the_run():
    class Broken:
        label = "(a broken analysis)"

        def batch(self):
            return self

        def fit(self, draw):
            raise FitError("no fit")

    y = np.zeros((4, 3))
    opts = power_options(n_sims=4, test="z", method="simulate", on_failure="raise")
    with pytest.raises(FitError, match=r"replicate 2 of 4 failed to fit \(a broken analysis\): "
                                       r"no fit .*on_failure='raise'"):
        loop.replicate_batch(loop.Responses(y[2:], first=2), Broken(), opts, 2, 4, n_sims=4)
    ignored = loop.replicate_batch(loop.Responses(y), Broken(),
                                   power_options(n_sims=4, test="z", method="simulate"), 0, 4,
                                   n_sims=4)
    assert ignored.failed.all() and np.isnan(ignored.pvalue).all()
