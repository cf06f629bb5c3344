"""Files in the formats spreadsheets and scripts export, through the readers and verbs.

Each test is a file a new user could have: an Excel or Google-Sheets CSV
export (byte-order mark, CRLF, empty trailing columns, every field quoted,
decimal commas), a TSV or gzipped CSV, a column named like a flag, score
files with a missing or non-finite score, and two systems whose scores
differ by the same amount on every unit.  Before, some of these gave advice
that did not fit the file, a 0-based position, a numpy repr or a p-value of
1 for a perfectly consistent difference.
"""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest

from nlpower import read_ratings
from nlpower.cli import main
from nlpower.errors import InputError, RatingsError
from nlpower.paired import compare, read_scores

CROWD = ["--worker", "worker_id", "--item", "hit_item", "--system", "sys", "--scale", "1,5"]


def _crowd(ratings: list[float]) -> pd.DataFrame:
    """2 systems x 3 workers x 4 items, fully crossed."""
    rows = [(f"w{w}", f"i{i}", s) for w in range(3) for i in range(4) for s in ("old", "new")]
    df = pd.DataFrame(rows, columns=["worker_id", "hit_item", "sys"])
    df["rating"] = [ratings[k % len(ratings)] for k in range(len(df))]
    return df


def _excel(df: pd.DataFrame, decimal_comma: bool = False) -> bytes:
    """``df`` as a spreadsheet's "CSV UTF-8" export: BOM, CRLF, two empty trailing columns,
    every field quoted (``"4,5"`` for 4.5 when ``decimal_comma``)."""
    def cell(v: object) -> str:
        s = str(v)
        return '"' + (s.replace(".", ",") if decimal_comma and isinstance(v, float) else s) + '"'
    lines = [",".join([*(f'"{c}"' for c in df.columns), "", ""])]
    lines += [",".join([*(cell(v) for v in row), "", ""]) for row in df.itertuples(index=False)]
    return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8")


RATINGS = [4.5, 2.0, 3.5, 5.0, 1.0]


def test_a_comma_separated_file_with_decimal_commas_gets_a_recipe_for_its_own_delimiter(
        tmp_path, capsys):
    path = tmp_path / "sheet.csv"
    path.write_bytes(_excel(_crowd(RATINGS), decimal_comma=True))
    assert main(["fit", str(path), *CROWD]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err
    assert "delimiter=';'" not in err          # the file is comma-separated
    call = err.split("read it with ")[1].split(" and pass")[0]
    assert call == "pandas.read_csv(path, delimiter=',', decimal=',')"
    # the call, run as printed, reads the ratings as numbers
    df = eval(call, {"pandas": pd, "path": path})
    assert df["rating"].tolist() == _crowd(RATINGS)["rating"].tolist()


def test_a_data_frame_with_decimal_comma_strings_gets_a_recipe_for_a_data_frame():
    df = _crowd(RATINGS)
    df["rating"] = df["rating"].map(lambda v: str(v).replace(".", ","))
    with pytest.raises(RatingsError, match="decimal comma") as info:
        read_ratings(df, scale=(1, 5), worker="worker_id", item="hit_item", system="sys")
    message = str(info.value)
    assert "read_csv" not in message
    recipe = message.split("e.g. ")[1].split(" in pandas")[0]
    exec(recipe, {"df": df})
    assert df["rating"].tolist() == _crowd(RATINGS)["rating"].tolist()


@pytest.mark.parametrize("form", ["excel", "tsv", "gzip"])
def test_spreadsheet_tsv_and_gzip_exports_read_the_same_ratings(tmp_path, form):
    df = _crowd(RATINGS)
    plain = tmp_path / "plain.csv"
    df.to_csv(plain, index=False)
    if form == "excel":
        path = tmp_path / "sheet.csv"
        path.write_bytes(_excel(df))
    elif form == "tsv":
        path = tmp_path / "ratings.tsv"
        df.to_csv(path, sep="\t", index=False)
    else:
        path = tmp_path / "ratings.csv.gz"
        path.write_bytes(gzip.compress(df.to_csv(index=False).encode()))
    names = dict(worker="worker_id", item="hit_item", system="sys")
    want = read_ratings(plain, scale=(1, 5), **names).data
    got = read_ratings(path, scale=(1, 5), **names).data
    pd.testing.assert_frame_equal(got.reset_index(drop=True), want.reset_index(drop=True))


def test_a_column_named_like_a_flag_is_explained(tmp_path, capsys):
    path = tmp_path / "flags.csv"
    _crowd(RATINGS).rename(columns={"sys": "--system", "rating": "-r"}).to_csv(path, index=False)
    cols = ["--worker", "worker_id", "--item", "hit_item", "--scale", "1,5"]
    with pytest.raises(SystemExit):
        main(["fit", str(path), *cols, "--system", "--system", "--rating", "-r"])
    err = capsys.readouterr().err
    assert "argument --system: expected one argument" in err
    assert "write it after '=': --system=VALUE" in err
    # the advice, followed, reads the file
    assert main(["fit", str(path), *cols, "--system=--system", "--rating=-r"]) == 0


def test_a_missing_value_in_a_two_column_score_file_is_named_by_its_line(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("sysA,sysB\n0.5,0.4\n\n# a comment\n0.6,\n0.7,0.1\n")
    with pytest.raises(InputError) as info:
        read_scores(path)
    message = str(info.value)
    assert "column 'sysB' on line 5 is empty" in message
    assert "np.float64" not in message


@pytest.mark.parametrize("text, line, shown", [
    ("0.5\n0.6\nnan\n0.7\n", 3, "'nan'"),
    ("0.5\n\n0.6\ninf\n", 4, "'inf'"),
])
def test_a_non_finite_score_in_a_one_per_line_file_is_named_by_its_line(tmp_path, text, line,
                                                                          shown):
    path = tmp_path / "b.txt"
    path.write_text(text)
    other = tmp_path / "a.txt"
    other.write_text("0.1\n0.2\n0.3\n0.4\n")
    with pytest.raises(InputError, match=f"line {line} is {shown}, not a finite score"):
        read_scores(other, path)


def test_a_non_finite_score_in_a_two_column_file_is_named_by_its_line(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("x,y\n1,2\n3,inf\n4,5\n")
    with pytest.raises(InputError, match="column 'y' on line 3 is 'inf', not a finite number"):
        read_scores(path)


A = [0.61, 0.70, 0.55, 0.80, 0.66, 0.59]


def test_bootstrap_t_of_constant_differences_is_refused_not_reported_as_p_1():
    b = [x - 0.01 for x in A]
    with pytest.raises(InputError, match="test='bootstrap_t' is undefined here: every difference"):
        compare(A, b, test="bootstrap_t", rng=1)
    # the exact sign-flip test it names does run: all 2^6 flips, one-sided p = 1/64
    res = compare(A, b, test="permutation", alternative="greater", rng=1)
    assert res.pvalue == pytest.approx(1 / 64)


def test_compare_cli_names_the_flag_for_constant_differences(tmp_path, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(map(str, A)))
    b.write_text("\n".join(str(round(x - 0.01, 4)) for x in A))
    assert main(["compare", str(a), str(b), "--test", "bootstrap_t", "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert "--test 'bootstrap_t' is undefined here" in err and "Traceback" not in err


def test_crlf_score_files_read_as_unix_ones(tmp_path):
    unix, dos = tmp_path / "u.txt", tmp_path / "d.txt"
    unix.write_text("0.5\n0.25\n0.75\n")
    dos.write_bytes(b"\xef\xbb\xbf0.5\r\n0.25\r\n0.75\r\n")
    got = read_scores(dos, unix)
    np.testing.assert_array_equal(got.a, got.b)


@pytest.mark.parametrize("text, line, words", [
    ("name,p\nbooks,0.012\ndvd,\nkitchen,0.5\n", 3, "'dvd,', not a dataset name and a p-value"),
    ("0.01\n0.2\nx\n", 3, "'x', not a p-value"),
    ("books 0.01\n# comment\n0.2\n", 3, "'0.2', not a dataset name and a p-value"),
])
def test_a_p_value_file_names_the_line_that_is_wrong(tmp_path, capsys, text, line, words):
    path = tmp_path / "pvalues.csv"
    path.write_text(text)
    assert main(["replicability", "--file", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"line {line} is {words}" in err and "Traceback" not in err


def test_a_p_value_file_with_a_header_and_names_reads_as_on_the_command_line(tmp_path):
    from nlpower.partial_conjunction import parse_pvalues, read_pvalues

    path = tmp_path / "pvalues.csv"
    path.write_text("dataset,pvalue\r\nbooks,0.012\r\ndvd,0.003\r\n")
    assert read_pvalues(path) == parse_pvalues(["books=0.012", "dvd=0.003"])


def test_accuracy_estimate_names_an_empty_prediction_by_its_line_and_flag(tmp_path, capsys):
    path = tmp_path / "preds.csv"
    path.write_text("gold,old,new\npos,pos,neg\n\nneg,neg,neg\npos,,pos\nneg,pos,neg\n\n")
    assert main(["accuracy", "estimate", str(path), "--a", "old", "--b", "new",
                 "--labels", "gold"]) == 2
    err = capsys.readouterr().err
    assert "column 'old' (--a) is empty on line(s) 5 (the header is line 1)" in err
    assert "preds_a" not in err and "positions" not in err


def test_accuracy_estimate_reads_a_file_with_blank_lines_as_without(tmp_path, capsys):
    with_blanks, plain = tmp_path / "b.csv", tmp_path / "p.csv"
    with_blanks.write_text("gold,old,new\n1,1,0\n\n0,0,0\n1,1,1\n\n0,1,1\n")
    plain.write_text("gold,old,new\n1,1,0\n0,0,0\n1,1,1\n0,1,1\n")
    outs = []
    for path in (with_blanks, plain):
        assert main(["accuracy", "estimate", str(path), "--a", "old", "--b", "new",
                     "--labels", "gold"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "on 4 items" in outs[0]


@pytest.mark.parametrize("sep", ["\\t", "tab"])
def test_a_tab_typed_as_backslash_t_or_tab_reads_a_pilot_in_every_verb(tmp_path, capsys, sep):
    """``--sep '\\t'`` (what the error message advises) reached pandas as a two-character
    regex under --ratings (a pandas warning), and ``--sep tab`` as the word 'tab'."""
    path = tmp_path / "tabbed.csv"
    _crowd([1.0, 2.0, 4.0, 5.0, 3.0]).to_csv(path, sep="\t", index=False)
    assert main(["mde", "--ratings", str(path), *CROWD, "--sep", sep, "--workers", "5",
                 "--items", "50"]) == 0
    err = capsys.readouterr().err
    assert "python' engine" not in err and "Traceback" not in err


def test_bootstrap_power_of_the_wilcoxon_test_never_runs_a_permutation_test(monkeypatch):
    """Bootstrap resamples of few evaluation units are full of ties; scipy's 'auto' then ran
    a 2^n permutation test per row (minutes for ``compare --power bootstrap`` of 20 units).
    Rows are p-valued as R's wilcox.test does: exact without ties or zeros, else normal."""
    from scipy import stats

    from nlpower.paired import retrospective_power
    from nlpower.paired.power import _asymptotic, _wilcoxon_pvalues

    def refuse(*args, **kwargs):
        raise AssertionError("permutation test run")

    monkeypatch.setattr(stats, "permutation_test", refuse)
    d = np.random.default_rng(5).normal(0.01, 0.05, 20)
    curve = retrospective_power(d, sizes=[5, 10, 20], method="bootstrap", test="wilcoxon",
                                n_sims=200, rng=1)
    assert np.all((curve.power >= 0) & (curve.power <= 1))
    x = np.array([[0.1, 0.1, -0.2, 0.3, 0.4],       # tied
                  [0.1, 0.2, -0.3, 0.4, 0.5],       # no ties, no zeros: exact
                  [0.0, 0.2, -0.3, 0.4, 0.5]])      # a zero
    p = _wilcoxon_pvalues(x, "greater")
    assert p[0] == stats.wilcoxon(x[0], alternative="greater", method=_asymptotic()).pvalue
    assert p[1] == stats.wilcoxon(x[1], alternative="greater", method="exact").pvalue == 5 / 32  # W+ = 12
    assert p[2] == stats.wilcoxon(x[2], alternative="greater", method=_asymptotic()).pvalue


def test_accuracy_estimate_refuses_text_predictions_against_number_labels(tmp_path, capsys):
    """One 'unk' makes pandas read a prediction column as text: '1' != 1, so every item of
    that model counted as wrong, silently (delta +0.5 on this file instead of 0)."""
    from nlpower import accuracy

    with pytest.raises(InputError, match="must be of one kind"):
        accuracy.estimate(["1", "0", "1"], [1, 0, 1], [1, 1, 1])
    path = tmp_path / "preds.csv"
    path.write_text("gold,old,new\n1,1,1\n0,0,0\n1,unk,1\n0,0,0\n")
    assert main(["accuracy", "estimate", str(path), "--a", "old", "--b", "new",
                 "--labels", "gold"]) == 2
    err = capsys.readouterr().err
    assert "column 'old' (preds_a) text" in err and "column 'gold' (labels) number" in err
    # one kind throughout is compared as before
    same = accuracy.estimate(["1", "0", "x"], ["1", "0", "1"], ["1", "1", "1"])
    assert (same.only_new, same.only_old) == (1, 0)


def test_a_spreadsheet_score_file_reads_and_its_decimal_commas_are_named(tmp_path):
    sheet = tmp_path / "scores.csv"
    sheet.write_bytes(b'\xef\xbb\xbf"sysA","sysB",,\r\n"0.61","0.58",,\r\n"0.70","0.66",,\r\n')
    got = read_scores(sheet)
    assert got.names == ("sysA", "sysB") and got.a.tolist() == [0.61, 0.70]
    comma = tmp_path / "comma.csv"
    comma.write_bytes(b'"sysA","sysB"\r\n"0,61","0,58"\r\n"0,70","0,66"\r\n')
    with pytest.raises(InputError, match="on line 2 is '0,61'.*looks like a decimal comma"):
        read_scores(comma)
