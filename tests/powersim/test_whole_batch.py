"""The one replicate loop with an analysis that sees a whole batch, and the multi-df rule."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import nlpower
import nlpower.study.power as study_power
from nlpower.errors import InputError
from nlpower.powersim import loop
from nlpower.powersim.options import PowerOptions
from nlpower.powersim.result import Replicates
from nlpower.powersim.rules import get_test


class _Normals:
    def draw(self, k, gen):
        return loop.Draw(gen.standard_normal(3) + k)


class _WholeBatch:
    """Records the batch it is handed; the estimate of replicate i is its first value."""

    truth = None

    def __init__(self, seen):
        self.seen = seen

    def test_batch(self, Y, gens, lo):
        self.seen.append((Y.copy(), lo, len(gens)))
        n = Y.shape[0]
        nan, false = np.full(n, np.nan), np.zeros(n, dtype=bool)
        return Replicates(Y[:, 0], nan, nan, nan, nan, ~false, false, false)


class _Analysis:
    label = "whole batch"

    def __init__(self):
        self.seen = []

    def batch(self):
        return _WholeBatch(self.seen)


def test_a_whole_batch_gets_each_replicates_own_draws():
    seeds = np.random.SeedSequence(3).spawn(6)
    a, ticks = _Analysis(), []
    reps = loop.replicate_batch(_Normals(), a, PowerOptions(), 2, 5, n_sims=6, seeds=seeds,
                                on_each=ticks.append)
    Y, lo, n = a.seen[0]
    own = [_Normals().draw(k, np.random.Generator(np.random.PCG64(seeds[k]))).y
           for k in range(2, 5)]
    np.testing.assert_array_equal(Y, np.vstack(own))
    assert (lo, n, ticks) == (2, 3, [3])
    np.testing.assert_array_equal(reps.estimate, Y[:, 0])


def test_a_whole_batch_needs_seeds():
    with pytest.raises(InputError, match="seed per replicate"):
        loop.replicate_batch(_Normals(), _Analysis(), PowerOptions(), 0, 2, n_sims=2)


def test_the_multi_df_comparison_is_the_lrts_chi_square():
    comp = get_test("lrt").comparison()
    stat = np.array([0.5, 3.0, 9.2])
    np.testing.assert_allclose(comp.pvalue(stat, 2), stats.chi2.sf(stat, 2), rtol=1e-12)
    for name in ("z", "satterthwaite", "pblrt"):
        with pytest.raises(InputError, match="test='lrt'"):
            get_test(name).comparison()


def test_a_fitted_model_study_runs_on_the_loop(monkeypatch):
    d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    fit = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
    calls = []

    def spy(generator, analysis, opts, lo, hi, **kw):
        calls.append((type(generator).__name__, type(analysis).__name__, lo, hi))
        return loop.replicate_batch(generator, analysis, opts, lo, hi, **kw)

    monkeypatch.setattr(study_power, "replicate_batch", spy)
    res = nlpower.power(fit.with_params(fixef={"Days": 2.0}), term="Days", n_sims=6, rng=1)
    assert calls == [("ModelGenerator", "StudyAnalysis", 0, 6)] and res.n_sims == 6
