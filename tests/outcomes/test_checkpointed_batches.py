"""The non-Gaussian replicate loops run in checkpointed batches (issue 24, item 4).

clmm and the LMM of Likert ratings, and glmer of head-to-head judgements:
interrupted after k batches and resumed, the result equals an uninterrupted
run bit for bit, through ``power(..., checkpoint=)`` and through a grid.
Batches of 4 replicates (``BATCH_SIZE`` patched) keep the fits few.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, power, presets
from nlpower.errors import CheckpointError
from nlpower.grid import batchfile
from nlpower.outcomes import HeadToHeadParams
from nlpower.outcomes.grid import likert_power_grid
from nlpower.powersim import batches
from nlpower.powersim.result import Replicates

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")
FIELDS = [f.name for f in dataclasses.fields(Replicates) if f.name != "extra"]


class Interrupt(Exception):
    pass


@pytest.fixture(autouse=True)
def small_batches(monkeypatch):
    monkeypatch.setattr(batches, "BATCH_SIZE", 4)


def interrupt_after(monkeypatch, k):
    real = batchfile.BatchFile.put
    calls = {"n": 0}

    def put(self, *args, **kw):
        real(self, *args, **kw)
        calls["n"] += 1
        if calls["n"] >= k:
            raise Interrupt

    monkeypatch.setattr(batchfile.BatchFile, "put", put)


def same_bits(a, b):
    return all(getattr(a, f).tobytes() == getattr(b, f).tobytes() for f in FIELDS)


CASES = {
    "clmm": (CrossedDesign(3, 10), presets.high_variance(0.2),
             dict(outcome="likert", levels=5, analysis="clmm")),
    "likert lmm, not balanced": (CrossedDesign(4, 10, workers_per_item=3), presets.high_variance(0.2),
                                 dict(outcome="likert", levels=5, analysis="lmm", test="z")),
    "glmer": (CrossedDesign(4, 10), HeadToHeadParams.from_share(0.65, sd_worker=0.5, sd_item=0.5),
              dict(outcome="preference")),
}


@pytest.mark.parametrize("case", list(CASES))
def test_outcome_interrupted_and_resumed_equals_the_uninterrupted_run(tmp_path, monkeypatch,
                                                                       case):
    design, params, kw = CASES[case]
    kw = dict(kw, n_sims=10, rng=3)
    plain = power(design, params, **kw)
    path = tmp_path / "run.ckpt"
    interrupt_after(monkeypatch, 2)                 # 2 of the 3 batches (4 + 4 + 2)
    with pytest.raises(Interrupt):
        power(design, params, **kw, checkpoint=path)
    monkeypatch.undo()
    monkeypatch.setattr(batches, "BATCH_SIZE", 4)
    lines = path.read_bytes().count(b"\n")
    assert lines == 3                                 # header + 2 batches
    resumed = power(design, params, **{**kw, "rng": None}, checkpoint=path)  # the file's seed
    assert path.read_bytes().count(b"\n") == 4        # only the last batch was computed
    assert same_bits(resumed.replicates, plain.replicates)
    assert resumed.to_record() == plain.to_record()
    with pytest.raises(CheckpointError, match="seed.entropy is 3 in the file but 4 now"):
        power(design, params, **{**kw, "rng": 4}, checkpoint=path)


def test_likert_grid_killed_mid_cell_resumes_to_the_same_numbers(tmp_path, monkeypatch):
    kw = dict(n_workers=3, n_items=10, effect=[0.1, 0.3], levels=5, analysis=["lmm", "clmm"],
              n_sims=6, null=True, rng=8, progress=False)
    # balanced design: the LMM is the all-at-once fast path; clmm runs in batches (4 + 2)
    plain = likert_power_grid(presets.high_variance(), **kw)
    ckpt = tmp_path / "grid.ckpt"
    interrupt_after(monkeypatch, 4 + 1)   # cell 0: main and null runs (2 batches each); cell 1: 1
    with pytest.raises(Interrupt):
        likert_power_grid(presets.high_variance(), **kw, checkpoint=ckpt)
    monkeypatch.undo()
    monkeypatch.setattr(batches, "BATCH_SIZE", 4)
    files = list((tmp_path / "grid.ckpt.cells").iterdir())
    assert len(files) == 1 and files[0].read_bytes().count(b"\n") == 2
    resumed = likert_power_grid(presets.high_variance(), **kw, checkpoint=ckpt)
    assert resumed.n_resumed == 1
    pd.testing.assert_frame_equal(resumed.to_frame(), plain.to_frame(), check_exact=True)
    assert not (tmp_path / "grid.ckpt.cells").exists()


def test_glmer_batch_zero_alone_is_the_first_batch_of_a_longer_run():
    design, params, kw = CASES["glmer"]
    whole = power(design, params, **kw, n_sims=10, rng=3).replicates
    first = power(design, params, **kw, n_sims=4, rng=3).replicates    # batch 0 alone
    assert same_bits(first, Replicates(*(getattr(whole, f)[:4] for f in FIELDS)))
    assert np.isfinite(whole.estimate).all()
