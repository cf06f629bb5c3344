"""Data analysis (NLPStatTest sec. 3.1): skewness rule, Shapiro-Wilk, recommendation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from nlpower.errors import InputError
from nlpower.paired import analyze, compare
from nlpower.paired.analysis import sample_skewness, skew_label


@pytest.mark.parametrize("gamma, label", [
    (0.0, "roughly symmetric"), (0.49, "roughly symmetric"), (-0.499, "roughly symmetric"),
    (0.5, "slightly skewed"), (-0.7, "slightly skewed"), (0.99, "slightly skewed"),
    (1.0, "highly skewed"), (-3.0, "highly skewed"),
])
def test_bulmer_rule_of_thumb(gamma, label):
    # Zhu et al. (2020) sec. 3.1.3 after Bulmer (1979): [0, .5) symmetric, [.5, 1) slightly,
    # [1, inf) highly skewed.
    assert skew_label(gamma) == label


def test_skewness_is_the_biased_g1():
    d = np.array([0.0, 0.0, 0.0, 1.0, 5.0])
    m = d.mean()
    g1 = np.mean((d - m) ** 3) / np.mean((d - m) ** 2) ** 1.5        # 1.3389...
    assert sample_skewness(d) == pytest.approx(g1, rel=1e-12)
    assert sample_skewness(np.full(5, 0.3)) == 0.0                  # constant: no skew


def test_skewed_differences_test_the_median_without_shapiro():
    gen = np.random.default_rng(0)
    b = gen.uniform(0, 1, 200)
    a = b + gen.exponential(0.1, 200)                               # skewness about 2
    res = analyze(a, b)
    assert res.skewness > 1 and res.skew == "highly skewed" and res.center == "median"
    assert res.shapiro_pvalue is None and res.normal is None
    assert res.recommendation.tests[0] == "sign"
    assert "median" in res.recommendation.reason
    assert compare(a, b, rng=1).test == "sign"                      # test=None runs it


def test_normal_differences_recommend_the_t_test():
    gen = np.random.default_rng(1)
    b = gen.uniform(0, 1, 100)
    a = b + gen.normal(0.05, 0.1, 100)
    res = analyze(a, b)
    d = a - b
    assert res.shapiro_pvalue == pytest.approx(stats.shapiro(d).pvalue, rel=1e-12)
    assert res.shapiro_statistic == pytest.approx(stats.shapiro(d).statistic, rel=1e-12)
    assert res.normal and res.center == "mean" and res.recommendation.tests[0] == "t"
    assert compare(a, b).test == "t"


def test_symmetric_non_normal_differences_recommend_wilcoxon():
    gen = np.random.default_rng(2)
    d = gen.uniform(-1, 1.2, 500)                                   # flat: symmetric, not normal
    res = analyze(d, np.zeros(500), normality_alpha=0.05)
    assert abs(res.skewness) < 0.5 and res.normal is False
    assert res.recommendation.tests[0] == "wilcoxon" and res.center == "mean"


def test_summary_table_rows_and_values():
    a, b = np.array([1.0, 2.0, 4.0, 8.0]), np.array([1.0, 1.0, 1.0, 1.0])
    table = analyze(a, b).summary_table
    assert list(table["sample"]) == ["A", "B", "A - B"]
    row = table.set_index("sample").loc["A - B"]
    assert row["mean"] == pytest.approx(2.75) and row["median"] == pytest.approx(2.0)
    assert row["sd"] == pytest.approx(np.std([0, 1, 3, 7], ddof=1))


def test_analysis_summary_text():
    gen = np.random.default_rng(3)
    text = analyze(gen.normal(0, 1, 30), gen.normal(0, 1, 30)).summary()
    assert "skewness of A - B" in text and "Shapiro-Wilk" in text and "recommended tests" in text


def test_normality_alpha_is_validated():
    with pytest.raises(InputError, match="normality_alpha must be < 1.0; got 1.5"):
        analyze([1, 2, 3], [0, 0, 0], normality_alpha=1.5)
