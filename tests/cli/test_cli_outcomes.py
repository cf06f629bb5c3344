"""``--outcome`` / ``--levels`` / ``--analysis`` of ``nlpower power``, ``grid`` and ``mde``.

Each command's numbers equal the library call it stands for (the CLI holds no statistics).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.cli import build_parser, main
from nlpower.cli.messages import cli_flags, speak_cli
from nlpower.cli.outcome_args import ANALYSES, FOR, OUTCOMES, READS
from nlpower.grid import cell_seed
from nlpower.outcomes import HeadToHeadParams
from nlpower.powersim.outcome import OUTCOMES as REGISTRY
from nlpower.preference import power as preference_power


def test_flags_name_what_the_registry_has():
    assert OUTCOMES == tuple(REGISTRY)
    assert set(ANALYSES) == {a for kind in REGISTRY.values() for a in kind.analyses}


def test_power_preference_one_judgement(capsys, tmp_path):
    out = tmp_path / "p.json"
    assert main(["power", "--outcome", "preference", "--judges", "100", "--p-win", "0.65",
                 "--json", str(out)]) == 0
    assert "power   0.8276" in capsys.readouterr().out
    assert json.loads(out.read_text())["power"] == pytest.approx(preference_power(100, 0.65).power)


def test_power_likert_is_the_library_call(tmp_path):
    out = tmp_path / "l.json"
    assert main(["power", "--preset", "high-variance", "--workers", "5", "--items", "30",
                 "--effect", "0.1", "--outcome", "likert", "--levels", "5", "--n-sims", "50",
                 "--seed", "1", "--quiet", "--json", str(out)]) == 0
    lib = nlpower.power(CrossedDesign(5, 30), presets.high_variance(0.1), outcome="likert",
                        levels=5, n_sims=50, rng=1)
    assert json.loads(out.read_text())["power"] == lib.power


def test_power_repeated_preference_is_the_library_call(tmp_path):
    out = tmp_path / "h.json"
    assert main(["power", "--outcome", "preference", "--workers", "4", "--items", "8",
                 "--p-win", "0.7", "--sd-worker", "0.3", "--n-sims", "6", "--seed", "2",
                 "--quiet", "--json", str(out)]) == 0
    p = HeadToHeadParams.from_share(0.7, sd_worker=0.3)
    lib = nlpower.power(CrossedDesign(4, 8), p, outcome="preference", n_sims=6, rng=2)
    rec = json.loads(out.read_text())
    assert rec["power"] == lib.power and rec["test"] == "z"


def test_grid_likert_two_analyses_is_the_library_grid(tmp_path):
    csv = tmp_path / "g.csv"
    assert main(["grid", "--preset", "low-variance", "--outcome", "likert", "--levels", "5",
                 "--analysis", "lmm,clmm", "--null", "--workers", "3", "--items", "10",
                 "--effects", "0.1", "--n-sims", "6", "--seed", "4", "--quiet",
                 "--out", str(csv)]) == 0
    frame = pd.read_csv(csv)
    assert {"power_lmm", "power_clmm", "type1_lmm", "type1_clmm"} <= set(frame.columns)
    lib = nlpower.power_grid({"low variance": presets.low_variance()}, n_workers=[3],
                             n_items=[10], effect=[0.1], outcome="likert", levels=5,
                             analysis=["lmm", "clmm"], null=True, n_sims=6, rng=4,
                             progress=False).to_frame()
    assert frame["power_clmm"].iloc[0] == lib["power_clmm"].iloc[0]
    assert frame["type1_lmm"].iloc[0] == lib["type1_lmm"].iloc[0]


def test_grid_preference_effect_axis_from_p_win(tmp_path):
    csv = tmp_path / "g.csv"
    assert main(["grid", "--outcome", "preference", "--p-win", "0.6,0.75", "--workers", "4",
                 "--items", "8", "--n-sims", "4", "--seed", "3", "--quiet", "--out",
                 str(csv)]) == 0
    frame = pd.read_csv(csv)
    shares = [HeadToHeadParams.from_share(s).effect for s in (0.6, 0.75)]
    assert frame["effect"].tolist() == pytest.approx(shares)
    key = {"n_workers": 4, "n_items": 8, "effect": shares[1]}
    one = nlpower.power(CrossedDesign(4, 8), HeadToHeadParams(effect=shares[1]),
                        outcome="preference", n_sims=4, rng=cell_seed(3, key))
    assert frame["power"].iloc[1] == one.power


def test_mde_likert_is_the_library_call(tmp_path):
    out = tmp_path / "m.json"
    assert main(["mde", "--preset", "high-variance", "--workers", "5", "--items", "30",
                 "--outcome", "likert", "--levels", "5", "--n-sims", "60", "--seed", "5",
                 "--json", str(out)]) == 0
    lib = nlpower.mde(CrossedDesign(5, 30), presets.high_variance(), outcome="likert", levels=5,
                      n_sims=60, rng=5)
    rec = json.loads(out.read_text())
    assert rec["effect"] == lib.effect and rec["effect_ci_high"] == lib.effect_ci.high


@pytest.mark.parametrize("argv,msg", [
    (["power", "--outcome", "preference", "--judges", "10"], "--p-win"),
    (["power", "--outcome", "likert", "--judges", "10", "--p-win", "0.6"],
     "--judges (for --outcome preference, one judgement per person)"),
    (["power", "--preset", "high-variance", "--workers", "3"], "required: --items, --effect"),
    (["power", "--outcome", "preference", "--workers", "3", "--items", "9"], "--p-win"),
    (["grid", "--outcome", "likert", "--analysis", "lm"], "expected one of lmm, clmm, glmer"),
])
def test_usage_errors(argv, msg, capsys):
    with pytest.raises(SystemExit):
        main(argv)
    assert msg in capsys.readouterr().err


@pytest.mark.parametrize("argv,msg", [
    (["power", "--preset", "high-variance", "--workers", "3", "--items", "9", "--effect", "0.1",
      "--levels", "5"], "--outcome 'gaussian' does not take levels"),
    (["power", "--preset", "high-variance", "--workers", "3", "--items", "9", "--effect", "0.1",
      "--outcome", "likert", "--levels", "5", "--analysis", "glmer"], "must be one of 'lmm', 'clmm'"),
    (["grid", "--preset", "high-variance", "--outcome", "likert", "--workers", "3", "--items",
      "9"], "needs --levels K"),
    (["mde", "--workers", "3", "--items", "9", "--outcome", "preference", "--p-win", "0.6",
      "--levels", "5"], "--outcome 'preference' does not take levels"),
])
def test_library_errors_in_the_words_of_the_command_line(argv, msg, capsys):
    assert main(argv) == 2
    assert msg in capsys.readouterr().err


def test_every_outcome_flag_is_in_the_table():
    """The table knows every outcome-specific flag, and what each kind of run reads."""
    power = build_parser()._subparsers._group_actions[0].choices["power"]
    dests = {a.dest for a in power._actions if a.dest not in ("outcome", "analysis")}
    own = {"levels", "p_win", "p_draw", "sd_worker", "sd_item", "judges", "ties"}
    assert own <= dests and set(FOR) == own
    assert set(READS) == {*OUTCOMES, "preference --judges"}
    assert all(set(r) <= own for r in READS.values())


CROSSED = ["--preset", "high-variance", "--workers", "3", "--items", "9"]


@pytest.mark.parametrize("argv,msg", [
    (["power", *CROSSED, "--effect", "0.1", "--outcome", "likert", "--levels", "5", "--p-draw",
      "0.1"], "--outcome likert does not read --p-draw (for --outcome preference): drop it"),
    (["power", *CROSSED, "--effect", "0.1", "--sd-worker", "0.2", "--sd-item", "0.3"],
     "does not read --sd-worker, --sd-item (for --outcome preference with"),
    (["power", "--outcome", "preference", "--judges", "50", "--p-win", "0.6", "--sd-item", "0.3"],
     "--judges N does not read --sd-item"),
    (["power", "--outcome", "preference", "--judges", "50", "--p-win", "0.6", "--n-sims", "9"],
     "drop --n-sims, or drop --judges"),
    (["power", "--outcome", "preference", "--workers", "3", "--items", "9", "--p-win", "0.6",
      "--effect", "0.2"], "from --p-win (with --p-draw, --sd-worker, --sd-item): drop --effect"),
    (["power", *CROSSED, "--effect", "0.1", "--ties", "split"],
     "does not read --ties (for --outcome preference --judges N)"),
    (["grid", "--outcome", "likert", "--levels", "5", "--p-win", "0.6"], "does not read --p-win"),
    (["grid", "--outcome", "preference", "--p-win", "0.6", "--effects", "0.1"], "drop --effects"),
    (["grid", "--outcome", "preference", "--p-win", "0.6", "--preset", "both"], "drop --preset"),
    (["mde", "--workers", "3", "--items", "9", "--outcome", "preference", "--p-win", "0.6",
      "--preset", "high-variance"], "drop --preset"),
    (["mde", "--workers", "3", "--items", "9", "--preset", "high-variance", "--sd-item", "0.2"],
     "--outcome gaussian does not read --sd-item"),
    (["plan", "--preset", "high-variance", "--effect", "0.1", "--p-win", "0.6"],
     "--outcome gaussian does not read --p-win"),
    (["plan", "--outcome", "likert", "--levels", "5", "--preset", "high-variance", "--effect",
      "0.5", "--sd-worker", "0.1"], "--outcome likert does not read --sd-worker"),
])
def test_flags_the_outcome_does_not_read_are_refused(argv, msg, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "error:" in last and msg in last


def test_library_n_is_judges_only_where_judges_is_a_flag():
    parser = build_parser()
    power = cli_flags(parser, parser.parse_args(["power", "--judges", "0"]))
    fit = cli_flags(parser, parser.parse_args(["fit", "x.csv"]))
    assert speak_cli("n must be >= 1; got 0.", power) == "--judges must be >= 1; got 0."
    assert speak_cli("n must be >= 1; got 0.", fit) == "n must be >= 1; got 0."
    assert speak_cli("pass rng=3", power) == "pass --seed 3"
