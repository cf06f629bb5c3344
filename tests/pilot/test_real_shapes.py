"""Planning from pilot files shaped like real ones: never broken, never flattering.

Each shape is a small file written by :mod:`pilot_files` (its own column
names): 20 systems rated by sparse annotators, items nested in systems with 3
ratings per item, a paired pilot fitted without slopes.  The tests check what
a plan from each must say or do, through Python and the command line.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from nlpower import CrossedDesign, LMMParams, plan
from nlpower.cli import main
from nlpower.convert import with_sds, zero_sd_notes
from nlpower.convert_outcomes import OrdinalPilot
from nlpower.errors import DesignError, InputError
from nlpower.outcomes import HeadToHeadParams
from nlpower.pilot import plan_with_assurance
from nlpower.pilot.subset import contrast_ratings
from nlpower.powersim.analytic import analytic_power
from nlpower.ratings import fit_ratings, read_ratings
from pilot_files import head_to_head, nested_items, paired, twenty_systems

NO_SLOPES = "rating ~ system + (1 | worker) + (1 | item)"
PAIRED_COLS = ["--worker", "judge", "--item", "prompt", "--system", "model", "--rating", "score",
               "--scale", "1,5"]
NESTED_COLS = ["--worker", "rater", "--item", "doc", "--system", "model", "--rating", "likert",
               "--scale", "1,5"]


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pilots")
    return {"paired": paired(d / "paired.csv"), "nested": nested_items(d / "nested.csv"),
            "nested3": nested_items(d / "nested3.csv", systems=3, items=20),
            "da": twenty_systems(d / "da.csv")}


@pytest.fixture(scope="module")
def no_slopes_fit(files):
    r = read_ratings(files["paired"], worker="judge", item="prompt", system="model",
                     rating="score", scale=(1, 5))
    return _quiet(fit_ratings, r, model=NO_SLOPES)


@pytest.fixture(scope="module")
def nested_fit(files):
    r = read_ratings(files["nested"], worker="rater", item="doc", system="model",
                     rating="likert", scale=(1, 5))
    return _quiet(fit_ratings, r)


# ------------------------------------------------------------ (1) never below target, caps

def test_a_plan_with_two_workers_says_so():
    # no slopes, a costly worker and a z test: two workers is the cheapest design, and fragile
    p = LMMParams(sd_worker=0.1, sd_item=0.1, sigma=0.2)
    kw = dict(effect=0.05, cost_per_worker=1000, test="z")
    res = plan(p, **kw)
    assert res.n_workers == 2
    assert any("fewer than 3" in n for n in res.notes) and "fewer than 3" in res.summary()
    wider = plan(p, min_workers=3, **kw)
    assert wider.n_workers == 3 and not any("fewer than 3" in n for n in wider.notes)
    pilot = plan_with_assurance(p, pilot=(6, 30), n_boot=20, rng=1, **kw)
    assert pilot.point.n_workers == 2 and "fewer than 3" in pilot.summary()


def test_plan_with_assurance_keeps_to_max_workers(no_slopes_fit):
    # uncapped, the cheapest design has more than 12 workers; a cap of 12 is kept
    free = plan_with_assurance(no_slopes_fit, effect=0.05, sd={"worker_slope": 0.05},
                               n_boot=20, rng=1)
    assert free.point.n_workers > 12
    capped = plan_with_assurance(no_slopes_fit, effect=0.05, sd={"worker_slope": 0.05},
                                 max_workers=12, n_boot=20, rng=1)
    for p in (capped.point, capped.safeguard):
        assert p is None or p.n_workers <= 12
    assert "max_workers=12" in capped.note


def test_an_ordinal_plan_moves_on_in_workers_instead_of_falling_short(files, capsys):
    """The stand-in picks 2 workers; their simulated LMM power stays low however many items."""
    code = main(["plan", "--ratings", str(files["paired"]), *PAIRED_COLS, "--family", "ordinal",
                 "--analysis", "lmm", "--model", NO_SLOPES, "--effect", "0.3", "--n-boot", "20",
                 "--max-items", "400", "--seed", "1", "--json", "-"])
    assert code == 0
    rec = json.loads(capsys.readouterr().out)
    point = rec["plans"][0]
    assert point["power_at_estimates"] >= 0.8
    assert point["n_workers"] > 2


# ---------------------------------------------------------------- (2) head-to-head budgets

def test_a_head_to_head_judgement_is_one_rating():
    params = HeadToHeadParams(effect=1.0, sd_worker=0.3, sd_item=0.3)
    res = plan(params, effect=1.0, outcome="preference", min_workers=10, max_workers=10,
               max_items=40, n_sims=20, rng=2, cost_per_rating=0.1, cost_per_worker=5.0)
    judgements = res.n_workers * res.n_items
    assert res.n_ratings == judgements
    assert res.cost == pytest.approx(0.1 * judgements + 5.0 * res.n_workers)
    row = res.frontier.set_index("n_workers").loc[res.n_workers]
    assert row["n_ratings"] == judgements
    assert f"{judgements} judgements" in res.summary()
    # Gaussian ratings are still counted per system
    g = plan(LMMParams(sd_worker=0.1, sd_item=0.1, sigma=0.2), effect=0.05)
    assert g.n_ratings == 2 * g.n_workers * g.n_items == g.cost


@pytest.mark.slow
def test_a_head_to_head_pilot_plan_counts_judgements(tmp_path):
    """A/B/tie judgements with their own column names -> glmer pilot -> plan (about 25 s)."""
    import pandas as pd

    from nlpower import glmer

    df = pd.read_csv(head_to_head(tmp_path / "h2h.csv"))
    d = pd.DataFrame({"worker": df["annotator"], "item": df["pair_id"],
                      "win": (df["preferred"] == "B").astype(float),
                      "w": (df["preferred"] != "tie").astype(float)})   # a tie: weight 0
    fit = _quiet(glmer, "win ~ 1 + (1 | worker) + (1 | item)", d, weights="w")
    res = plan_with_assurance(fit, effect=0.5, n_boot=20, n_sims=2, min_workers=10,
                              max_workers=10, max_items=200, cost_per_rating=0.1, rng=1)
    for row in res.to_frame().itertuples():
        assert row.n_ratings == row.n_workers * row.n_items
        assert row.cost == pytest.approx(0.1 * row.n_ratings)
        assert row.power_at_estimates >= 0.8


# ---------------------------------------------------------------- (3) silent zero slopes

def test_a_pilot_without_slopes_is_flagged_and_the_slopes_can_be_set(no_slopes_fit):
    notes = zero_sd_notes(no_slopes_fit)
    assert [n.split(" is ")[0] for n in notes] == ["sd_worker_slope", "sd_item_slope"]
    assert all("set to 0" in n and "no per-system" in n for n in notes)
    bare = plan(no_slopes_fit, effect=0.05)
    assert any("sd_item_slope is set to 0" in n for n in bare.notes)
    given = plan(no_slopes_fit, effect=0.05, sd={"item_slope": 0.05, "sd_worker_slope": 0.05})
    assert any("sd_item_slope is 0.05, as given" in n for n in given.notes)
    assert given.n_ratings > bare.n_ratings        # the slopes cost ratings
    res = plan_with_assurance(no_slopes_fit, effect=0.05, sd={"item_slope": 0.05}, n_boot=20,
                              rng=3)
    assert res.point_assurance.sd_point["sd_item_slope"] == pytest.approx(0.05)
    assert res.point_assurance.sd_upper["sd_item_slope"] == pytest.approx(0.05)
    assert "sd_worker_slope is set to 0" in res.note and "as given" in res.note


def test_the_item_slope_of_a_nested_pilot_is_flagged(nested_fit):
    res = plan_with_assurance(nested_fit, effect=0.05, contrast=("B", "A"), n_boot=20, rng=1)
    assert "B and A share no item" in res.note and "sd_item_slope is set to 0" in res.note
    assert "systems compared: B vs A" in res.summary()


def test_sd_names_are_checked():
    with pytest.raises(InputError, match="sd names a variance component.*'slope'"):
        with_sds(LMMParams(), {"slope": 0.1})
    with pytest.raises(InputError, match="sd\\['item_slope'\\]"):
        with_sds(LMMParams(), {"item_slope": -1})


def test_sd_from_the_command_line(files, capsys):
    base = ["plan", "--ratings", str(files["paired"]), *PAIRED_COLS, "--model", NO_SLOPES,
            "--effect", "0.05", "--n-boot", "20", "--seed", "1"]
    assert main(base) == 0
    out = capsys.readouterr().out
    assert "sd_item_slope is set to 0" in out and "--sd item_slope=S" in out
    assert main([*base, "--sd", "item_slope=0.05", "--sd", "worker_slope=0.04"]) == 0
    out = capsys.readouterr().out
    assert "sd_item_slope is 0.05, as given" in out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("sd_item_slope"))
    assert [float(v) for v in line.split()[1:]] == [0.05, 0.05]
    with pytest.raises(SystemExit):
        main([*base, "--sd", "item_slope"])
    assert "expected NAME=SD" in capsys.readouterr().err


# ------------------------------------------------- (4) a 20-system pilot: fit the contrast only

def test_a_twenty_system_pilot_fits_only_the_contrast(files, capsys):
    code = main(["plan", "--ratings", str(files["da"]), "--worker", "annotator", "--item",
                 "segment", "--system", "sys", "--rating", "score", "--scale", "0,100",
                 "--contrast", "sys07,sys01", "--effect", "0.02", "--n-boot", "20", "--seed", "1"])
    assert code == 0
    out = capsys.readouterr().out
    assert "fitting only the 96 ratings of these two systems (of 960 ratings of 20 systems)" in out
    assert "under 2 systems" in out and "x 2 systems" in out
    assert "systems compared: sys07 vs sys01" in out


def test_contrast_ratings_keeps_the_files_scale(files):
    r = read_ratings(files["da"], worker="annotator", item="segment", system="sys",
                     rating="score")                       # scale inferred from all 20 systems
    sub, pair = contrast_ratings(r, ("sys07", "sys01"))
    assert pair == ("sys07", "sys01") and sub.systems == ("sys01", "sys07")
    assert sub.scale == r.scale
    keep = r.data["system"].astype(str).isin(pair).to_numpy()
    assert np.allclose(sub.data["rating"], r.data.loc[keep, "rating"])


# ------------------------------------------------------ (5) the ordinal nested-items pilot

def test_the_default_ordinal_fit_of_a_nested_pilot_is_planned(files):
    r = read_ratings(files["nested"], worker="rater", item="doc", system="model",
                     rating="likert", scale=(1, 5))
    fit = _quiet(fit_ratings, r, family="ordinal")
    assert "is_sys" in fit.fit.formula        # the random part has the system indicators
    pilot = OrdinalPilot(fit, ("B", "A"))
    params = pilot.to_params(pilot.clmm, unequal="ignore")
    assert params.sd_item_slope == 0 and params.sd_item > 0
    assert any("B and A share no item" in n for n in pilot.zero_sd_notes())


# ------------------------------------------------ (6) every verb: K systems and a contrast

@pytest.mark.parametrize("verb", [
    ["power", "--workers", "6", "--items", "40", "--effect", "0.05", "--n-sims", "20"],
    ["mde", "--workers", "6", "--items", "40"],
    ["grid", "--workers", "6", "--items", "40", "--effects", "0.05", "--n-sims", "20",
     "--quiet"],
])
def test_every_verb_takes_a_three_system_pilot_with_a_contrast(files, capsys, verb):
    args = [*verb, "--ratings", str(files["nested3"]), *NESTED_COLS, "--seed", "1"]
    assert main([*args, "--contrast", "C,A"]) == 0
    out = capsys.readouterr().out
    assert "systems compared: C vs A" in out and "(A, B; baseline A)" not in out
    assert "sd_item_slope is set to 0" in out
    assert main(args) == 2
    assert "--contrast A,B" in capsys.readouterr().err


def test_mde_from_a_contrast_matches_the_library(files, capsys):
    main(["mde", "--workers", "6", "--items", "40", "--ratings", str(files["nested3"]),
          *NESTED_COLS, "--contrast", "C,A", "--sd", "item_slope=0.05", "--json", "-"])
    rec = json.loads(capsys.readouterr().out)
    r = read_ratings(files["nested3"], worker="rater", item="doc", system="model",
                     rating="likert", scale=(1, 5))
    sub, _ = contrast_ratings(r, ("C", "A"))
    from nlpower.convert import as_params
    from nlpower.powersim import mde

    params = with_sds(as_params(_quiet(fit_ratings, sub), effect=1.0, contrast=("C", "A")),
                      {"item_slope": 0.05})
    assert rec["effect"] == pytest.approx(mde(CrossedDesign(6, 40), params).effect)
    assert analytic_power(CrossedDesign(6, 40), params.with_effect(rec["effect"])).power == \
        pytest.approx(0.8, abs=1e-6)


def test_no_design_in_range_is_an_error_not_a_plan():
    with pytest.raises(DesignError, match="no design with 2-4 workers"):
        plan(LMMParams(sd_worker_slope=0.3, sigma=0.2), effect=0.01, max_workers=4,
             max_items=50)


def test_a_misspelled_contrast_names_the_system_meant():
    from nlpower.errors import RatingsError
    from nlpower.pilot.subset import contrast_pair

    systems = ("gpt-4", "llama", "ours")
    assert contrast_pair(systems, ("ours", "gpt-4")) == ("ours", "gpt-4")
    with pytest.raises(RatingsError, match=r"got 'ours, gpt4'\. 'gpt4' is not a system "
                                           r"\(did you mean 'gpt-4'\?\)"):
        contrast_pair(systems, ("ours", "gpt4"))
    with pytest.raises(RatingsError, match=r"got 'zzz'\.$"):      # nothing close: no hint
        contrast_pair(systems, "zzz")
