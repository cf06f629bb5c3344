"""Shards + merge = one run, bit for bit (issue 24, item 4): library and CLI."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest

from grid_helpers import AXES, CoinProblem
from nlpower.bleu import power_grid as bleu_grid
from nlpower.cli import main
from nlpower.errors import CheckpointError, InputError
from nlpower.grid import merge, parse_shard, run_grid
from nlpower.grid.records import line_digest


def shards(tmp_path: Path, n: int, problem=None, axes=AXES, rng=11) -> list[Path]:
    paths = [tmp_path / f"s{i}.ckpt" for i in range(1, n + 1)]
    for i, path in enumerate(paths, start=1):
        part = run_grid(problem or CoinProblem(), axes, rng=rng, progress=False, checkpoint=path,
                        shard=f"{i}/{n}")
        assert [c.index % n for c in part.cells] == [i - 1] * len(part.cells)
    return paths


@pytest.mark.parametrize("n", [1, 2, 4, 7])  # 7 > 6 cells: some shards are empty
def test_shards_merged_equal_the_single_run(tmp_path, n):
    one = run_grid(CoinProblem(), AXES, rng=11, progress=False)
    merged = merge(list(reversed(shards(tmp_path, n))), problem=CoinProblem())
    pd.testing.assert_frame_equal(merged.to_frame(), one.to_frame(), check_exact=True)
    assert [c.spawn_key for c in merged.cells] == [c.spawn_key for c in one.cells]
    assert [c.record for c in merged.cells] == [c.record for c in one.cells]
    assert merged.summary() == one.summary()


def test_bleu_shards_rebuild_typed_results_by_name(tmp_path):
    kw = dict(n=[200, 400], delta=[0.5, 1.0], p0=0.125, b0=25.8, n_sims=40, method="normal",
              rng=3, progress=False)
    one = bleu_grid(**kw)
    paths = [tmp_path / f"b{i}.ckpt" for i in (1, 2, 3)]
    for i, path in enumerate(paths, start=1):
        bleu_grid(**kw, checkpoint=path, shard=(i, 3))
    merged = merge(paths, out=tmp_path / "all.ckpt")
    assert type(merged.cells[0].result) is type(one.cells[0].result)
    pd.testing.assert_frame_equal(merged.to_frame(), one.to_frame(), check_exact=True)
    # the merged checkpoint resumes the whole grid without computing anything
    again = bleu_grid(**kw, checkpoint=tmp_path / "all.ckpt")
    assert again.n_resumed == 4
    pd.testing.assert_frame_equal(again.to_frame(), one.to_frame(), check_exact=True)


def test_merge_refuses_missing_conflicting_and_foreign_files(tmp_path):
    paths = shards(tmp_path, 3)
    with pytest.raises(CheckpointError, match=r"2 of 6 cells are in none of the files.*"
                       r"Missing shards: 2/3"):
        merge([paths[0], paths[2]])
    lines = paths[1].read_text().splitlines()
    entry = json.loads(lines[1])
    entry["record"]["power"] = entry["record"]["ci_high"]
    entry["sha256"] = line_digest(entry)
    clash = tmp_path / "clash.ckpt"
    clash.write_text("\n".join([lines[0], json.dumps(entry)]) + "\n")
    with pytest.raises(CheckpointError, match=r"has different results in"):
        merge([*paths, clash])
    entry["sha256"] = "0" * 64
    clash.write_text("\n".join([lines[0], json.dumps(entry)]) + "\n")
    with pytest.raises(CheckpointError, match=r"line 2: its checksum does not match.*Run that "
                       r"shard's command again"):
        merge([*paths, clash])
    other = run_grid(CoinProblem(), AXES, rng=12, progress=False, checkpoint=tmp_path / "o.ckpt",
                     shard="1/3")
    assert other.cells
    with pytest.raises(CheckpointError, match=r"belongs to another grid.*seed"):
        merge([*paths, tmp_path / "o.ckpt"])
    with pytest.raises(CheckpointError, match="does not exist or is empty"):
        merge([tmp_path / "absent.ckpt"])
    with pytest.raises(InputError, match="out .* is the same file as the input paths"):
        merge(paths, out=paths[0])
    (tmp_path / "taken.ckpt").write_text("something\n")
    with pytest.raises(CheckpointError, match="already exists"):
        merge(paths, out=tmp_path / "taken.ckpt")


def test_shard_options_are_checked(tmp_path):
    assert parse_shard("2/5") == (2, 5) and parse_shard((1, 1)) == (1, 1) and parse_shard(None) is None
    for bad in ("0/3", "4/3", "1-3", "a/b", "1/2/3", 3):
        with pytest.raises(InputError, match="shard must be 'i/N'"):
            parse_shard(bad)
    with pytest.raises(InputError, match="needs checkpoint="):
        run_grid(CoinProblem(), AXES, rng=1, progress=False, shard="1/2")
    with pytest.raises(InputError, match="got rng=None"):
        run_grid(CoinProblem(), AXES, progress=False, shard="1/2", checkpoint=tmp_path / "a.ckpt")
    run_grid(CoinProblem(), AXES, rng=1, progress=False, shard="1/2", checkpoint=tmp_path / "b.ckpt")
    with pytest.raises(CheckpointError, match=r"holds shard 1/2 but this run is shard 2/2"):
        run_grid(CoinProblem(), AXES, rng=1, progress=False, shard="2/2", checkpoint=tmp_path / "b.ckpt")


GRID = ["grid", "--preset", "low-variance", "--workers", "3", "--items", "12,16", "--effects", "0.2,0.4",
        "--n-sims", "6", "--test", "z", "--seed", "5", "--quiet"]


def test_cli_shards_and_merge_give_the_single_run_csv(tmp_path, capsys):
    assert main([*GRID, "--out", str(tmp_path / "one.csv")]) == 0
    for i in (1, 2):
        assert main([*GRID, "--shard", f"{i}/2", "--checkpoint", str(tmp_path / f"s{i}.ckpt")]) == 0
    assert "shard 2/2: 2 cell(s) saved in" in capsys.readouterr().out
    assert main(["grid", "merge", str(tmp_path / "s2.ckpt"), str(tmp_path / "s1.ckpt"),
                 "--out", str(tmp_path / "merged.csv")]) == 0
    assert "merged 2 checkpoint files: 4 cells" in capsys.readouterr().out
    assert (tmp_path / "merged.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()


def test_cli_shard_errors_are_cli_errors(tmp_path, capsys):
    assert main([*GRID, "--shard", "1/2"]) == 2
    assert "add --checkpoint" in capsys.readouterr().err
    assert main(["grid", "merge", str(tmp_path / "nope.ckpt")]) == 2
    assert "does not exist or is empty" in capsys.readouterr().err
    assert main([*GRID, "--checkpoint", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_cli_checkpoint_with_non_utf8_bytes_resumes(tmp_path, capsys):
    path = tmp_path / "g.ckpt"
    assert main([*GRID, "--checkpoint", str(path), "--out", str(tmp_path / "a.csv")]) == 0
    data = path.read_bytes().split(b"\n")
    data[2] = b"\xff" + data[2]
    path.write_bytes(b"\n".join(data))
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main([*GRID, "--checkpoint", str(path), "--out", str(tmp_path / "b.csv")]) == 0
    # the CLI prints warnings as one line on stderr; under a recorder they are recorded instead
    said = capsys.readouterr().err + "".join(str(w.message) for w in caught)
    assert "line 3: it is not UTF-8 text" in said
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
