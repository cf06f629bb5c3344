"""Pilot files as users hand them to the command line: their own column names, several
systems, messy exports.  Each case gives a result or one clear error (no traceback)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nlpower.ratings
from nlpower.cli import main


def _three_systems(path: Path) -> Path:
    """3 systems, 4 reviewers x 12 questions, 0-100 scores, fully crossed."""
    rng = np.random.default_rng(4)
    rows = [(f"r{w}", f"q{i:02d}", s, float(np.clip(np.round(60 + 10 * rng.normal()), 0, 100)))
            for w in range(4) for i in range(12) for s in ("gpt-3.5", "llama 2", "ours")]
    pd.DataFrame(rows, columns=["reviewer", "question", "model", "score"]).to_csv(path,
                                                                                 index=False)
    return path


COLS = ["--worker", "reviewer", "--item", "question", "--system", "model", "--rating", "score",
        "--scale", "0,100"]


@pytest.mark.parametrize("verb", [
    ["power", "--workers", "4", "--items", "20", "--effect", "0.05", "--n-sims", "10"],
    ["mde", "--workers", "4", "--items", "20"],
    ["grid", "--workers", "4", "--items", "20", "--effects", "0.05", "--n-sims", "10"],
    ["plan", "--effect", "0.05", "--n-boot", "10"],
    ["plan", "--effect", "0.5", "--family", "ordinal", "--n-boot", "10"],
])
def test_a_k_system_pilot_without_contrast_is_refused_before_any_fit(tmp_path, capsys,
                                                                     monkeypatch, verb):
    """The model of all K systems is never fitted for a verb that plans one comparison."""
    def no_fit(*args, **kwargs):
        raise AssertionError("the K-system pilot was fitted")

    monkeypatch.setattr(nlpower.ratings, "fit_ratings", no_fit)
    path = _three_systems(tmp_path / "expert.csv")
    assert main([*verb, "--ratings", str(path), *COLS, "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert "this pilot has 3 systems ('gpt-3.5', 'llama 2', 'ours')" in err
    # the example is typed as it must be on a shell (a label with a space is quoted)
    assert "--contrast 'llama 2,gpt-3.5'" in err
    assert "Traceback" not in err
