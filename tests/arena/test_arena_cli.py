"""``nlpower arena fit | power``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from nlpower.arena import bradley_terry
from nlpower.cli import main


def votes_file(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, 400)
    b = (a + rng.integers(1, 4, 400)) % 4
    p = 1 / (1 + np.exp(-(a - b) * 0.4))
    u = rng.random(400)
    out = np.where(u < p * 0.8, "model_a", np.where(u < 0.8, "model_b", "tie"))
    frame = pd.DataFrame({"model_a": [f"m{i}" for i in a], "model_b": [f"m{i}" for i in b],
                          "winner": out})
    path = tmp_path / "votes.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_fit_prints_and_writes_the_library_result(capsys, tmp_path):
    path, frame = votes_file(tmp_path)
    out = tmp_path / "fit.json"
    assert main(["arena", "fit", str(path), "--ties", "rao-kupper", "--json", str(out)]) == 0
    assert "Rao-Kupper model" in capsys.readouterr().out
    got = pd.DataFrame(json.loads(out.read_text())["scores"])
    want = bradley_terry(frame, ties="rao-kupper").to_frame()
    np.testing.assert_allclose(got["score"], want["score"])
    assert got["system"].tolist() == want["system"].tolist()


def test_fit_error_names_the_flag(capsys, tmp_path):
    path, _ = votes_file(tmp_path)
    assert main(["arena", "fit", str(path), "--outcome", "result"]) == 2
    assert "result" in capsys.readouterr().err


def test_power_table_votes_needed_and_plot(capsys, tmp_path):
    fig = tmp_path / "rank.png"
    code = main(["arena", "power", "--scores", "0,0.5,1", "--votes", "100,400",
                 "--allocation", "uniform,adaptive", "--n-sims", "3", "--seed", "1",
                 "--compare", "s3,s2", "--plot", str(fig)])
    assert code == 0
    text = capsys.readouterr().out
    assert "votes for P(correct top-1) >= 0.8" in text and "pair_power" in text
    assert fig.stat().st_size > 0
