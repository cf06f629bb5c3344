"""Findings of the outside-in check (``benchmarks/outside_in_ordinal.py``), kept fixed."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.ordinal import clmm


@pytest.fixture(scope="module")
def two_system_fit():  # type: ignore[no-untyped-def]
    g = np.random.default_rng(20)
    n = 600
    d = pd.DataFrame({"worker": g.integers(0, 30, n).astype(str),
                      "system": g.choice(["A", "B"], n)})
    lat = 0.8 * (d.system == "B") + g.normal(0, 1, 30)[d.worker.astype(int)] + g.logistic(size=n)
    d["rating"] = np.searchsorted([-1.0, 0.0, 1.0], lat) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clmm("rating ~ system + (1 | worker)", d)


@pytest.mark.parametrize("re", [True, False])
def test_predict_rejects_a_system_level_the_fit_has_not_seen(two_system_fit, re) -> None:  # type: ignore[no-untyped-def]
    # before: system "C" had no column and was predicted silently as the reference level "A"
    new = pd.DataFrame({"system": ["C", "A"], "worker": ["1", "2"]})
    with pytest.raises(InputError, match="'system'.*'C'"):
        two_system_fit.predict(new, type="prob", re_form=None if re else "NA")


def test_predict_of_fitted_levels_still_works(two_system_fit) -> None:  # type: ignore[no-untyped-def]
    new = pd.DataFrame({"system": pd.Categorical(["B", "A"]), "worker": ["1", "2"]})
    P = two_system_fit.predict(new, type="prob", re_form="NA").to_numpy()
    assert np.allclose(P.sum(axis=1), 1.0)
    # population level: system B shifts the latent mean by its coefficient
    lat = two_system_fit.predict(new, type="latent", re_form="NA").to_numpy()
    assert lat[0] - lat[1] == pytest.approx(float(two_system_fit.fixef["systemB"]))


@pytest.fixture(scope="module")
def intercepts_only():  # type: ignore[no-untyped-def]
    from nlpower import fit_ratings, read_ratings
    g = np.random.default_rng(21)
    rows = [(w, i, s) for w in range(25) for i in range(12) for s in ("A", "B")]
    d = pd.DataFrame(rows, columns=["worker", "item", "system"]).astype(str)
    lat = 0.5 * (d.system == "B") + g.normal(0, 1.5, 25)[d.worker.astype(int)] \
        + g.logistic(size=len(d))
    d["rating"] = np.searchsorted([-1.5, -0.5, 0.5, 1.5], lat) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_ratings(read_ratings(d, scale=(1, 5)), family="ordinal",
                           model="rating ~ system + (1 | worker) + (1 | item)")


def test_per_system_sds_outside_the_model_print_as_dash_not_zero(intercepts_only) -> None:  # type: ignore[no-untyped-def]
    # before: Tables 14-15 printed 0.0000, which reads as an SD estimated at zero
    text = intercepts_only.summary()
    t14 = text[text.index("Table 14 layout"):text.index("Table 15 layout")]
    assert "0.0000" not in t14 and "-" in t14.splitlines()[2]
    assert "not in the fitted model" in t14
    assert intercepts_only.tables()["Table 14"]["sigma1w"].iloc[0] == 0.0   # values stay numeric


def test_design_report_does_not_claim_ordinal_ratings_are_rescaled(intercepts_only) -> None:  # type: ignore[no-untyped-def]
    text = intercepts_only.summary()
    assert "rescaled to [0, 1]" not in text
    assert "fitted as ordered categories" in text and "not rescaled" in text


def test_nested_items_without_an_intercept_print_dash_for_sigma0i() -> None:
    from nlpower import fit_ratings, read_ratings
    g = np.random.default_rng(22)
    rows = [(f"w{w}", f"{s}_{i}", s) for s in ("A", "B") for i in range(15)
            for w in g.choice(20, 5, replace=False)]
    d = pd.DataFrame(rows, columns=["worker", "item", "system"])
    lat = g.normal(0, 1.5, 20)[d.worker.str[1:].astype(int)] + g.logistic(size=len(d))
    d["rating"] = np.searchsorted([-1.0, 0.0, 1.0], lat) + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_ratings(read_ratings(d, scale=(1, 4)), family="ordinal")
    assert "(1 | item)" not in fit.formula.replace("(1|item)", "(1 | item)")   # nested: no item intercept
    text = fit.summary()
    t15 = text[text.index("Table 15 layout"):].splitlines()
    assert t15[2].split()[0] == "-"          # sigma0i: not in the model
    assert t15[2].split()[1] != "-"          # sigma1i: estimated


def test_cli_single_category_error_reads_as_the_flag(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    # before: "fit_ratings(--family 'ordinal'): cannot fit ..." (a function call with a flag in it)
    from nlpower.cli import main
    rows = [(f"w{w}", f"i{i}", s, 4) for w in range(6) for i in range(5) for s in ("A", "B")]
    path = tmp_path / "one.csv"
    pd.DataFrame(rows, columns=["worker", "item", "system", "rating"]).to_csv(path, index=False)
    assert main(["fit", str(path), "--family", "ordinal", "--scale", "1,5"]) != 0
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "Traceback" not in err[0]
    assert "--family 'ordinal' cannot fit" in err[0] and "single used category" in err[0]


def test_duplicates_mean_non_integer_error_names_the_averaging() -> None:
    # before: "the file has non-integer values such as 4.5" -- the file had none
    from nlpower import fit_ratings, read_ratings
    from nlpower.errors import RatingsError
    rows = [(f"w{w}", f"i{i}", s, 1 + (w + i) % 5) for w in range(6) for i in range(5)
            for s in ("A", "B")]
    d = pd.DataFrame(rows, columns=["worker", "item", "system", "rating"])
    again = d.head(3).assign(rating=lambda x: np.where(x.rating < 5, x.rating + 1, 4))
    r = read_ratings(pd.concat([d, again], ignore_index=True), scale=(1, 5), duplicates="mean")
    with pytest.raises(RatingsError, match=r"averaging the 3 repeated .*duplicates='keep'"):
        fit_ratings(r, family="ordinal", model="rating ~ system + (1 | worker)")


@pytest.mark.parametrize("col", ["system", "worker"])
def test_predict_rejects_missing_values_instead_of_dropping_rows(two_system_fit, col) -> None:  # type: ignore[no-untyped-def]
    # before: the row was dropped, so the result had fewer rows than newdata (misaligned)
    new = pd.DataFrame({"system": ["B", "A"], "worker": ["1", "2"]})
    new.loc[1, col] = None
    with pytest.raises(InputError, match=rf"missing values in \['{col}'\]"):
        two_system_fit.predict(new, type="prob")


def test_refit_rejects_non_integer_codes_and_a_single_category(two_system_fit) -> None:  # type: ignore[no-untyped-def]
    n = two_system_fit.nobs
    # before: 1.5 was truncated to code 1, and one category "converged" at loglik 0 with
    # thresholds near +25
    with pytest.raises(InputError, match="integer category codes"):
        two_system_fit.refit(np.full(n, 1.5))
    with pytest.raises(InputError, match="single category"):
        two_system_fit.refit(np.zeros(n, dtype=int))
    y = np.asarray(two_system_fit.model.spec.y)            # float codes that are integers: fine
    assert two_system_fit.refit(y).loglik == pytest.approx(two_system_fit.loglik, abs=1e-6)
