"""``nlpower compare`` and ``nlpower replicability``: thin edges over the library."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from nlpower.cli import main
from nlpower.errors import InputError
from nlpower.paired import compare, pairwise, read_scores
from nlpower.partial_conjunction import replicability

GEN = np.random.default_rng(0)
B = GEN.uniform(0.2, 0.8, 90)
A = B + GEN.normal(0.04, 0.1, 90)
C = B + GEN.normal(0.0, 0.1, 90)


@pytest.fixture
def files(tmp_path):
    paths = {}
    for name, x in (("A", A), ("B", B), ("C", C)):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text("\n".join(repr(float(v)) for v in x) + "\n")
    paths["csv"] = tmp_path / "scores.csv"
    paths["csv"].write_text("id,sysA,sysB\n" + "".join(f"{i},{float(a)!r},{float(b)!r}\n"
                                                     for i, (a, b) in enumerate(zip(A, B, strict=True))))
    paths["pairs"] = tmp_path / "pairs.txt"
    paths["pairs"].write_text("".join(f"{float(a)!r} {float(b)!r}\n" for a, b in zip(A, B, strict=True)))
    return paths


def test_compare_two_files_matches_the_library(files, tmp_path, capsys):
    out_json = tmp_path / "res.json"
    assert main(["compare", str(files["A"]), str(files["B"]), "--eu-size", "3", "--test",
                 "wilcoxon", "--seed", "1", "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    expected = compare(A, B, eu_size=3, test="wilcoxon", rng=1, names=("A", "B"))
    assert f"p = {expected.pvalue:.4g}" in text
    assert "Report (what NLPStatTest says to report)" in text
    got = json.loads(out_json.read_text())
    assert got["pvalue"] == pytest.approx(expected.pvalue, rel=1e-12) and got["n"] == 30


def test_compare_one_csv_with_columns_and_plots(files, tmp_path, capsys):
    png, power_png = tmp_path / "h.png", tmp_path / "p.png"
    assert main(["compare", str(files["csv"]), "--columns", "sysA,sysB", "--test", "t",
                 "--power", "normal", "--n-sims", "100", "--seed", "2", "--plot", str(png),
                 "--power-plot", str(power_png)]) == 0
    text = capsys.readouterr().out
    assert f"p = {compare(A, B, test='t').pvalue:.4g}" in text
    assert "Power of the t test vs number of evaluation units" in text
    assert png.read_bytes()[:4] == b"\x89PNG" and power_png.read_bytes()[:4] == b"\x89PNG"


def test_compare_three_files_runs_pairwise(files, tmp_path, capsys):
    heat = tmp_path / "heat.png"
    assert main(["compare", str(files["A"]), str(files["B"]), str(files["C"]), "--test",
                 "wilcoxon", "--adjust", "bonferroni", "--plot", str(heat)]) == 0
    text = capsys.readouterr().out
    expected = pairwise({"A": A, "B": B, "C": C}, test="wilcoxon", adjust="bonferroni")
    assert "bonferroni adjustment over 3 pairs" in text
    assert f"{expected.pvalue_adjusted[0]:.4g}" in text
    assert heat.read_bytes()[:4] == b"\x89PNG"


def test_compare_errors_are_reported(files, tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("0.5\nabc\n")
    assert main(["compare", str(bad), str(files["B"])]) == 2
    assert "line 2 is 'abc', not one number" in capsys.readouterr().err
    assert main(["compare", str(files["A"]), str(files["B"]), "--power-plot", "x.png"]) == 2
    assert "--power-plot needs --power" in capsys.readouterr().err


def test_replicability_cli(tmp_path, capsys):
    assert main(["replicability", "0.012", "0.003", "0.047", "0.26", "0.009"]) == 0
    text = capsys.readouterr().out
    assert "at least k_hat = 3 of 5 datasets" in text
    f = tmp_path / "p.txt"
    f.write_text("books 0.001\ndvd 0.02\nkitchen 0.04\nmusic 0.3\n")
    assert main(["replicability", "--file", str(f), "--method", "fisher"]) == 0
    text = capsys.readouterr().out
    with pytest.warns(UserWarning):
        expected = replicability({"books": 0.001, "dvd": 0.02, "kitchen": 0.04, "music": 0.3},
                                 method="fisher")
    assert f"k_hat = {expected.k_hat} of 4" in text and "independent" in text
    assert main(["replicability"]) == 2
    assert "exactly one of them" in capsys.readouterr().err


# --- reading score files ------------------------------------------------------------------------


def test_read_scores_formats(files):
    two = read_scores(files["A"], files["B"])
    assert two.names == ("A", "B") and np.array_equal(two.a, A)
    csv = read_scores(files["csv"], columns=("sysA", "sysB"))
    assert csv.names == ("sysA", "sysB") and np.array_equal(csv.b, B)
    first_two = read_scores(files["csv"])                    # default: the first two columns
    assert first_two.names == ("id", "sysA")
    pairs = read_scores(files["pairs"])                      # NLPStatTest: a pair per line
    assert np.array_equal(pairs.a, A) and np.array_equal(pairs.b, B)


def test_read_scores_errors(files, tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_scores(tmp_path / "nope.txt", files["B"])
    with pytest.raises(InputError, match=r"column\(s\) \['sysZ'\] not found"):
        read_scores(files["csv"], columns=("sysA", "sysZ"))
    with pytest.raises(InputError, match="found 1 column, need two"):
        read_scores(files["A"])
    with pytest.raises(InputError, match="columns= selects two columns of one file"):
        read_scores(files["A"], files["B"], columns=("a", "b"))
    short = tmp_path / "short.txt"
    short.write_text("0.1\n0.2\n")
    with pytest.raises(InputError, match="got 90 scores in a and 2 in b"):
        read_scores(files["A"], short)
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(InputError, match="no scores found"):
        read_scores(empty, files["B"])
    text = tmp_path / "text.csv"
    text.write_text("a,b\n0.1,x\n")
    with pytest.raises(InputError, match="column 'b' on line 2 is 'x', not a finite number"):
        read_scores(text)


def test_more_input_errors(files, capsys):
    with pytest.raises(InputError, match=r"columns must name two columns \(system A, system B\)"):
        read_scores(files["csv"], columns=("sysA",))
    assert main(["compare", str(files["A"]), str(files["B"]), str(files["C"]),
                 "--columns", "a,b"]) == 2
    assert "--columns applies to a single two-column file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["compare", str(files["csv"]), "--columns", "onlyone"])
    assert "expected two column names like sysA,sysB; got 'onlyone'" in capsys.readouterr().err


def test_importing_paired_does_not_import_matplotlib():
    code = ("import sys, nlpower; nlpower.paired.compare; nlpower.replicability; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
