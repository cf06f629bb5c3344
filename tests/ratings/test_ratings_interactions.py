"""``(1 | item:system)`` and ``(1 | worker:system)`` in ``fit_ratings(model=...)``.

The many-system pilot's model ``rating ~ system + (1 | worker) + (1 | item) +
(1 | item:system)``: which spellings are accepted and which formulas refused,
the table column, and the hand-off to planning.

The mapping under test (``docs/pilot.md``, "Interactions with system"): the
item:system SD ``tau`` and the item intercept SD ``s0`` give the total
covariance ``s0^2 J + tau^2 I`` of an item's per-system effects, so two systems
coded +-1 have ``sd_item_slope^2 = tau^2 / 2`` and ``sd_item^2 = s0^2 + tau^2 / 2``,
and K systems ``sd_item = s0``, ``sd_item_systems = (tau, ..., tau)``.  It is
checked three ways: exactly on a fit (algebra), by simulating from the planner's
own two-system generator at the mapped parameters and recovering them through
the interaction fit, and by simulating from the interaction model (the K-system
generator with equal per-system SDs) and fitting the paper's model to the
compared pair directly.  Tolerances are 4 standard errors of the two-way layout
(``ratings_helpers._check_pair_params``); each simulation check also shows that
the mapping without the halving (``sd_item_slope = tau``) is rejected.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, simulate
from nlpower.cli import main
from nlpower.convert import as_params, zero_sd_notes
from nlpower.errors import RatingsError
from nlpower.params import LMMParams, MultiSystemParams
from nlpower.ratings import fit_ratings, read_ratings
from ratings_helpers import FIXTURES, _check_pair_params, _read_sim

REFERENCE = FIXTURES.parent / "tests" / "reference"
MANY = "rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"
TAU, S0 = 0.12, 0.08          # item:system and item intercept SDs of the simulations


def _mapped(tau: float, s0: float, **kw: float) -> LMMParams:
    """The two-system parameters the interaction model maps to (module docstring)."""
    return LMMParams(beta0=0.5, effect=kw.pop("effect", 0.05), sd_worker=kw.pop("sd_worker", 0.1),
                     sd_worker_slope=0.0, sd_item=math.sqrt(s0**2 + tau**2 / 2),
                     sd_item_slope=tau / math.sqrt(2), sigma=kw.pop("sigma", 0.15))


def _many(k: int, n_w: int, n_i: int, seed: int) -> pd.DataFrame:
    """Every worker rates every item under each of ``k`` systems, from the interaction model
    (the K-system generator with one item SD for every system)."""
    truth = MultiSystemParams(beta0=0.5, effects=(0.05,) + (0.0,) * (k - 2), sd_worker=0.1,
                              sd_worker_systems=(0.0,) * k, sd_item=S0,
                              sd_item_systems=(TAU,) * k, sigma=0.15)
    return simulate(CrossedDesign(n_w, n_i, systems=k), truth, rng=seed)


@pytest.fixture(scope="module")
def three():
    return _read_sim(_many(3, 10, 60, seed=301))


@pytest.fixture(scope="module")
def many_fit(three):
    return fit_ratings(three, model=MANY)


# ------------------------------------------------------------------ accepted formulas
@pytest.mark.parametrize("formula", [
    MANY,
    "rating ~ system + (1 | worker) + (1 | item) + (1 | system:item)",
    "rating ~ system + (1 | worker) + (1 | item/system)",
])
def test_the_spellings_of_item_by_system_give_one_fit(three, many_fit, formula):
    fit = fit_ratings(three, model=formula)
    assert set(fit.interaction_sd) == {"item"}
    assert fit.interaction_sd["item"] == pytest.approx(many_fit.interaction_sd["item"], rel=1e-4)
    assert fit.fit.loglik == pytest.approx(many_fit.fit.loglik, abs=1e-6)


def test_the_table_reports_item_by_system_under_its_own_name(many_fit):
    t = many_fit.table()
    vc = many_fit.fit.varcorr().set_index("grp")
    assert t["sigma_item:system"].item() == pytest.approx(vc.loc["item:system", "sdcor"])
    assert t["sigma0i"].item() == pytest.approx(vc.loc["item", "sdcor"])
    assert not any(c in t.columns for c in ("sigma1i", "sigma2i", "sigma3i"))
    assert list(many_fit.tables()["Table 15"].columns) == ["sigma0i", "sigma_item:system"]
    frame = many_fit.to_frame().set_index("parameter")
    assert frame.loc["sigma_item:system", "group"] == "item:system"
    assert frame.loc["sigma_item:system", "estimate"] == t["sigma_item:system"].item()
    assert many_fit.to_record()["interaction_sd"] == {"item": many_fit.interaction_sd["item"]}
    text = many_fit.summary()
    assert "sigma_item:system" in text and "per-system item effects from (1 | item:system)" in text


def test_worker_by_system_is_accepted_and_tabled(three):
    fit = fit_ratings(three, model="rating ~ system + (1 | worker) + (1 | worker:system) "
                                   "+ (1 | item/system)")
    assert set(fit.interaction_sd) == {"worker", "item"}
    assert list(fit.tables()["Table 14"].columns) == ["sigma0w", "sigma_worker:system"]
    # the simulation has no per-system worker effects: a small estimate, not the item one
    assert fit.interaction_sd["worker"] < fit.interaction_sd["item"]


# ------------------------------------------------------------------ refused formulas
@pytest.mark.parametrize("formula, match", [
    ("rating ~ system + (1 | item:rating)", r"response 'rating' also appears"),
    ("rating ~ system + (1 | worker) + (1 | worker:item)", r"a worker-by-item effect.*residual"),
    ("rating ~ system + (1 | worker) + (system | item:system)", r"random intercept only"),
    ("rating ~ system + (1 | worker) + (system || item) + (1 | item:system)",
     r"not identified\. Keep one"),
    ("rating ~ system + (1 | worker) + (0 + system | item) + (1 | item:system)",
     r"not identified\. Keep one"),
    ("rating ~ system + (1 | worker) + (1 | system/item)", r"system is the fixed effect"),
    ("rating ~ system + (1 | worker:item:system)", r"grouping factors of rating data"),
])
def test_formulas_refused_by_name(three, formula, match):
    with pytest.raises(RatingsError, match=match):
        fit_ratings(three, model=formula)


def test_one_rating_per_item_and_system_is_refused(three):
    """Keep one rating (a random worker's) of each (item, system) cell: the interaction is
    the residual."""
    shuffled = three.data.sample(frac=1.0, random_state=5)
    one = shuffled.drop_duplicates(["item", "system"])[["worker", "item", "system", "rating"]]
    r = read_ratings(one, scale="identity")
    with pytest.raises(RatingsError, match=r"each of the 180 \(item, system\) cells has one "
                                           r"rating.*Drop \(1 \| item:system\)"):
        fit_ratings(r, model=MANY)


def test_items_nested_in_systems_refuse_item_by_system():
    r = read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5))
    with pytest.raises(RatingsError, match=r"items nested in systems.*same levels as item"):
        fit_ratings(r, model=MANY)


def test_the_ordinal_family_refuses_an_interaction():
    r = read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))
    with pytest.raises(RatingsError, match=r"family='ordinal'.*\(1 \| item:system\).*Gaussian"):
        fit_ratings(r, model=MANY, family="ordinal")


# ------------------------------------------------------------------ planning hand-off
def test_the_mapping_is_exact_on_a_fit(many_fit):
    tau, s0 = many_fit.interaction_sd["item"], many_fit.intercept_sd["item"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # equal per-system variances: nothing is dropped
        p = many_fit.to_params(("C", "B"))
    assert p.sd_item_slope == pytest.approx(tau / math.sqrt(2), rel=1e-12)
    assert p.sd_item == pytest.approx(math.sqrt(s0**2 + tau**2 / 2), rel=1e-12)
    assert as_params(many_fit, effect=0.03, contrast=("C", "B")) == p.with_effect(0.03)
    m = many_fit.to_multi_params()
    assert m.sd_item == pytest.approx(s0, rel=1e-12)
    assert m.sd_item_systems == pytest.approx((tau,) * 3, rel=1e-12)
    c = many_fit.total_cov("item").to_numpy()
    assert c == pytest.approx(s0**2 + tau**2 * np.eye(3), rel=1e-12)
    # the per-system item term is estimated: no note sets the item slope to 0; the worker one is
    notes = zero_sd_notes(many_fit, ("C", "B"))
    assert [n.split(" is ")[0] for n in notes] == ["sd_worker_slope"]


def test_the_planners_generator_at_the_mapped_parameters_is_the_interaction_model():
    """Data from the two-system generator at the mapped SDs, fitted with item:system,
    give back the mapped parameters; the unhalved mapping is rejected."""
    n_w, n_i = 20, 150
    truth = _mapped(TAU, S0)
    fit = fit_ratings(_read_sim(simulate(CrossedDesign(n_w, n_i), truth, rng=302)), model=MANY)
    est = fit.to_params()
    assert not _check_pair_params(est, truth, n_w, n_i)
    unhalved = dataclasses.replace(truth, sd_item_slope=TAU, sd_item=math.sqrt(S0**2 + TAU**2))
    assert _check_pair_params(est, unhalved, n_w, n_i)


def test_the_paper_model_on_the_pair_agrees_with_the_mapping():
    """Data from the interaction model (4 systems): the paper's model fitted directly to the
    compared pair, and the interaction model fitted to all systems, both give the mapped
    two-system parameters."""
    n_w, n_i = 20, 150
    data = _many(4, n_w, n_i, seed=303)
    truth = _mapped(TAU, S0)
    pair = data[data["system"].isin(["A", "B"])]
    paper = fit_ratings(_read_sim(pair), model="paper", baseline="A")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # the paper fit's two SDs differ a little
        est_paper = paper.to_params(("B", "A"))
    est_many = fit_ratings(_read_sim(data), model=MANY, baseline="A").to_params(("B", "A"))
    assert not _check_pair_params(est_paper, truth, n_w, n_i)
    assert not _check_pair_params(est_many, truth, n_w, n_i)
    unhalved = dataclasses.replace(truth, sd_item_slope=TAU, sd_item=math.sqrt(S0**2 + TAU**2))
    assert _check_pair_params(est_paper, unhalved, n_w, n_i)


# ------------------------------------------------------------------ command line
def test_cli_fit_and_mde_with_item_by_system(tmp_path, capsys):
    df = _many(3, 6, 40, seed=304).drop(columns="x", errors="ignore").rename(
        columns={"worker": "annotator_id", "item": "segment_id", "system": "sys_name",
                 "rating": "score"})
    path = tmp_path / "da3.csv"
    df.to_csv(path, index=False)
    cols = ["--worker", "annotator_id", "--item", "segment_id", "--system", "sys_name",
            "--rating", "score", "--model",
            "rating ~ system + (1 | worker) + (1 | item) + (1 | item:system)"]
    assert main(["fit", str(path), *cols]) == 0
    out = capsys.readouterr().out
    assert re.search(r"Table 15:\n\s+sigma0i\s+sigma_item:system\n", out)
    assert main(["mde", "--ratings", str(path), *cols, "--contrast", "C,B", "--workers", "10",
                 "--items", "100"]) == 0
    out = capsys.readouterr().out
    assert "fitting all 720 ratings of the 3 systems" in out
    assert "sd_item_slope is set to 0" not in out and "sd_worker_slope is set to 0" in out


# ------------------------------------------------------------------ against lme4
@pytest.mark.parametrize("case, formula", [
    ("item", MANY),
    ("both", "rating ~ system + (1 | worker) + (1 | worker:system) + (1 | item) "
             "+ (1 | item:system)"),
])
def test_the_table_agrees_with_lme4(case, formula):
    """lme4's ML fit of the same file (tests/reference/item_system_reference.R)."""
    ref = json.loads((REFERENCE / "item_system_reference.json").read_text())[case]
    r = read_ratings(REFERENCE / "data" / "item_system3.csv", scale="identity")
    fit = fit_ratings(r, model=formula, baseline="A")
    assert fit.systems == ("B", "C", "A")
    assert fit.fit.loglik >= ref["loglik"] - 1e-6
    row = fit.table().iloc[0]
    names = {"item:system": "sigma_item:system", "item": "sigma0i", "worker": "sigma0w",
             "worker:system": "sigma_worker:system"}
    for grp, sd in ref["sd"].items():
        assert row[names[grp]] == pytest.approx(sd, abs=5e-5), grp
    assert row["sigma"] == pytest.approx(ref["sigma"], abs=1e-5)
    assert [row["beta0"], row["beta1"], row["beta2"]] == pytest.approx(ref["fixef"], abs=1e-5)
