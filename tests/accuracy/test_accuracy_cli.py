"""``nlpower accuracy power | mde | estimate``: the CLI calls the library and prints it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from nlpower import accuracy
from nlpower.cli import main


def test_cli_power_prints_the_library_result(capsys, tmp_path):
    out = tmp_path / "p.json"
    assert main(["accuracy", "power", "--n", "500", "--delta", "0.02", "--agreement", "0.9",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert accuracy.power(500, 0.02, 0.9).summary() in text
    record = json.loads(out.read_text())
    assert record["power"] == pytest.approx(accuracy.power(500, 0.02, 0.9).power)


def test_cli_power_prior_and_bounds(capsys):
    assert main(["accuracy", "power", "--n", "900", "--delta", "0.02", "--agreement", "glue",
                 "--baseline", "0.9"]) == 0
    assert "(glue prior)" in capsys.readouterr().out
    assert main(["accuracy", "power", "--n", "500", "--delta", "0.02", "--baseline", "0.8",
                 "--bounds"]) == 0
    assert "minimal agreement 0.62" in capsys.readouterr().out


def test_cli_power_needs_agreement(capsys):
    assert main(["accuracy", "power", "--n", "500", "--delta", "0.02"]) == 2
    assert "--agreement is required" in capsys.readouterr().err
    assert main(["accuracy", "power", "--n", "500", "--delta", "0.02", "--bounds"]) == 2
    assert "--bounds needs --baseline" in capsys.readouterr().err


def test_cli_agreement_type_error(capsys):
    with pytest.raises(SystemExit):
        main(["accuracy", "power", "--n", "5", "--delta", "0.02", "--agreement", "mnli"])
    assert "expected a number in [0, 1] or one of glue, squad" in capsys.readouterr().err


def test_cli_mde_and_errors(capsys, tmp_path):
    out = tmp_path / "m.json"
    assert main(["accuracy", "mde", "--n", "1725", "--baseline", "0.92", "--test",
                 "two-proportion", "--json", str(out)]) == 0
    assert "2.401 points" in capsys.readouterr().out
    assert json.loads(out.read_text())["test"] == "two-proportion"
    assert main(["accuracy", "mde", "--n", "1725", "--baseline", "0.92", "--test",
                 "lachenbruch"]) == 2
    assert "needs bound=" in capsys.readouterr().err
    assert main(["accuracy", "mde", "--baseline", "0.92"]) == 2
    assert "--n is required" in capsys.readouterr().err


def test_cli_mde_table9(capsys):
    assert main(["accuracy", "mde", "--table9"]) == 0
    text = capsys.readouterr().out
    assert "Table 9" in text and "SQuAD 2.0" in text and "lachenbruch_upper_printed" in text


def test_cli_estimate(capsys, tmp_path):
    path = tmp_path / "preds.csv"
    pd.DataFrame({"old": [1] * 12 + [0] * 5 + [1] * 2 + [0], "new": [1] * 17 + [0] * 3,
                  "gold": [1] * 20}).to_csv(path, index=False)
    out = tmp_path / "e.json"
    assert main(["accuracy", "estimate", str(path), "--a", "old", "--b", "new", "--labels",
                 "gold", "--n-test", "1000", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "delta +0.1500" in text and "n 1000 paired items" in text
    assert json.loads(out.read_text())["only_new"] == 5
    assert main(["accuracy", "estimate", str(tmp_path / "nope.csv"), "--a", "x", "--b", "y",
                 "--labels", "z"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_cli_power_closed_forms(capsys):
    assert main(["accuracy", "power", "--n", "1725", "--delta", "0.024", "--baseline", "0.92",
                 "--test", "two-proportion"]) == 0
    out = capsys.readouterr().out
    assert accuracy.closed_form_power(1725, 0.024, baseline=0.92).summary() in out
    assert main(["accuracy", "power", "--n", "1725", "--delta", "0.024", "--baseline", "0.92",
                 "--test", "lachenbruch"]) == 2
    assert "needs bound=" in capsys.readouterr().err
