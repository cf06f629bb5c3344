"""Nothing lost, nothing forged, nothing raw: one test per cause of a wrong or destroyed result.

Every test feeds one hostile input from outside (a file, a flag, a user
callback) and checks that the package refuses it in its own words, or
recomputes what it cannot trust -- and that no input file changed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from grid_helpers import AXES, CoinProblem
from nlpower.cli import main
from nlpower.errors import CheckpointError, InputError, NlpowerWarning, RatingsError
from nlpower.grid import batchfile, merge, run_grid
from nlpower.grid.records import line_digest
from nlpower.ratings import read_ratings
from nlpower.simpower import simulate_power, simulate_power_grid

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def ratings(tmp_path: Path) -> Path:
    path = tmp_path / "ratings.csv"
    shutil.copy(FIXTURES / "pilot_ratings.csv", path)
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out + out.err


# --- 1. an output never replaces an input -----------------------------------------------------


def test_output_naming_its_input_file_is_refused(ratings, capsys):
    before = digest(ratings)
    code, text = cli(capsys, "fit", str(ratings), "--json", str(ratings), "--scale", "1", "5")
    assert code == 2 and "is the same file as the input FILE" in text
    assert digest(ratings) == before


def test_output_naming_its_input_through_a_hard_link_is_refused(ratings, tmp_path, capsys):
    link = tmp_path / "link.csv"
    os.link(ratings, link)
    before = digest(ratings)
    code, text = cli(capsys, "power", "--ratings", str(ratings), "--workers", "3", "--items", "20",
                     "--effect", "0.1", "--json", str(link))
    assert code == 2 and "is the same file as the input --ratings" in text
    assert digest(ratings) == before


def test_grid_out_naming_its_checkpoint_is_refused(tmp_path, capsys):
    ckpt = tmp_path / "g.ckpt"
    code, text = cli(capsys, "grid", "--checkpoint", str(ckpt), "--out", str(ckpt), "--seed", "1")
    assert code == 2 and "is the same file as --out" in text and not ckpt.exists()


def test_two_outputs_with_one_name_are_refused(tmp_path, capsys):
    out = tmp_path / "g.csv"
    code, text = cli(capsys, "grid", "--out", str(out), "--json", str(tmp_path / "." / "g.csv"))
    assert code == 2 and "one output would overwrite the other" in text


def test_merge_out_naming_a_shard_is_refused(tmp_path, capsys):
    shards = [tmp_path / "s1.ckpt", tmp_path / "s2.ckpt"]
    for s in shards:
        s.write_text("kept\n")
    code, text = cli(capsys, "grid", "merge", *map(str, shards), "--out", str(shards[1]))
    assert code == 2 and "is the same file as the input SHARD" in text
    assert shards[1].read_text() == "kept\n"
    with pytest.raises(InputError, match="is the same file as the input paths"):
        merge(shards, out=shards[0])


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary_file(tmp_path):
    from nlpower._outputs import atomic_output
    from nlpower.errors import OutputError
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(ZeroDivisionError), atomic_output(target) as fh:
        fh.write("half")
        1 / 0  # noqa: B018 - the writer fails mid-way
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["out.csv"]
    with pytest.raises(OutputError, match="cannot write --out .*create the folder first"):
        with atomic_output(tmp_path / "gone" / "out.csv", what="--out") as fh:
            fh.write("x")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_line_not_a_traceback(ratings, capsys):
    code, text = cli(capsys, "fit", str(ratings), "--scale", "1", "5", "--json", "/dev/full")
    assert code == 2
    assert "error: cannot write --json '/dev/full': No space left on device" in text


def test_check_distinct_lets_different_files_through(tmp_path):
    from nlpower._outputs import check_distinct
    check_distinct({"--out": tmp_path / "a.csv", "--json": "-"}, {"--ratings": tmp_path / "b.csv"})


# --- 2-4. checkpoints and batch files prove what they hold ------------------------------------


def coin_grid(path: Path, **kw):
    return run_grid(CoinProblem(**kw), AXES, rng=11, progress=False, checkpoint=path)


def test_a_checkpoint_header_edited_to_match_new_flags_is_refused(tmp_path):
    path = tmp_path / "grid.ckpt"
    coin_grid(path, n_sims=50)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["fingerprint"]["n_sims"] = 60  # as if the run had used 60 replicates
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    with pytest.raises(CheckpointError, match="header's checksum does not match"):
        coin_grid(path, n_sims=60)


def sim_grid(path: Path | None, **kw):
    return simulate_power_grid(coin_data, coin_test, {"n": [20, 40], "share": [0.6, 0.7]},
                               effect=lambda n, share: share - 0.5, n_sims=20, rng=3,
                               progress=False, checkpoint=path, **kw)


def coin_data(rng, n, share):
    return rng.binomial(n, share), n


def coin_test(data):
    k, n = data
    z = (k / n - 0.5) / math.sqrt(0.25 / n)
    return k / n - 0.5, math.erfc(abs(z) / math.sqrt(2))


def tamper(path: Path, line: int, change) -> None:
    """Edit the record on ``line`` (1-based) and recompute its checksum, as a forger would."""
    lines = path.read_text().splitlines()
    entry = json.loads(lines[line - 1])
    change(entry)
    entry["sha256"] = line_digest(entry)
    lines[line - 1] = json.dumps(entry)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("change, reason", [
    (lambda e: e["record"].update(power=e["record"]["power"] / 2 + 0.01), "is not n_rejected / n_sims"),
    (lambda e: e["record"].update(n_sims=10), "its n_sims is 10, but this grid's is 20"),
    (lambda e: e["record"].update(alpha=0.1), "its alpha is 0.1"),
    (lambda e: e["record"]["params"].update(n=40), "it holds n=40, but its cell has n=20"),
])
def test_a_record_that_contradicts_itself_or_the_grid_is_recomputed(tmp_path, change, reason):
    path = tmp_path / "grid.ckpt"
    clean = sim_grid(path).to_frame()
    tamper(path, 2, change)
    with pytest.warns(NlpowerWarning, match=reason):
        again = sim_grid(path)
    assert again.n_resumed == 3
    assert again.to_frame().equals(clean)


def test_two_cells_records_swapped_under_their_keys_are_recomputed(tmp_path):
    path = tmp_path / "grid.ckpt"
    clean = sim_grid(path).to_frame()
    lines = path.read_text().splitlines()
    a, b = json.loads(lines[1]), json.loads(lines[2])
    a["record"], b["record"] = b["record"], a["record"]
    for entry in (a, b):
        entry["sha256"] = line_digest(entry)
    lines[1:3] = [json.dumps(a), json.dumps(b)]
    path.write_text("\n".join(lines) + "\n")
    with pytest.warns(NlpowerWarning, match="but its cell has"):
        again = sim_grid(path)
    assert again.n_resumed == 2 and again.to_frame().equals(clean)


@pytest.mark.parametrize("column, value, reason", [
    ("pvalue", -0.5, r"p-value -0.5 is outside \[0, 1\]"),
    ("estimate", float("nan"), "estimate nan is not finite, but the replicate is not marked failed"),
    ("failed", "no", "failed is 'no', not true or false"),
])
def test_a_batch_line_with_an_impossible_value_is_recomputed(tmp_path, column, value, reason):
    path = tmp_path / "cell.jsonl"
    cols = {"estimate": [0.1, 0.2], "se": [0.1, 0.1], "statistic": [1.0, 2.0], "df": [9.0, 9.0],
            "pvalue": [0.3, 0.04], "converged": [True, True], "singular": [False, False],
            "failed": [False, False]}
    cols[column] = [cols[column][0], value]
    batchfile.BatchFile(path, {"cell": 1}).put("main", 0, 0, 2, cols)
    with pytest.warns(NlpowerWarning, match=reason):
        again = batchfile.BatchFile(path, {"cell": 1})
    assert len(again) == 0 and again.get("main", 0, 0, 2) is None


def test_merge_refuses_a_shard_with_an_edited_header(tmp_path):
    paths = [tmp_path / f"s{i}.ckpt" for i in (1, 2)]
    for i, path in enumerate(paths, 1):
        run_grid(CoinProblem(), AXES, rng=5, progress=False, checkpoint=path, shard=f"{i}/2")
    lines = paths[1].read_text().splitlines()
    lines[0] = lines[0].replace('"n_sims":50', '"n_sims":500')
    paths[1].write_text("\n".join(lines) + "\n")
    with pytest.raises(CheckpointError, match="header's checksum does not match"):
        merge(paths)


def test_a_shard_needs_a_seed_on_the_command_line(tmp_path, capsys):
    code, text = cli(capsys, "grid", "--shard", "1/2", "--checkpoint", str(tmp_path / "s1.ckpt"))
    assert code == 2 and "add --seed" in text and not (tmp_path / "s1.ckpt").exists()


def test_merge_prints_the_merged_grids_seed_only(tmp_path, capsys):
    paths = [tmp_path / f"s{i}.ckpt" for i in (1, 2)]
    for i, path in enumerate(paths, 1):
        run_grid(CoinProblem(), AXES, rng=5, progress=False, checkpoint=path, shard=f"{i}/2")
    code, text = cli(capsys, "grid", "merge", *map(str, paths))
    seeds = [line for line in text.splitlines() if "repeat with --seed" in line]
    assert code == 0 and seeds == ["seed: 5 (repeat with --seed 5)"]


# --- 5-9. user callbacks are checked ----------------------------------------------------------


@pytest.mark.parametrize("p", [-0.5, -math.inf, 1.5])
def test_a_p_value_outside_0_1_is_the_users_error_naming_the_replicate(p):
    with pytest.raises(InputError, match=r"p-value .* in replicate 0 \(its data: .*SeedSequence\(7"):
        simulate_power(coin_data, lambda d: (0.1, p), effect=0.1, params={"n": 10, "share": 0.6},
                       n_sims=5, rng=7)


def test_a_nan_estimate_with_a_p_value_is_the_users_error():
    with pytest.raises(InputError, match=r"estimate nan with p-value 0.01 in replicate 0"):
        simulate_power(coin_data, lambda d: (math.nan, 0.01), effect=0.1,
                       params={"n": 10, "share": 0.6}, n_sims=5, rng=7)


def always_raises(data):
    raise np.linalg.LinAlgError("singular matrix in my test")


@pytest.mark.parametrize("test, shown", [
    (always_raises, "test raised LinAlgError: singular matrix in my test"),
    (lambda d: (0.1, math.nan), "test returned a NaN p-value"),
    (lambda d: (np.array([0.1, 0.2]), np.array([0.01, 0.02])), "test raised TypeError"),
])
def test_a_run_where_every_test_fails_raises_with_the_first_failure(test, shown):
    with pytest.raises(InputError, match=rf"failed in every replicate.*{shown}"):
        simulate_power(coin_data, test, effect=0.1, params={"n": 10, "share": 0.6}, n_sims=8, rng=1)


def test_more_failures_than_max_failed_raise():
    def half(data):
        k, n = data
        if k % 2:
            raise RuntimeError("odd")
        return coin_test(data)
    with pytest.raises(InputError, match=r"failed in \d+ of 40 replicates \(more than max_failed=0.1"):
        simulate_power(coin_data, half, effect=0.1, params={"n": 10, "share": 0.6}, n_sims=40,
                       rng=1, max_failed=0.1)


def test_a_nan_effect_from_an_effect_function_names_its_cell():
    with pytest.raises(InputError, match=r"effect at the cell \(n=20, share=0.6\) is nan"):
        simulate_power_grid(coin_data, coin_test, {"n": 20, "share": [0.6]},
                            effect=lambda n, share: math.nan, n_sims=5, rng=1, progress=False)


def test_a_params_key_generate_does_not_take_is_explained():
    with pytest.raises(InputError, match=r"generate\(rng, \*\*params\) cannot take params \['m'\]"):
        simulate_power(coin_data, coin_test, effect=0.1, params={"m": 10}, n_sims=5, rng=1)


def test_an_unshippable_function_with_n_jobs_2_is_refused_before_any_work():
    import threading
    lock = threading.Lock()

    def locked_test(data, lock=lock):
        return coin_test(data)
    with pytest.raises(InputError, match="test cannot be sent to another process"):
        simulate_power_grid(coin_data, locked_test, {"n": [20, 40], "share": 0.6}, effect=0.1,
                            n_sims=5, rng=1, n_jobs=2, progress=False)


def test_a_custom_problem_whose_cells_all_fail_still_summarises():
    @_frozen
    class Broken:
        name = "broken"
        result_columns = ("power",)

        def fingerprint(self):
            return {}

        def run_cell(self, key, rng):
            raise RuntimeError("no luck")

        def from_record(self, record):
            return record
    grid = run_grid(Broken(), {"n": [1, 2]}, rng=1, progress=False, on_error="record")
    text = grid.summary()
    assert "RuntimeError: no luck" in text and "no cell computed" in text


def _frozen(cls):
    from dataclasses import dataclass
    return dataclass(frozen=True)(cls)


# --- raw refusals -----------------------------------------------------------------------------


def test_a_latin1_rating_file_gets_an_encoding_hint_and_reads_with_it(tmp_path):
    text = (FIXTURES / "pilot_ratings.csv").read_text().replace("w1,", "wé1,")
    path = tmp_path / "latin.csv"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(RatingsError, match=r"not UTF-8 text.*latin-1.*pass encoding='latin-1'"):
        read_ratings(path, scale=(1, 5))
    assert read_ratings(path, scale=(1, 5), encoding="latin-1").report.n_ratings > 0


def test_a_utf16_rating_file_gets_its_hint_and_no_sep_hint(tmp_path, capsys):
    path = tmp_path / "u16.csv"
    path.write_bytes((FIXTURES / "pilot_ratings.csv").read_text().encode("utf-16"))
    code, text = cli(capsys, "fit", str(path), "--scale", "1", "5")
    assert code == 2 and "pass --encoding 'utf-16'" in text and "--sep" not in text
    code, text = cli(capsys, "fit", str(path), "--scale", "1", "5", "--encoding", "utf-16")
    assert code == 0


def test_a_damaged_gzip_is_refused_in_words(tmp_path):
    path = tmp_path / "r.csv.gz"
    path.write_bytes(gzip.compress((FIXTURES / "pilot_ratings.csv").read_bytes())[:60])
    with pytest.raises(RatingsError, match="is not a complete gzip archive"):
        read_ratings(path)


@pytest.mark.parametrize("argv", [
    ["compare", "{bin}"],
    ["accuracy", "estimate", "{bin}", "--a", "a", "--b", "b", "--labels", "y"],
    ["bleu", "estimate", "{bin}", "{bin}", "--refs", "{bin}"],
    ["replicability", "--file", "{bin}"],
])
def test_add_on_readers_refuse_a_binary_file(tmp_path, capsys, argv):
    binary = tmp_path / "scores.txt"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    code, text = cli(capsys, *[a.format(bin=binary) for a in argv])
    assert code == 2 and "is not text: it looks like a binary file" in text
    assert "Traceback" not in text


def test_a_line_with_more_fields_than_the_header_is_refused(tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text("worker,item,system,rating\n,,,1,5\nw,i,A,3,5\n")
    with pytest.raises(RatingsError, match="some lines have more fields than the header's 4"):
        read_ratings(path, scale=(1, 5))


def test_a_column_hint_finds_an_export_name(tmp_path):
    path = tmp_path / "mturk.csv"
    path.write_text("Title,Input.item_id,WorkerId,system,rating\nt,1,a,A,3\n")
    with pytest.raises(RatingsError, match=r"did you mean 'Input.item_id'\?"):
        read_ratings(path)


def test_near_duplicate_axis_values_are_refused():
    with pytest.raises(InputError, match=r"share: axis values 0.6 and 0.6000000000000001 differ"):
        simulate_power_grid(coin_data, coin_test, {"n": 20, "share": [0.6, 0.6 + 1e-16]},
                            effect=0.1, n_sims=5, rng=1, progress=False)


def test_undefined_type_s_is_a_dash_with_the_reason():
    from nlpower.montecarlo import MonteCarloSummary
    mc = MonteCarloSummary.from_draws(np.array([0.1, 0.2]), np.array([False, False]), effect=0.1)
    assert mc.describe() == "Type-S  -    Type-M  - (undefined: they need rejections; there were 0)"


@pytest.mark.parametrize("pvalues", [[True, False], [0.01, None]])
def test_booleans_and_none_are_not_p_values(pvalues):
    import nlpower
    with pytest.raises(InputError, match="is not a p-value"):
        nlpower.replicability(pvalues)


@pytest.mark.parametrize("coding, match", [("treatment", "coding='treatment' is the coding of effect="),
                                           ("bogus", "coding must be one of")])
def test_coding_without_effect_is_not_silently_ignored(coding, match):
    import nlpower
    from nlpower import CrossedDesign, presets
    with pytest.raises(InputError, match=match):
        nlpower.power(CrossedDesign(3, 20), presets.high_variance(0.1), coding=coding,
                      method="analytic")


def test_a_design_too_large_for_memory_is_refused_before_allocating():
    import nlpower
    from nlpower import CrossedDesign, presets
    with pytest.raises(InputError, match=r"needs at least [\d.]+ GiB of memory .* nothing was allocated"):
        nlpower.power(CrossedDesign(10**5, 10**5), presets.high_variance(0.1), method="simulate",
                      n_sims=10, rng=1)


def test_glmer_on_huge_counts_is_a_fit_error_in_words():
    import pandas as pd

    from nlpower.errors import FitError
    from nlpower.glmm import glmer
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"w": np.repeat(np.arange(5), 20), "i": np.tile(np.arange(20), 5),
                         "s": rng.integers(0, 2, 100), "y": (rng.random(100) * 1e12).round()})
    with pytest.raises(FitError, match=r"broke down numerically \(the response 'y' runs from"):
        with np.errstate(all="ignore"):
            glmer("y ~ s + (1|w) + (1|i)", data, family="poisson")


@pytest.mark.parametrize("scale", [(True, 5), (1, np.True_)])
def test_booleans_and_none_are_not_scale_bounds(ratings, scale):
    with pytest.raises(RatingsError, match=r"scale must be a pair \(lo, hi\) of numbers"):
        read_ratings(ratings, scale=scale)


def test_consistency_checks_leave_restated_values_on_another_scale_alone():
    from nlpower.grid.records import check_consistent
    record = {"n_sims": 10, "power": 0.2, "n_rejected": 2, "effect": 0.27, "agreement": 0.91,
              "design": {"n_workers": 3, "n_items": 20}}
    # a Likert cell's latent effect 0.3 is stored as the fitted beta1; a prior's name as its number
    assert check_consistent(record, key={"effect": 0.3, "agreement": "glue", "n_items": 20}) is None
    assert "n_items=20, but its cell has n_items=50" in check_consistent(record, key={"n_items": 50})


def test_an_exact_cell_of_a_simulated_grid_is_not_a_contradiction():
    from nlpower.grid.records import check_consistent
    exact = {"n_sims": 0, "n_rejected": 0, "power": 0.3, "alpha": 0.05}
    assert check_consistent(exact, settings={"n_sims": 200, "alpha": 0.05}) is None
    forged = {"n_sims": 0, "n_rejected": 12, "power": 0.3}
    assert "its n_sims is 0" in check_consistent(forged, settings={"n_sims": 200})


def test_an_output_folder_that_takes_no_file_is_refused_before_any_work(tmp_path, capsys,
                                                                       monkeypatch):
    import errno
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    code, text = cli(capsys, "grid", "--out", str(tmp_path / "g.csv"), "--seed", "1")
    assert code == 2
    assert "cannot write --out" in text and "Permission denied" in text
    assert "Nothing was computed" in text and "seed:" not in text


def test_a_spreadsheet_renamed_csv_is_not_read_as_a_header(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_bytes(b"PK\x03\x04" + b"xl/workbook.xml" * 4)
    with pytest.raises(RatingsError, match="is not CSV text; it looks like a binary file"):
        read_ratings(path)
