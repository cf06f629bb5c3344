"""Validation helpers: 'did you mean' hints suggest only plausible names."""

from __future__ import annotations

import pytest

from nlpower._validation import check_columns, closest_name
from nlpower.errors import InputError


def test_closest_name_suggests_only_plausible_names():
    assert closest_name("n_wrokers", ["n_workers", "n_items"]) == "n_workers"
    assert closest_name("Rating", ["worker", "item", "rating"]) == "rating"
    # 'score' shares letters with 'worker' (ratio 0.55) but means the rating
    assert closest_name("score", ["worker", "item", "system", "rating"]) == "rating"
    assert closest_name("score", ["worker", "item", "system", "x"]) is None
    assert closest_name("rater", ["worker", "item"]) == "worker"  # a synonym of the role
    assert closest_name("zebra", ["worker", "item"]) is None


def test_check_columns_lists_what_is_there():
    with pytest.raises(InputError, match=r"column 'score' \(did you mean 'rating'\?\) not found. Available columns: 'worker'"):
        check_columns("read_ratings", ["score"], ["worker", "item", "system", "rating"])
