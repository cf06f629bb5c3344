"""``nlpower power`` / ``nlpower grid``: thin edges that call the library."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from nlpower import presets
from nlpower.cli import main
from nlpower.design import CrossedDesign
from nlpower.powersim.grid import power_grid

GRID = ["grid", "--preset", "low-variance", "--workers", "3,5", "--items", "20", "--effects", "0.1,0.2",
        "--n-sims", "20", "--test", "z", "--alternative", "greater", "--method", "balanced",
        "--seed", "1", "--quiet"]
POWER = ["power", "--preset", "high-variance", "--workers", "3", "--items", "20", "--effect", "0.1",
         "--n-sims", "30", "--test", "z", "--alternative", "greater", "--method", "balanced", "--seed", "4"]


def test_grid_writes_the_library_result(tmp_path, capsys):
    csv, png = tmp_path / "grid.csv", tmp_path / "grid.png"
    assert main([*GRID, "--out", str(csv), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "Power grid: 4 cells" in out and f"wrote {csv}" in out and f"wrote {png}" in out
    got = pd.read_csv(csv)
    expected = power_grid({"low variance": presets.low_variance()}, n_workers=[3, 5], n_items=[20],
                          effect=[0.1, 0.2], n_sims=20, test="z", alternative="greater",
                          method="balanced", rng=1, progress=False).to_frame()
    assert list(got.columns) == list(expected.columns)
    # a CSV has no None: the balanced path's engine (None, no fitter) reads back as NaN
    expected["engine"] = expected["engine"].astype(float)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_grid_both_presets_and_checkpoint(tmp_path, capsys):
    ckpt = tmp_path / "g.ckpt"
    args = [*GRID, "--preset", "both", "--checkpoint", str(ckpt)]
    assert main(args) == 0
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "8 of 8 cells read from checkpoint" in out
    assert "high variance" in out and "low variance" in out
    # same file, different grid: a clean error and exit code 2
    assert main([*args, "--n-sims", "21"]) == 2
    err = capsys.readouterr().err
    assert "nlpower grid: error:" in err and "n_sims is 20 in the file but 21 now" in err


def test_power_prints_summary_and_writes_json(tmp_path, capsys):
    from nlpower.powersim import power

    out_json = tmp_path / "p.json"
    assert main([*POWER, "--json", str(out_json)]) == 0
    expected = power(CrossedDesign(3, 20), presets.high_variance(0.1), n_sims=30, test="z",
                     alternative="greater", method="balanced", rng=4)
    out = capsys.readouterr().out
    assert expected.summary() in out
    record = json.loads(out_json.read_text())
    assert record["power"] == pytest.approx(expected.power)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["grid", "--workers", "3,x"], "expected a comma-separated list of integers"),
        (["grid", "--effects", ""], "expected a comma-separated list of numbers"),
        (["grid", "--preset", "medium"], "invalid choice: 'medium'"),
        (["grid", "--test", "wald"], "invalid choice: 'wald'"),
        (["power", "--preset", "both", "--workers", "3", "--items", "20", "--effect", "0.1"],
         "invalid choice: 'both'"),
        (["power", "--preset", "low-variance", "--workers", "3"], "the following arguments are required"),
    ],
)
def test_bad_arguments_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        ([*GRID, "--n-sims", "0"], "--n-sims must be >= 1"),  # issue 14: CLI errors name flags
        ([*GRID, "--workers-per-item", "4"], "workers_per_item"),
        ([*GRID, "--n-jobs", "0"], "--n-jobs must be a positive number"),
        ([*POWER, "--workers", "1"], "n_workers must be >= 2"),
    ],
)
def test_library_errors_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("nlpower ") and message in err


def test_entry_point_subprocess(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "nlpower", *POWER], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "power" in proc.stdout.lower()


def test_power_json_is_strict_at_effect_zero(tmp_path):
    out_json = tmp_path / "p0.json"
    argv = [*POWER[:POWER.index("--effect") + 1], "0", *POWER[POWER.index("--effect") + 2:]]
    assert main([*argv, "--json", str(out_json)]) == 0
    text = out_json.read_text()
    assert "NaN" not in text
    record = json.loads(text)
    assert record["power"] is None and 0.0 <= record["rejection_rate"] <= 1.0


def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("nlpower.powersim.grid.power_grid", interrupted)  # imported when it runs
    ckpt = tmp_path / "g.ckpt"
    assert main([*GRID, "--checkpoint", str(ckpt)]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"nlpower grid: interrupted. Finished cells are saved in {ckpt}; "
        "run the same command again to resume."]
    assert main(GRID) == 130
    assert "nothing was saved (add --checkpoint FILE" in capsys.readouterr().err


def test_outputs_into_a_missing_directory_are_refused_before_any_work(tmp_path, capsys):
    missing = tmp_path / "no" / "such"
    assert main([*GRID, "--out", str(missing / "grid.csv")]) == 2
    err = capsys.readouterr().err
    assert f"--out '{missing / 'grid.csv'}': the directory '{missing}' does not exist" in err
    assert "Create it first" in err and not missing.exists()
    assert main([*POWER, "--json", str(missing / "p.json")]) == 2
    assert "--json" in capsys.readouterr().err and not missing.exists()


def test_power_pblrt_passes_n_resamples(capsys):
    from nlpower.powersim import power

    argv = [*POWER[:POWER.index("--test")], "--test", "pblrt", "--n-resamples", "19",
            "--method", "balanced", "--seed", "4"]
    assert main(argv) == 0
    expected = power(CrossedDesign(3, 20), presets.high_variance(0.1), n_sims=30, test="pblrt",
                     n_resamples=19, method="balanced", rng=4)
    out = capsys.readouterr().out
    assert expected.summary() in out and "x 19 bootstrap samples" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--test", "pblrt", "--n-resamples", "5"], "--n-resamples 5 cannot reject at --alpha 0.05"),
        (["--test", "pblrt", "--n-resamples", "19", "--alternative", "greater"],
         "--test 'pblrt' is two-sided"),
    ],
)
def test_pblrt_option_errors_exit_2(extra, message, capsys):
    argv = [*POWER[:POWER.index("--test")], "--method", "balanced", *extra]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
