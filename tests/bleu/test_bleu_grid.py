"""BLEU power grids through nlpower.grid, figures 4 and 17, and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nlpower import bleu
from nlpower.cli import main
from nlpower.errors import InputError

pytest.importorskip("matplotlib")


def test_grid_cells_equal_direct_power_with_cell_seeds():
    from nlpower._rng import root_seed
    from nlpower.grid import cell_seed

    g = bleu.power_grid([300, 600], [1.0, 2.0], 0.1, 25.0, n_sims=60, n_resamples=100, rng=5,
                        progress=False)
    frame = g.to_frame()
    assert list(frame.columns[:4]) == ["p0", "b0", "n", "delta"]
    assert frame[["n", "delta"]].values.tolist() == [[300, 1.0], [300, 2.0], [600, 1.0], [600, 2.0]]
    cell = g.cells[3]
    direct = bleu.power(600, 2.0, 0.1, 25.0, n_sims=60, n_resamples=100,
                        rng=cell_seed(root_seed(5), cell.key))
    assert cell.result.power == direct.power and cell.result.ci == direct.ci
    assert g.settings["method"] == "randomization" and g.problem == "bleu"


def test_grid_checkpoint_resume(tmp_path: Path):
    kw = {"n_sims": 40, "method": "normal", "rng": 2, "progress": False,
          "checkpoint": tmp_path / "bleu.jsonl"}
    first = bleu.power_grid([200, 400], 1.5, [0.1, 0.2], 25.0, **kw)
    again = bleu.power_grid([200, 400], 1.5, [0.1, 0.2], 25.0, **kw)
    assert again.n_resumed == 4
    assert np.allclose(first.to_frame()["power"], again.to_frame()["power"])


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n": []}, "n: an empty list gives no grid cells"),
    ({"p0": [0.1, 1.2]}, "p0 must be < 1.0; got 1.2"),
    ({"n": [100, 1]}, "n must be >= 2; got 1"),
    ({"method": "exactly"}, "method must be one of"),
    ({"n_resamples": 5}, "n_resamples = 5 is too few"),
    ({"n_jobs": 0}, "n_jobs must be a positive number"),
])
def test_grid_errors(kwargs, match):
    args = {"n": [100], "delta": 1.0, "p0": 0.1, "b0": 25.0, "n_sims": 10, "progress": False} | kwargs
    with pytest.raises(InputError, match=match):
        bleu.power_grid(args.pop("n"), args.pop("delta"), args.pop("p0"), args.pop("b0"), **args)


def test_figures_4_and_17():
    g = bleu.power_grid([500, 2000], [0.5, 1.0, 2.0], [0.1, 0.3], 25.8, n_sims=50, method="normal",
                        rng=1, progress=False)
    fig4 = bleu.figure4(g.to_frame()[g.to_frame()["p0"] == 0.1])
    assert len(fig4.axes) == 1 and len(fig4.axes[0].lines) >= 2
    fig17 = bleu.figure17(g, by="p0")
    assert [ax.get_title() for ax in fig17.axes] == ["P0 = 0.1", "P0 = 0.3"]


def test_cli_power_mde_estimate(tmp_path: Path, capsys):
    out = tmp_path / "power.json"
    assert main(["bleu", "power", "--n", "500", "--delta", "2", "--n-sims", "50",
                 "--n-resamples", "100", "--seed", "1", "--json", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["n"] == 500 and rec["p0"] == pytest.approx(0.125) and 0 <= rec["power"] <= 1
    assert main(["bleu", "mde", "--n", "500", "--preset", "TF18-TF16", "--n-sims", "50",
                 "--method", "normal", "--seed", "1"]) == 0
    assert "P0 = 0.09, b0 = 29.4" in capsys.readouterr().out
    pytest.importorskip("sacrebleu")
    gen = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    refs = [" ".join(gen.choice(words, 8)) for _ in range(40)]
    a = [" ".join(w if gen.random() > 0.3 else "zz" for w in r.split()) for r in refs]
    b = [" ".join(w if gen.random() > 0.4 else "yy" for w in r.split()) for r in refs]
    for name, lines in {"a": a, "b": b, "r": refs}.items():
        (tmp_path / f"{name}.txt").write_text("\n".join(lines) + "\n")
    effects = tmp_path / "effects.csv"
    assert main(["bleu", "estimate", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"),
                 "--refs", str(tmp_path / "r.txt"), "--n-resamples", "500",
                 "--effects", str(effects)]) == 0
    text = capsys.readouterr().out
    assert "paired randomization test: p =" in text and "P0 =" in text
    assert effects.read_text().startswith("sentence,effect,zero")


def test_cli_errors(tmp_path: Path, capsys):
    assert main(["bleu", "power", "--n", "1", "--delta", "1"]) == 2
    assert "n must be >= 2; got 1" in capsys.readouterr().err
    (tmp_path / "a.txt").write_text("a b\n")
    assert main(["bleu", "estimate", str(tmp_path / "a.txt"), str(tmp_path / "missing.txt"),
                 "--refs", str(tmp_path / "a.txt")]) == 2
    assert "hyps_b: file" in capsys.readouterr().err


def test_cli_grid_writes_csv_and_figure17(tmp_path: Path, capsys):
    out, png = tmp_path / "grid.csv", tmp_path / "fig17.png"
    assert main(["bleu", "grid", "--n", "500,2000", "--delta", "0.5,1", "--p0", "0.1,0.3",
                 "--n-sims", "40", "--method", "normal", "--seed", "1", "--quiet",
                 "--out", str(out), "--plot", str(png)]) == 0
    import pandas as pd

    frame = pd.read_csv(out)
    assert len(frame) == 8 and sorted(set(frame["p0"])) == [0.1, 0.3]
    assert png.stat().st_size > 0


def test_cli_grid_bad_list(capsys):
    with pytest.raises(SystemExit):
        main(["bleu", "grid", "--n", "500,x"])
    assert "expected a comma-separated list of numbers" in capsys.readouterr().err


def test_wilson_interval_contains_the_estimate_at_the_bounds():
    # power 1.0 (every replicate detected) must lie inside its interval, or error bars break
    from nlpower.intervals import wilson_ci

    for n in (100, 300, 500, 1000):
        assert wilson_ci(n, n)[1] == 1.0 and wilson_ci(0, n)[0] == 0.0
