"""Columns as model variables (nlpower.lmm.columns): R's factor levels and interactions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.lmm.columns import Factor, as_factor, combine, is_numeric, row_key


def test_factor_levels_follow_r() -> None:
    # R: levels(factor(c("b", "a", "c", "a"))) is "a" "b" "c"; logicals print FALSE/TRUE
    f = as_factor(pd.Series(["b", "a", "c", "a"]))
    assert f.levels == ("a", "b", "c") and f.codes.tolist() == [1, 0, 2, 0]
    assert as_factor(pd.Series([True, False, True])).levels == ("FALSE", "TRUE")
    assert as_factor(pd.Series([3.0, 1.0, 2.0])).levels == ("1", "2", "3")
    cat = pd.Series(pd.Categorical(["x", "y"], categories=["z", "y", "x"]))
    assert as_factor(cat).levels == ("y", "x")                  # order kept, unused dropped
    assert is_numeric(pd.Series([1.0, 2.0])) and not is_numeric(pd.Series([True, False]))


def test_mixed_labels_that_collide_are_an_error() -> None:
    with pytest.raises(InputError, match=r"column 'g' has distinct values with the same text label"):
        as_factor(pd.Series([1, "1"], name="g"))


def test_interaction_factor_and_row_key() -> None:
    a = Factor(np.array([0, 0, 1, 1]), ("a", "b"))
    b = Factor(np.array([0, 1, 0, 1]), ("x", "y"))
    ab = combine([a, b])
    assert ab.levels == ("a:x", "a:y", "b:x", "b:y") and ab.codes.tolist() == [0, 1, 2, 3]
    key = row_key({"a": a, "z": np.array([1.0, 1.0, 1.0, 2.0])}, ("a", "z"), 4)
    assert key is not None and key[0] == key[1] and len(set(key.tolist())) == 3
