"""``outcome=`` / ``analysis=`` through nlpower.power and ``nlpower power --outcome``."""

from __future__ import annotations

import json

import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.cli import main
from nlpower.errors import InputError
from nlpower.outcomes import LikertParams, likert_power
from nlpower.preference import power as preference_power


def test_power_with_outcome_likert_is_likert_power():
    d, p = CrossedDesign(5, 30), presets.high_variance(0.1)
    a = nlpower.power(d, p, outcome="likert", levels=5, n_sims=100, rng=3, null=True)
    b = likert_power(d, LikertParams.from_preset(p, 5), n_sims=100, rng=3, null=True)
    assert a.power == b.power and a.type1 == b.type1
    lp = LikertParams.from_preset(p, 5)
    c = nlpower.power(d, lp, outcome="likert", n_sims=100, rng=3, null=True)
    assert c.power == a.power


@pytest.mark.parametrize("kwargs,match", [
    ({"outcome": "likert"}, "levels=K"),
    ({"outcome": "binary", "levels": 5}, "outcome must be one of"),
    ({"outcome": "likert", "levels": 1}, "levels"),
    ({"outcome": "likert", "levels": 5, "method": "simulate"}, "does not take method"),
    ({"outcome": "likert", "levels": 5, "likert": 5}, "does not take likert"),
])
def test_outcome_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        nlpower.power(CrossedDesign(5, 30), presets.high_variance(0.1), n_sims=10, **kwargs)
    with pytest.raises(InputError, match="disagrees"):
        nlpower.power(CrossedDesign(5, 30), LikertParams(thresholds=[0.0]), outcome="likert",
                      levels=3)


def test_cli_preference(capsys, tmp_path):
    out = tmp_path / "p.json"
    assert main(["power", "--outcome", "preference", "--judges", "100", "--p-win", "0.65",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "power   0.8276" in text
    assert json.loads(out.read_text())["power"] == pytest.approx(preference_power(100, 0.65).power)


def test_cli_likert(capsys):
    assert main(["power", "--preset", "high-variance", "--workers", "5", "--items", "30",
                 "--effect", "0.1", "--outcome", "likert", "--levels", "5", "--n-sims", "50",
                 "--seed", "1"]) == 0
    assert "5-point ratings" in capsys.readouterr().out


@pytest.mark.parametrize("argv,msg", [
    (["power", "--outcome", "preference", "--judges", "10"], "--p-win"),
    (["power", "--preset", "high-variance", "--workers", "3"], "required: --items, --effect"),
    (["power", "--preset", "high-variance", "--workers", "3", "--items", "9", "--effect", "0.1",
      "--levels", "5"], "--levels is for --outcome likert"),
])
def test_cli_errors(argv, msg, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert msg in capsys.readouterr().err


def test_power_takes_one_analysis():
    with pytest.raises(InputError, match="one analysis"):
        nlpower.power(CrossedDesign(5, 30), presets.high_variance(0.1), outcome="likert",
                      levels=5, analysis=["lmm", "clmm"], n_sims=5)  # type: ignore[arg-type]
