"""Checkpoints: interrupted grids resume without recomputing finished cells."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from conftest import fake_power_result
from nlpower import presets
from nlpower.errors import CheckpointError, NlpowerWarning
from nlpower.grid import checkpoint as ck
from nlpower.powersim.grid import power_grid

SCEN = {"low variance": presets.low_variance(), "high variance": presets.high_variance()}


class CountingPower:
    """Fake nlpower.power: records each cell it runs, raises KeyboardInterrupt after `stop_after`."""

    def __init__(self, stop_after: int | None = None):
        self.stop_after = stop_after
        self.calls: list[tuple] = []

    def __call__(self, design, params, *, n_sims, alpha, test, alternative, method, engine, rng):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise KeyboardInterrupt
        self.calls.append((params.sigma, design.n_workers, design.n_items, params.effect))
        g = np.random.default_rng(rng)
        k = int(g.binomial(n_sims, min(0.9, params.effect * design.n_workers)))
        return fake_power_result(**{"power": k / n_sims, "ci": (0.0, 1.0), "se": 0.05, "type_m": float(g.uniform(1, 2)),
                "type_s": 0.0, "mean_estimate": float(g.normal()), "n_failed": 0, "n_singular": 0,
                "n_sims": n_sims, "n_rejected": k, "test": test, "engine": "fake",
                "alternative": alternative, "alpha": alpha, "coding": "sum",
                "effect": params.effect,
                "design": {"n_workers": design.n_workers, "n_items": design.n_items}})


def run(fn, path, **kw):
    args = dict(n_workers=[3, 10], n_items=[20, 50], effect=[0.05, 0.1], n_sims=30, rng=5,
                power_fn=fn, progress=False, checkpoint=path)
    args.update(kw)
    return power_grid(SCEN, **args)


def test_interrupt_then_resume_equals_uninterrupted(tmp_path):
    full = run(CountingPower(), None)
    path = tmp_path / "grid.ckpt"
    first = CountingPower(stop_after=5)
    with pytest.raises(KeyboardInterrupt):
        run(first, path)
    lines = path.read_text().splitlines()
    assert len(lines) == 1 + 5  # header + the five finished cells
    second = CountingPower()
    resumed = run(second, path)
    pd.testing.assert_frame_equal(resumed.to_frame(), full.to_frame())
    assert resumed.n_resumed == 5 and sum(c.resumed for c in resumed.cells) == 5
    # the finished cells were not recomputed: exactly the other 11 were run
    assert len(second.calls) == 16 - 5
    assert set(first.calls).isdisjoint(second.calls)
    assert "5 of 16 cells read from checkpoint" in resumed.summary()
    # a third run computes nothing
    third = CountingPower()
    again = run(third, path)
    assert third.calls == [] and again.n_resumed == 16
    pd.testing.assert_frame_equal(again.to_frame(), full.to_frame())


def test_parallel_run_writes_a_resumable_checkpoint(tmp_path):
    path = tmp_path / "par.ckpt"
    par = run(CountingPower(), path, n_jobs=2)
    fn = CountingPower()
    again = run(fn, path)
    assert fn.calls == []
    pd.testing.assert_frame_equal(par.to_frame(), again.to_frame())


@pytest.mark.parametrize(
    "change, match",
    [
        ({"n_sims": 31}, "n_sims is 30 in the file but 31 now"),
        ({"rng": 6}, "seed is"),
        ({"effect": [0.05, 0.2]}, "axes is"),
        ({"test": "z"}, "test is \"satterthwaite\" in the file but \"z\" now"),
        ({"alpha": 0.1}, "alpha is 0.05 in the file but 0.1 now"),
    ],
)
def test_checkpoint_from_a_different_grid(tmp_path, change, match):
    path = tmp_path / "grid.ckpt"
    run(CountingPower(), path)
    with pytest.raises(CheckpointError, match=match) as info:
        run(CountingPower(), path, **change)
    assert "pass a new checkpoint path" in str(info.value)


def test_different_params_are_detected(tmp_path):
    path = tmp_path / "grid.ckpt"
    run(CountingPower(), path)
    with pytest.raises(CheckpointError, match="scenarios is"):
        power_grid({"low variance": presets.low_variance(), "high variance": presets.low_variance()},
                   n_workers=[3, 10], n_items=[20, 50], effect=[0.05, 0.1], n_sims=30, rng=5,
                   power_fn=CountingPower(), progress=False, checkpoint=path)


def test_rng_none_resumes_with_the_stored_seed(tmp_path):
    path = tmp_path / "grid.ckpt"
    with pytest.raises(KeyboardInterrupt):
        run(CountingPower(stop_after=3), path, rng=None)
    stored = json.loads(path.read_text().splitlines()[0])["fingerprint"]["seed"]
    resumed = run(CountingPower(), path, rng=None)
    assert resumed.seed["entropy"] == stored["entropy"]
    fresh = run(CountingPower(), None, rng=np.random.SeedSequence(stored["entropy"]))
    pd.testing.assert_frame_equal(resumed.to_frame(), fresh.to_frame())


def test_torn_last_line_is_dropped_and_rerun(tmp_path):
    path = tmp_path / "grid.ckpt"
    full = run(CountingPower(), path)
    text = path.read_text()
    path.write_text(text[: len(text) - 25])  # an interrupt in the middle of the last write
    fn = CountingPower()
    with pytest.warns(NlpowerWarning, match="line 17: it is an incomplete last record"):
        resumed = run(fn, path)
    assert len(fn.calls) == 1
    pd.testing.assert_frame_equal(resumed.to_frame(), full.to_frame())
    assert len(path.read_text().splitlines()) == 17


def test_missing_final_newline_is_repaired(tmp_path):
    path = tmp_path / "grid.ckpt"
    run(CountingPower(), path)
    path.write_text(path.read_text().rstrip("\n"))
    fn = CountingPower()
    run(fn, path)
    assert fn.calls == [] and path.read_text().endswith("\n")


def test_corrupted_middle_line_is_dropped_and_its_cell_recomputed(tmp_path):
    path = tmp_path / "grid.ckpt"
    full = run(CountingPower(), path)
    lines = path.read_text().splitlines()
    lines[3] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    fn = CountingPower()
    with pytest.warns(NlpowerWarning, match=r"line 4: it is not valid JSON.*computed again"):
        again = run(fn, path)
    assert len(fn.calls) == 1
    pd.testing.assert_frame_equal(again.to_frame(), full.to_frame())


def test_not_a_checkpoint_file(tmp_path):
    path = tmp_path / "grid.csv"
    path.write_text("scenario,n_workers,power\nlow,3,0.5\n")
    with pytest.raises(CheckpointError, match=r"exists but is not an nlpower grid checkpoint"):
        run(CountingPower(), path)


def test_other_format_version(tmp_path):
    path = tmp_path / "grid.ckpt"
    path.write_text(json.dumps({"format": ck.FORMAT, "format_version": 99, "fingerprint": {}}) + "\n")
    with pytest.raises(CheckpointError, match="format version 99"):
        run(CountingPower(), path)


def test_empty_file_starts_afresh(tmp_path):
    path = tmp_path / "grid.ckpt"
    path.touch()
    fn = CountingPower()
    run(fn, path)
    assert len(fn.calls) == 16 and len(path.read_text().splitlines()) == 17


def test_fingerprint_diff_and_roundtrip(tmp_path):
    assert ck.fingerprint_diff({"a": (1, 2), "b": 1}, {"a": [1, 2], "b": 1}) == []
    diff = ck.fingerprint_diff({"a": 1, "gone": 2}, {"a": 3, "new": 4})
    assert diff == ["a is 1 in the file but 3 now", "gone is 2 in the file but absent now",
                    "new is not in the file but is 4 now"]
    path = tmp_path / "x.ckpt"
    cp, done = ck.open_checkpoint(path, {"k": np.int64(3)})
    assert done == {}
    with cp:
        cp.append("cell-a", 0, [1, 2], {"power": np.float64(0.25), "n": np.int64(7), "ci_low": 0.1,
                                        "ci_high": 0.4, "se": 0.05, "type_m": None, "type_s": None,
                                        "n_sims": np.int64(70)})
    cp2, done = ck.open_checkpoint(path, {"k": 3})
    cp2.close()
    record = {"power": 0.25, "n": 7, "ci_low": 0.1, "ci_high": 0.4, "se": 0.05, "type_m": None,
              "type_s": None, "n_sims": 70}
    assert done == {"cell-a": {"index": 0, "seed": [1, 2], "record": record, "result": record}}
    assert ck.read_header(path)["fingerprint"] == {"k": 3}
    assert ck.read_header(tmp_path / "absent.ckpt") is None
