"""The per-call shortcuts of small fits give the same answers as the general code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.columns import as_factor
from nlpower.lmm.frame import model_frame
from nlpower.ordinal.structure import ReStructure


@pytest.mark.parametrize("values", [
    [3, 1, 2, 3, 1, 7],
    [-2, 10, -2, 0],
    [True, False, True],
    ["warm", "cold", "cold", "b", "warm"],
    np.array(["z", "a", "m"], dtype=object),
])
def test_small_factor_matches_pandas_factorize(values):
    col = pd.Series(values, name="v")
    fac = as_factor(col)
    codes, uniques = pd.factorize(col.to_numpy(), sort=True)
    assert np.array_equal(fac.codes, codes)
    assert len(fac.levels) == len(uniques)
    assert fac.codes.dtype == np.intp


def test_mixed_object_column_keeps_the_general_path():
    fac = as_factor(pd.Series(["b", 1, "a", 1], dtype=object, name="v"))
    assert fac.levels == ("1", "a", "b")
    assert fac.codes.tolist() == [2, 0, 1, 0]


def test_lazy_sparse_A_is_built_on_demand_and_follows_theta():
    d = pd.DataFrame({"y": np.arange(12.0), "g": np.repeat(list("abcd"), 3),
                      "x": np.linspace(-1, 1, 12)})
    spec = model_frame("y ~ x + (1 + x | g)", d)
    rs = ReStructure(spec.re_terms)
    assert rs._A is None                      # nothing sparse until read
    theta = np.array([1.5, 0.3, 0.7])
    rs.set_theta(theta)
    assert rs._A is None
    u = np.linspace(-1, 1, rs.n_u)
    dense = rs.Avals
    expect = np.array([dense[i] @ u[rs.Acols[i]] for i in range(rs.n)])
    assert np.allclose(rs.eta(u), expect)
    A = rs.A
    assert rs.A is A                          # cached until theta changes
    assert np.allclose(rs.At(np.ones(rs.n)), A.toarray().sum(axis=0))
    q1 = rs.blocks[0].q
    assert np.allclose(rs.products.mzz[:, :q1 * q1], np.einsum("ij,ik->ijk", dense[:, :q1], dense[:, :q1]).reshape(rs.n, -1))
    rs.set_theta(2.0 * theta)
    assert rs.A is not A
    assert np.allclose(rs.A.toarray(), 2.0 * A.toarray())


def test_rows_fitted_are_taken_on_first_read_and_ignore_later_edits():
    import warnings

    import nlpower
    from nlpower.ordinal.api import ordinal_frame

    d = pd.read_csv(Path(__file__).parents[1] / "reference" / "data" / "wine.csv")
    d.loc[3, "temp"] = None                       # one row dropped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nlpower.clmm("rating ~ temp + contact + (1|judge)", d)
        _, _, frame = ordinal_frame("rating ~ temp + contact + (1|judge)", d)
    d.loc[0, "contact"] = "maybe"                 # an edit after the fit
    got = fit.model.data
    assert list(got.columns) == ["rating", "temp", "contact", "judge"]
    assert len(got) == 71 and got.index.equals(pd.RangeIndex(71))
    assert got.equals(frame)
    assert got.loc[0, "contact"] == "no"
    assert fit.model.data is got                  # taken once


@pytest.mark.parametrize("values", [np.arange(3000) % 7, np.array([2.5, np.nan, 1.0]),
                                    np.array([3, 1, 2], dtype=np.uint8)])
def test_as_numeric_and_large_int_factors_match_pandas(values):
    from nlpower.lmm.columns import as_numeric

    col = pd.Series(values, name="v")
    if np.isnan(values.astype(float)).any():
        assert np.array_equal(as_numeric(col.dropna(), "predictor"),
                              col.dropna().to_numpy(dtype=float))
    else:
        got = as_numeric(col, "predictor")
        assert got.dtype == float and np.array_equal(got, values.astype(float))
        assert not np.shares_memory(got, values)
        fac = as_factor(col)
        assert np.array_equal(fac.codes, pd.factorize(values, sort=True)[0])
