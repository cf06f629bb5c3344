"""The CLI as people use it (issue 23, items 6 and 8-14): one rule for outputs, seeds and JSON.

Outputs are checked before any work, ``--json -`` writes to standard output
for every verb, every run prints its seed and every JSON records what
reproduces it, errors speak flags, ``--help`` shows defaults, and
``--version`` imports nothing heavy.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nlpower.cli import build_parser, main

PILOT = Path(__file__).resolve().parents[1] / "fixtures" / "pilot_ratings.csv"
POWER = ["power", "--preset", "high-variance", "--workers", "3", "--items", "20", "--effect", "0.1",
         "--n-sims", "20", "--test", "z", "--method", "balanced", "--quiet"]
GRID = ["grid", "--preset", "high-variance", "--workers", "3", "--items", "20", "--effects", "0.1",
        "--n-sims", "10", "--test", "z", "--method", "balanced", "--quiet"]

# one quick run of every verb that writes JSON
VERBS = {
    "power": POWER,
    "grid": GRID,
    "mde": ["mde", "--preset", "low-variance", "--workers", "3", "--items", "50"],
    "accuracy power": ["accuracy", "power", "--n", "500", "--delta", "0.02", "--agreement", "0.9"],
    "accuracy mde": ["accuracy", "mde", "--n", "500", "--baseline", "0.8", "--agreement", "0.9"],
    "bleu power": ["bleu", "power", "--n", "200", "--delta", "1", "--n-sims", "20",
                   "--n-resamples", "20"],
    "bleu mde": ["bleu", "mde", "--n", "200", "--method", "normal"],
    "replicability": ["replicability", "0.01", "0.2", "0.03"],
    "fit": ["fit", str(PILOT), "--scale", "1", "5"],
}


# --- item 8: --json - for every verb ---------------------------------------------------------


@pytest.mark.parametrize("verb", list(VERBS))
def test_json_dash_writes_only_json_to_stdout(verb, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*VERBS[verb], "--json", "-"]) == 0
    cap = capsys.readouterr()
    payload = json.loads(cap.out)  # standard output holds the JSON alone
    assert payload["run"]["nlpower"] and payload["run"]["command"].startswith("nlpower ")
    assert not (tmp_path / "-").exists()
    assert cap.err.strip()  # the human-readable output went to standard error


def test_compare_json_dash(tmp_path, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(str(0.1 * i) for i in range(30)) + "\n")
    b.write_text("\n".join(str(0.1 * i + 0.05 * (i % 3)) for i in range(30)) + "\n")
    assert main(["compare", str(a), str(b), "--n-resamples", "99", "--seed", "3", "--json", "-"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["run"]["seed"] == 3


# --- item 9: the seed is printed and recorded with everything that reproduces the run --------


def test_power_prints_and_records_its_seed_design_params_and_test(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main([*POWER, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    seed = int(printed.split("seed: ")[1].split()[0])
    assert f"(repeat with --seed {seed})" in printed
    record = json.loads(out.read_text())
    assert record["run"]["seed"] == seed and record["preset"] == "high-variance"
    assert record["design"] == {"n_workers": 3, "n_items": 20, "workers_per_item": None}
    assert record["params"]["sigma"] == pytest.approx(0.26) and record["params"]["effect"] == 0.1
    assert record["run"]["arguments"]["test"] == "z"
    again = tmp_path / "q.json"
    assert main([*POWER, "--seed", str(seed), "--json", str(again)]) == 0
    assert json.loads(again.read_text())["power"] == record["power"]


def test_a_given_seed_is_printed_too(capsys):
    assert main([*POWER, "--seed", "7"]) == 0
    assert "seed: 7 (repeat with --seed 7)" in capsys.readouterr().out


# --- item 6: outputs are checked before the work, by one rule ---------------------------------


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if the library is called: the output check must come first."""
    def boom(*args, **kwargs):
        raise AssertionError("the work started before the output was checked")

    for target in ("nlpower.powersim.power", "nlpower.powersim.grid.power_grid",
                   "nlpower.bleu.power_grid"):
        monkeypatch.setattr(target, boom)


def test_json_into_a_directory_fails_before_the_work(tmp_path, capsys, no_work):
    assert main([*POWER, "--json", str(tmp_path)]) == 2
    assert f"--json {str(tmp_path)!r} is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("name, message", [
    ("fig.xyz", "matplotlib cannot write .xyz files"),
    ("fig.bmp", "matplotlib cannot write .bmp files"),
    ("noext", "has no extension, so the format is unknown"),
])
def test_plot_format_checked_before_the_work(tmp_path, capsys, no_work, name, message):
    assert main([*GRID, "--plot", str(tmp_path / name)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    GRID,
    ["bleu", "grid", "--n", "100", "--delta", "1", "--n-sims", "5", "--n-resamples", "5"],
])
def test_plot_into_a_missing_directory_is_refused_like_out(tmp_path, capsys, no_work, argv):
    target = tmp_path / "no" / "such" / "fig.png"
    assert main([*argv, "--plot", str(target)]) == 2
    assert "--plot" in capsys.readouterr().err and not (tmp_path / "no").exists()


def test_only_json_takes_a_dash(capsys, no_work):
    assert main([*GRID, "--out", "-"]) == 2
    assert "--out '-': only --json can write to standard output" in capsys.readouterr().err


def test_plot_is_written_to_exactly_the_path_given(tmp_path, capsys):
    target = tmp_path / "fig.svg"
    assert main([*GRID, "--plot", str(target)]) == 0
    assert target.exists() and f"wrote {target}" in capsys.readouterr().out


# --- item 10: errors speak the command line ----------------------------------------------------


def test_nested_verb_without_subcommand_lists_them(capsys):
    with pytest.raises(SystemExit):
        main(["accuracy"])
    err = capsys.readouterr().err
    assert "{power,mde,estimate}" in err and "accuracy_command" not in err


def test_fit_error_names_the_editor_line(tmp_path, capsys):
    lines = PILOT.read_text().splitlines()
    header = lines[0].split(",")
    bad = lines[5].split(",")
    bad[header.index("rating")] = "good"
    lines[5] = ",".join(bad)  # line 6 in an editor
    path = tmp_path / "r.csv"
    path.write_text("\n".join(lines) + "\n")
    assert main(["fit", str(path), "--scale", "1", "5"]) == 2
    err = capsys.readouterr().err
    assert "(line 6: 'good')" in err and "header is line 1" in err and "--rating" in err


def test_cli_messages_never_ask_for_python(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text(PILOT.read_text().replace("worker", "rater"))
    assert main(["fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert "read_ratings(" not in err and "--worker 'rater'" in err


# --- items 11 and 12: verbs and flags people reach for -----------------------------------------


def test_mde_verb(capsys):
    assert main(["mde", "--preset", "high-variance", "--workers", "3", "--items", "100"]) == 0
    assert "Minimum detectable effect" in capsys.readouterr().out


def test_mde_from_a_pilot(capsys):
    assert main(["mde", "--ratings", str(PILOT), "--scale", "1", "5", "--workers", "5",
                 "--items", "200"]) == 0
    out = capsys.readouterr().out
    assert f"pilot {PILOT}" in out and "Minimum detectable effect" in out


def test_grid_from_a_pilot(tmp_path, capsys):
    argv = [a for a in GRID if a not in ("--preset", "high-variance")]
    assert main([*argv, "--ratings", str(PILOT), "--scale", "1", "5"]) == 0
    out = capsys.readouterr().out
    assert f"pilot {PILOT}" in out and "parameters used: LMMParams(" in out


def test_power_from_a_pilot_prints_what_it_used(capsys):
    argv = [a for a in POWER if a not in ("--preset", "high-variance")]
    assert main([*argv, "--ratings", str(PILOT), "--scale", "1", "5"]) == 0
    out = capsys.readouterr().out
    assert f"pilot {PILOT}: 640 ratings" in out and "parameters used: LMMParams(" in out


def _all_parsers(parser):
    import argparse
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _all_parsers(sub)
    return out


def test_every_help_shows_the_defaults():
    for parser in _all_parsers(build_parser()):
        formatter = parser._get_formatter()
        for action in parser._actions:
            if action.option_strings and action.default not in (None, False, "==SUPPRESS=="):
                shown = formatter._get_help_string(action)
                assert "default" in shown, f"{parser.prog} {action.option_strings}: no default"


# --- item 14: --version and --help import nothing heavy ---------------------------------------


def test_cli_imports_no_numpy_until_a_command_runs():
    code = ("import sys, nlpower.cli; nlpower.cli.build_parser(); "
            "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("python, cli", [
    ("read RatingsFit.identifiable()", "see the identified quantities (nlpower fit --full)"),
    ("plan with an expected delta via nlpower.accuracy.power.",
     "plan with an expected delta with nlpower accuracy power --delta D."),
    ("test='z' is a McNemar test: use nlpower.accuracy.power(...).",
     "test='z' is a McNemar test: use nlpower accuracy power."),
    ("plan at the point estimates (nlpower.plan(as_params(fit, effect=...), ...)) and treat",
     "plan at the point estimates (nlpower mde --ratings FILE, or nlpower power --ratings FILE) "
     "and treat"),
    ("(NaN in identifiable()).", "(NaN among the identified quantities of nlpower fit --full)."),
])
def test_python_advice_is_said_as_commands(python, cli):
    from nlpower.cli.messages import cli_words, speak_cli
    assert cli_words(python) == cli and speak_cli(python, {}) == cli


def test_fit_notes_speak_cli(capsys):
    nested = PILOT.with_name("nested_4sys_ratings.csv")
    assert main(["fit", str(nested)]) == 0
    out = capsys.readouterr().out
    assert "identifiable()" not in out and "(nlpower fit --full)" in out


def test_plan_from_a_preset(capsys):
    assert main(["plan", "--preset", "high-variance", "--effect", "0.1", "--json", "-"]) == 0
    cap = capsys.readouterr()
    payload = json.loads(cap.out)
    assert payload["preset"] == "high-variance" and payload["plans"][0]["n_workers"] >= 2
    assert "Cheapest design for power 0.8" in cap.err


def test_plan_needs_a_preset_or_a_pilot(capsys):
    assert main(["plan", "--effect", "0.1"]) == 2
    assert "give either --ratings FILE" in capsys.readouterr().err


def test_compare_planned_effect_flag_the_note_asks_for(tmp_path, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(str(0.1 * i + 0.05 * (i % 4)) for i in range(40)) + "\n")
    b.write_text("\n".join(str(0.1 * i) for i in range(40)) + "\n")
    base = ["compare", str(a), str(b), "--power", "normal", "--n-sims", "50", "--n-resamples", "99"]
    assert main(base) == 0
    assert "pass --planned-effect with an effect chosen in advance" in capsys.readouterr().out
    assert main([*base, "--planned-effect", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "effect 0.05" in out and "the effect simulated is the observed one" not in out
    assert "retrospective_power" not in out and "--planned-effect D" in out
    assert main([*base[:3], "--planned-effect", "0.05"]) == 2
    assert "--planned-effect needs --power normal" in capsys.readouterr().err


def test_library_warnings_are_one_line_without_a_source_path():
    code = "\n".join([
        "import warnings, nlpower.powersim",
        "from nlpower.errors import NlpowerWarning",
        "def power(*args, **kwargs):",
        "    warnings.warn('expect about 6 s per replicate; pass n_sims=10 to try', NlpowerWarning)",
        "    raise KeyboardInterrupt",
        "nlpower.powersim.power = power",
        "from nlpower.cli import main",
        f"raise SystemExit(main({POWER!r}))",
    ])
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 130
    assert "warning: expect about 6 s per replicate; pass --n-sims 10 to try" in proc.stderr
    assert ".py:" not in proc.stderr


def test_kenward_roger_cost_estimate_is_measured():
    """(n / 500)^2 s per replicate: 8 s measured at n = 1200, 85 s at 4000 (the old n^3 rule said 64 and 2370)."""
    import warnings

    from nlpower.powersim import rules

    class Spec:
        n = 1200

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rules.KRTest(Spec())
        except AttributeError:
            pass  # the fake spec has no structure; the warning comes first
    assert "expect about 6 s per replicate" in str(caught[0].message)


# --- item 15: output says what it means --------------------------------------------------------


def test_analytic_power_prints_no_monte_carlo_fields(capsys):
    assert main(["power", "--preset", "high-variance", "--workers", "3", "--items", "50",
                 "--effect", "0.1", "--method", "analytic"]) == 0
    out = capsys.readouterr().out
    assert "Power (analytic, no simulation)" in out
    for monte_carlo in ("MC SE", "replicates", "detections", "failed fits"):
        assert monte_carlo not in out


def test_replicability_defines_k_and_names_datasets(capsys):
    assert main(["replicability", "0.01", "0.2", "0.03", "0.001"]) == 0
    out = capsys.readouterr().out
    assert "where k is the true number of datasets on which A is better" in out
    assert "A is better on datasets #1 (p = 0.01), #4 (p = 0.001)" in out
    assert main(["replicability", "books=0.001", "dvd=0.2"]) == 0
    assert "A is better on dataset books" in capsys.readouterr().out


def test_a_closed_pipe_ends_quietly():
    proc = subprocess.run(f"{sys.executable} -m nlpower replicability 0.01 0.2 0.03 | head -1",
                          shell=True, capture_output=True, text=True)
    assert proc.stdout.startswith("Replicability analysis") and "Traceback" not in proc.stderr


def test_words_a_reader_can_take_at_face_value(tmp_path, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(str(0.1 * i + 0.05 * (i % 4)) for i in range(40)) + "\n")
    b.write_text("\n".join(str(0.1 * i) for i in range(40)) + "\n")
    assert main(["compare", str(a), str(b), "--n-resamples", "99"]) == 0
    out = capsys.readouterr().out
    assert "-> normal at" not in out and "normality" in out
    assert main(["bleu", "power", "--n", "300", "--delta", "1", "--n-sims", "20",
                 "--n-resamples", "19"]) == 0
    out = capsys.readouterr().out
    assert "dB_hat" not in out and "sum(delta)" not in out and "BLEU points" in out


def test_grid_header_agrees_with_its_csv(tmp_path, capsys):
    out = tmp_path / "g.csv"
    assert main([*GRID[:-3], "--method", "auto", "--quiet", "--out", str(out)]) == 0
    header = capsys.readouterr().out.splitlines()[1]
    import pandas as pd
    frame = pd.read_csv(out)
    assert set(frame["method"]) == {"balanced"} and frame["engine"].isna().all()
    assert "method='auto' (used: balanced)" in header
    assert "engine='native' (not used: no cell refitted a model)" in header


def test_a_named_subcommand_imports_only_its_own_module():
    code = ("import sys, contextlib, io, nlpower.cli\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    nlpower.cli.main(['fit', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('nlpower.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(eval(out.stdout.strip().splitlines()[-1]))
    assert "nlpower.cli.fit" in loaded
    assert not loaded & {"nlpower.cli.accuracy", "nlpower.cli.bleu", "nlpower.cli.power"}


def test_plan_plot_writes_the_power_curve(tmp_path, capsys):
    out = tmp_path / "plan.png"
    assert main(["plan", "--preset", "low-variance", "--effect", "0.1", "--plot", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert f"wrote {out}" in capsys.readouterr().out
