"""read_ratings and DesignReport: formats, rescaling, every user-facing error."""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import RatingsError
from nlpower.ratings import DesignReport, Ratings, RatingsWarning, read_ratings


def crossed(n_workers: int = 3, n_items: int = 4, systems=("A", "B"), seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(f"w{w}", f"i{i}", s, int(rng.integers(1, 6)))
            for w in range(n_workers) for i in range(n_items) for s in systems]
    df = pd.DataFrame(rows, columns=["worker", "item", "system", "rating"])
    # make sure both ends of the 1..5 scale occur, so the inferred scale is 1..5
    df.loc[0, "rating"] = 1
    df.loc[1, "rating"] = 5
    return df


# ---------------------------------------------------------------- happy paths
def test_rescaling_and_columns():
    df = crossed()
    r = read_ratings(df, scale=(1, 5))
    assert isinstance(r, Ratings)
    assert list(r.data.columns) == ["worker", "item", "system", "rating", "rating_raw"]
    np.testing.assert_allclose(r.data["rating"], (df["rating"] - 1) / 4)
    np.testing.assert_allclose(r.data["rating_raw"], df["rating"])
    assert r.scale == (1.0, 5.0) and not r.scale_inferred
    assert r.report.scale == (1.0, 5.0)
    assert isinstance(r.data["system"].dtype, pd.CategoricalDtype)
    assert "n_ratings=24" in repr(r)


def test_scale_given_wider_than_observed_uses_given():
    df = crossed()
    df["rating"] = df["rating"].clip(2, 4)
    r = read_ratings(df, scale=(1, 5))
    assert r.data["rating"].min() == pytest.approx(0.25)
    assert r.data["rating"].max() == pytest.approx(0.75)


def test_column_mapping():
    df = crossed().rename(columns={"worker": "annotator", "item": "prompt",
                                   "system": "model", "rating": "score"})
    r = read_ratings(df, worker="annotator", item="prompt", system="model", rating="score",
                     scale=(1, 5))
    assert r.report.n_workers == 3 and r.report.n_items == 4 and r.report.n_systems == 2


def test_system_levels_sorted_numerically():
    df = crossed(systems=(10, 2, 1))
    r = read_ratings(df, scale=(1, 5))
    assert r.systems == ("1", "2", "10")
    assert list(r.data["system"].cat.categories) == ["1", "2", "10"]


def test_inferred_scale_without_warning_for_regular_likert():
    df = crossed()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = read_ratings(df)
    assert r.scale == (1.0, 5.0) and r.scale_inferred
    assert "inferred" in r.report.summary()


@pytest.mark.parametrize("transform, expected", [
    (lambda s: s.clip(2, 5), "lowest rating is 2"),
    (lambda s: s + 0.5, "not whole numbers"),
    (lambda s: np.where(s > 3, 5, 1), "only two distinct"),
])
def test_inferred_scale_warns_when_odd(transform, expected):
    df = crossed()
    df["rating"] = transform(df["rating"])
    with pytest.warns(RatingsWarning, match=expected):
        r = read_ratings(df)
    assert r.scale_inferred
    assert any("doubtful" in n for n in r.report.notes)


def test_missing_ratings_dropped_with_count():
    df = crossed()
    df["rating"] = df["rating"].astype(object)
    df.loc[[3, 7], "rating"] = None
    df.loc[9, "rating"] = "  "
    with pytest.warns(RatingsWarning, match=r"dropped 3 row\(s\).*3, 7, 9"):
        r = read_ratings(df, scale=(1, 5))
    assert r.n_dropped == 3 and r.report.n_dropped == 3
    assert r.report.n_ratings == len(df) - 3
    assert "rows dropped (missing rating): 3" in r.report.summary()


def test_numeric_strings_accepted():
    df = crossed()
    df["rating"] = df["rating"].astype(str)
    r = read_ratings(df, scale=(1, 5))
    assert r.data["rating_raw"].dtype == float


@pytest.mark.parametrize("ext", [".csv", ".tsv", ".csv.gz", ".json", ".jsonl", ".parquet",
                                 ".tsv.gz", ".jsonl.gz"])
def test_file_formats_round_trip(tmp_path, ext):
    df = crossed()
    path = tmp_path / f"ratings{ext}"
    base = ext.removesuffix(".gz")
    comp = "gzip" if ext.endswith(".gz") else None
    if base == ".csv":
        df.to_csv(path, index=False, compression=comp)
    elif base == ".tsv":
        df.to_csv(path, index=False, sep="\t", compression=comp)
    elif base == ".json":
        df.to_json(path, orient="records", compression=comp)
    elif base == ".jsonl":
        df.to_json(path, orient="records", lines=True, compression=comp)
    else:
        df.to_parquet(path)
    r = read_ratings(path, scale=(1, 5))
    assert r.report.n_ratings == len(df)
    assert r.report.source == str(path)
    np.testing.assert_allclose(np.sort(r.data["rating_raw"]), np.sort(df["rating"]))


def test_custom_separator(tmp_path):
    path = tmp_path / "r.csv"
    crossed().to_csv(path, index=False, sep=";")
    r = read_ratings(path, sep=";", scale=(1, 5))
    assert r.report.n_ratings == 24


# ---------------------------------------------------------------- the report
def test_report_counts_paired_crossed():
    rep = read_ratings(crossed(3, 4), scale=(1, 5)).report
    assert isinstance(rep, DesignReport)
    assert (rep.n_workers, rep.n_items, rep.n_systems, rep.n_ratings) == (3, 4, 2, 24)
    assert rep.ratings_per_item == (6, 6.0, 6)
    assert rep.ratings_per_worker == (8, 8.0, 8)
    assert rep.item_layout == "paired" and rep.worker_layout == "paired"
    assert rep.fully_crossed and rep.connected and rep.n_components == 1
    assert rep.ratings_per_system == {"A": 12, "B": 12}
    d = rep.to_dict()
    assert d["ratings_per_item"] == {"min": 6, "median": 6.0, "max": 6}
    assert rep.to_frame().shape[0] == 1
    assert "DesignReport(" in repr(rep)


def test_report_nested_and_mixed_and_disconnected():
    # nested: items i0..i3 only under A, i4..i7 only under B; workers see both
    rows = [(f"w{w}", f"i{i}", "A" if i < 4 else "B", 1 + (w + i) % 5)
            for w in range(3) for i in range(8)]
    df = pd.DataFrame(rows, columns=["worker", "item", "system", "rating"])
    rep = read_ratings(df, scale=(1, 5)).report
    assert rep.item_layout == "nested" and rep.n_items_paired == 0
    assert not rep.fully_crossed
    assert any("identified per system only" in n for n in rep.notes)

    # mixed: one extra item rated under both systems
    extra = pd.DataFrame([("w0", "i0", "B", 3)], columns=df.columns)
    rep = read_ratings(pd.concat([df, extra]), scale=(1, 5)).report
    assert rep.item_layout == "mixed" and rep.n_items_paired == 1
    assert "mixed (1 of 8 items" in rep.summary()

    # disconnected: workers w0,w1 rate items i0,i1; workers w2,w3 rate i2,i3
    rows = [(f"w{w}", f"i{i}", s, 1 + (w * i) % 5) for w in range(4) for i in range(4)
            for s in "AB" if (w < 2) == (i < 2)]
    rep = read_ratings(pd.DataFrame(rows, columns=df.columns), scale=(1, 5)).report
    assert not rep.connected and rep.n_components == 2
    assert "NOT connected (2 components)" in rep.summary()


def test_duplicates_keep_and_mean():
    df = crossed()
    dup = df.iloc[[0, 0, 5]].copy()
    dup["rating"] = [3, 5, 2]
    both = pd.concat([df, dup], ignore_index=True)
    keep = read_ratings(both, scale=(1, 5), duplicates="keep")
    assert keep.report.n_ratings == len(both)
    assert keep.report.n_duplicate_groups == 2 and keep.report.n_duplicate_rows == 3
    assert "policy 'keep'" in keep.report.summary()
    mean = read_ratings(both, scale=(1, 5), duplicates="mean")
    assert mean.report.n_ratings == len(df)
    row = mean.data[(mean.data.worker == df.worker[0]) & (mean.data.item == df.item[0])
                    & (mean.data.system == df.system[0])]
    assert row["rating_raw"].item() == pytest.approx((df.rating[0] + 3 + 5) / 3)
    assert row["rating"].item() == pytest.approx(((df.rating[0] + 3 + 5) / 3 - 1) / 4)


# ---------------------------------------------------------------- errors
def test_error_missing_column_suggests_closest():
    df = crossed().rename(columns={"worker": "workers"})
    with pytest.raises(RatingsError, match=r"worker='worker' \(did you mean 'workers'\? pass worker='workers'\)"):
        read_ratings(df, scale=(1, 5))


def test_error_misspelled_argument_lists_available():
    with pytest.raises(RatingsError, match=r"rating='score'.*Available columns: 'worker', 'item'"):
        read_ratings(crossed(), rating="score", scale=(1, 5))


def test_error_same_column_twice():
    with pytest.raises(RatingsError, match="four different columns"):
        read_ratings(crossed(), item="worker")


def test_error_column_argument_not_str():
    with pytest.raises(RatingsError, match="worker must be a column name"):
        read_ratings(crossed(), worker=3)  # type: ignore[arg-type]


def test_error_non_numeric_ratings_show_values_and_rows():
    df = crossed()
    df["rating"] = df["rating"].astype(object)
    df.loc[2, "rating"] = "good"
    df.loc[11, "rating"] = "4 stars"
    with pytest.raises(RatingsError, match=r"2 non-numeric or infinite value\(s\) \(row 2: 'good', row 11: '4 stars'"):
        read_ratings(df, scale=(1, 5))


def test_error_boolean_ratings():
    df = crossed()
    df["rating"] = df["rating"] > 2
    with pytest.raises(RatingsError, match="booleans"):
        read_ratings(df)
    df["rating"] = df["rating"].astype(object)
    df.loc[0, "rating"] = 3
    with pytest.raises(RatingsError, match="non-numeric"):
        read_ratings(df)


def test_error_infinite_rating():
    df = crossed().astype({"rating": float})
    df.loc[4, "rating"] = np.inf
    with pytest.raises(RatingsError, match="row 4: inf"):
        read_ratings(df)


def test_error_out_of_scale():
    df = crossed()
    df.loc[6, "rating"] = 7
    with pytest.raises(RatingsError, match=r"1 value\(s\) outside scale=\(1.0, 5.0\) \(row 6: 7; observed range 1..7\)"):
        read_ratings(df, scale=(1, 5))


@pytest.mark.parametrize("scale", [(5, 1), (1,), "1-5", (1, np.nan), (2, 2)])
def test_error_bad_scale_argument(scale):
    with pytest.raises(RatingsError, match="scale must be a pair"):
        read_ratings(crossed(), scale=scale)


def test_error_bad_duplicates_argument():
    with pytest.raises(RatingsError, match="duplicates must be one of 'error', 'keep', 'mean'; got 'drop'"):
        read_ratings(crossed(), duplicates="drop")


def test_error_duplicates_reports_count_and_example():
    df = crossed()
    both = pd.concat([df, df.iloc[[0]].assign(rating=4)], ignore_index=True)
    with pytest.raises(RatingsError, match=r"1 \(worker, item, system\) combination\(s\) are rated more than once "
                                           r"\(1 surplus rows\); e.g. worker 'w0', item 'i0', system 'A' at "
                                           r"rows 0, 24 with ratings 1, 4 \(rows by the data frame's index\)\. "
                                           r"Pass duplicates='keep'"):
        read_ratings(both, scale=(1, 5))


def test_error_empty_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(RatingsError, match="is empty"):
        read_ratings(path)


def test_error_header_only_file(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("worker,item,system,rating\n")
    with pytest.raises(RatingsError, match=r"has no rows \(only a header: 'worker', 'item'"):
        read_ratings(path)


def test_error_empty_dataframe():
    with pytest.raises(RatingsError, match="the data frame has no rows"):
        read_ratings(crossed().iloc[:0])


def test_error_all_ratings_missing():
    df = crossed().astype({"rating": float})
    df["rating"] = np.nan
    with pytest.warns(RatingsWarning), pytest.raises(RatingsError, match="no non-missing value"):
        read_ratings(df)


def test_error_all_ratings_equal_without_scale():
    df = crossed()
    df["rating"] = 3
    with pytest.raises(RatingsError, match="every rating equals 3.*Pass scale"):
        read_ratings(df)


def test_error_missing_identifier():
    df = crossed().astype({"item": object})
    df.loc[5, "item"] = None
    with pytest.raises(RatingsError, match=r"item column 'item' has 1 missing value\(s\) at row 5 \(rows by the data frame's index\)"):
        read_ratings(df, scale=(1, 5))


@pytest.mark.parametrize("col, kwargs, match", [
    ("worker", dict(n_workers=1), "worker column 'worker' has a single value \\('w0'\\); at least 2 workers"),
    ("item", dict(n_items=1), "item column 'item' has a single value \\('i0'\\); at least 2 items"),
    ("system", dict(systems=("A",)), "system column 'system' has a single value \\('A'\\); at least 2 systems"),
])
def test_error_single_level(col, kwargs, match):
    with pytest.raises(RatingsError, match=match):
        read_ratings(crossed(**kwargs), scale=(1, 5))


def test_error_unknown_extension(tmp_path):
    path = tmp_path / "ratings.xlsx"
    path.write_text("x")
    with pytest.raises(RatingsError, match=r"extension '.xlsx'. Allowed extensions: .csv"):
        read_ratings(path)


def test_error_gzipped_parquet(tmp_path):
    path = tmp_path / "ratings.parquet.gz"
    path.write_bytes(b"x")
    with pytest.raises(RatingsError, match="gzipped Parquet"):
        read_ratings(path)


def test_error_file_does_not_exist(tmp_path):
    with pytest.raises(RatingsError, match="does not exist"):
        read_ratings(tmp_path / "nope.csv")


def test_error_directory(tmp_path):
    d = tmp_path / "dir.csv"
    d.mkdir()
    with pytest.raises(RatingsError, match="is a directory"):
        read_ratings(d)


@pytest.mark.parametrize("name, content, match", [
    ("bad.parquet", b"this is not parquet", "could not read"),
    ("bad.csv.gz", b"not gzip data", "is not a complete gzip archive"),
    ("bad.json", b"{not json", "could not read"),
])
def test_error_unreadable_file(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(RatingsError, match=match):
        read_ratings(path)


def test_error_unreadable_gzip_text_is_reported(tmp_path):
    # a valid gzip of invalid UTF-8 bytes
    path = tmp_path / "latin.csv.gz"
    with gzip.open(path, "wb") as fh:
        fh.write(b"worker,item,system,rating\n\xff\xfe,1,A,3\n")
    with pytest.raises(RatingsError, match=r"is not UTF-8 text.*pass encoding='latin-1'"):
        read_ratings(path)


def test_error_source_type():
    with pytest.raises(RatingsError, match="source must be a file path or a pandas DataFrame; got list"):
        read_ratings([1, 2, 3])  # type: ignore[arg-type]


def test_error_system_labels_collide():
    df = crossed(systems=(1, "1"))
    with pytest.raises(RatingsError, match="coincide as text"):
        read_ratings(df, scale=(1, 5))


@pytest.mark.parametrize("sep, name, kind", [(";", "r.csv", "semicolon"), ("\t", "r.csv", "tab"),
                                             ("|", "r.csv", "pipe"), (";", "r.tsv", "semicolon"),
                                             (";", "r.csv.gz", "semicolon")])
def test_error_wrong_separator_suggests_sep(tmp_path, sep, name, kind):
    path = tmp_path / name
    crossed().to_csv(path, index=False, sep=sep)
    with pytest.raises(RatingsError) as exc:
        read_ratings(path, scale=(1, 5))
    msg = str(exc.value)
    assert f"looks {kind}-separated" in msg
    assert f"pass sep={sep!r}" in msg
    assert "worker" in msg  # the header line is shown
    assert read_ratings(path, scale=(1, 5), sep=sep).report.n_ratings == 24  # and the hint works


def test_error_wrong_separator_with_decimal_commas(tmp_path):
    # '3,5' ratings make the comma reader fail outright; the header still tells
    path = tmp_path / "r.csv"
    path.write_text("worker;item;system;rating\nw1;i1;A;3,5\nw1,x;i1;B;2\n")
    with pytest.raises(RatingsError, match=r"looks semicolon-separated.*pass sep=';'"):
        read_ratings(path)


def test_no_separator_hint_for_a_misnamed_column(tmp_path):
    path = tmp_path / "r.csv"
    crossed().rename(columns={"worker": "annotator;id"}).to_csv(path, index=False)
    with pytest.raises(RatingsError) as exc:
        read_ratings(path, scale=(1, 5))
    assert "separated" not in str(exc.value) and "Available columns" in str(exc.value)


# --- rows named as an editor shows them; one outlier never sets the scale (issue 23, items 3, 10)


def _write_csv(tmp_path, df, name="r.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def test_file_rows_are_editor_line_numbers(tmp_path):
    """Data row 5 of a CSV file is line 7 in an editor (the header is line 1)."""
    df = crossed().astype({"item": object})
    df.loc[5, "item"] = None
    with pytest.raises(RatingsError, match=r"at line 7 \(line numbers as an editor shows them; "
                                           r"the header is line 1\)"):
        read_ratings(_write_csv(tmp_path, df), scale=(1, 5))


def test_blank_lines_do_not_shift_line_numbers(tmp_path):
    df = crossed().astype({"rating": object})
    df.loc[3, "rating"] = "good"
    path = _write_csv(tmp_path, df)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2] + [""] + lines[2:]) + "\n")  # a blank line 3
    with pytest.raises(RatingsError, match=r"\(line 6: 'good'\)"):
        read_ratings(path, scale=(1, 5))


def test_json_lines_count_from_one(tmp_path):
    df = crossed().astype({"rating": float})
    df.loc[4, "rating"] = 9.0
    path = tmp_path / "r.jsonl"
    df.to_json(path, orient="records", lines=True)
    with pytest.raises(RatingsError, match=r"line 5: 9;"):
        read_ratings(path, scale=(1, 5))


def test_one_outlier_never_sets_the_inferred_scale(tmp_path):
    """Issue 23 item 3: a 1e308 among 1-5 ratings rescaled everything to ~1e-308."""
    df = crossed().astype({"rating": float})
    df.loc[6, "rating"] = 1e90
    with pytest.raises(RatingsError, match=r"the highest rating, 1e\+90 \(line 8\), lies far "
                                           r"outside all the others \(1\.\.5\).*pass scale="):
        read_ratings(_write_csv(tmp_path, df))
    df.loc[6, "rating"] = -400.0
    with pytest.raises(RatingsError, match=r"the lowest rating, -400 \(row 6\)"):
        read_ratings(df)
    read_ratings(df, scale=(-400, 5))  # a real value with its scale passed is fine


def test_ratings_too_large_to_compute_with_are_refused():
    df = crossed().astype({"rating": float})
    df.loc[2, "rating"] = 1e308
    with pytest.raises(RatingsError, match=r"1 value\(s\) too large to compute with \(row 2: 1e\+308\)"):
        read_ratings(df, scale="identity")


def test_far_outlier_refused_but_an_even_spread_accepted():
    df = crossed()
    df["rating"] = np.where(df["rating"] > 3, 100, df["rating"])  # 1, 2, 3, 100: a 0-100 slider?
    with pytest.raises(RatingsError, match="lies far outside"):
        read_ratings(df)
    df["rating"] = crossed()["rating"] * 20  # 20..100: evenly spread
    with pytest.warns(RatingsWarning, match="lowest rating is 20"):
        assert read_ratings(df).scale == (20.0, 100.0)


def test_stages_can_be_called_alone():
    from nlpower.ratings.files import Origin
    from nlpower.ratings.io import check_identifiers, parse_ratings, select_columns
    names = {"worker": "worker", "item": "item", "system": "system", "rating": "rating"}
    origin = Origin("<DataFrame>", "frame")
    df = select_columns(crossed(), names, origin)
    assert list(df.columns) == ["worker", "item", "system", "rating_raw"]
    check_identifiers(df, names, origin)
    parsed, dropped = parse_ratings(df, "rating", origin)
    assert dropped == 0 and parsed["rating_raw"].dtype == float
    assert Origin("a.csv", "csv").rows([0, 1, 2]) == "lines 2, 3, 4"
    assert Origin("a.json", "json").where(0) == "record 1"
