"""Checkpoints within a grid cell (issue 24, item 4): a killed job resumes mid-cell.

A grid interrupted inside a cell keeps the cell's finished batches in
``<checkpoint>.cells/``; the resumed grid (any ``n_jobs``) equals the
uninterrupted one bit for bit, and a batch file of another grid, cell or seed
is refused.
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from nlpower import power_grid, presets
from nlpower.errors import CheckpointError
from nlpower.grid import batchfile
from nlpower.grid.axes import cell_token
from nlpower.powersim.batches import BATCH_SIZE

pytestmark = pytest.mark.filterwarnings("ignore:test=.* does not hold alpha")

KW = dict(n_workers=3, n_items=10, effect=[0.1, 0.2, 0.3], n_sims=2 * BATCH_SIZE + 10,
          test="z", method="simulate", progress=False)


class Interrupt(Exception):
    pass


def interrupt_after(monkeypatch, k):
    real = batchfile.BatchFile.put
    seen = []

    def put(self, *args, **kw):
        real(self, *args, **kw)
        seen.append(self.path)
        if len(seen) >= k:
            raise Interrupt

    monkeypatch.setattr(batchfile.BatchFile, "put", put)
    return seen


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_killed_mid_cell_resumes_to_the_same_numbers(tmp_path, monkeypatch, n_jobs):
    plain = power_grid(presets.high_variance(), **KW, rng=3)
    ckpt = tmp_path / "grid.ckpt"
    seen = interrupt_after(monkeypatch, 2 + 3)   # cell 0 finishes (3 batches), cell 1 is 2 in
    with pytest.raises(Interrupt):
        power_grid(presets.high_variance(), **KW, rng=3, checkpoint=ckpt)
    monkeypatch.undo()
    cells = tmp_path / "grid.ckpt.cells"
    assert len(set(seen)) == 2 and not seen[0].exists()      # a finished cell leaves no batch file
    assert [p.name for p in cells.iterdir()] == [seen[-1].name]
    assert seen[-1].read_bytes().count(b"\n") == 1 + 2       # header + 2 batches of cell 1
    resumed = power_grid(presets.high_variance(), **KW, rng=3, checkpoint=ckpt, n_jobs=n_jobs)
    assert resumed.n_resumed == 1
    pd.testing.assert_frame_equal(resumed.to_frame(), plain.to_frame(), check_exact=True)
    assert not cells.exists()                                 # tidied once every cell is done


def test_batch_file_of_another_cell_grid_or_seed_is_refused(tmp_path, monkeypatch):
    ckpt = tmp_path / "grid.ckpt"
    seen = interrupt_after(monkeypatch, 1)
    with pytest.raises(Interrupt):
        power_grid(presets.high_variance(), **KW, rng=3, checkpoint=ckpt)
    monkeypatch.undo()
    cell0 = seen[0]
    saved = cell0.read_bytes()
    # the batches of cell 0 put where cell 1's belong (file names depend on the cell alone)
    cell1 = batchfile.CellBatches.for_checkpoint(ckpt, {}).path(
        cell_token({"n_workers": 3, "n_items": 10, "effect": 0.2}))
    shutil.copy(cell0, cell1)
    with pytest.raises(CheckpointError, match=r"cell is .*0\.1.* in the file but .*0\.2.* now"):
        power_grid(presets.high_variance(), **KW, rng=3, checkpoint=ckpt)
    cell1.unlink()
    # the grid checkpoint deleted to start afresh with another seed: its old batch files are refused
    ckpt.unlink()
    with pytest.raises(CheckpointError, match=r"grid is .* in the file but .* now.*delete the file"):
        power_grid(presets.high_variance(), **KW, rng=4, checkpoint=ckpt)
    assert cell0.read_bytes() == saved


def test_grid_without_checkpoint_writes_no_batch_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    power_grid(presets.high_variance(), **{**KW, "n_sims": 20}, rng=3)
    assert list(tmp_path.iterdir()) == []
