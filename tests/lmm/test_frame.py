"""Tests of nlpower.lmm.frame.model_frame: formula + data -> ModelSpec (all stages together)."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import FormulaError, InputError, NlpowerWarning
from nlpower.lmm.frame import Factor, model_frame
from nlpower.lmm.names import lme4_name
from nlpower.lmm.structure import ModelSpec


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    """A crossed worker x item x system layout with numeric and factor columns."""
    rng = np.random.default_rng(20201116)
    n_workers, n_items, systems = 12, 10, ["A", "B", "C"]
    rows = [(w, i, s) for w in range(n_workers) for i in range(n_items) for s in systems]
    d = pd.DataFrame(rows, columns=["worker", "item", "system"])
    d["worker"] = "w" + d["worker"].astype(str).str.zfill(2)
    d["item"] = d["item"] + 1  # numeric grouping column
    d["x"] = np.where(d["system"] == "A", 1.0, -1.0)
    d["z"] = rng.normal(size=len(d))
    d["half"] = np.repeat(["u", "v"], len(d) // 2)
    d["flag"] = rng.random(len(d)) < 0.5
    d["rating"] = rng.normal(size=len(d)) + d["x"]
    return d


def _quiet(formula: str, d: pd.DataFrame, **kw: object) -> ModelSpec:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return model_frame(formula, d, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# contrasts


@pytest.mark.parametrize(
    ("kind", "names", "rows"),
    [
        ("treatment", ("systemB", "systemC"), {"A": [0, 0], "B": [1, 0], "C": [0, 1]}),
        ("sum", ("system[A]", "system[B]"), {"A": [1, 0], "B": [0, 1], "C": [-1, -1]}),
        ("half", ("system[A]", "system[B]"), {"A": [0.5, 0], "B": [0, 0.5], "C": [-0.5, -0.5]}),
    ],
)
def test_fixed_contrasts(data: pd.DataFrame, kind: str, names: tuple[str, ...],
                         rows: dict[str, list[float]]) -> None:
    contrasts = None if kind == "treatment" else {"system": kind}
    spec = _quiet("rating ~ system", data, contrasts=contrasts)
    assert spec.fixef_names == ("(Intercept)", *names)
    assert spec.contrasts == {"system": kind}
    for level, expected in rows.items():
        sel = (data["system"] == level).to_numpy()
        np.testing.assert_array_equal(np.unique(spec.X[sel, 1:], axis=0), [expected])
    np.testing.assert_array_equal(spec.X[:, 0], 1.0)


def test_two_level_sum_first_level_positive(data: pd.DataFrame) -> None:
    d = data[data["system"] != "C"]
    spec = _quiet("rating ~ system", d, contrasts={"system": "sum"})
    assert spec.fixef_names == ("(Intercept)", "system[A]")
    assert spec.aliases == {"system1": "system[A]"}
    np.testing.assert_array_equal(spec.X[:, 1], np.where(d["system"] == "A", 1.0, -1.0))
    # the coefficient is half the difference of the two means (OLS on a balanced design)
    beta = np.linalg.lstsq(spec.X, spec.y, rcond=None)[0]
    diff = d.loc[d.system == "A", "rating"].mean() - d.loc[d.system == "B", "rating"].mean()
    assert beta[1] == pytest.approx(diff / 2)
    half = _quiet("rating ~ system", d, contrasts={"system": "half"})
    assert np.linalg.lstsq(half.X, half.y, rcond=None)[0][1] == pytest.approx(diff)


def test_categorical_order_sets_baseline(data: pd.DataFrame) -> None:
    d = data.copy()
    d["system"] = pd.Categorical(d["system"], categories=["C", "A", "B"])
    spec = _quiet("rating ~ system", d)
    assert spec.fixef_names == ("(Intercept)", "systemA", "systemB")
    np.testing.assert_array_equal(spec.X[(d.system == "C").to_numpy(), 1:], 0.0)


def test_unused_levels_are_dropped(data: pd.DataFrame) -> None:
    d = data[data["system"] != "B"].copy()
    d["system"] = pd.Categorical(d["system"], categories=["A", "B", "C"])
    spec = _quiet("rating ~ system + (1 | worker)", d)
    assert spec.fixef_names == ("(Intercept)", "systemC")


def test_bool_and_object_levels_like_r(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ flag + half", data)
    assert spec.fixef_names == ("(Intercept)", "flagTRUE", "halfv")
    np.testing.assert_array_equal(spec.X[:, 1], data["flag"].to_numpy(dtype=float))


def test_no_intercept_full_coding_and_interactions(data: pd.DataFrame) -> None:
    assert _quiet("rating ~ 0 + system", data).fixef_names == ("systemA", "systemB", "systemC")
    assert _quiet("rating ~ 0 + system + half", data).fixef_names == (
        "systemA", "systemB", "systemC", "halfv")
    # R: y ~ x + x:f -> x:fB, x:fC ; y ~ h + f:h -> hu:fB ... (first variable fastest)
    assert _quiet("rating ~ z + z:system", data).fixef_names == (
        "(Intercept)", "z", "z:systemB", "z:systemC")
    assert _quiet("rating ~ half + system:half", data).fixef_names == (
        "(Intercept)", "halfv", "halfu:systemB", "halfv:systemB", "halfu:systemC",
        "halfv:systemC")
    spec = _quiet("rating ~ system*z", data, contrasts={"system": "sum"})
    assert spec.fixef_names == ("(Intercept)", "system[A]", "system[B]", "z", "system[A]:z",
                                "system[B]:z")
    np.testing.assert_allclose(spec.X[:, 4], spec.X[:, 1] * data["z"].to_numpy())


# ---------------------------------------------------------------------------
# random terms


def test_random_intercepts_codes_and_levels(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ x + (1 | worker) + (1 | item)", data)
    w, i = spec.re_terms
    assert (w.group, w.cnames, w.n_levels, w.q) == ("worker", ("(Intercept)",), 12, 1)
    assert w.levels[:2] == ("w00", "w01")
    np.testing.assert_array_equal(np.asarray(w.levels)[w.codes], data["worker"].to_numpy())
    # a numeric grouping column becomes a factor with numerically sorted levels
    assert i.levels == tuple(str(k) for k in range(1, 11))
    np.testing.assert_array_equal(i.codes, data["item"].to_numpy() - 1)
    np.testing.assert_array_equal(w.Z, 1.0)
    assert w.codes.dtype.kind == "i"
    assert spec.fixef_names == ("(Intercept)", "x")
    assert spec.data_columns == ("rating", "x", "worker", "item")


def test_random_slope_numeric(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ x + (x | worker)", data)
    (t,) = spec.re_terms
    assert t.cnames == ("(Intercept)", "x")
    np.testing.assert_array_equal(t.Z[:, 1], data["x"].to_numpy())
    assert _quiet("rating ~ x + (0 + x | worker)", data).re_terms[0].cnames == ("x",)


def test_random_slope_factor_uses_contrasts_with_intercept(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ system + (1 + system | worker)", data)
    assert spec.re_terms[0].cnames == ("(Intercept)", "systemB", "systemC")
    spec = _quiet("rating ~ system + (system | worker)", data, contrasts={"system": "sum"})
    t = spec.re_terms[0]
    assert t.cnames == ("(Intercept)", "system[A]", "system[B]")
    np.testing.assert_array_equal(t.Z, spec.X)
    # without an intercept: full indicator coding
    t = _quiet("rating ~ system + (0 + system | worker)", data).re_terms[0]
    assert t.cnames == ("systemA", "systemB", "systemC")
    np.testing.assert_array_equal(t.Z, pd.get_dummies(data["system"]).to_numpy(dtype=float))


def test_double_bar_numeric(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ x + (x || worker)", data)
    assert [(t.group, t.cnames) for t in spec.re_terms] == [
        ("worker", ("(Intercept)",)), ("worker", ("x",))]
    np.testing.assert_array_equal(spec.re_terms[1].Z[:, 0], data["x"].to_numpy())


def test_double_bar_factor_is_lme4s_unstructured_indicator_block(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ system + (1 + z + system || worker)", data,
                  contrasts={"system": "sum"})
    assert [t.cnames for t in spec.re_terms] == [
        ("(Intercept)",), ("z",), ("systemA", "systemB", "systemC")]
    block = spec.re_terms[2]
    assert block.q == 3  # one unstructured 3 x 3 covariance, not three independent SDs
    np.testing.assert_array_equal(block.Z, pd.get_dummies(data["system"]).to_numpy(dtype=float))
    assert all(t.group == "worker" for t in spec.re_terms)
    assert spec.fixef_names == ("(Intercept)", "system[A]", "system[B]")


def test_grouping_interaction_and_nesting(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ 1 + (1 | worker:half) + (1 | half/worker)", data)
    a, b, c = spec.re_terms
    assert (a.group, b.group, c.group) == ("worker:half", "worker:half", "half")
    assert a.n_levels == len(data[["worker", "half"]].drop_duplicates()) == 12
    assert a.levels[0] == "w00:u"
    np.testing.assert_array_equal(a.codes, b.codes)
    labels = (data["worker"] + ":" + data["half"]).to_numpy()
    np.testing.assert_array_equal(np.asarray(a.levels)[a.codes], labels)
    assert list(a.levels) == sorted(set(labels))
    assert c.levels == ("u", "v")


def test_interaction_levels_first_factor_slowest() -> None:
    d = pd.DataFrame({"y": np.arange(8.0), "a": list("aabbaabb"), "b": list("xyxyxyxy")})
    d["y"] = d["y"] ** 2
    t = _quiet("y ~ (1 | b:a)", d).re_terms[0]
    assert t.levels == ("x:a", "x:b", "y:a", "y:b")


# ---------------------------------------------------------------------------
# missing values, rank deficiency


def test_missing_values_dropped_with_warning(data: pd.DataFrame) -> None:
    d = data.copy()
    d.loc[[0, 5], "rating"] = np.nan
    d.loc[[5, 7], "system"] = None
    d.loc[9, "worker"] = None
    d.loc[11, "unused"] = np.nan  # columns the formula does not use do not matter
    with pytest.warns(NlpowerWarning, match=r"dropped 4 of 360 rows with missing values "
                      r"\(missing per column: worker: 1, system: 2, rating: 2\)"):
        spec = model_frame("rating ~ system + (1 | worker)", d)
    assert spec.n == 356 and spec.n_dropped == 4
    keep = ~d.index.isin([0, 5, 7, 9])
    np.testing.assert_array_equal(spec.y, d.loc[keep, "rating"].to_numpy())
    assert len(spec.re_terms[0].codes) == 356
    assert spec.with_response(spec.y + 1).n_dropped == 4


def test_rank_deficient_columns_dropped(data: pd.DataFrame) -> None:
    d = data.copy()
    d["z2"] = 2 * d["z"]
    d["sysA"] = (d["system"] == "A").astype(float)
    with pytest.warns(NlpowerWarning, match=r"rank deficient so dropping 2 columns / "
                      r"coefficients: z2, sysA"):
        spec = model_frame("rating ~ z + z2 + system + sysA", d)
    assert spec.fixef_names == ("(Intercept)", "z", "systemB", "systemC")
    assert spec.dropped == ("z2", "sysA")
    # x (+1 for A, -1 otherwise) makes systemC aliased once x and systemB are in
    with pytest.warns(NlpowerWarning, match=r"dropping 1 column / coefficient: systemC\."):
        assert model_frame("rating ~ x + system", d).fixef_names == (
            "(Intercept)", "x", "systemB")
    assert np.linalg.matrix_rank(spec.X) == spec.p


# ---------------------------------------------------------------------------
# errors


def test_unknown_column_names_closest_and_points_at_it(data: pd.DataFrame) -> None:
    with pytest.raises(FormulaError) as exc:
        model_frame("rating ~ sytem + (1 | worker)", data)
    assert exc.value.position == 9
    assert "column 'sytem' is not in the data. Did you mean 'system'?" in str(exc.value)
    assert str(exc.value).splitlines()[-1] == "  " + " " * 9 + "^"
    with pytest.raises(FormulaError, match="column 'wrker' is not in the data. Did you mean "
                       "'worker'") as exc:
        model_frame("rating ~ system + (1 | wrker)", data)
    assert exc.value.position == 23
    with pytest.raises(FormulaError, match="column 'qqq' is not in the data. Available"):
        model_frame("qqq ~ system", data)


@pytest.mark.parametrize(
    ("make", "formula", "pattern"),
    [
        (lambda d: d.iloc[:0], "rating ~ x", "data has no rows"),
        (lambda d: d.assign(rating=d["system"]), "rating ~ x",
         "the response 'rating' must be numeric; got dtype (object|str)"),
        (lambda d: d.assign(rating=pd.Categorical(d["item"])), "rating ~ x",
         "the response 'rating' is a factor"),
        (lambda d: d.assign(rating=d["flag"]), "rating ~ x", "the response 'rating' is a factor"),
        (lambda d: d.assign(rating=3.0), "rating ~ x",
         "constant .3.0 in all 360 rows.: a mixed model cannot be fitted to a constant response"),
        (lambda d: d.assign(rating=np.where(d.index == 3, np.inf, 1.0)), "rating ~ x",
         "response column 'rating' has 1 infinite value.s. .first at row 3."),
        (lambda d: d.assign(z=np.where(d.index == 4, -np.inf, 1.0)), "rating ~ z",
         "predictor column 'z' has 1 infinite"),
        (lambda d: d.assign(rating=np.nan), "rating ~ x",
         "every row of data has a missing value"),
        (lambda d: d.assign(g="one"), "rating ~ x + (1 | g)",
         r"grouping factors must have > 1 sampled level: 'g' has 1 level \('one'\)"),
        (lambda d: d.assign(obs=np.arange(len(d))), "rating ~ x + (1 | obs)",
         "number of levels of each grouping factor must be < number of observations: 'obs' "
         "has 360 levels for 360 observations"),
        (lambda d: d, "rating ~ x + (1 + system | worker:item)",
         r"number of observations \(=360\) <= number of random effects \(=360\) for term "
         r"\(1 \+ system \| worker:item\)"),
        (lambda d: d.assign(one="k"), "rating ~ one", "factor 'one' has only 1 level"),
        (lambda d: d.assign(mixed=pd.Series([1 if k % 2 else "1" for k in range(len(d))],
                                            index=d.index, dtype=object)),
         "rating ~ mixed", "distinct values with the same text label"),
    ],
)
def test_input_errors(data: pd.DataFrame, make, formula: str, pattern: str) -> None:  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        with pytest.raises(InputError, match=pattern):
            model_frame(formula, make(data))


def test_argument_errors(data: pd.DataFrame) -> None:
    with pytest.raises(InputError, match="data must be a pandas DataFrame.*got dict"):
        model_frame("rating ~ x", {"rating": [1.0]})  # type: ignore[arg-type]
    with pytest.raises(InputError, match="contrasts must be a dict.*got 'sum'"):
        model_frame("rating ~ system", data, contrasts="sum")  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"contrasts\['system'\] must be one of 'treatment', "
                       "'sum', 'half'; got 'helmert'"):
        model_frame("rating ~ system", data, contrasts={"system": "helmert"})
    with pytest.raises(InputError, match="got 'Sum'. Did you mean 'sum'"):
        model_frame("rating ~ system", data, contrasts={"system": "Sum"})
    with pytest.raises(InputError, match="contrasts names 'sytem', which is not a column of the "
                       "data. Did you mean 'system'"):
        model_frame("rating ~ system", data, contrasts={"sytem": "sum"})
    with pytest.warns(NlpowerWarning, match=r"contrasts\['system'\] is ignored: column 'system' "
                      "is not a predictor"):
        spec = model_frame("rating ~ x + (1 | worker)", data, contrasts={"system": "sum"})
    assert spec.contrasts == {}
    with pytest.raises(InputError, match=r"contrasts\['x'\]: column 'x' is numeric"):
        model_frame("rating ~ x", data, contrasts={"x": "sum"})
    with pytest.raises(FormulaError, match="formula must be a string"):
        model_frame(None, data)  # type: ignore[arg-type]
    dup = pd.concat([data[["rating"]], data[["x", "x"]]], axis=1)
    with pytest.raises(InputError, match="more than one column named 'x'"):
        model_frame("rating ~ x", dup)


def test_spec_contract(data: pd.DataFrame) -> None:
    spec = _quiet("rating ~ system + (1 + x | worker) + (1 | item)", data,
                  contrasts={"system": "sum"})
    assert spec.formula == "rating ~ system + (1 + x | worker) + (1 | item)"
    assert spec.response == "rating"
    assert spec.X.shape == (360, 3) and spec.X.dtype == np.float64 and spec.X.flags.c_contiguous
    assert spec.y.shape == (360,)
    for t in spec.re_terms:
        assert t.Z.shape == (360, t.q) and t.Z.dtype == np.float64
        assert t.codes.shape == (360,) and t.codes.min() == 0 and t.codes.max() == t.n_levels - 1
    assert spec.n_dropped == 0 and spec.dropped == ()
    assert isinstance(Factor(np.zeros(2, dtype=int), ("a",)).n_levels, int)


# ---------------------------------------------------------------------------
# cross-check against R's model.matrix and lme4's lFormula

R_SCRIPT = r"""
suppressMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], stringsAsFactors = TRUE)
d$item <- factor(d$item)
forms <- readLines(args[2])
out <- list()
for (k in seq_along(forms)) {
  parts <- strsplit(forms[k], "\t")[[1]]
  if (parts[2] == "sum") contrasts(d$system) <- contr.sum(3) else contrasts(d$system) <- NULL
  lf <- suppressMessages(suppressWarnings(lFormula(as.formula(parts[1]), d)))
  re <- list()
  for (j in seq_along(lf$reTrms$cnms)) {
    zt <- as.matrix(lf$reTrms$Ztlist[[j]])
    re[[j]] <- list(group = names(lf$reTrms$cnms)[j], cnames = lf$reTrms$cnms[[j]],
                    levels = levels(lf$reTrms$flist[[names(lf$reTrms$cnms)[j]]]),
                    ztsum = sum(zt), ztsq = sum(zt^2), nrow = nrow(zt))
  }
  out[[k]] <- list(X = unname(lf$X), names = colnames(lf$X), re = re)
}
cat(jsonlite::toJSON(out, digits = NA, auto_unbox = FALSE))
"""

R_FORMULAS = [
    ("rating ~ system + (1 | worker) + (1 | item)", "treatment"),
    ("rating ~ system + (1 + system | worker) + (1 | item)", "sum"),
    ("rating ~ system + (1 + z + system || worker)", "sum"),
    ("rating ~ 0 + system + half + (x | worker)", "treatment"),
    ("rating ~ z*system + half:system + (0 + system | item)", "sum"),
    ("rating ~ z + z:system + (1 | half/worker)", "treatment"),
    ("rating ~ system:half + (1 | worker:half)", "treatment"),
    ("rating ~ (system + half + z)^2 - system:half + (z || item)", "sum"),
    # R's TermCode subtleties (sorted term order, no-intercept rule) and aliased columns
    ("rating ~ system:z + z + (1 | worker)", "treatment"),
    ("rating ~ 0 + z + z:system + (1 | worker)", "sum"),
    ("rating ~ 0 + z:system + half + (1 | worker)", "treatment"),
    ("rating ~ half:system + system + (0 + half | worker)", "sum"),
    ("rating ~ 0 + half:system + system:z + (1 | item)", "treatment"),
    ("rating ~ x + system + (1 | worker)", "treatment"),
]


@pytest.mark.requires_r
def test_matches_r_model_matrix_and_lformula(data: pd.DataFrame, tmp_path: Path) -> None:
    probe = subprocess.run(["Rscript", "-e", "cat(requireNamespace('jsonlite', quietly=TRUE))"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "TRUE":
        pytest.skip("R package jsonlite not installed")
    csv = tmp_path / "d.csv"
    d = data.drop(columns=["flag"])
    d.to_csv(csv, index=False)
    (tmp_path / "f.txt").write_text("\n".join(f"{f}\t{c}" for f, c in R_FORMULAS) + "\n")
    (tmp_path / "s.R").write_text(R_SCRIPT)
    proc = subprocess.run(["Rscript", "--vanilla", str(tmp_path / "s.R"), str(csv),
                           str(tmp_path / "f.txt")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    ref = json.loads(proc.stdout)
    for (formula, coding), r in zip(R_FORMULAS, ref, strict=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NlpowerWarning)
            spec = model_frame(formula, d, contrasts={"system": "sum"} if coding == "sum" else None)
        # R names sum-coded columns by position (system1); here by level (system[A])
        assert [lme4_name(c, spec.aliases) for c in spec.fixef_names] == r["names"], formula
        np.testing.assert_allclose(spec.X, np.asarray(r["X"], dtype=float).reshape(spec.X.shape),
                                   atol=1e-12, err_msg=formula)
        # lme4 sorts terms by number of levels; match them by (group, column names)
        ours = {(t.group, tuple(lme4_name(c, spec.aliases) for c in t.cnames)): t
                for t in spec.re_terms}
        assert len(ours) == len(r["re"]) == len(spec.re_terms), formula
        for rt in r["re"]:
            t = ours[(rt["group"][0], tuple(rt["cnames"]))]
            assert list(t.levels) == rt["levels"], (formula, t.group)
            assert t.q * t.n_levels == rt["nrow"][0]
            assert t.Z.sum() == pytest.approx(rt["ztsum"][0])
            assert (t.Z**2).sum() == pytest.approx(rt["ztsq"][0])


def test_nullable_and_string_dtypes(data: pd.DataFrame) -> None:
    d = data.copy()
    d["item"] = d["item"].astype("Int64")
    d.loc[2, "item"] = pd.NA
    d["system"] = d["system"].astype("string")
    d["flag"] = d["flag"].astype("boolean")
    d["rating"] = d["rating"].astype("Float64")
    with pytest.warns(NlpowerWarning, match="dropped 1 of 360 rows"):
        spec = model_frame("rating ~ system + flag + (1 | item)", d)
    assert spec.fixef_names == ("(Intercept)", "systemB", "systemC", "flagTRUE")
    assert spec.re_terms[0].levels == tuple(str(k) for k in range(1, 11))
    assert spec.y.dtype == np.float64 and spec.n == 359


def test_power_operator_and_column_names_with_spaces(data: pd.DataFrame) -> None:
    d = data.rename(columns={"z": "z score"})
    spec = _quiet("rating ~ (x + `z score` + half)^2 + (1 | worker)", d)
    assert spec.fixef_names == ("(Intercept)", "x", "z score", "halfv", "x:z score",
                                "x:halfv", "z score:halfv")


def test_unknown_column_caret_in_random_part(data: pd.DataFrame) -> None:
    formula = "rating ~ x + (1 + zz | worker)"
    with pytest.raises(FormulaError, match="column 'zz' is not in the data") as exc:
        model_frame(formula, data)
    assert exc.value.position == formula.index("zz")


@pytest.mark.slow
@pytest.mark.requires_r
def test_insteval_matches_lme4(tmp_path: Path) -> None:
    """73k rows: X column sums, names and grouping levels equal lme4's lFormula."""
    csv = tmp_path / "insteval.csv"
    script = (
        "suppressMessages(library(lme4)); d <- InstEval; "
        "d$studage <- factor(d$studage, ordered = FALSE); "
        "d$lectage <- factor(d$lectage, ordered = FALSE); "
        f"write.csv(d, '{csv}', row.names = FALSE); "
        "lf <- lFormula(y ~ service*dept + studage + lectage + (1|s) + (1|d) + (1|dept:service), d); "
        "cat(jsonlite::toJSON(list(names = colnames(lf$X), sums = unname(colSums(lf$X)), "
        "dept = levels(d$dept), nl = unname(sapply(lf$reTrms$flist, nlevels)), "
        "sd = head(levels(lf$reTrms$flist[['dept:service']]), 6)), digits = NA))"
    )
    proc = subprocess.run(["Rscript", "--vanilla", "-e", script], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    ref = json.loads(proc.stdout)
    d = pd.read_csv(csv)
    d["dept"] = pd.Categorical(d["dept"].astype(str), categories=ref["dept"])
    for c in ["service", "studage", "lectage"]:
        d[c] = pd.Categorical(d[c])
    spec = _quiet("y ~ service*dept + studage + lectage + (1|s) + (1|d) + (1|dept:service)", d)
    assert list(spec.fixef_names) == ref["names"]
    np.testing.assert_allclose(spec.X.sum(axis=0), ref["sums"])
    assert [t.n_levels for t in spec.re_terms] == ref["nl"]
    assert list(spec.re_terms[2].levels[:6]) == ref["sd"]


# ---------------------------------------------------------------------------
# properties

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _prop_data() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 240
    return pd.DataFrame({
        "y": rng.normal(size=n),
        "f": np.tile(["a", "b", "c"], n // 3),
        "h": np.repeat(["u", "v"], n // 2),
        "z": rng.normal(size=n),
        "g": np.tile(np.repeat([f"g{k}" for k in range(8)], 3), n // 24),
    })


_PROP = _prop_data()
# hierarchical terms only (every margin of a term is in the model): R's coding
# of non-hierarchical models such as y ~ 0 + f:z + f:h depends on the contrasts
# (see test_non_hierarchical_model_depends_on_contrasts_like_r)
_TERMS = ["f", "h", "z", "f*h", "f*z", "h*z", "f*h*z"]
_RANDOM_TERMS = ["(1 | g)", "(z | g)", "(1 + f || g)", "(0 + h | g)", "(1 | g:h)"]


@settings(max_examples=40, deadline=None)
@given(
    intercept=st.booleans(),
    terms=st.lists(st.sampled_from(_TERMS), min_size=1, max_size=4, unique=True),
    random=st.lists(st.sampled_from(_RANDOM_TERMS), max_size=2, unique=True),
    seed=st.integers(0, 2**16),
)
def test_property_contrasts_span_and_row_order(intercept: bool, terms: list[str],
                                               random: list[str], seed: int) -> None:
    formula = "y ~ " + ("" if intercept else "0 + ") + " + ".join(terms + random)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        treat = model_frame(formula, _PROP)
        summ = model_frame(formula, _PROP, contrasts={"f": "sum", "h": "half"})
        assert summ.contrasts == {v: {"f": "sum", "h": "half"}[v] for v in treat.contrasts}
        perm = np.random.default_rng(seed).permutation(len(_PROP))
        shuffled = model_frame(formula, _PROP.iloc[perm], contrasts={"f": "sum", "h": "half"})
    # X always has full column rank and unique names
    for spec in (treat, summ):
        assert np.linalg.matrix_rank(spec.X) == spec.p
        assert len(set(spec.fixef_names)) == spec.p
    # a change of contrasts re-parametrises the model: same column space
    assert treat.p == summ.p
    coef = np.linalg.lstsq(treat.X, summ.X, rcond=None)[0]
    np.testing.assert_allclose(treat.X @ coef, summ.X, atol=1e-8)
    # shuffling the rows shuffles X, y, Z and codes, nothing else
    assert shuffled.fixef_names == summ.fixef_names
    np.testing.assert_array_equal(shuffled.X, summ.X[perm])
    np.testing.assert_array_equal(shuffled.y, summ.y[perm])
    for a, b in zip(shuffled.re_terms, summ.re_terms, strict=True):
        assert (a.group, a.cnames, a.levels) == (b.group, b.cnames, b.levels)
        np.testing.assert_array_equal(a.codes, b.codes[perm])
        np.testing.assert_array_equal(a.Z, b.Z[perm])


def test_scale_warning_like_lme4(data: pd.DataFrame) -> None:
    d = data.assign(big=data["z"] * 1e4)
    with pytest.warns(NlpowerWarning, match="Some predictor variables are on very different "
                      "scales: consider rescaling .standard deviations of x, big range from"):
        model_frame("rating ~ x + big + half", d)
    with pytest.warns(NlpowerWarning, match="consider rescaling"):
        model_frame("rating ~ tiny", data.assign(tiny=data["z"] * 1e-4))
    _quiet("rating ~ x + z + half", data)  # well scaled, 0/1 columns ignored: no warning


def test_non_hierarchical_model_depends_on_contrasts_like_r() -> None:
    # R 4.2.2: model.matrix(y ~ 0 + f:z + f:h) has fa:hv, fb:hv, fc:hv -- h is coded by
    # contrasts because {f} is contained in the earlier term f:z -- so with
    # contr.sum(2)/2 for h the columns become f*(+-0.5): another column space.
    treat = _quiet("y ~ 0 + f:z + f:h", _PROP)
    half = _quiet("y ~ 0 + f:z + f:h", _PROP, contrasts={"h": "half"})
    assert treat.fixef_names == ("fa:z", "fb:z", "fc:z", "fa:hv", "fb:hv", "fc:hv")
    assert half.fixef_names == ("fa:z", "fb:z", "fc:z", "fa:h[u]", "fb:h[u]", "fc:h[u]")
    np.testing.assert_array_equal(half.X[:, 3:].sum(axis=1), np.where(_PROP.h == "u", 0.5, -0.5))


def test_accepts_parsed_formula(data: pd.DataFrame) -> None:
    from nlpower.formula import Formula, RandomTerm, Terms, parse

    f = parse("rating ~ system + (1 | worker)")
    a, b = _quiet(f, data), _quiet("rating ~ system + (1 | worker)", data)
    assert a.formula == b.formula and a.fixef_names == b.fixef_names
    np.testing.assert_array_equal(a.X, b.X)
    built = Formula("rating", Terms(True, (("system",),)), (RandomTerm(Terms(True, ()), ("worker",)),))
    assert _quiet(built, data).formula == "rating ~ system + (1 | worker)"
