"""A checkpoint corrupted in any way never yields a wrong grid (issue 23, item 1).

Each test corrupts a finished checkpoint one way, resumes, and checks that the
bad record is named by its line in a warning (or the file is refused with a
:class:`CheckpointError`), that its cell is computed again, and that the grid
equals the clean run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from grid_helpers import AXES, CoinProblem, CoinResult
from nlpower.errors import CheckpointError, NlpowerWarning
from nlpower.grid import checkpoint as ck
from nlpower.grid import run_grid
from nlpower.grid.records import check_record, line_digest
from nlpower.intervals import ConfidenceInterval


def grid(path: Path | None, problem: Any = None) -> Any:
    return run_grid(problem or CoinProblem(), AXES, rng=11, progress=False, checkpoint=path)


@pytest.fixture
def clean(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    path = tmp_path / "grid.ckpt"
    full = grid(path)
    return path, full.to_frame()


def edit(path: Path, line: int, change: Callable[[dict[str, Any]], None], *, rehash: bool = True) -> None:
    """Apply ``change`` to the entry on (1-based) ``line``; recompute its checksum if ``rehash``."""
    lines = path.read_text().splitlines()
    entry = json.loads(lines[line - 1])
    change(entry)
    if rehash:
        entry["sha256"] = line_digest(entry)
    lines[line - 1] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")


def resumes_correctly(path: Path, expected: pd.DataFrame, match: str, n_recomputed: int = 1) -> None:
    with pytest.warns(NlpowerWarning, match=match) as caught:
        again = grid(path)
    assert sum("computed again" in str(w.message) for w in caught) == n_recomputed
    assert again.n_resumed == len(expected) - n_recomputed
    pd.testing.assert_frame_equal(again.to_frame(), expected)
    # the bad lines are gone: the next run reads every cell back, silently
    final = grid(path)
    assert final.n_resumed == len(expected)
    pd.testing.assert_frame_equal(final.to_frame(), expected)


def set_field(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(entry: dict[str, Any]) -> None:
        entry["record"][name] = value
    return change


@pytest.mark.parametrize("name, value, why", [
    ("power", -3.0, r"power is -3.0, outside \[0, 1\]"),
    ("power", 1.7, r"power is 1.7, outside \[0, 1\]"),
    ("power", "abc", r"power is 'abc', not a number"),
    ("power", True, r"power is True, not a number"),
    ("ci_low", -5, r"ci_low is -5, outside \[0, 1\]"),
    ("n_sims", 2.5, r"n_sims is 2.5, not a non-negative integer"),
    ("n_sims", -1, r"n_sims is -1, not a non-negative integer"),
])
def test_a_value_out_of_range_or_of_the_wrong_type(clean, name, value, why):
    path, expected = clean
    edit(path, 3, set_field(name, value))  # even with a recomputed checksum
    resumes_correctly(path, expected, rf"line 3: {why}.*computed again")


def test_an_edited_value_fails_its_checksum(clean):
    path, expected = clean
    edit(path, 2, set_field("power", 0.5), rehash=False)  # plausible, but not what was computed
    resumes_correctly(path, expected, r"line 2: its checksum does not match")


def test_a_record_without_power(clean):
    path, expected = clean
    edit(path, 4, lambda e: e["record"].pop("power"))
    resumes_correctly(path, expected, r"line 4: the record lacks power")


def test_a_line_without_its_checksum(clean):
    path, expected = clean
    edit(path, 4, lambda e: e.pop("sha256"), rehash=False)
    resumes_correctly(path, expected, r"line 4: the line lacks sha256")


def test_power_outside_its_interval(clean):
    path, expected = clean
    edit(path, 5, lambda e: e["record"].update(power=0.0, ci_low=0.5, ci_high=0.9))
    resumes_correctly(path, expected, r"line 5: power 0.0 lies outside its interval")


def test_more_rejections_than_replicates():
    rec = {"power": 0.5, "ci_low": 0.4, "ci_high": 0.6, "se": 0.05, "type_m": 1.0,
           "type_s": 0.0, "n_sims": 10, "n_rejected": 11}
    assert check_record(rec) == "n_rejected is 11, more than n_sims = 10"
    assert check_record({**rec, "n_rejected": 5, "type_m": -1.0}).startswith("type_m is -1.0")
    assert check_record({**rec, "n_rejected": 5}) is None
    assert check_record([1, 2]) == "the record is list, not an object"


def test_a_cell_of_another_grid_index_or_seed(clean):
    path, expected = clean
    edit(path, 2, lambda e: e.update(cell='{"p":0.3,"scale":1.0}'))
    edit(path, 3, lambda e: e.update(index=99))
    edit(path, 4, lambda e: e.update(seed=[1, 2, 3, 4]))
    resumes_correctly(path, expected, r"line [234]: (cell .* is not a cell of this grid|cell .* has "
                      r"index 99|cell .* has seed \[1, 2, 3, 4\], not its key-derived seed)",
                      n_recomputed=3)


def test_two_records_for_one_cell_with_different_values(clean):
    path, expected = clean
    lines = path.read_text().splitlines()
    other = json.loads(lines[2])
    other["record"]["power"] = other["record"]["ci_low"]  # plausible, different, checksummed
    other["sha256"] = line_digest(other)
    path.write_text("\n".join([*lines, json.dumps(other)]) + "\n")
    with pytest.warns(NlpowerWarning, match=r"line 3: cell .* is stored again at line 8 with other "
                      r"values") as caught:
        again = grid(path)
    assert any("line 8: cell" in str(w.message) for w in caught)
    pd.testing.assert_frame_equal(again.to_frame(), expected)
    assert again.n_resumed == len(expected) - 1


def test_two_identical_records_for_one_cell_are_harmless(clean, recwarn):
    path, expected = clean
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines, lines[2]]) + "\n")
    again = grid(path)
    assert again.n_resumed == len(expected) and not recwarn.list
    pd.testing.assert_frame_equal(again.to_frame(), expected)


def test_non_utf8_bytes_in_a_record(clean):
    path, expected = clean
    data = path.read_bytes().split(b"\n")
    data[3] = data[3][:20] + b"\xff\xfe" + data[3][20:]
    path.write_bytes(b"\n".join(data))
    resumes_correctly(path, expected, r"line 4: it is not UTF-8 text")


def test_non_utf8_bytes_in_the_header(tmp_path):
    path = tmp_path / "grid.ckpt"
    path.write_bytes(b"\xff\xfe\x00not a checkpoint\n")
    with pytest.raises(CheckpointError, match="is not an nlpower grid checkpoint"):
        grid(path)


def test_a_directory_as_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match=r"is a directory; a checkpoint is a file.*grid\.ckpt"):
        grid(tmp_path)


def test_an_older_format_is_refused(tmp_path):
    path = tmp_path / "old.ckpt"
    path.write_text(json.dumps({"format": ck.FORMAT, "format_version": 1, "fingerprint": {}}) + "\n")
    with pytest.raises(CheckpointError, match=r"format version 1.*Start a new checkpoint"):
        grid(path)


@dataclass(frozen=True)
class StrictCoin(CoinProblem):
    """A problem whose results need a field the generic checks do not know."""

    def run_cell(self, key: Mapping[str, Any], rng: Any) -> Any:
        res = super().run_cell(key, rng)
        return StrictResult(res.power, res.ci, res.n_sims)

    def from_record(self, record: Mapping[str, Any]) -> CoinResult:
        if record.get("flips") != record["n_sims"]:
            raise KeyError("flips")
        return StrictResult(record["power"], ConfidenceInterval(record["ci_low"], record["ci_high"]),
                            record["n_sims"])


@dataclass(frozen=True)
class StrictResult(CoinResult):
    def to_record(self) -> dict[str, Any]:
        return {**super().to_record(), "flips": self.n_sims}


def test_a_record_the_problem_cannot_read_back(tmp_path):
    path = tmp_path / "strict.ckpt"
    expected = grid(path, StrictCoin()).to_frame()
    edit(path, 6, lambda e: e["record"].pop("flips"))
    with pytest.warns(NlpowerWarning, match=r"line 6: its record cannot be read back \(KeyError") as caught:
        again = grid(path, StrictCoin())
    assert len(caught) == 1
    pd.testing.assert_frame_equal(again.to_frame(), expected)
