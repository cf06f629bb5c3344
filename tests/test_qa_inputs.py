"""Real-shaped and bad input files through the verbs that read votes, judgements and batches.

Each test is a file a user could have: an empty or binary votes file, a vote
of a system against itself, batches labelled by text.  Before, these ended
in a pandas traceback, named a 0-based row, or replayed the looks of a
sequential study in the wrong order without a word.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, presets, read_ratings, simulate
from nlpower._inputs import decoding_hint
from nlpower.agreement import krippendorff_alpha
from nlpower.arena import arena_power, bradley_terry, read_votes
from nlpower.cli import main
from nlpower.errors import InputError, RatingsError
from nlpower.judge import fit as judge_fit
from nlpower.pilot import fit_judgements
from nlpower.ratings import RatingsWarning
from nlpower.sequential import group_sequential, sequential_power

ELF = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00>\x00\x01\x00\x00\x00`\x10" + bytes(300)


def _votes(n: int = 40, seed: int = 0) -> pd.DataFrame:
    gen = np.random.default_rng(seed)
    systems = np.array(["gpt", "claude", "llama"])
    pairs = np.array([gen.choice(3, 2, replace=False) for _ in range(n)])
    return pd.DataFrame({"model_a": systems[pairs[:, 0]], "model_b": systems[pairs[:, 1]],
                         "winner": gen.choice(["model_a", "model_b", "tie"], n),
                         "rater": gen.choice(["r1", "r2", "r3"], n),
                         "prompt": gen.choice(["p1", "p2", "p3", "p4"], n)})


@pytest.mark.parametrize("content, words", [
    (b"", "is empty"),
    (ELF, "binary file"),
    ("model_a,model_b,winner\ngpt,llama,tie\n".encode("utf-16"), "UTF-16"),
], ids=["empty", "binary", "utf16"])
def test_arena_fit_refuses_an_unreadable_votes_file_in_words(capsys, tmp_path, content, words):
    path = tmp_path / "votes.csv"
    path.write_bytes(content)
    assert main(["arena", "fit", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("nlpower arena: error: votes file:")
    assert words in err


@pytest.mark.parametrize("reader", [
    read_votes,
    lambda p: bradley_terry(p, a="model_a", b="model_b", outcome="winner"),
    lambda p: fit_judgements(p, a="model_a", b="model_b", choice="winner"),
])
def test_vote_and_judgement_readers_raise_the_package_error(tmp_path, reader):
    path = tmp_path / "votes.csv"
    path.write_bytes(b"")
    with pytest.raises(RatingsError, match="is empty"):
        reader(path)


def test_a_semicolon_votes_file_says_which_separator(tmp_path):
    path = tmp_path / "votes.csv"
    _votes().to_csv(path, index=False, sep=";")
    with pytest.raises(RatingsError, match="semicolon-separated"):
        read_votes(path)
    assert len(read_votes(path, sep=";")) == 40


def test_a_self_match_is_named_by_its_line_in_the_file(tmp_path):
    votes = _votes()
    votes.loc[30, "model_b"] = votes.loc[30, "model_a"]
    path = tmp_path / "votes.csv"
    votes.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"^line 32 .*compare a system with itself"):
        bradley_terry(path, a="model_a", b="model_b", outcome="winner")
    # a data frame's rows are named by its own index labels
    with pytest.raises(InputError, match=r"^row 30 \(rows by the data frame's index\)"):
        bradley_terry(votes, a="model_a", b="model_b", outcome="winner")


def test_missing_systems_are_named_by_their_lines(tmp_path):
    votes = _votes()
    votes.loc[[4, 9], "model_a"] = None
    path = tmp_path / "votes.csv"
    votes.to_csv(path, index=False)
    with pytest.raises(InputError, match="missing values at lines 6, 11"):
        bradley_terry(path, a="model_a", b="model_b", outcome="winner")


def test_a_binary_file_is_not_called_utf16():
    assert "binary file" in decoding_hint(ELF)
    assert "UTF-16" in decoding_hint("worker,item\nw1,i1\n".encode("utf-16-le"))
    assert "UTF-16" in decoding_hint("worker,item\nw1,i1\n".encode("utf-16-be"))


def _batched(tmp_path, labels: dict[int, object]):
    ratings = simulate(CrossedDesign(4, 30), presets.high_variance(0.05), rng=11)
    batch = (ratings["item"].str[1:].astype(int) - 1) // 10 + 1
    ratings["batch"] = batch.map(labels)
    path = tmp_path / "ratings.csv"
    ratings.to_csv(path, index=False)
    return path


_MONITOR = ["--batch", "batch", "--formula", "rating ~ x + (1 | worker) + (1 | item)",
            "--max-items", "30", "--looks", "3"]


@pytest.mark.parametrize("labels", [
    {1: 1, 2: 2, 3: 3},
    {1: 9, 2: 10, 3: 11},                                  # numbers: 9 before 10
    {1: "2024-05-03", 2: "2024-05-10", 3: "2024-05-17"},    # ISO dates
])
def test_monitor_replays_batches_in_collection_order(capsys, tmp_path, labels):
    out = tmp_path / "looks.json"
    assert main(["sequential", "monitor", str(_batched(tmp_path, labels)), *_MONITOR,
                 "--json", str(out)]) == 0
    looks = json.loads(out.read_text())["results"]
    assert [lk["n_items"] for lk in looks] == [10, 20, 30][: len(looks)]


def test_monitor_refuses_batch_labels_that_sort_wrongly_as_text(capsys, tmp_path):
    # as text, "week 10" < "week 11" < "week 9": look 1 would be the second batch
    path = _batched(tmp_path, {1: "week 9", 2: "week 10", 3: "week 11"})
    assert main(["sequential", "monitor", str(path), *_MONITOR]) == 2
    err = capsys.readouterr().err
    assert "--batch 'batch' holds labels" in err and "number the batches 1, 2, 3" in err


def test_monitor_refuses_a_rating_without_a_batch(capsys, tmp_path):
    path = _batched(tmp_path, {1: 1, 2: 2, 3: 3})
    frame = pd.read_csv(path)
    frame.loc[7, "batch"] = None
    frame.to_csv(path, index=False)
    assert main(["sequential", "monitor", str(path), *_MONITOR]) == 2
    assert "is empty at line 9" in capsys.readouterr().err


def _alpha_frame() -> pd.DataFrame:
    gen = np.random.default_rng(3)
    truth = gen.integers(1, 6, 12)
    rows = [(f"w{w}", f"i{i}", float(np.clip(truth[i] + gen.integers(-1, 2), 1, 5)))
            for w in range(4) for i in range(12)]
    return pd.DataFrame(rows, columns=["worker", "item", "rating"])


def test_alpha_refuses_labelled_ratings_instead_of_dropping_them():
    frame = _alpha_frame().astype({"rating": object})
    frame.loc[:5, "rating"] = ["4 - good", "2 - poor", "5 - great", "1 - bad", "3 - ok", "4 - good"]
    with pytest.raises(InputError, match=r"6 rating\(s\) that are not finite numbers \('4 - good'"):
        krippendorff_alpha(frame, unit="item")


def test_alpha_refuses_a_rating_of_no_unit():
    frame = _alpha_frame()
    frame.loc[3, "item"] = None      # was counted as a rating of the last unit
    with pytest.raises(InputError, match="have no 'item'"):
        krippendorff_alpha(frame, unit="item")
    # a missing rating stays what it is: absent
    frame = _alpha_frame()
    frame.loc[3, "rating"] = None
    assert krippendorff_alpha(frame, unit="item").n_values == len(frame) - 1


def _judgements(tmp_path, edit=None):
    gen = np.random.default_rng(5)
    frame = pd.DataFrame({"rater": np.repeat([f"r{i}" for i in range(4)], 10),
                          "prompt_id": np.tile([f"p {i}" for i in range(10)], 4),
                          "model_a": "sysA", "model_b": "sysB",
                          "winner": gen.choice(["A", "B", "tie"], 40)})
    if edit is not None:
        edit(frame)
    path = tmp_path / "h2h.csv"
    frame.to_csv(path, index=False)
    return path


_JUDGED = ["--worker", "rater", "--item", "prompt_id", "--first", "model_a", "--second",
           "model_b", "--choice", "winner"]


@pytest.mark.parametrize("edit, flags, words", [
    # was "--outcome column 'winner' ...": plan's --outcome is another option
    (lambda f: f.__setitem__("winner", f["winner"].where(f.index != 5, "C")), [],
     "--choice column 'winner' has values that are not an outcome: ['C']"),
    # was "pass --pair ('A', 'B')", which --pair does not take
    (lambda f: f.__setitem__("model_b", f["model_b"].where(f.index != 5, "sysC")), [],
     "pass --pair 'sysA,sysB' or two others"),
    # was "a='nope' is not a column ... Pass a= the column's name."
    (None, ["--first", "nope"], "--first 'nope' is not a column"),
    # was "--effect must be a finite non-zero number ...; got 0.0." for --p-win 0.5
    (None, ["--p-win", "0.5"], "--p-win 0.5 is no preference at all"),
], ids=["choice", "pair", "first", "p-win"])
def test_plan_judgements_errors_name_the_flags_typed(capsys, tmp_path, edit, flags, words):
    argv = ["plan", "--judgements", str(_judgements(tmp_path, edit)), *_JUDGED, *flags]
    if "--p-win" not in flags:
        argv += ["--p-win", "0.6"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    # was "refit with bradley_terry(..., --n-boot 1000)"
    (["arena", "fit", "{votes}", "--interval", "bootstrap"],
     "run again with --n-boot 1000 or use --interval 'sandwich'"),
    # was "give exactly one of max_items (...) and max_information (...)"
    (["sequential", "monitor", "{votes}", "--batch", "rater", "--formula", "y ~ 1 + (1 | item)"],
     "give exactly one of --max-items (the planned number of items"),
], ids=["arena-bootstrap", "monitor-max-items"])
def test_refusals_give_command_line_advice(capsys, tmp_path, argv, words):
    path = tmp_path / "votes.csv"
    _votes().assign(rater=1).to_csv(path, index=False)
    assert main([a.format(votes=path) for a in argv]) == 2
    assert words in capsys.readouterr().err


def test_arena_power_of_two_systems_runs_with_the_default_top_k(capsys):
    # was "--top-k must be <= 2; got 3." for a flag the user never gave
    assert main(["arena", "power", "--scores", "0,1", "--votes", "40", "--n-sims", "20",
                 "--seed", "1"]) == 0
    grid = arena_power([0.0, 1.0], 40, n_sims=20, rng=1, progress=False)
    frame = grid.to_frame()      # top-2 of two systems is the whole ranking
    assert frame["p_topk"].iloc[0] == frame["p_ranking"].iloc[0]
    with pytest.raises(InputError, match="top_k must be <= 2"):
        arena_power([0.0, 1.0], 40, top_k=3, n_sims=20, rng=1, progress=False)


def _human_and_judge() -> tuple[pd.DataFrame, pd.DataFrame]:
    gen = np.random.default_rng(8)
    human = pd.DataFrame([(f"w{w}", f"i{i}", s, float(gen.integers(1, 6)))
                          for w in range(3) for i in range(8) for s in ("A", "B")],
                         columns=["worker", "item", "system", "rating"])
    judge = pd.DataFrame([(f"i{i}", s, float(gen.integers(1, 6)))
                          for i in range(30) for s in ("A", "B")],
                         columns=["item", "system", "score"])
    return human, judge


def test_judge_fit_refuses_a_human_rating_without_its_worker():
    human, judge = _human_and_judge()
    human.loc[3, "worker"] = None     # was fitted as a worker named 'nan'
    with pytest.raises(InputError, match="human: column 'worker' is empty at row 3"):
        judge_fit(human, judge)


def test_judge_fit_reads_the_judge_file_by_its_format(tmp_path):
    human, judge = _human_and_judge()
    path = tmp_path / "judge.jsonl"
    judge.to_json(path, orient="records", lines=True)   # was read as CSV: columns '{"item":"i0"'
    want = judge_fit(human, judge).to_frame()
    pd.testing.assert_frame_equal(judge_fit(human, str(path)).to_frame(), want)
    empty = tmp_path / "judge.csv"
    empty.write_text("")
    with pytest.raises(RatingsError, match="judge file: .* is empty"):
        judge_fit(human, empty)
    judge.iloc[:0].to_csv(empty, index=False)          # header only: was "no scores for system(s)"
    with pytest.raises(InputError, match="judge has no scores"):
        judge_fit(human, empty)


def test_system_names_that_are_outcome_codes_are_refused():
    # systems 0, 1, 2 and the winner's name as outcome: "1" also means "A wins"
    votes = pd.DataFrame({"model_a": [2, 2, 2, 1, 1, 0, 0, 2], "model_b": [1, 1, 0, 0, 2, 1, 2, 0],
                          "winner": [1, 1, 2, 1, 1, 1, 0, 2]})
    with pytest.raises(InputError, match="'1' in a vote of '2' against '1' is both an outcome"):
        bradley_terry(votes, a="model_a", b="model_b", outcome="winner", ties="drop")
    # names that agree with the codes (1 beats 2 as A, 0 loses as B) stay readable
    ok = pd.DataFrame({"model_a": [1, 2, 2, 0, 1, 1], "model_b": [2, 1, 0, 2, 0, 0],
                       "winner": [1, 2, 0, 2, 0, 1]})
    fit = bradley_terry(ok, a="model_a", b="model_b", outcome="winner", ties="drop")
    assert fit.scores.index.tolist() == ["0", "1", "2"]


@pytest.mark.parametrize("effect", ["0.1", True], ids=["text", "bool"])
def test_sequential_power_refuses_an_effect_that_is_not_a_number(effect):
    # was run as it came: "0.1" reached the simulator as text, True as an effect of 1
    with pytest.raises(InputError, match="effect must be a real number"):
        sequential_power(CrossedDesign(4, 12), presets.high_variance(), group_sequential(2),
                         effect=effect, n_sims=2, rng=1, progress=False)


@pytest.mark.parametrize("argv, name", [
    (["arena", "fit", "{votes}", "--json", "{votes}"], "VOTES"),
    (["fit", "{human}", "--judge", "{judge}", "--json", "{judge}"], "--judge"),
    (["plan", "--judgements", "{h2h}", *_JUDGED, "--p-win", "0.6", "--json", "{h2h}"],
     "--judgements"),
], ids=["arena-votes", "fit-judge", "plan-judgements"])
def test_an_output_never_overwrites_a_votes_judge_or_judgements_file(capsys, tmp_path, argv, name):
    human, judge = _human_and_judge()
    paths = {"votes": tmp_path / "votes.csv", "human": tmp_path / "human.csv",
             "judge": tmp_path / "judge.csv", "h2h": _judgements(tmp_path)}
    _votes().to_csv(paths["votes"], index=False)
    human.to_csv(paths["human"], index=False)
    judge.to_csv(paths["judge"], index=False)
    before = {k: p.read_bytes() for k, p in paths.items()}
    assert main([a.format(**paths) for a in argv]) == 2     # was 0, with the input replaced by JSON
    assert f"is the same file as the input {name}" in capsys.readouterr().err
    assert {k: p.read_bytes() for k, p in paths.items()} == before


def test_a_head_to_head_pilot_of_one_rater_says_what_is_missing(capsys, tmp_path):
    # was "grouping factors must have > 1 sampled level ... Remove the term or check the data."
    path = _judgements(tmp_path, lambda f: f.__setitem__("rater", "r0"))
    assert main(["plan", "--judgements", str(path), *_JUDGED, "--p-win", "0.6"]) == 2
    err = capsys.readouterr().err
    assert "--worker 'rater': every judgement of 'sysA' against 'sysB' has the same worker" in err


def test_a_head_to_head_pilot_where_one_system_always_wins_says_so(capsys, tmp_path):
    # was "the response 'win' is 0 in every row: a binomial model cannot be fitted ..."
    path = _judgements(tmp_path, lambda f: f.__setitem__("winner", "A"))
    assert main(["plan", "--judgements", str(path), *_JUDGED, "--p-win", "0.6"]) == 2
    err = capsys.readouterr().err
    assert "that is not a tie prefers 'sysA'" in err and "--choice 'winner'" in err


def _likert_with(extra: float | None) -> pd.DataFrame:
    gen = np.random.default_rng(2)
    frame = pd.DataFrame([(f"w{w}", f"i{i}", s, float(gen.integers(1, 6)))
                          for w in range(4) for i in range(10) for s in ("A", "B")],
                         columns=["worker", "item", "system", "rating"])
    if extra is not None:
        frame.loc[0, "rating"] = extra
    return frame


def test_an_inferred_scale_set_by_one_isolated_rating_is_warned_about():
    # one 9 among 1..5 (a typo?) made the inferred scale 1..9 without a word
    with pytest.warns(RatingsWarning, match=r"the highest rating, 9 \(1 rating\(s\)\), is 3 unused"):
        read_ratings(_likert_with(9.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RatingsWarning)
        read_ratings(_likert_with(None))                              # 1..5: nothing to say
        slider = _likert_with(None).assign(rating=lambda f: f["rating"] * 20 - 20)
        slider.loc[0, "rating"] = 100.0                               # 0..80 and one 100 of 0-100
        read_ratings(slider)


def test_fit_judge_reads_files_with_their_own_names_and_separator(capsys, tmp_path):
    human, judge = _human_and_judge()
    own = human.rename(columns={"worker": "Évaluateur", "item": "phrase id", "system": "système",
                                "rating": "note"})
    own.to_csv(tmp_path / "human.csv", index=False, sep=";")
    judge.to_csv(tmp_path / "judge.csv", index=False)
    # was: --sep ignored for the human file, and the judge file had to use the human file's names
    assert main(["fit", str(tmp_path / "human.csv"), "--sep", ";", "--worker", "Évaluateur",
                 "--item", "phrase id", "--system", "système", "--rating", "note",
                 "--judge", str(tmp_path / "judge.csv"), "--judge-item", "item",
                 "--judge-system", "system"]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.split()[:4] == ["B", "-", "A", "human"])
    means = human.groupby("system")["rating"].mean()      # balanced: the difference of means
    assert float(row[4]) == pytest.approx(means["B"] - means["A"], abs=5e-4)


def test_fit_judge_outcome_error_names_the_flag(capsys, tmp_path):
    human, judge = _human_and_judge()
    human.to_csv(tmp_path / "human.csv", index=False)
    judge.to_csv(tmp_path / "judge.csv", index=False)
    assert main(["fit", str(tmp_path / "human.csv"), "--judge", str(tmp_path / "judge.csv"),
                 "--judge-outcome", "binary"]) == 2
    # was "outcome='binary' needs human ratings in [0, 1]"
    assert "--judge-outcome 'binary' needs human ratings in [0, 1]" in capsys.readouterr().err


@pytest.mark.parametrize("rows, eu_size, words", [
    (2, "1", "at least 3 are needed. Give scores of at least 3 test instances."),
    (8, "4", "at least 3 are needed. Use a smaller --eu-size or more test instances."),
], ids=["eu-size-1", "eu-size-4"])
def test_compare_with_too_few_units_gives_advice_that_can_be_followed(capsys, tmp_path, rows,
                                                                      eu_size, words):
    path = tmp_path / "scores.csv"
    pd.DataFrame({"a": np.linspace(0.5, 0.6, rows), "b": np.linspace(0.4, 0.5, rows)}).to_csv(
        path, index=False)
    # was "Use a smaller eu_size" (a Python name), even at --eu-size 1
    assert main(["compare", str(path), "--eu-size", eu_size]) == 2
    assert words in capsys.readouterr().err
