"""compare(): the result object, the rng policy, the report and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.paired import CompareResult, compare, sample_size

GEN = np.random.default_rng(0)
B = GEN.uniform(0.2, 0.8, 120)
A = B + GEN.normal(0.04, 0.1, 120)


def test_result_fields_and_conventions():
    res = compare(A, B, rng=1)
    assert isinstance(res, CompareResult)
    es = res.effect_sizes
    for name in ("cohens_d", "hedges_g", "wilcoxon_r", "hodges_lehmann"):
        assert np.isfinite(getattr(es, name))
    assert res.ci.low < res.estimate < res.ci.high
    assert res.recommendation is res.analysis.recommendation
    assert res.test == res.recommendation.tests[0]
    assert repr(res).startswith("CompareResult(test=") and len(repr(res)) < 200
    frame = res.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 1
    assert {"pvalue", "ci_low", "ci_high", "cohens_d", "hedges_g", "wilcoxon_r",
            "hodges_lehmann", "n", "eu_size", "observed_power"} <= set(frame.columns)
    with pytest.raises(AttributeError):
        res.pvalue = 0.0                                     # frozen


def test_reject_uses_p_below_alpha():
    res = compare(A, B, test="t", alpha=0.05)
    assert res.reject == (res.pvalue < 0.05)
    loose = compare(A, B, test="t", alpha=res.pvalue)        # p < alpha fails at p == alpha
    assert not loose.reject


def test_same_seed_same_result_generator_is_consumed():
    kw = {"test": "bootstrap_t", "n_resamples": 500, "eu_size": 2, "shuffle": True}
    assert compare(A, B, rng=7, **kw).pvalue == compare(A, B, rng=7, **kw).pvalue
    assert compare(A, B, rng=7, **kw).seed == compare(A, B, rng=7, **kw).seed
    gen = np.random.default_rng(3)
    first, second = compare(A, B, rng=gen, **kw), compare(A, B, rng=gen, **kw)
    assert first.seed != second.seed
    gen1, gen2 = np.random.default_rng(3), np.random.default_rng(3)
    assert compare(A, B, rng=gen1, **kw).pvalue == compare(A, B, rng=gen2, **kw).pvalue


def test_shuffle_and_resampling_use_independent_streams():
    # The same rng gives the same units whatever the test (shuffle stream is its own child).
    r1 = compare(A, B, eu_size=4, shuffle=True, rng=11, test="t")
    r2 = compare(A, B, eu_size=4, shuffle=True, rng=11, test="permutation", n_resamples=300)
    assert np.array_equal(r1.units.a, r2.units.a)


def test_summary_and_report_say_what_nlpstattest_asks():
    res = compare(A, B, test="wilcoxon", eu_size=3, rng=1)
    text = res.summary()
    assert "Wilcoxon signed-rank test" in text and "Hodges-Lehmann" in text
    assert "40 evaluation units of 3 instance(s)" in text
    report = res.report()
    for item in ("test: Wilcoxon signed-rank test", "significance level: alpha = 0.05",
                 "effect size: Hodges-Lehmann pseudo-median", "Wilcoxon r",
                 "sample size: 40 evaluation units x 3 instance(s)", "power: not computed"):
        assert item in report, item
    planned = res.report(sample_size(0.04, 0.1))
    assert "power (prospective): 0.80" in planned
    curve = res.power_curve(sizes=[40], n_sims=200, rng=1)
    assert "transformation of the p-value" in res.report(curve)


def test_note_when_test_is_not_recommended():
    gen = np.random.default_rng(1)
    b = gen.uniform(0, 1, 200)
    a = b + gen.exponential(0.1, 200)
    assert "t is not among the recommended tests" in compare(a, b, test="t").note


def test_delta_shifts_the_null():
    # delta equal to the mean difference: t = 0 and p = 1.
    res = compare(A, B, test="t", delta=float(np.mean(A - B)))
    assert res.statistic == pytest.approx(0.0, abs=1e-10) and res.pvalue == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"test": "ttest"}, r"test must be one of 't', 'wilcoxon', .*; got 'ttest'\.$"),
    ({"alternative": "two_sided"}, "alternative must be one of .*; got 'two_sided'. "
                                   "Did you mean 'two-sided'"),
    ({"alpha": 0}, "alpha must be > 0.0; got 0.0"),
    ({"n_resamples": 0}, "n_resamples must be >= 1; got 0"),
    ({"center": "mode"}, "center must be one of 'mean', 'median'; got 'mode'"),
    ({"names": ("A",)}, r"names must be a pair of system names like \('A', 'B'\); got \('A',\)"),
    ({"delta": float("nan")}, "delta must be finite; got nan"),
])
def test_compare_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        compare(A, B, **kwargs)


def test_histogram_plot():
    fig = compare(A, B, test="t").plot()
    assert len(fig.axes) == 3 and [ax.get_title() for ax in fig.axes] == ["A", "B", "A - B"]
    fig.clf()
