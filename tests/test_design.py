"""CrossedDesign: allocation invariants, layout, validation messages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from nlpower.design import CrossedDesign, default_system_names
from nlpower.errors import DesignError


def test_fully_crossed_paired_is_the_papers_design():
    d = CrossedDesign(3, 100)
    assert d.n_systems == 2
    assert d.system_names == ("A", "B")
    assert d.baseline == "A"
    assert d.is_fully_crossed and d.is_balanced_crossed
    assert d.n_ratings == 3 * 100 * 2
    lay = d.layout()
    assert list(lay.columns) == ["worker", "item", "system", "x"]
    assert len(lay) == d.n_ratings
    # every (worker, item, system) cell exactly once
    assert not lay.duplicated(["worker", "item", "system"]).any()
    assert lay.groupby("worker", observed=True).size().eq(200).all()
    # x is the paper's sum coding: -1 baseline, +1 other system
    assert set(lay.loc[lay.system == "A", "x"]) == {-1.0}
    assert set(lay.loc[lay.system == "B", "x"]) == {1.0}
    assert list(lay.system.cat.categories) == ["A", "B"]
    assert lay.system.cat.ordered


def test_layout_is_deterministic_and_sorted():
    d = CrossedDesign(12, 30, workers_per_item=5)
    a, b = d.layout(), CrossedDesign(12, 30, workers_per_item=5).layout()
    pd.testing.assert_frame_equal(a, b)
    keys = list(zip(a.item, a.worker, a.system.cat.codes, strict=True))
    assert keys == sorted(keys)


def test_labels_sort_in_numeric_order():
    d = CrossedDesign(12, 120)
    lay = d.layout()
    workers = list(dict.fromkeys(lay.worker))
    items = list(dict.fromkeys(lay.item))
    assert workers == sorted(workers) and len(workers) == 12
    assert items == sorted(items) and len(items) == 120
    assert workers[0] == "w01" and items[0] == "i001"


@settings(max_examples=60, deadline=None)
@given(
    w=st.integers(2, 25),
    n=st.integers(2, 60),
    k_frac=st.floats(0, 1),
    n_sys=st.integers(2, 4),
)
def test_rotation_invariants_paired(w, n, k_frac, n_sys):
    k = 1 + int(k_frac * (w - 1))
    assume(n * k >= w)  # otherwise some workers would rate nothing (a DesignError)
    d = CrossedDesign(w, n, n_sys, workers_per_item=k)
    iw = d.item_workers()
    assert iw.shape == (n, k)
    # each item exactly k distinct workers
    assert all(len(set(row)) == k for row in iw)
    loads = d.worker_loads()
    assert loads.sum() == n * k
    assert loads.max() - loads.min() <= 1
    lay = d.layout()
    assert len(lay) == d.n_ratings == n * k * n_sys
    # paired: a worker assigned an item rates it under every system
    per_cell = lay.groupby(["worker", "item"], observed=True).system.nunique()
    assert (per_cell == n_sys).all()
    assert lay.groupby("item", observed=True).worker.nunique().eq(k).all()


@settings(max_examples=60, deadline=None)
@given(
    w=st.integers(2, 25),
    per_sys=st.integers(2, 15),
    k_frac=st.floats(0, 1),
    n_sys=st.integers(2, 5),
)
def test_rotation_invariants_nested(w, per_sys, k_frac, n_sys):
    k = 1 + int(k_frac * (w - 1))
    n = per_sys * n_sys
    assume(n * k >= w)
    d = CrossedDesign(w, n, n_sys, workers_per_item=k, items="nested")
    lay = d.layout()
    assert len(lay) == d.n_ratings == n * k
    # each item belongs to exactly one system, systems get equal numbers of items
    assert lay.groupby("item", observed=True).system.nunique().eq(1).all()
    items_per_sys = lay.drop_duplicates("item").system.value_counts()
    assert (items_per_sys == per_sys).all() and len(items_per_sys) == n_sys
    assert lay.groupby("item", observed=True).worker.nunique().eq(k).all()
    loads = d.worker_loads()
    assert loads.max() - loads.min() <= 1
    # the allocation runs on across systems: each system's ratings are spread over the
    # workers within 2 (within 1 once the rotation phase is reached)
    codes = d.arrays()
    for s in range(n_sys):
        per_worker = np.bincount(codes.worker[codes.system == s], minlength=w)
        assert per_worker.max() - per_worker.min() <= 2


def _n_components(iw: np.ndarray, n_workers: int) -> int:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n, k = iw.shape
    rows, cols = iw.ravel(), n_workers + np.repeat(np.arange(n), k)
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_workers + n,) * 2)
    return int(connected_components(graph, directed=False)[0])


@settings(max_examples=80, deadline=None)
@given(w=st.integers(2, 40), k_frac=st.floats(0, 1), extra=st.integers(0, 40))
def test_allocation_connects_workers_after_two_passes(w, k_frac, extra):
    """k >= 2 and n_items * k >= 2 * n_workers: the worker x item graph is connected."""
    k = 2 + int(k_frac * (w - 2))
    if k > w:
        return
    n = -(-2 * w // k) + extra
    iw = CrossedDesign(w, n, workers_per_item=k).item_workers()
    assert _n_components(iw, w) == 1


def test_plain_rotation_would_split_teams_but_allocation_does_not():
    # 12 workers, 3 per item: (i*k + j) mod 12 gives 4 fixed teams of 3 workers
    plain = (np.arange(60)[:, None] * 3 + np.arange(3)) % 12
    assert _n_components(plain, 12) == 4
    d = CrossedDesign(12, 60, 4, workers_per_item=3, items="nested")
    assert _n_components(d.item_workers(), 12) == 1


def test_first_pass_is_the_plain_rotation():
    # while every worker is in its own group the allocation is the rotation (i*k + j) mod W
    iw = CrossedDesign(9, 3, workers_per_item=3).item_workers()
    np.testing.assert_array_equal(iw, [[0, 1, 2], [3, 4, 5], [6, 7, 8]])
    assert CrossedDesign(4, 6, workers_per_item=1).item_workers().ravel().tolist() == [0, 1, 2, 3, 0, 1]


def test_nested_avoids_aliasing_worker_with_system():
    # 4 workers, 2 per item: an interleaved item->system map would give workers 0,1
    # only system A; the block scheme gives every worker both systems.
    d = CrossedDesign(4, 4, workers_per_item=2, items="nested")
    lay = d.layout()
    assert lay.groupby("worker", observed=True).system.nunique().eq(2).all()


def test_workers_per_item_equal_to_n_workers_is_fully_crossed():
    d = CrossedDesign(5, 7, workers_per_item=5)
    full = CrossedDesign(5, 7)
    assert d.is_balanced_crossed
    pd.testing.assert_frame_equal(d.layout(), full.layout())


def test_named_systems_and_many_systems():
    d = CrossedDesign(2, 2, ["baseline", "ours", "theirs"])
    assert d.system_names == ("baseline", "ours", "theirs")
    assert "x" not in d.layout().columns  # no single x for K > 2
    assert default_system_names(3) == ("A", "B", "C")
    many = default_system_names(30)
    assert many[0] == "S01" and many[-1] == "S30" and list(many) == sorted(many)
    assert CrossedDesign(2, 2, 30).system_names == many


def test_describe_reports_size():
    d = CrossedDesign(20, 100, workers_per_item=3)
    text = d.describe()
    assert "600 ratings" in text
    assert "6 per item (3 workers x 2 systems)" in text
    assert "30 per worker" in text
    assert "3 of 20 workers per item (balanced allocation)" in text
    uneven = CrossedDesign(7, 10, workers_per_item=3).describe()
    assert "8-10 per worker" in uneven  # loads 4-5 items x 2 systems
    nested = CrossedDesign(4, 8, 4, items="nested").describe()
    assert "nested" in nested and "2 per system" in nested


def test_connectivity_is_reported():
    assert CrossedDesign(5, 6).n_components() == 1
    sparse = CrossedDesign(9, 3, workers_per_item=3)  # first pass only: 3 disjoint teams
    assert sparse.n_components() == 3
    assert "NOT connected (3 groups" in sparse.describe()
    assert "worker x item graph: connected" in CrossedDesign(9, 6, workers_per_item=3).describe()
    assert CrossedDesign(4, 8, workers_per_item=1).n_components() == 4  # one worker per item


def test_repr_frame_and_hash():
    d = CrossedDesign(3, 50, workers_per_item=2)
    assert repr(d) == "CrossedDesign(n_workers=3, n_items=50, systems=2, workers_per_item=2, items='paired')"
    assert "systems=('x', 'y')" in repr(CrossedDesign(3, 50, ["x", "y"]))
    row = d.to_frame().iloc[0]
    assert row.n_ratings == 200 and row.workers_per_item == 2
    assert d == CrossedDesign(3, 50, 2, workers_per_item=2)
    assert hash(d) == hash(CrossedDesign(3, 50, ("A", "B"), workers_per_item=2))
    with pytest.raises(AttributeError):
        d.n_items = 4  # type: ignore[misc]


def test_numpy_integers_are_accepted():
    d = CrossedDesign(np.int64(3), np.int32(4), np.int64(2), workers_per_item=np.int64(2))
    assert d.n_workers == 3 and type(d.n_workers) is int and d.workers_per_item == 2


def test_arrays_are_read_only_and_cached():
    d = CrossedDesign(3, 4)
    a = d.arrays()
    assert a is d.arrays()
    with pytest.raises(ValueError):
        a.worker[0] = 1
    assert "n_ratings=24" in repr(a)


# ----------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"n_workers": 1, "n_items": 10}, r"n_workers must be >= 2; got 1\. A grouping factor with a single level"),
        ({"n_workers": 5, "n_items": 1}, r"n_items must be >= 2; got 1\..*one item"),
        ({"n_workers": 2.5, "n_items": 10}, r"n_workers must be an integer; got 2\.5.*whole number"),
        ({"n_workers": 3, "n_items": "10"}, r"n_items must be an integer; got '10'"),
        ({"n_workers": 3, "n_items": 10, "systems": 1}, r"systems must be >= 2.*got 1"),
        ({"n_workers": 3, "n_items": 10, "systems": True}, r"systems must be an int >= 2 or a sequence"),
        ({"n_workers": 3, "n_items": 10, "systems": "AB"}, r"systems must be an int >= 2 or a sequence of at least two names"),
        ({"n_workers": 3, "n_items": 10, "systems": ["only"]}, r"systems needs at least two names"),
        ({"n_workers": 3, "n_items": 10, "systems": ["a", "b", "a"]}, r"system names must be unique; 'a'"),
        ({"n_workers": 3, "n_items": 10, "systems": ["a", ""]}, r"system names must be non-empty"),
        ({"n_workers": 3, "n_items": 10, "items": "crossed"}, r"items must be 'paired'.*or 'nested'.*got 'crossed'"),
        ({"n_workers": 3, "n_items": 10, "workers_per_item": 4}, r"workers_per_item must be between 1 and n_workers=3; got 4"),
        ({"n_workers": 3, "n_items": 10, "workers_per_item": 0}, r"workers_per_item must be between 1 and n_workers=3; got 0"),
        ({"n_workers": 3, "n_items": 10, "workers_per_item": 1.5}, r"workers_per_item must be an integer.*got 1\.5"),
        ({"n_workers": 3, "n_items": 10, "systems": 3, "items": "nested"}, r"n_items must be a multiple of 3; got 10\. Use e\.g\. n_items=9 or 12"),
        ({"n_workers": 3, "n_items": 4, "systems": 4, "items": "nested"}, r"each system needs at least 2 items.*n_items >= 8"),
        ({"n_workers": 3, "n_items": 3, "systems": 4, "items": "nested"}, r"multiple of 4; got 3\. Use e\.g\. n_items=8\.$"),
        ({"n_workers": 10, "n_items": 3, "workers_per_item": 3}, r"n_items \* workers_per_item = 3 \* 3 = 9 rating slots cannot give each of the n_workers=10 workers an item.*n_workers <= 9"),
    ],
)
def test_design_errors(kwargs, pattern):
    with pytest.raises(DesignError, match=pattern):
        CrossedDesign(**kwargs)


def test_design_error_is_a_value_error():
    with pytest.raises(ValueError):
        CrossedDesign(1, 10)


# ------------------------------------------------- arbitrary layouts
def test_from_frame_reproduces_design_arrays():
    from nlpower.design import LayoutArrays

    for d in (CrossedDesign(4, 6), CrossedDesign(5, 12, 3, workers_per_item=2, items="nested")):
        a, b = d.arrays(), LayoutArrays.from_frame(d.layout())
        for name in ("worker", "item", "system", "worker_system", "item_system"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert (a.n_workers, a.n_items, a.n_systems) == (b.n_workers, b.n_items, b.n_systems)


def test_from_frame_unbalanced_and_system_order():
    from nlpower.design import LayoutArrays

    df = pd.DataFrame({"rater": ["b", "a", "a", "c"], "doc": [1, 1, 2, 2],
                       "model": ["ours", "base", "ours", "base"]})
    a = LayoutArrays.from_frame(df, worker="rater", item="doc", system="model", systems=["base", "ours"])
    np.testing.assert_array_equal(a.worker, [1, 0, 0, 2])
    np.testing.assert_array_equal(a.item, [0, 0, 1, 1])
    np.testing.assert_array_equal(a.system, [1, 0, 1, 0])
    # without `systems`, sorted labels ("base" < "ours")
    np.testing.assert_array_equal(
        LayoutArrays.from_frame(df, worker="rater", item="doc", system="model").system, [1, 0, 1, 0])
    # a categorical keeps its category order
    cat = df.assign(model=pd.Categorical(df.model, categories=["ours", "base"]))
    np.testing.assert_array_equal(
        LayoutArrays.from_frame(cat, worker="rater", item="doc", system="model").system, [0, 1, 0, 1])


def test_from_frame_errors():
    from nlpower.design import LayoutArrays

    ok = CrossedDesign(3, 4).layout()
    with pytest.raises(DesignError, match=r"data must be a pandas DataFrame; got list"):
        LayoutArrays.from_frame([1, 2])  # type: ignore[arg-type]
    with pytest.raises(DesignError, match=r"column 'rater' \(did you mean 'worker'\?\)? ?not found.*worker=, item=, system="):
        LayoutArrays.from_frame(ok, worker="rater")
    bad = ok.astype({"item": object})
    bad.loc[0, "item"] = None
    with pytest.raises(DesignError, match=r"column 'item' \(item\) has 1 missing value"):
        LayoutArrays.from_frame(bad)
    with pytest.raises(DesignError, match=r"system\(s\) 'B' not in systems=\['A', 'C'\]"):
        LayoutArrays.from_frame(ok, systems=["A", "C"])
    one_worker = ok[ok.worker == "w1"]
    with pytest.raises(DesignError, match=r"data has 1 distinct workers; at least 2 are needed"):
        LayoutArrays.from_frame(one_worker)
    with pytest.raises(DesignError, match=r"data has 1 distinct systems"):
        LayoutArrays.from_frame(ok[ok.system == "A"].assign(system="A"))


def test_layout_coding():
    d = CrossedDesign(2, 2)
    assert set(d.layout("half").x) == {-0.5, 0.5}
    assert d.layout("treatment").groupby("system", observed=True).x.first().tolist() == [0.0, 1.0]
    with pytest.raises(ValueError, match=r"coding must be one of 'sum', 'half', 'treatment'; got 'dummy'"):
        d.layout("dummy")
