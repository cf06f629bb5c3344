"""Replicates in fixed batches (nlpower.powersim.batches): checkpoints within a long run.

A run interrupted after k batches and resumed from its checkpoint gives the
numbers of an uninterrupted run, bit for bit; a checkpoint written for other
arguments or another seed is refused.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from nlpower import CrossedDesign, power, presets
from nlpower.errors import CheckpointError, InputError, NlpowerWarning
from nlpower.grid import batchfile
from nlpower.powersim.batches import BATCH_SIZE, batch_bounds, by_rows, run_batches
from nlpower.powersim.result import Replicates

DESIGN = CrossedDesign(3, 12)
PARAMS = presets.high_variance(0.15)
KW = dict(n_sims=2 * BATCH_SIZE + 17, test="z", method="simulate", rng=5, null=True)
pytestmark = pytest.mark.filterwarnings("ignore:test=.* does not hold alpha")
FIELDS = [f.name for f in dataclasses.fields(Replicates) if f.name != "extra"]


class Interrupt(Exception):
    """Stands in for a kill right after a batch reached the disk."""


def interrupt_after(monkeypatch, k):
    """Make BatchFile.put raise after its k-th successful write (counting from now)."""
    real = batchfile.BatchFile.put
    calls = {"n": 0}

    def put(self, *args, **kw):
        real(self, *args, **kw)
        calls["n"] += 1
        if calls["n"] >= k:
            raise Interrupt(f"killed after {k} batches")

    monkeypatch.setattr(batchfile.BatchFile, "put", put)
    return calls


def count_puts(monkeypatch):
    real = batchfile.BatchFile.put
    calls = {"n": 0}

    def put(self, *args, **kw):
        calls["n"] += 1
        real(self, *args, **kw)

    monkeypatch.setattr(batchfile.BatchFile, "put", put)
    return calls


def same_bits(a: Replicates, b: Replicates) -> bool:
    return all(getattr(a, f).dtype == getattr(b, f).dtype
               and getattr(a, f).tobytes() == getattr(b, f).tobytes() for f in FIELDS)


def fake_replicates(lo, hi):
    z = np.arange(lo, hi, dtype=float) / 7.0
    flags = z > 5
    return Replicates(z, z + 1, z * 3, np.full(hi - lo, np.inf), z / 1000, ~flags, flags, flags)


def test_batches_are_fixed_by_n_sims_alone():
    assert batch_bounds(1) == [(0, 1)]
    assert batch_bounds(BATCH_SIZE) == [(0, BATCH_SIZE)]
    bounds = batch_bounds(1000)
    assert len(bounds) == 1000 // BATCH_SIZE and bounds[-1] == (1000 - BATCH_SIZE, 1000)
    # a run of m replicates is the first batches of a run of N > m
    assert batch_bounds(3 * BATCH_SIZE) == batch_bounds(5 * BATCH_SIZE)[:3]


def test_driver_resumes_at_the_first_unfinished_batch(tmp_path):
    path = tmp_path / "run.ckpt"
    seen: list[tuple[int, int]] = []

    def compute(lo, hi):
        seen.append((lo, hi))
        if len(seen) == 3:
            raise Interrupt
        return fake_replicates(lo, hi)

    with pytest.raises(Interrupt):
        run_batches(170, compute, run="r", checkpoint=batchfile.BatchFile(path, {"x": 1}))
    seen.clear()
    resumed = run_batches(170, lambda lo, hi: (seen.append((lo, hi)), fake_replicates(lo, hi))[1],
                          run="r", checkpoint=batchfile.BatchFile(path, {"x": 1}))
    assert seen == [(100, 150), (150, 170)]          # batches 0 and 1 were read back
    assert same_bits(resumed, fake_replicates(0, 170))
    # another run name in the same file shares nothing
    seen.clear()
    run_batches(60, lambda lo, hi: (seen.append((lo, hi)), fake_replicates(lo, hi))[1],
                run="other", checkpoint=batchfile.BatchFile(path, {"x": 1}))
    assert seen == [(0, 50), (50, 60)]


def chained(design, y, params, opts):
    """A stand-in analysis whose every fit starts from the previous one of the same call."""
    start = 0.0
    out = []
    for row in y:
        start = 0.5 * start + float(row.sum())          # depends on every earlier row of the call
        if start > 1e6:
            raise ArithmeticError("diverged")
        out.append(start)
    z = np.asarray(out)
    no = np.zeros(len(out), dtype=bool)
    return Replicates(z, z, z, z, 1.0 / (1.0 + z), no, no, no)  # p-values in [0, 1]


def test_by_rows_starts_every_batch_afresh_so_a_resume_changes_nothing(tmp_path, monkeypatch):
    y = np.random.default_rng(1).integers(1, 6, size=(130, 7))
    plain = by_rows(chained, "toy", None, y, "p", "o")
    # batch b's first value ignores batch b-1: the chain restarts at every batch
    assert plain.estimate[50] == float(y[50].sum())
    path = tmp_path / "rows.ckpt"
    interrupt_after(monkeypatch, 2)
    with batchfile.active(batchfile.BatchFile(path, {"toy": 1})), pytest.raises(Interrupt):
        by_rows(chained, "toy", None, y, "p", "o")
    monkeypatch.undo()
    puts = count_puts(monkeypatch)
    with batchfile.active(batchfile.BatchFile(path, {"toy": 1})):
        resumed = by_rows(chained, "toy", None, y, "p", "o")
        other = by_rows(chained, "toy", None, y[::-1].copy(), "p", "o")   # other data: own run
    assert puts["n"] == 1 + 3
    assert same_bits(resumed, plain)
    assert not same_bits(other, plain)
    y[120, 0] = 10**7
    with pytest.raises(ArithmeticError) as info:
        by_rows(chained, "toy", None, y, "p", "o")
    assert "(in the batch of replicates 100-129 of 130)" in info.value.__notes__


def test_power_interrupted_and_resumed_equals_the_uninterrupted_run(tmp_path, monkeypatch):
    plain = power(DESIGN, PARAMS, **KW)                      # no checkpoint at all
    path = tmp_path / "run.ckpt"
    for k in (2, 3):  # the main run stops mid-way; then the effect-0 run stops mid-way
        interrupt_after(monkeypatch, k)
        with pytest.raises(Interrupt):
            power(DESIGN, PARAMS, **KW, checkpoint=path)
        monkeypatch.undo()
    puts = count_puts(monkeypatch)
    resumed = power(DESIGN, PARAMS, **KW, checkpoint=path)
    assert puts["n"] == 2 * len(batch_bounds(KW["n_sims"])) - 5   # only the unfinished batches
    assert same_bits(resumed.replicates, plain.replicates)
    assert resumed.to_record() == plain.to_record()
    assert (resumed.power, resumed.type1) == (plain.power, plain.type1)
    again = power(DESIGN, PARAMS, **KW, checkpoint=path)       # all read back
    assert puts["n"] == 2 * len(batch_bounds(KW["n_sims"])) - 5
    assert again.to_record() == plain.to_record()


def test_damaged_lines_are_dropped_with_a_warning_and_recomputed(tmp_path):
    path = tmp_path / "run.ckpt"
    plain = power(DESIGN, PARAMS, **KW, checkpoint=path)
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace('"estimate":[', '"estimate":[1.5,', 1)       # an edited value
    path.write_text("\n".join(lines) + "\n" + lines[3][: len(lines[3]) // 2])   # torn tail
    with pytest.warns(NlpowerWarning) as got:
        resumed = power(DESIGN, PARAMS, **KW, checkpoint=path)
    text = " ".join(str(w.message) for w in got)
    assert "line 3: its checksum does not match" in text and "incomplete last record" in text
    assert same_bits(resumed.replicates, plain.replicates)


def test_checkpoint_of_another_seed_or_setting_is_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    power(DESIGN, PARAMS, **{**KW, "n_sims": 60}, checkpoint=path)
    before = path.read_bytes()
    with pytest.raises(CheckpointError, match=r"seed.entropy is 5 in the file but 6 now.*Resume "
                       r"with the original arguments"):
        power(DESIGN, PARAMS, **{**KW, "n_sims": 60, "rng": 6}, checkpoint=path)
    with pytest.raises(CheckpointError, match=r"options.n_sims is 60 in the file but 70 now"):
        power(DESIGN, PARAMS, **{**KW, "n_sims": 70}, checkpoint=path)
    with pytest.raises(CheckpointError, match="params.sd_item is"):
        power(DESIGN, presets.low_variance(0.15), **{**KW, "n_sims": 60}, checkpoint=path)
    assert path.read_bytes() == before                          # a refused file is not touched
    other = tmp_path / "notes.txt"
    other.write_text("my notes\n")
    with pytest.raises(CheckpointError, match="not an nlpower batch checkpoint"):
        power(DESIGN, PARAMS, **KW, checkpoint=other)
    with pytest.raises(CheckpointError, match="is a directory"):
        power(DESIGN, PARAMS, **KW, checkpoint=tmp_path)
    with pytest.raises(InputError, match="checkpoint must be a file path"):
        power(DESIGN, PARAMS, **KW, checkpoint=3)


def test_fast_paths_write_no_checkpoint(tmp_path):
    path = tmp_path / "run.ckpt"
    res = power(CrossedDesign(3, 50), PARAMS, n_sims=100, rng=1, checkpoint=path)
    assert res.method == "balanced" and not path.exists()


_CHILD = """
import sys
from nlpower import CrossedDesign, power, presets
power(CrossedDesign(3, 12), presets.high_variance(0.15), n_sims=150, test="z",
      method="simulate", rng=5, checkpoint=sys.argv[1])
"""


def test_a_killed_process_resumes_mid_run(tmp_path):
    path = tmp_path / "run.ckpt"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if path.exists() and path.read_bytes().count(b"\n") >= 2:   # header + 1 batch
                break
            time.sleep(0.05)
        assert child.poll() is None, "the child finished before it could be killed"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    n_lines = path.read_bytes().count(b"\n")
    assert 2 <= n_lines < 1 + len(batch_bounds(150))
    kw = dict(n_sims=150, test="z", method="simulate", rng=5)
    resumed = power(CrossedDesign(3, 12), presets.high_variance(0.15), **kw, checkpoint=path)
    plain = power(CrossedDesign(3, 12), presets.high_variance(0.15), **kw)
    assert same_bits(resumed.replicates, plain.replicates)


def test_batch_file_refuses_another_fingerprint_and_names_it(tmp_path):
    path = tmp_path / "b.ckpt"
    bf = batchfile.BatchFile(path, {"cell": "a", "seed": [1]})
    assert not path.exists()                                       # created at the first batch
    bf.put("r", 0, 0, 2, {"x": [1.0, 2.0]})
    assert batchfile.BatchFile(path, {"cell": "a", "seed": [1]}).get("r", 0, 0, 2) == {"x": [1.0, 2.0]}
    with pytest.raises(CheckpointError, match=r"cell is \"a\" in the file but \"b\" now"):
        batchfile.BatchFile(path, {"cell": "b", "seed": [1]})
    with pytest.raises(CheckpointError, match=r"seed is \[1\] in the file but \[2\] now"):
        batchfile.BatchFile(path, {"cell": "a", "seed": [2]})



@pytest.mark.parametrize("outcome", ["gaussian", "likert"])
def test_power_n_jobs_runs_batches_in_processes_with_the_same_numbers(outcome):
    """``power(..., n_jobs=2)`` computes the batches in two processes and changes no number."""
    import nlpower
    from nlpower import CrossedDesign, presets

    kw = ({"method": "simulate"} if outcome == "gaussian"
          else {"outcome": "likert", "levels": 5, "analysis": "clmm"})
    design = CrossedDesign(3, 8) if outcome == "gaussian" else CrossedDesign(3, 6)
    n_sims = 120 if outcome == "gaussian" else 60          # more than one batch of 50
    a = nlpower.power(design, presets.high_variance(0.3), n_sims=n_sims, rng=5, **kw)
    b = nlpower.power(design, presets.high_variance(0.3), n_sims=n_sims, rng=5, n_jobs=2, **kw)
    assert np.array_equal(a.replicates.pvalue, b.replicates.pvalue, equal_nan=True)
    assert np.array_equal(a.replicates.estimate, b.replicates.estimate, equal_nan=True)
    assert a.power == b.power


def test_replicate_jobs_refuses_bad_n_jobs():
    from nlpower.errors import InputError
    from nlpower.powersim.batches import replicate_jobs
    for bad in (0, -2, 1.5, True):
        with pytest.raises(InputError, match="n_jobs"):
            with replicate_jobs(bad):
                pass


def test_extra_columns_round_trip_through_a_checkpoint(tmp_path):
    """A run that tests several hypotheses keeps its per-hypothesis columns across a resume."""
    from nlpower.grid.batchfile import BatchFile

    def compute(lo, hi):
        base = fake_replicates(lo, hi)
        return dataclasses.replace(base, extra={"pvalue.1": base.pvalue / 2})

    path = tmp_path / "x.ckpt"
    first = run_batches(70, compute, run="extra", checkpoint=BatchFile(path, {"p": 1}))
    again = run_batches(70, lambda lo, hi: (_ for _ in ()).throw(AssertionError("recomputed")),
                        run="extra", checkpoint=BatchFile(path, {"p": 1}))
    assert first.extra["pvalue.1"].tobytes() == again.extra["pvalue.1"].tobytes()
    assert again.extra["pvalue.1"].shape == (70,)
