"""The model frame's shortcuts (columns read without Series, factor codes, the rank check,
integer scores, the random-effects layout) give what the general code gives."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import NlpowerWarning
from nlpower.formula import parse
from nlpower.lmm.columns import factor_of, numeric_dtype
from nlpower.lmm.frame import frame_columns, model_frame
from nlpower.lmm.model_matrix import _clearly_full_rank, _gram_schmidt_keep, drop_aliased
from nlpower.ordinal.api import ordinal_frame
from nlpower.ordinal.response import ordinal_response
from nlpower.ordinal.structure import ReStructure

WINE = Path(__file__).parents[1] / "reference" / "data" / "wine.csv"


def _columns(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "y": rng.normal(size=n),
        "g_int": rng.integers(0, 6, size=n),
        "g_u8": rng.integers(0, 6, size=n).astype(np.uint8),
        "g_str": rng.choice(list("dcba"), size=n),                   # str (pyarrow with pandas 3)
        "g_obj": pd.Series(rng.choice(list("xyz"), size=n), dtype=object),
        "g_py": pd.Series(rng.choice(list("pq"), size=n), dtype=pd.StringDtype("python")),
        "g_cat": pd.Categorical(rng.choice(list("pqr"), size=n), categories=list("srqp")),
        "g_bool": rng.integers(0, 2, size=n).astype(bool),
        "g_nint": pd.array(rng.integers(0, 4, size=n), dtype="Int64"),
        "g_f": rng.integers(0, 5, size=n).astype(float),
    })


def _general_factor(col: pd.Series) -> tuple[list[int], tuple[str, ...]]:
    """R's factor of a column the long way: pandas' sorted factorize, R's labels."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cat = col.cat.remove_unused_categories()
        return cat.cat.codes.tolist(), tuple(str(c) for c in cat.cat.categories)
    values = col.to_numpy()
    if pd.api.types.is_bool_dtype(col.dtype):
        values = values.astype(bool)
    codes, uniques = pd.factorize(values, sort=True)
    labels = tuple("TRUE" if u is True else "FALSE" if u is False
                   else str(int(u)) if isinstance(u, float) and u.is_integer() else str(u)
                   for u in uniques.tolist())
    return codes.tolist(), labels


@pytest.mark.parametrize("name", [c for c in _columns().columns if c.startswith("g_")])
def test_factor_of_stored_values_matches_the_general_path(name):
    col = _columns()[name]
    values = col.to_numpy() if isinstance(col.dtype, np.dtype) else col.array
    fac = factor_of(values, name)
    codes, labels = _general_factor(col)
    assert fac.codes.tolist() == codes and fac.levels == labels
    assert fac.codes.dtype == np.intp


def test_pyarrow_strings_with_missing_values_take_the_general_path():
    col = pd.Series(["b", None, "a", "b"], dtype=pd.StringDtype("pyarrow"))
    fac = factor_of(col.array, "g")
    assert fac.codes.tolist() == [1, -1, 0, 1] and fac.levels == ("a", "b")


@pytest.mark.parametrize("dtype", ["int8", "uint64", "float32", "float64", "bool", "complex128",
                                   "object", "datetime64[ns]", "timedelta64[ns]", "Int64",
                                   "Float64", "boolean", "category", "string"])
def test_numeric_dtype_matches_the_pandas_checks(dtype):
    dt = pd.Series([1, 0], dtype=dtype).dtype if dtype not in ("datetime64[ns]", "timedelta64[ns]") \
        else np.dtype(dtype)
    expect = (pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt)
              and not isinstance(dt, pd.CategoricalDtype) and not pd.api.types.is_complex_dtype(dt))
    assert numeric_dtype(dt) == expect


@pytest.mark.parametrize("drop", [False, True])
def test_frame_columns_series_equal_the_data_columns(drop):
    d = _columns()
    d.index = pd.Index([f"r{i}" for i in range(len(d))])
    if drop:
        d.loc[["r3", "r7"], "g_str"] = None
        d.loc["r9", "g_nint"] = pd.NA
    f = parse("y ~ g_str + g_obj + g_cat + (1 | g_int) + (1 | g_nint) + (1 | g_bool)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        cols = frame_columns(f, d)
    keep = d[list(f.variables)].notna().all(axis=1)
    assert cols.n_dropped == (3 if drop else 0) and cols.n == int(keep.sum())
    for name in f.variables:
        expect = d.loc[keep, name]
        got = cols[name]
        assert got.dtype == expect.dtype and got.name == name
        assert got.index.equals(expect.index) and got.equals(expect)
    assert cols.names == list(d.columns)


@pytest.mark.parametrize("group", ["g_int", "g_u8", "g_str", "g_obj", "g_py", "g_cat", "g_bool",
                                   "g_nint", "g_f"])
def test_grouping_columns_of_every_kind_code_as_r_factors(group):
    d = _columns(60, seed=1)
    d.loc[[4, 11], "g_str"] = None                                    # rows dropped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        spec = model_frame(f"y ~ g_str + (1 | {group})", d)
    kept = d[d.g_str.notna()]
    codes, labels = _general_factor(kept[group])
    term = spec.re_terms[0]
    assert term.codes.tolist() == codes and term.levels == labels


def test_a_grouping_factor_that_is_also_a_predictor_is_coded_the_same():
    d = _columns(60, seed=2)
    spec = model_frame("y ~ g_str + (1 | g_str)", d)
    codes, labels = _general_factor(d.g_str)
    assert spec.re_terms[0].codes.tolist() == codes and spec.re_terms[0].levels == labels
    assert spec.fixef_names == ("(Intercept)", *(f"g_str{lv}" for lv in labels[1:]))


def _gs_full_rank(X: np.ndarray) -> bool:
    return len(_gram_schmidt_keep(X, 1e-7)) == X.shape[1]


@pytest.mark.parametrize("seed", range(6))
def test_the_quick_rank_check_only_answers_when_nothing_is_aliased(seed):
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(30), rng.normal(size=(30, 3)), rng.integers(0, 2, size=(30, 2))])
    assert _clearly_full_rank(X) and _gs_full_rank(X)
    aliased = np.column_stack([X, X[:, 1] - 2.0 * X[:, 4]])
    near = np.column_stack([X, X[:, 1] + 1e-9 * rng.normal(size=30)])
    zero = np.column_stack([X, np.zeros(30)])
    for A in (aliased, near, zero):
        assert not _clearly_full_rank(A)
        assert len(drop_aliased(A, [f"c{j}" for j in range(A.shape[1])])[2]) == 1
    big = X * 1e120
    assert not _clearly_full_rank(big) and _gs_full_rank(big)     # left to the exact check
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not _clearly_full_rank(X * 1e160)                  # no overflow warning of its own


def test_treatment_factors_skip_the_scale_check_and_others_still_warn():
    d = _columns(60, seed=3).assign(x=lambda t: np.linspace(0.0, 1e5, len(t)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model_frame("y ~ g_str * g_bool + (1 | g_int)", d)
    with pytest.warns(NlpowerWarning, match="very different scales"):
        model_frame("y ~ g_str + x + (1 | g_int)", d)


@pytest.mark.parametrize("values", [[3, 1, 2, 3, 5], [-4, 10, 10, 7], np.arange(3000) % 9 - 4,
                                    np.array([7, 2, 255], dtype=np.uint8)])
def test_integer_scores_match_the_general_path(values):
    v = np.asarray(values)
    got = ordinal_response(v, "r", warn=False)
    ref = ordinal_response(pd.Series(v.astype(float)), "r", warn=False)   # the general path
    assert got.codes.tolist() == ref.codes.tolist() and got.codes.dtype == ref.codes.dtype
    assert (got.levels, got.unused, got.all_levels, got.scores) == \
        (ref.levels, ref.unused, ref.all_levels, ref.scores)


def test_integer_categoricals_keep_their_unused_categories():
    y = pd.Series(pd.Categorical([1, 3, 3, 1], categories=[1, 2, 3], ordered=True))
    with pytest.warns(NlpowerWarning, match="categories nobody used"):
        r = ordinal_response(y, "r")
    assert r.unused == ("2",) and r.levels == ("1", "3")


@pytest.mark.parametrize("formula", ["y ~ x + (1 | g)", "y ~ x + (1 + x | g)",
                                     "y ~ x + (1 | g) + (1 | h)", "y ~ x + (x || g) + (1 | h)"])
def test_re_structure_layout_matches_its_definition(formula):
    rng = np.random.default_rng(4)
    d = pd.DataFrame({"y": rng.normal(size=48), "x": rng.normal(size=48),
                      "g": np.repeat(list("abcdef"), 8), "h": np.tile(list("uvwx"), 12)})
    rs = ReStructure(model_frame(formula, d).re_terms)
    offsets = np.cumsum([0] + [b.L * b.q for b in rs.blocks])
    assert rs.offsets.dtype == offsets.dtype and np.array_equal(rs.offsets, offsets)
    assert rs.n_u == offsets[-1]
    acols = np.column_stack([(offsets[i] + b.codes * b.q)[:, None] + np.arange(b.q)[None, :]
                             for i, b in enumerate(rs.blocks)])
    assert rs.Acols.dtype == acols.dtype and np.array_equal(rs.Acols, acols)
    sizes = [t.q * (t.q + 1) // 2 for t in rs.terms]
    assert rs.theta_slices == tuple(slice(sum(sizes[:k]), sum(sizes[:k + 1]))
                                    for k in range(len(sizes)))
    for b in rs.blocks:
        z = np.column_stack([rs.terms[k].Z for k in b.terms])
        assert b.Z.flags.c_contiguous and np.array_equal(b.Z, z)
        assert not any(np.shares_memory(b.Z, rs.terms[k].Z) for k in b.terms)


def test_the_rows_fitted_come_from_a_snapshot_of_the_data():
    d = pd.read_csv(WINE)
    _, _, rows = ordinal_frame("rating ~ temp + contact + (1|judge)", d)
    from nlpower.ordinal.api import _frame_parts
    _, _, lazy = _frame_parts("rating ~ temp + contact + (1|judge)", d, None, True, None)
    d.loc[0, "temp"] = "hot"                     # edited after the frame was taken
    d.loc[1, "judge"] = 99
    got = lazy()
    assert got.equals(rows) and list(got.columns) == ["rating", "temp", "contact", "judge"]
    assert got.loc[0, "temp"] == "cold" and got.loc[1, "judge"] == 1


@pytest.mark.parametrize("labels", [["a", "b"], pd.Index(["a", None, "c"], dtype="str"), [1, "x"],
                                    pd.Index(["p", "q"], dtype=object),
                                    pd.Index(["u", "v"], dtype=pd.StringDtype("python"))])
def test_column_names_are_the_str_of_each_label(labels):
    from nlpower.lmm.frame import _column_names

    d = pd.DataFrame(np.zeros((1, len(labels))), columns=labels)
    assert _column_names(d) == [str(c) for c in d.columns]


def test_columns_read_without_pandas_private_accessor_give_the_same_frame(monkeypatch):
    """``_get_column_array`` is private pandas API: the public fallback gives the same model."""
    d = _columns(seed=3)
    formula = "y ~ g_str + g_cat + g_f + (1 | g_int) + (1 | g_nint) + (1 | g_bool)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        fast = model_frame(formula, d)
        monkeypatch.delattr(pd.DataFrame, "_get_column_array", raising=False)
        slow = model_frame(formula, d)
    np.testing.assert_array_equal(fast.X, slow.X)
    np.testing.assert_array_equal(fast.y, slow.y)
    assert fast.fixef_names == slow.fixef_names
    for a, b in zip(fast.re_terms, slow.re_terms, strict=True):
        np.testing.assert_array_equal(a.codes, b.codes)
        assert a.levels == b.levels


def test_a_model_frame_does_not_change_when_the_data_is_edited_later():
    d = _columns(seed=4)
    spec = model_frame("y ~ g_f + (1 | g_int)", d)
    X, y, codes = spec.X.copy(), spec.y.copy(), spec.re_terms[0].codes.copy()
    d.loc[0, "g_f"] = 99.0
    d.loc[1, "y"] = -99.0
    d.loc[2, "g_int"] = 5
    np.testing.assert_array_equal(spec.X, X)
    np.testing.assert_array_equal(spec.y, y)
    np.testing.assert_array_equal(spec.re_terms[0].codes, codes)
