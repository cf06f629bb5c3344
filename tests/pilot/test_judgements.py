"""Head-to-head pilots from files of judgements with their own column names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower.convert_outcomes import SEPARATION_SD, binary_params, separation_notes
from nlpower.errors import InputError
from nlpower.pilot.judgements import fit_judgements, judgement_frame

COLS = dict(a="left", b="right", choice="pick", worker="rater", item="prompt")


def _judgements(seed: int = 0, n_items: int = 40, per_item: int = 3, p: float = 0.62,
                item_sd: float = 0.5) -> pd.DataFrame:
    g = np.random.default_rng(seed)
    u = g.normal(0, item_sd, n_items)
    rows = []
    for i in range(n_items):
        for w in g.choice(12, per_item, replace=False):
            first = g.random() < 0.5
            left, right = ("base", "new") if first else ("new", "base")
            q = 1 / (1 + np.exp(-(np.log(p / (1 - p)) + u[i])))
            pick = "tie" if g.random() < 0.1 else ("new" if g.random() < q else "base")
            rows.append({"rater": f"r{w}", "prompt": f"q{i}", "left": left, "right": right,
                         "pick": pick})
    return pd.DataFrame(rows)


def test_frame_maps_columns_ties_and_position():
    df = _judgements()
    rows, pair = judgement_frame(df, **COLS)
    assert pair == ("base", "new")
    assert set(rows.columns) == {"worker", "item", "win", "pos", "weight"}
    tie = df["pick"].eq("tie").to_numpy()
    np.testing.assert_array_equal(rows["weight"].to_numpy(), np.where(tie, 0.0, 1.0))
    won = df["pick"].eq("new").to_numpy()
    np.testing.assert_array_equal(rows["win"].to_numpy(), np.where(tie, 0.0, won.astype(float)))
    # +1/2 when the planned system ("new", the pair's second) was shown first
    np.testing.assert_array_equal(rows["pos"].to_numpy(),
                                  np.where(df["left"].eq("new"), 0.5, -0.5))
    assert rows["worker"].tolist() == df["rater"].tolist()


def test_pair_reverses_the_preference():
    df = _judgements()
    a, _ = judgement_frame(df, **COLS)
    b, pair = judgement_frame(df, **COLS, pair=("new", "base"))
    assert pair == ("new", "base")
    keep = a["weight"].to_numpy() > 0
    np.testing.assert_array_equal(a["win"].to_numpy()[keep], 1 - b["win"].to_numpy()[keep])


def test_fit_equals_glmer_of_the_mapped_frame():
    df = _judgements()
    fit = fit_judgements(df, **COLS)
    rows, _ = judgement_frame(df, **COLS)
    ref = nlpower.glmer("win ~ 1 + (1 | worker) + (1 | item)", rows, family="binomial",
                        weights="weight")
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-8)
    params = binary_params(fit)                         # the planners' conversion accepts it
    assert params.p_draw == pytest.approx(float(df["pick"].eq("tie").mean()))
    assert params.sd_item == pytest.approx(float(ref.varcorr().set_index("grp").loc["item", "sdcor"]))


@pytest.mark.parametrize("kwargs, match", [
    (dict(COLS, choice="verdict"), "not a column"),
    (dict(COLS, pair=("base", "other")), "never show"),
    (dict(COLS, pair="base"), "two different system"),
])
def test_bad_columns_and_pairs_are_refused(kwargs, match):
    with pytest.raises(InputError, match=match):
        judgement_frame(_judgements(), **kwargs)


def test_more_than_two_systems_needs_a_pair():
    df = _judgements()
    df.loc[:5, "left"] = "third"
    df.loc[:5, "pick"] = "third"
    with pytest.raises(InputError, match="pass pair="):
        judgement_frame(df, **COLS)
    rows, pair = judgement_frame(df, **COLS, pair=("base", "new"))
    assert pair == ("base", "new") and len(rows) < len(df)


def test_all_ties_is_refused():
    df = _judgements().assign(pick="tie")
    with pytest.raises(InputError, match="every judgement"):
        judgement_frame(df, **COLS)


def test_glmer_with_own_group_names_is_pointed_to_fit_judgements():
    rows, _ = judgement_frame(_judgements(), **COLS)
    fit = nlpower.glmer("win ~ 1 + (1 | rater) + (1 | item)",
                        rows.rename(columns={"worker": "rater"}), family="binomial",
                        weights="weight")
    with pytest.raises(InputError, match="fit_judgements"):
        binary_params(fit)


def test_quasi_separated_pilot_is_flagged_and_overridable():
    # every prompt judged the same way by all its raters: the item SD runs away
    df = _judgements(seed=2, n_items=30, per_item=3, item_sd=8.0)
    fit = fit_judgements(df, **COLS)
    sd_item = binary_params(fit).sd_item
    notes = separation_notes(fit)
    if sd_item <= SEPARATION_SD:
        assert notes == []
        pytest.skip(f"this draw did not separate (item SD {sd_item:.2f})")
    assert any("quasi-separated" in n and "sd_item" in n for n in notes)
    given = separation_notes(fit, {"item": 1.0})
    assert any("as given" in n for n in given) and not any("quasi" in n and "Set it" in n
                                                           for n in given)


def test_a_healthy_pilot_has_no_separation_note():
    assert separation_notes(fit_judgements(_judgements(item_sd=0.3), **COLS)) == []
