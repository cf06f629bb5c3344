"""The command line as the docs and a new user type it: the plan of a nested pilot with
``--sd``, the elicited items table, and the commands docs/cli.md prints."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from nlpower.cli import main

ROOT = Path(__file__).resolve().parents[1]
NESTED = ROOT / "fixtures" / "nested_4sys_ratings.csv"


def test_a_plan_with_sd_does_not_also_warn_that_sd_is_zero(capsys):
    """Items nested in systems: the item slope is not identified.  Without --sd the plan
    warns it is set to 0; with --sd item_slope=S it is S, and only that is said."""
    args = ["plan", "--ratings", str(NESTED), "--scale", "1,5", "--contrast", "C",
            "--effect", "0.1", "--n-boot", "20", "--seed", "3"]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "sd_item_slope = 0" in err
    assert main([*args, "--sd", "item_slope=0.05"]) == 0
    captured = capsys.readouterr()
    assert "sd_item_slope = 0" not in captured.err
    assert "sd_item_slope is 0.05, as given" in captured.out


def test_the_items_table_says_what_nan_means(capsys):
    assert main(["elicit", "0.6", "--split", "0.5", "0.2", "0.5", "--items-table"]) == 0
    out = capsys.readouterr().out
    table = out.split("against alpha and effect:")[1]
    assert "NaN" in table
    assert "NaN: 20000 items do not reach power 0.8 with 10 workers" in table


def _doc_commands(page: str) -> list[list[str]]:
    """The ``nlpower ...`` commands of a page's bash blocks, continuation lines joined."""
    text = (ROOT / "docs" / page).read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    commands = []
    for block in blocks:
        for line in block.replace("\\\n", " ").splitlines():
            if line.startswith("nlpower "):
                commands.append(shlex.split(line)[1:])
    return commands


def test_docs_cli_commands_name_the_files_the_benchmark_writes():
    """Every file docs/cli.md's commands read is one benchmarks/pilot_cli_files.py writes."""
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pilot_cli_files import write_all  # noqa: F401 - the names are read from its source
    source = (ROOT / "benchmarks" / "pilot_cli_files.py").read_text()
    written = set(re.findall(r'\("(\w+)", \w+\)', source))
    commands = _doc_commands("cli.md")
    assert len(commands) >= 6
    for argv in commands:
        files = [a for a in argv if a.endswith(".csv")]
        assert files, argv
        for f in files:
            assert f.removesuffix(".csv") in written, (f, argv)


@pytest.mark.parametrize("argv", [c for c in _doc_commands("cli.md") if c[0] == "fit"],
                         ids=lambda argv: " ".join(argv[:2]))
def test_docs_cli_fit_commands_run_as_printed_on_the_benchmark_files(tmp_path, monkeypatch,
                                                                     capsys, argv):
    import sys
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pilot_cli_files import da20, expert3

    files = {"da20.csv": da20, "expert3.csv": expert3}
    for name, make in files.items():
        if name in argv:
            make().to_csv(tmp_path / name, index=False)
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0, capsys.readouterr().err


def test_grid_prints_each_analysis_and_the_type1_error_it_was_asked_for(tmp_path, capsys):
    """``--analysis lmm,clmm --null``: the help promises the Type I error; the printed grid
    showed one power column only (the rest was in --out / --json alone)."""
    out = tmp_path / "grid.csv"
    assert main(["grid", "--preset", "high-variance", "--outcome", "likert", "--levels", "5",
                 "--analysis", "lmm,clmm", "--null", "--workers", "3", "--items", "10",
                 "--effects", "0.1", "--n-sims", "4", "--seed", "1", "--quiet",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    table = text.split("by analysis, on the same simulated experiments")[1]
    header, row = table.splitlines()[1:3]
    assert header.split()[-10:] == ["power", "lmm", "Type", "I", "lmm", "power", "clmm",
                                    "Type", "I", "clmm"]
    import pandas as pd
    frame = pd.read_csv(out).iloc[0]
    for col in ("power_lmm", "type1_lmm", "power_clmm", "type1_clmm"):
        assert f"{frame[col]:.3f} [" in row, col


def _votes(path: Path) -> Path:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(4)
    systems, strength = ["gpt-4", "claude", "llama"], np.array([0.8, 0.3, -0.4])
    rows = []
    for _ in range(300):
        i, j = rng.choice(3, 2, replace=False)
        win = rng.random() < 1 / (1 + np.exp(strength[j] - strength[i]))
        pick = "tie" if rng.random() < 0.2 else systems[i] if win else systems[j]
        rows.append((systems[i], systems[j], pick))
    pd.DataFrame(rows, columns=["left", "right", "preferred"]).to_csv(path, index=False)
    return path


def test_arena_fit_prints_the_scale_it_was_asked_for(tmp_path, capsys):
    """``--scale elo`` changed the JSON only; the printed scores stayed in logits, unlabelled,
    and a seed nothing used was printed 'to repeat'."""
    import json

    votes = _votes(tmp_path / "votes.csv")
    out = tmp_path / "scores.json"
    assert main(["arena", "fit", str(votes), "--a", "left", "--b", "right", "--outcome",
                 "preferred", "--scale", "elo", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Elo points" in text and "seed:" not in text
    for rec in json.loads(out.read_text())["scores"]:
        line = next(ln for ln in text.splitlines() if f" {rec['system']} " in ln)
        assert f"{rec['score']:.1f}" in line.split(), (rec, line)


def test_accuracy_power_of_a_test_set_too_small_to_reject_says_so(capsys):
    """n = 1: no outcome rejects, so Type-M and Type-S are undefined (printed 'nan'), and the
    exact enumeration drew nothing (a seed 'to repeat' was printed)."""
    assert main(["accuracy", "power", "--n", "1", "--delta", "0.02", "--agreement", "0.9"]) == 0
    out = capsys.readouterr().out
    assert "power   0.0000  (exact)" in out
    assert "nan" not in out and "undefined: no outcome of the test rejects" in out
    assert "seed:" not in out
    assert main(["accuracy", "power", "--n", "50", "--delta", "0.02", "--agreement", "0.9",
                 "--method", "simulate", "--n-sims", "20", "--seed", "4"]) == 0
    assert "seed: 4 (repeat with --seed 4)" in capsys.readouterr().out


def test_a_plan_searched_past_50_workers_is_the_cheapest_there():
    """Past its default 50 workers the search stepped by 2 (52, 54, ...): on the bundled
    pilot it returned 54 x 106 (cost 6264) while 53 x 108 reaches the target for 6254."""
    import nlpower
    from nlpower import CrossedDesign
    from nlpower.convert import as_params

    fit = nlpower.fit_ratings(nlpower.read_ratings(ROOT / "fixtures" / "pilot_ratings.csv",
                                                   scale=(1, 5)))
    costs = dict(cost_per_rating=0.5, cost_per_worker=10)
    free = nlpower.plan(fit, effect=0.05, **costs)
    capped = nlpower.plan(fit, effect=0.05, max_workers=free.n_workers + 20, **costs)
    assert free.n_workers > 50 and free.cost == capped.cost   # every count searched there too
    params = as_params(fit, effect=0.05)
    for w in (free.n_workers - 1, free.n_workers + 1):     # the neighbours cost more
        items = next(i for i in range(2, 1000)
                     if nlpower.power(CrossedDesign(w, i), params, method="analytic").power >= 0.8)
        assert 0.5 * 2 * w * items + 10 * w >= free.cost


def test_sequential_monitor_of_judgements_says_which_system_the_estimate_favours(tmp_path,
                                                                                capsys):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from pilot_cli_files import h2h

    frame = h2h()
    frame["wave"] = frame["prompt_id"].str[1:].astype(int) // 75 + 1
    path = tmp_path / "waves.csv"
    frame.to_csv(path, index=False)
    cols = ["sequential", "monitor", str(path), "--batch", "wave", "--outcome", "preference",
            "--first", "model_a", "--second", "model_b", "--choice", "winner", "--worker",
            "rater", "--item", "prompt_id", "--max-items", "150", "--looks", "2"]
    estimates = []
    for pair, favoured in ((None, "mistral-7b"), ("mistral-7b,llama-13b", "llama-13b")):
        assert main(cols + ([] if pair is None else ["--pair", pair])) == 0
        out = capsys.readouterr().out
        assert f"the estimate is the log-odds that {favoured} is preferred" in out
        estimates.append(float(re.search(r"look 1: .*?estimate (\S+)", out).group(1)))
    assert estimates[0] == pytest.approx(-estimates[1], rel=1e-3)
