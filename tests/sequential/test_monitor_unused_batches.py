"""``sequential monitor`` says which batches of the file its looks left out, and why."""

from __future__ import annotations

import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.cli import main

FORMULA = "rating ~ x + (1 | worker) + (1 | item)"


@pytest.fixture(scope="module")
def batched(tmp_path_factory):
    """30 items in 3 batches of 10 (every item of a batch rated by every worker)."""
    r = simulate(CrossedDesign(4, 30), presets.high_variance(0.05), rng=11)
    r["batch"] = (r["item"].str[1:].astype(int) - 1) // 10 + 1
    path = tmp_path_factory.mktemp("seq") / "ratings.csv"
    r.to_csv(path, index=False)
    return path, r


def _monitor(path, max_items, capsys):
    assert main(["sequential", "monitor", str(path), "--batch", "batch", "--formula", FORMULA,
                 "--max-items", str(max_items), "--looks", "3"]) == 0
    return capsys.readouterr().out


def test_batches_beyond_the_designs_maximum_are_counted(batched, capsys):
    path, r = batched
    out = _monitor(path, 10, capsys)
    assert "look 2" not in out and "stop: final look" in out
    later = r[r["batch"] > 1]
    assert (f"2 later batches of the file ({len(later)} ratings, {later['item'].nunique()} "
            "items not in the looks) were not analysed") in out
    assert "maximum of 10 items" in out and "binding" in out


def test_a_look_past_the_maximum_is_named(batched, capsys):
    path, r = batched
    out = _monitor(path, 15, capsys)
    assert "look 3" not in out
    assert f"1 later batch of the file ({int((r['batch'] == 3).sum())} ratings" in out
    assert "look 2 has 20 items, more than the design's maximum of 15" in out


def test_a_file_ending_before_the_maximum_says_the_study_continues(batched, capsys):
    path, _ = batched
    out = _monitor(path, 45, capsys)
    assert "-> continue" in out.splitlines()[2]
    assert "the file ends at look 3" in out and "not analysed" not in out


def test_a_file_used_to_the_end_has_no_note(batched, capsys):
    path, _ = batched
    out = _monitor(path, 30, capsys)
    assert "look 3" in out and "note:" not in out


def test_batches_after_a_stop_are_counted():
    import numpy as np
    import pandas as pd

    from nlpower.sequential import Monitor, group_sequential
    from nlpower.sequential.monitor import replay_note

    g = np.random.default_rng(1)
    judged = pd.DataFrame({"worker": np.tile(np.arange(6), 40), "item": np.repeat(np.arange(40), 6),
                           "win": (g.random(240) < 0.7).astype(float)})
    batch = (judged["item"] >= 20).to_numpy().astype(int)
    mon = Monitor(group_sequential(2), outcome="preference", max_items=40)
    look = mon.update(judged[batch == 0])
    note = replay_note(mon, judged, batch, "item")
    assert look.decision == "stop: efficacy"  # 70% preferred, 20 items x 6 workers
    assert note is not None
    assert note.startswith("1 later batch of the file (120 ratings, 20 items not in the looks)")
    assert "the study stopped at look 1 (efficacy)" in note
