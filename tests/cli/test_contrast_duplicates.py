"""Repeated ratings are judged on the rows a contrast fits, not on the whole file."""

from __future__ import annotations

import pandas as pd
import pytest

from nlpower.cli import main
from nlpower.errors import RatingsError
from nlpower.pilot.subset import read_contrast
from nlpower.ratings import read_ratings
from pilot_files import nested_items

COLS = ["--worker", "rater", "--item", "doc", "--system", "model", "--rating", "likert",
        "--scale", "1,5"]
MDE = ["mde", "--workers", "6", "--items", "40", "--sd", "item_slope=0.05"]
POOLED = "rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"


@pytest.fixture(scope="module")
def dup_in_b(tmp_path_factory):
    """Three systems; one (rater, doc, model) of system B rated twice."""
    path = nested_items(tmp_path_factory.mktemp("dups") / "nested3.csv", systems=3, items=20)
    df = pd.read_csv(path)
    row = df[df["model"] == "B"].iloc[[0]].assign(likert=lambda d: 6 - d["likert"])
    pd.concat([df, row], ignore_index=True).to_csv(path, index=False)
    return path


def test_a_duplicate_of_a_system_left_out_does_not_stop_the_plan(dup_in_b, capsys):
    assert main([*MDE, "--ratings", str(dup_in_b), *COLS, "--contrast", "C,A"]) == 0
    out = capsys.readouterr().out
    assert "systems compared: C vs A" in out
    assert "not checked for repeated ratings" in out


def test_a_duplicate_of_a_compared_system_is_still_refused(dup_in_b, capsys):
    assert main([*MDE, "--ratings", str(dup_in_b), *COLS, "--contrast", "B,A"]) == 2
    err = capsys.readouterr().err
    assert "rated more than once" in err and "model 'B'" in err and "--duplicates" in err


def test_a_pooled_model_judges_every_systems_rows(dup_in_b, capsys):
    args = [*MDE, "--ratings", str(dup_in_b), *COLS, "--contrast", "C,A", "--model", POOLED]
    assert main(args) == 2
    assert "model 'B'" in capsys.readouterr().err


def test_read_contrast_keeps_the_pair_and_the_files_scale(dup_in_b):
    kw = dict(worker="rater", item="doc", system="model", rating="likert")
    sub, pair, (n_rows, k) = read_contrast(dup_in_b, ("C", "A"), **kw)
    whole = pd.read_csv(dup_in_b)
    assert pair == ("C", "A") and sub.systems == ("A", "C")
    assert (n_rows, k) == (len(whole), 3)
    assert sub.report.n_ratings == int(whole["model"].isin(["A", "C"]).sum())
    # the scale is inferred from every system's ratings
    assert sub.scale == read_ratings(dup_in_b, duplicates="keep", **kw).scale
    with pytest.raises(RatingsError, match="rated more than once"):
        read_contrast(dup_in_b, ("B", "A"), **kw)
