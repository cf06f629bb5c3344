"""``nlpower fit``: a thin edge over read_ratings + fit_ratings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nlpower.cli.fit as cli_fit
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
                  "sigma0w", "beta1 = mean(B) - grand mean"):
        assert piece in out, piece
    # the printed beta1 is the library's (baseline A here, B in lib_fit: opposite sign)
    assert f"{-lib_fit.fixef['system1']:.3f}" in out


def test_fit_json_output_matches_library(tmp_path, capsys, lib_fit):
    out = tmp_path / "fit.json"
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--baseline", "B", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["baseline"] == "B" and d["systems"] == ["A", "B"]
    fit = lib_fit
    assert d["tables"]["Table 13"]["beta1"] == pytest.approx(fit.fixef["system1"], abs=1e-6)
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
    assert "worker='rater'" in err
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

    monkeypatch.setattr(cli_fit, "fit_ratings", spy)
    assert main(["fit", str(PILOT), "--scale", "1", "5", "--engine", "lme4"]) == 0
    assert seen == ["lme4"]
    with pytest.raises(SystemExit) as exc:
        main(["fit", str(PILOT), "--engine", "stan"])
    assert exc.value.code == 2
    assert "invalid choice: 'stan'" in capsys.readouterr().err
