"""``nlpower fit``: a thin edge over read_ratings + fit_ratings."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from nlpower.cli import main
from nlpower.ratings import fit_ratings, read_ratings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PILOT = FIXTURES / "pilot_ratings.csv"


@pytest.fixture(scope="module")
def lib_fit():
    return fit_ratings(read_ratings(PILOT, scale=(1, 5)), baseline="B")


def test_fit_prints_report_and_tables(capsys, lib_fit):
    assert main(["fit", str(PILOT), "--scale", "1", "5"]) == 0
    out = capsys.readouterr().out
    for piece in ("640 ratings by 8 workers of 40 items", "Table 13:", "Table 14:", "Table 15:",
                  "sigma0w", "beta1 (system[B]) = mean(B) - grand mean"):
        assert piece in out, piece
    # the printed beta1 is the library's (baseline A here, B in lib_fit: opposite sign)
    assert f"{-lib_fit.fixef['system[A]']:.3f}" in out


def test_fit_json_output_matches_library(tmp_path, capsys, lib_fit):
    out = tmp_path / "fit.json"
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--baseline", "B", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["baseline"] == "B" and d["systems"] == ["A", "B"]
    fit = lib_fit
    assert d["tables"]["Table 13"]["beta1"] == pytest.approx(fit.fixef["system[A]"], abs=1e-6)
    assert d["tables"]["Table 14"]["sigma1w"] == pytest.approx(fit.table()["sigma1w"].item(), abs=1e-6)
    assert d["report"]["n_ratings"] == 640
    assert f"wrote {out}" in capsys.readouterr().out


def test_fit_json_to_stdout_and_column_mapping(tmp_path, capsys):
    src = tmp_path / "r.tsv"
    text = PILOT.read_text().replace(",", "\t").replace("worker", "annotator").replace("rating", "score")
    src.write_text(text)
    assert main(["fit", str(src), "--worker", "annotator", "--rating", "score", "--scale", "1", "5",
                 "--json", "-"]) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)  # stdout holds only the JSON
    assert d["report"]["n_workers"] == 8
    assert "Table 13:" in cap.err


def test_fit_full_summary(capsys):
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--full", "--coding", "half"]) == 0
    out = capsys.readouterr().out
    assert "Random effects:" in out and "Identified quantities" in out


def test_fit_warnings_go_to_stderr(tmp_path, capsys):
    src = tmp_path / "r.csv"
    lines = PILOT.read_text().splitlines()
    lines[1] = lines[1].rsplit(",", 1)[0] + ","  # one missing rating
    src.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(src), "--scale", "1", "5"]) == 0
    err = capsys.readouterr().err
    assert "warning: read_ratings: dropped 1 row(s) with a missing rating" in err


def test_fit_errors_are_reported_with_exit_code_2(tmp_path, capsys):
    assert main(["fit", str(PILOT), "--worker", "rater"]) == 2
    err = capsys.readouterr().err
    assert "nlpower fit: error:" in err and "did you mean 'rating'" not in err
    # changed with issue 14: the CLI names the flag (was: "worker='rater'")
    assert "--worker 'rater'" in err and "worker='rater'" not in err
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--baseline", "Z"]) == 2
    assert "baseline 'Z' is not one of the systems" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "missing.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_fit_bad_choice_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(PILOT), "--duplicates", "drop"])
    assert exc.value.code == 2
    assert "invalid choice: 'drop'" in capsys.readouterr().err


def test_fit_engine_option_reaches_fit_ratings(capsys, monkeypatch):
    seen = []

    def spy(ratings, **kwargs):
        seen.append(kwargs["engine"])
        return fit_ratings(ratings, **{**kwargs, "engine": "native"})

    monkeypatch.setattr("nlpower.ratings.fit_ratings", spy)  # the CLI imports it when it runs
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--engine", "lme4"]) == 0
    assert seen == ["lme4"]
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(PILOT), "--engine", "stan"])
    assert exc.value.code == 2
    assert "invalid choice: 'stan'" in capsys.readouterr().err


# ----------------------------------------------------------------- issue 14
NESTED = FIXTURES / "nested_4sys_ratings.csv"


def test_fit_model_formula(capsys):
    formula = "rating ~ system + (1|worker) + (system||item)"
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--model", formula]) == 0
    out = capsys.readouterr().out
    assert f"Model: {formula} (ML)" in out
    assert "no per-system worker term" in out and "- : not in the fitted model" in out
    lib = fit_ratings(read_ratings(PILOT, scale=(1, 5)), model=formula)
    assert f"{lib.table()['sigma1i'].item():.3f}" in out


def test_fit_model_errors_point_at_the_flag(capsys):
    # the paper's model is too rich for the small nested fixture: the hint names --model
    assert main(["fit", str(NESTED), "--scale", "1", "5", "--model", "paper"]) == 2
    err = capsys.readouterr().err
    assert "simpler term" in err
    assert "--model 'auto'" in err and "pass a formula: --model 'rating ~ system +" in err
    assert "model=" not in err
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--model", "rating ~ system + (1|rater)"]) == 2
    err = capsys.readouterr().err
    assert "--model: unknown column 'rater'" in err and "E.g. --model 'rating ~ system" in err


def test_fit_brief_prints_the_singular_line(capsys):
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--model",
                 "rating ~ system + (1|worker) + (1|item)"]) == 0
    out = capsys.readouterr().out
    assert "note: singular fit (sigma0w at 0)" in out and "lower bound" in out


def test_fit_tables_print_rounded(capsys, lib_fit):
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--baseline", "B"]) == 0
    out = capsys.readouterr().out
    sigma = lib_fit.sigma
    assert f"{sigma:.3f}" in out and f"{sigma:.5f}" not in out


def test_fit_json_into_missing_directory_is_an_error(tmp_path, capsys):
    out = tmp_path / "no" / "such" / "fit.json"
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--json {str(out)!r}: the directory {str(out.parent)!r} does not exist" in err
    assert "Create it first" in err
    assert not out.parent.exists()  # nothing created


def test_fit_semicolon_file_gets_a_sep_hint(tmp_path, capsys):
    src = tmp_path / "r.csv"
    src.write_text(PILOT.read_text().replace(",", ";"))
    assert main(["fit", str(src), "--scale", "1", "5"]) == 2
    err = capsys.readouterr().err
    assert "looks semicolon-separated" in err and "pass --sep ';'" in err
    assert main(["fit", str(src), "--scale", "1", "5", "--sep", ";"]) == 0


def test_fit_tab_file_and_backslash_t(tmp_path, capsys):
    src = tmp_path / "r.csv"
    src.write_text(PILOT.read_text().replace(",", "\t"))
    assert main(["fit", str(src), "--scale", "1", "5"]) == 2
    assert "looks tab-separated" in capsys.readouterr().err
    assert main(["fit", str(src), "--scale", "1", "5", "--sep", "\\t"]) == 0   # typed '\t'
    capsys.readouterr()


def test_fit_warnings_name_flags(tmp_path, capsys):
    df = pd.read_csv(PILOT)
    df["rating"] = df["rating"] + 1  # 2..6: the lowest rating is not 0 or 1, the inferred scale warns
    src = tmp_path / "r.csv"
    df.to_csv(src, index=False)
    assert main(["fit", str(src)]) == 0
    err = capsys.readouterr().err
    assert "warning: read_ratings: Likert scale inferred" in err
    assert "pass --scale lo hi" in err and "scale=(" not in err
