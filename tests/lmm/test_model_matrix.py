"""Model matrices (nlpower.lmm.model_matrix): R's contrast matrices and the rank check."""

from __future__ import annotations

import numpy as np
import pytest

from nlpower._choices import Coding, allowed
from nlpower.errors import InputError
from nlpower.lmm.model_matrix import CONTRASTS, contrast_matrix, drop_aliased


def test_contrast_matrices_equal_r_definitions() -> None:
    # R: contr.treatment(4), contr.sum(3), contr.sum(4)
    m, names = contrast_matrix("treatment", ["a", "b", "c", "d"])
    np.testing.assert_array_equal(m, [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    assert names == ["b", "c", "d"]
    m, names = contrast_matrix("sum", ["a", "b", "c"])
    np.testing.assert_array_equal(m, [[1, 0], [0, 1], [-1, -1]])
    assert names == ["[a]", "[b]"]          # R: "1", "2" (columns named by level here)
    m, _ = contrast_matrix("sum", ["a", "b", "c", "d"])
    np.testing.assert_array_equal(m, [[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, -1, -1]])
    m, names = contrast_matrix("half", ["A", "B"])
    np.testing.assert_array_equal(m, [[0.5], [-0.5]])
    assert names == ["[A]"]
    m, names = contrast_matrix("full", ["A", "B"])
    np.testing.assert_array_equal(m, np.eye(2))
    assert names == ["A", "B"]


def test_contrast_matrix_errors() -> None:
    with pytest.raises(InputError, match=r"at least 2 levels; got 1 level"):
        contrast_matrix("sum", ["A"])
    with pytest.raises(InputError, match=r"contrast must be one of 'treatment', 'sum', 'half'; got 'poly'"):
        contrast_matrix("poly", ["A", "B"])


def test_contrasts_are_the_coding_vocabulary() -> None:
    assert set(CONTRASTS) == set(allowed(Coding)) and CONTRASTS[0] == "treatment"


def test_drop_aliased_tolerance_and_row_key() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 2))
    X = np.column_stack([np.ones(200), x, x[:, 0] - x[:, 1] + 1e-9 * rng.normal(size=200)])
    kept, names, dropped = drop_aliased(X, ["a", "b", "c", "d"])
    assert names == ["a", "b", "c"] and dropped == ["d"]
    X[:, 3] += 1e-4 * rng.normal(size=200)  # far above the 1e-7 relative tolerance
    assert drop_aliased(X, ["a", "b", "c", "d"])[2] == []
    # many rows: the check runs on R of X = QR and agrees
    big = rng.normal(size=(6000, 3))
    big = np.column_stack([big, big[:, 0] + 2 * big[:, 2], np.ones(6000)])
    kept, names, dropped = drop_aliased(big, list("abcde"))
    assert names == ["a", "b", "c", "e"] and dropped == ["d"]
    np.testing.assert_array_equal(kept, big[:, [0, 1, 2, 4]])
    # identical rows: the weighted distinct-row check agrees with the full one
    f = rng.integers(0, 4, 1000)
    D = np.column_stack([np.ones(1000), np.eye(4)[f]])
    k1 = drop_aliased(D, list("iabcd"))
    k2 = drop_aliased(D, list("iabcd"), row_key=f)
    assert k1[1:] == k2[1:] == (["i", "a", "b", "c"], ["d"])
    np.testing.assert_array_equal(k1[0], k2[0])
