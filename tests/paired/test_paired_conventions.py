"""convention="nlpstattest": NLPStatTest's printed effect-size formulas (Zhu et al. 2020, eq. 3-4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nlpower.errors import InputError
from nlpower.paired import compare
from nlpower.paired.effects import effect_sizes, hedges_j, hedges_j_nlpstattest


def test_hedges_j_nlpstattest_is_eq3():
    for n in (5, 10, 50):
        assert hedges_j_nlpstattest(n) == pytest.approx(1 - 3 / (4 * n - 9))
        assert hedges_j(n) == pytest.approx(1 - 3 / (4 * (n - 1) - 1))
    a, b = [0.3, 0.5, 0.2, 0.9, 0.4], [0.1, 0.4, 0.3, 0.5, 0.1]
    ours, theirs = effect_sizes(a, b), effect_sizes(a, b, convention="nlpstattest")
    assert theirs.cohens_d == ours.cohens_d and theirs.hodges_lehmann == ours.hodges_lehmann
    assert theirs.hedges_g == pytest.approx(ours.cohens_d * (1 - 3 / 11))
    assert theirs.convention == "nlpstattest" and ours.convention == "nlpower"


def test_wilcoxon_r_eq4_by_hand():
    """w = (1, 2, 2, -3, 0): ranks of |w| 1, 3.5, 3.5, 5, ... with the zero ranked lowest:
    |w| = (1, 2, 2, 3, 0) -> ranks (2, 3.5, 3.5, 5, 1); W+ = 2 + 3.5 + 3.5 = 9; n = 5;
    tied ranks T = {3.5}: var = 5*6*11/24 - (3.5^3 - 3.5)/48; Z = (9 - 7.5)/sqrt(var); r = Z/sqrt(5)."""
    w = np.array([1.0, 2.0, 2.0, -3.0, 0.0])
    var = 5 * 6 * 11 / 24 - (3.5**3 - 3.5) / 48
    z = (9 - 7.5) / math.sqrt(var)
    r = effect_sizes(w, convention="nlpstattest").wilcoxon_r
    assert r == pytest.approx(z / math.sqrt(5), rel=1e-12)
    # without zeros and ties the conventions agree
    w2 = np.array([0.5, -0.2, 0.9, 0.1, 0.3, -0.7])
    assert effect_sizes(w2, convention="nlpstattest").wilcoxon_r == \
        pytest.approx(effect_sizes(w2).wilcoxon_r, rel=1e-12)


def test_compare_passes_convention():
    gen = np.random.default_rng(0)
    b = gen.uniform(0.2, 0.8, 60)
    a = b + gen.normal(0.03, 0.1, 60)
    res = compare(a, b, rng=1, convention="nlpstattest")
    assert res.effect_sizes.hedges_g == pytest.approx(res.effect_sizes.cohens_d * (1 - 3 / 231))
    assert "NLPStatTest's formulas" in res.summary()
    assert "4n - 9" in res.report()
    with pytest.raises(InputError, match="convention must be one of"):
        compare(a, b, convention="nlp")
