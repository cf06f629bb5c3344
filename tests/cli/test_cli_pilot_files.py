"""Pilot files as users hand them to the command line: their own column names, several
systems, messy exports.  Each case gives a result or one clear error (no traceback)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nlpower.ratings
from nlpower.cli import main


def _three_systems(path: Path) -> Path:
    """3 systems, 4 reviewers x 12 questions, 0-100 scores, fully crossed."""
    rng = np.random.default_rng(4)
    rows = [(f"r{w}", f"q{i:02d}", s, float(np.clip(np.round(60 + 10 * rng.normal()), 0, 100)))
            for w in range(4) for i in range(12) for s in ("gpt-3.5", "llama 2", "ours")]
    pd.DataFrame(rows, columns=["reviewer", "question", "model", "score"]).to_csv(path,
                                                                                 index=False)
    return path


COLS = ["--worker", "reviewer", "--item", "question", "--system", "model", "--rating", "score",
        "--scale", "0,100"]


@pytest.mark.parametrize("verb", [
    ["power", "--workers", "4", "--items", "20", "--effect", "0.05", "--n-sims", "10"],
    ["mde", "--workers", "4", "--items", "20"],
    ["grid", "--workers", "4", "--items", "20", "--effects", "0.05", "--n-sims", "10"],
    ["plan", "--effect", "0.05", "--n-boot", "10"],
    ["plan", "--effect", "0.5", "--family", "ordinal", "--n-boot", "10"],
])
def test_a_k_system_pilot_without_contrast_is_refused_before_any_fit(tmp_path, capsys,
                                                                     monkeypatch, verb):
    """The model of all K systems is never fitted for a verb that plans one comparison."""
    def no_fit(*args, **kwargs):
        raise AssertionError("the K-system pilot was fitted")

    monkeypatch.setattr(nlpower.ratings, "fit_ratings", no_fit)
    path = _three_systems(tmp_path / "expert.csv")
    assert main([*verb, "--ratings", str(path), *COLS, "--seed", "1"]) == 2
    err = capsys.readouterr().err
    assert "this pilot has 3 systems ('gpt-3.5', 'llama 2', 'ours')" in err
    # the example is typed as it must be on a shell (a label with a space is quoted)
    assert "--contrast 'llama 2,gpt-3.5'" in err
    assert "Traceback" not in err


def _crowd(path: Path, ratings: list[str], **to_csv) -> Path:
    """2 systems x 3 workers x 4 items, fully crossed, with the ratings given as text."""
    rows = [(f"w{w}", f"i{i}", s) for w in range(3) for i in range(4) for s in ("old", "new")]
    df = pd.DataFrame(rows, columns=["worker_id", "hit_item", "sys"])
    df["rating"] = [ratings[k % len(ratings)] for k in range(len(df))]
    df.to_csv(path, index=False, **to_csv)
    return path


CROWD = ["--worker", "worker_id", "--item", "hit_item", "--system", "sys", "--scale", "1,5"]


def test_labelled_scale_points_get_a_recipe_that_works(tmp_path, capsys):
    path = _crowd(tmp_path / "labelled.csv", ["4 - good", "2 - poor", "5 - excellent", "3 - ok"])
    assert main(["fit", str(path), *CROWD]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "Traceback" not in err
    assert "They look like labelled scale points ('4 - good'): keep the leading number" in err
    # the recipe in the message, run as printed, gives the numbers
    recipe = err.split("e.g. ")[1].split(" in pandas")[0]
    df = pd.read_csv(path)
    exec(recipe, {"df": df})
    assert df["rating"].tolist()[:4] == [4.0, 2.0, 5.0, 3.0]


def test_decimal_commas_are_named(tmp_path, capsys):
    path = _crowd(tmp_path / "eu.csv", ["4,5", "2,0", "3,5"], sep=";")
    assert main(["fit", str(path), *CROWD, "--sep", ";"]) == 2
    err = capsys.readouterr().err
    assert "They look like numbers with a decimal comma ('4,5')" in err
    assert "pandas.read_csv(path, delimiter=';', decimal=',')" in err


def test_other_text_ratings_get_no_guess(tmp_path, capsys):
    path = _crowd(tmp_path / "words.csv", ["good", "bad", "4"])
    assert main(["fit", str(path), *CROWD]) == 2
    err = capsys.readouterr().err
    assert "non-numeric" in err and "They look like" not in err


def test_mde_from_a_contrast_prints_the_effect_as_solved_for(tmp_path, capsys):
    path = _three_systems(tmp_path / "expert.csv")
    assert main(["mde", "--workers", "4", "--items", "20", "--ratings", str(path), *COLS,
                 "--contrast", "ours,gpt-3.5"]) == 0
    out = capsys.readouterr().out
    assert "systems compared: ours vs gpt-3.5" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("parameters used:"))
    assert "effect=(solved for)" in line and "effect=1" not in line


def test_an_ordinal_pilots_report_does_not_say_rescaled(tmp_path):
    from nlpower.cli.plan import design_text
    from nlpower.ratings import fit_ratings, read_ratings

    rng = np.random.default_rng(2)
    rows = [(f"w{w}", f"i{i}", s, int(rng.integers(1, 6)))
            for w in range(4) for i in range(10) for s in ("old", "new")]
    df = pd.DataFrame(rows, columns=["worker_id", "hit_item", "sys", "rating"])
    r = read_ratings(df, worker="worker_id", item="hit_item", system="sys", scale=(1, 5))
    ordinal = fit_ratings(r, family="ordinal", model="rating ~ system + (1 | worker) + (1 | item)")
    text = design_text(ordinal)
    assert "fitted as ordered categories" in text and "rescaled to [0, 1]" not in text
    gaussian = fit_ratings(r, model="rating ~ system + (1 | worker) + (1 | item)")
    assert "ratings rescaled to [0, 1]" in design_text(gaussian)


def _nested_workers(path: Path) -> Path:
    """2 systems, each worker rates one system only; 6 items rated under both."""
    rng = np.random.default_rng(8)
    rows = [(f"j{w}", f"d{i}", "base" if w % 2 == 0 else "tuned", int(rng.integers(1, 6)))
            for w in range(8) for i in range(6)]
    pd.DataFrame(rows, columns=["judge", "doc", "condition", "fluency"]).to_csv(path, index=False)
    return path


NESTED = ["--worker", "judge", "--item", "doc", "--system", "condition", "--rating", "fluency",
          "--scale", "1,5", "--model", "rating ~ system + (1 | worker) + (1 | item)",
          "--workers", "6", "--items", "20"]


def test_a_slope_set_with_sd_is_not_also_warned_to_be_zero(tmp_path, capsys):
    path = _nested_workers(tmp_path / "judges.csv")
    assert main(["mde", "--ratings", str(path), *NESTED]) == 0
    err = capsys.readouterr().err
    assert "sd_worker_slope = 0" in err     # not identified, and nothing given: said
    assert main(["mde", "--ratings", str(path), *NESTED, "--sd", "worker_slope=0.03"]) == 0
    captured = capsys.readouterr()
    assert "sd_worker_slope = 0" not in captured.err
    assert "sd_worker_slope=0.03" in captured.out


def _nine_systems(path: Path, *, nested: bool = False) -> Path:
    """9 systems x 4 annotators x 6 segments (nested: each segment under one system)."""
    rng = np.random.default_rng(9)
    systems = [f"sys {k}" for k in range(9)]
    rows = [(f"a{w}", f"s{k}-{i}" if nested else f"s{i}", sysname, int(rng.integers(0, 101)))
            for w in range(4) for i in range(6) for k, sysname in enumerate(systems)]
    pd.DataFrame(rows, columns=["annotator_id", "segment_id", "sys_name", "score"]).to_csv(
        path, index=False)
    return path


DA = ["--worker", "annotator_id", "--item", "segment_id", "--system", "sys_name", "--rating",
      "score", "--scale", "0,100"]


@pytest.mark.parametrize(("nested", "model", "refused"), [
    (False, [], "per worker and per item (92 variance parameters)"),
    (True, [], "per worker (46 variance parameters)"),   # nested items: per-system variances
    (False, ["--model", "paper"], ""),
    (False, ["--model", "rating ~ system + (1 | worker) + (1 | item)"], "")])
def test_fit_refuses_the_default_model_of_many_crossed_systems(tmp_path, capsys, monkeypatch,
                                                               nested, model, refused):
    from nlpower.errors import RatingsError

    def reached(*args, **kwargs):
        raise RatingsError("the fit was reached")

    monkeypatch.setattr(nlpower.ratings, "fit_ratings", reached)
    path = _nine_systems(tmp_path / "da.csv", nested=nested)
    assert main(["fit", str(path), *DA, *model]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1
    if refused:
        assert f"the paper's model for 9 systems has a 9 x 9 covariance block {refused}" in err
        assert "--contrast A,B" in err and "--model paper fits the full model anyway" in err
    else:
        assert "the fit was reached" in err


def test_python_power_of_a_k_system_fit_says_how_to_plan_one_comparison(tmp_path):
    import warnings

    import nlpower
    from nlpower.errors import DesignError
    from nlpower.pilot import as_params

    path = _three_systems(tmp_path / "expert.csv")
    r = nlpower.read_ratings(path, worker="reviewer", item="question", system="model",
                             rating="score", scale=(0, 100))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nlpower.fit_ratings(r, model="rating ~ system + (1 | worker) + (1 | item)")
        design = nlpower.CrossedDesign(4, 20)
        with pytest.raises(DesignError, match=r"contrast=\(A, B\)"):
            nlpower.mde(design, fit)
        # what the message says to do works
        res = nlpower.mde(design, as_params(fit, effect=0.05, contrast=("ours", "gpt-3.5")))
    assert res.effect > 0


def test_duplicates_are_named_in_the_files_own_columns(tmp_path, capsys):
    path = _crowd(tmp_path / "dup.csv", ["4", "2", "5"])
    df = pd.read_csv(path)
    pd.concat([df, df.iloc[[2]]]).to_csv(path, index=False)
    assert main(["fit", str(path), *CROWD]) == 2
    err = capsys.readouterr().err
    assert "1 (worker_id, hit_item, sys) combination(s) are rated more than once" in err
    assert "e.g. worker_id 'w0', hit_item 'i1', sys 'old' at lines 4, 26" in err


def test_an_analytic_mde_prints_no_seed_to_repeat(capsys):
    base = ["mde", "--preset", "high-variance", "--workers", "5", "--items", "40"]
    assert main(base) == 0
    assert "seed:" not in capsys.readouterr().out
    assert main([*base, "--method", "simulation", "--n-sims", "20", "--seed", "4"]) == 0
    assert "seed: 4 (repeat with --seed 4)" in capsys.readouterr().out
