"""Evaluation units (NLPStatTest Definition 1, sec. 3.1.1) against hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.errors import InputError
from nlpower.paired import compare, evaluation_units


def test_mean_units_match_a_hand_computation():
    a = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1]
    b = [1, 1, 1, 0, 0, 0, 2, 2, 5, 3, 3]
    eu = evaluation_units(a, b, eu_size=3)
    # (0.1+0.2+0.3)/3 = 0.2, (0.4+0.5+0.6)/3 = 0.5, (0.7+0.8+0.9)/3 = 0.8; 1.0, 1.1 dropped
    assert eu.a == pytest.approx([0.2, 0.5, 0.8])
    assert eu.b == pytest.approx([1.0, 0.0, 3.0])
    assert (eu.n_units, eu.n_dropped, eu.n_instances) == (3, 2, 11)
    assert eu.diff == pytest.approx([-0.8, 0.5, -2.2])


def test_median_units_match_a_hand_computation():
    eu = evaluation_units([3, 1, 2, 10, 0, 5], [0, 0, 9, 1, 1, 1], eu_size=3, eu_stat="median")
    assert eu.a.tolist() == [2.0, 5.0] and eu.b.tolist() == [0.0, 1.0]


def test_shuffle_moves_pairs_together_and_is_seeded():
    a = np.arange(12.0)
    b = 100 + np.arange(12.0)            # b_k = a_k + 100: any pair-preserving shuffle keeps it
    eu = evaluation_units(a, b, eu_size=4, shuffle=True, rng=3)
    assert eu.diff == pytest.approx([-100.0] * 3)
    assert not np.allclose(eu.a, [1.5, 5.5, 9.5])        # the shuffle did something
    again = evaluation_units(a, b, eu_size=4, shuffle=True, rng=3)
    assert np.array_equal(eu.a, again.a)
    other = evaluation_units(a, b, eu_size=4, shuffle=True, rng=4)
    assert not np.array_equal(eu.a, other.a)
    # a hand shuffle with the documented stream: PCG64(SeedSequence(3)).permutation(12)
    order = np.random.Generator(np.random.PCG64(np.random.SeedSequence(3))).permutation(12)
    assert eu.a == pytest.approx(a[order].reshape(3, 4).mean(axis=1))


def test_compare_units_follow_eu_size():
    a = np.arange(30.0)
    b = np.arange(30.0)[::-1]
    res = compare(a, b, eu_size=10, test="t")
    assert res.n == 3 and res.units.a == pytest.approx([4.5, 14.5, 24.5])


@pytest.mark.parametrize("kwargs, match", [
    ({"eu_size": 0}, "eu_size must be >= 1; got 0"),
    ({"eu_size": 2.5}, "eu_size must be an integer; got 2.5"),
    ({"eu_stat": "mode"}, "eu_stat must be one of 'mean', 'median'; got 'mode'"),
    ({"eu_size": 50}, r"eu_size=50 is larger than the number of instances \(6\)"),
])
def test_unit_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        evaluation_units([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6], **kwargs)


@pytest.mark.parametrize("a, b, match", [
    ([1, 2, 3], [1, 2], "got 3 scores in a and 2 in b"),
    ([1, np.nan, 3], [1, 2, 3], r"a must contain finite scores; got nan at position 1"),
    ("123", [1, 2, 3], "a must be a sequence of numeric scores; got the string '123'"),
    ([[1, 2], [3, 4]], [1, 2], r"a must be 1-dimensional .* got shape \(2, 2\)"),
    ([1, "x", 3], [1, 2, 3], "a must be a sequence of numeric scores; got list"),
])
def test_score_errors(a, b, match):
    with pytest.raises(InputError, match=match):
        evaluation_units(a, b)


def test_compare_needs_three_units():
    with pytest.raises(InputError, match=r"10 instances with eu_size=5 give 2 evaluation unit\(s\); "
                                         "at least 3 are needed"):
        compare(np.arange(10.0), np.zeros(10), eu_size=5)
