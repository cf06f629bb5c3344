"""Simulated judge power on the grid runner: reproducible, resumable records."""

from __future__ import annotations

from pathlib import Path

import pytest

from nlpower.judge import simulate_judge_power

AXES = {"n_items": 60, "n_labelled": 12, "effect": [0.0, 1.5]}


def test_same_seed_same_grid_and_checkpoint_round_trip(tmp_path: Path) -> None:
    ck = tmp_path / "judge.jsonl"
    a = simulate_judge_power(AXES, n_sims=2, rng=3, progress=False, checkpoint=ck).to_frame()
    b = simulate_judge_power(AXES, n_sims=2, rng=3, progress=False).to_frame()
    resumed = simulate_judge_power(AXES, n_sims=2, rng=3, progress=False,
                                   checkpoint=ck).to_frame()
    cols = ["power", "rejection_rate", "power_human", "lambda"]
    assert a[cols].equals(b[cols])
    assert a[cols].equals(resumed[cols])
    assert a["power"].isna().iloc[0]  # no power at effect 0, only a rejection rate
    assert 0 <= a["rejection_rate"].iloc[0] <= 1


def test_errors() -> None:
    from nlpower.errors import InputError

    with pytest.raises(InputError, match="n_sims"):
        simulate_judge_power(AXES, n_sims=0)
