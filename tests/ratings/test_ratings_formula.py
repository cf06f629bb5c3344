"""fit_ratings(model=<formula>), the printed tables and the singular-fit line (issue 14).

Reference numbers: the round trip simulates from known parameters and checks
them within 4 standard errors of the two-way random-effects layout
(``ratings_helpers._check_pair_params``, derivation in test_ratings_fit.py).
The equivalences are exact properties of maximum likelihood: ``(system | item)``
and the paper's ``(system || item)`` both saturate the 2 x 2 total covariance
of a paired design, so they reach the same maximum and the same total.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.errors import RatingsError
from nlpower.params import LMMParams, MultiSystemParams
from nlpower.ratings import fit_ratings, read_ratings
from nlpower.ratings.result import RatingsFitWarning
from nlpower.ratings.table import RatingsTable
from ratings_helpers import FIXTURES, _check_pair_params, _read_sim

SIMPLE = "rating ~ system + (1 | worker) + (1 | item)"


@pytest.fixture(scope="module")
def pilot_ratings():
    return read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))


# ----------------------------------------------------------------- formulas
def test_simple_formula_round_trip():
    """(1|worker) + (1|item) recovers intercept SDs; per-system parts are 0, marked not modelled."""
    true = LMMParams(beta0=0.5, effect=0.08, sd_worker=0.1, sd_worker_slope=0.0, sd_item=0.15,
                     sd_item_slope=0.0, sigma=0.2)
    n_w, n_i = 20, 100
    fit = fit_ratings(_read_sim(simulate(CrossedDesign(n_w, n_i), true, rng=141)), model=SIMPLE)
    assert fit.model == "formula" and fit.formula == SIMPLE
    assert fit.not_modelled == ("sigma1w", "sigma2w", "sigma1i", "sigma2i")
    t = fit.table()
    assert (t[list(fit.not_modelled)].to_numpy() == 0.0).all()
    vc = fit.fit.varcorr().set_index("grp")
    assert t["sigma0w"].item() == pytest.approx(vc.loc["worker", "sdcor"])
    assert t["sigma0i"].item() == pytest.approx(vc.loc["item", "sdcor"])
    est = fit.to_params()
    assert est.sd_worker_slope == 0.0 and est.sd_item_slope == 0.0
    assert est.sd_worker == pytest.approx(t["sigma0w"].item())
    assert not _check_pair_params(est, true, n_w, n_i)


def test_formula_without_worker_terms():
    """A grouping factor absent from the formula: every SD of it is 0 and not modelled."""
    true = presets.low_variance(0.1)
    fit = fit_ratings(_read_sim(simulate(CrossedDesign(8, 60), true, rng=142)),
                      model="rating ~ system + (system || item)")
    assert fit.not_modelled == ("sigma0w", "sigma1w", "sigma2w")
    p = fit.to_params()
    assert p.sd_worker == 0.0 and p.sd_worker_slope == 0.0 and p.sd_item > 0
    assert any("no worker term" in n for n in fit.model_notes())


@pytest.mark.parametrize("coding", ["sum", "treatment"])
def test_correlated_term_matches_paper_term_on_paired_data(pilot_ratings, coding):
    """(system | item) and (system || item): same ML maximum, same total item covariance."""
    paper = fit_ratings(pilot_ratings, coding=coding,
                        model="rating ~ system + (1 | worker) + (system || item)")
    corr = fit_ratings(pilot_ratings, coding=coding,
                       model="rating ~ system + (1 | worker) + (system | item)")
    assert corr.fit.deviance == pytest.approx(paper.fit.deviance, abs=1e-3)
    np.testing.assert_allclose(corr.total_cov("item").to_numpy(),
                               paper.total_cov("item").to_numpy(), atol=2e-4)
    # no separate (1 | item): the intercept column is not a parameter, the block holds the total
    assert "sigma0i" in corr.not_modelled and "sigma0i" not in paper.not_modelled
    assert corr.intercept_sd["item"] == 0.0
    # and the paper's model on the same data agrees on what both identify
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RatingsFitWarning)
        assert corr.to_params().sd_item_slope == pytest.approx(paper.to_params().sd_item_slope,
                                                               abs=1e-3)


def test_formula_fits_nested_design_the_paper_model_cannot():
    r = read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5))
    with pytest.raises(RatingsError, match=r"simpler term.*model='auto'.*pass a formula: "
                                           r"model='rating ~ system \+ \(system \|\| worker\) \+ "
                                           r"\(1 \| item\)'"):
        fit_ratings(r, model="paper")
    fit = fit_ratings(r, model="rating ~ system + (system || worker) + (1 | item)")
    assert fit.n_systems == 4 and fit.not_modelled == ("sigma1i", "sigma2i", "sigma3i", "sigma4i")
    # every system's total item variance is the one (1 | item) variance (nested: no covariance)
    mp = fit.to_multi_params()
    for sd in mp.sd_item_systems:
        assert mp.sd_item**2 + sd**2 == pytest.approx(fit.intercept_sd["item"] ** 2)


@pytest.mark.parametrize("formula, match", [
    ("rating ~ system + (1 | worker", r"model: cannot parse the formula"),
    ("score ~ system + (1 | worker)", r"unknown column 'score' \(did you mean 'rating'\?\)"),
    ("rating ~ system + (1 | rater)", r"unknown column 'rater' \(did you mean 'worker'\?\).*"
                                      r"columns are rating, system, worker and item"),
    ("rating ~ 1 + (1 | worker)", r"the fixed part must contain system"),
    ("rating ~ system + item + (1 | worker)", r"fixed part must be the intercept plus system"),
    ("rating ~ 0 + system + (1 | worker)", r"fixed part must be the intercept plus system"),
    ("rating ~ system", r"has no random term; add \(1 \| worker\)"),
    ("rating ~ system + (1 | system)", r"grouped by 'system'; system is the fixed effect"),
    ("rating ~ system + (1 | worker:item)", r"grouped by 'worker:item'; a worker-by-item effect"),
    ("rating ~ system + (1 | worker/item)", r"grouped by 'worker/item'; a worker-by-item effect"),
    ("rating ~ system + (item | worker)", r"uses 'item'; a random term may hold the intercept"),
])
def test_error_bad_formula(pilot_ratings, formula, match):
    with pytest.raises(RatingsError, match=match) as exc:
        fit_ratings(pilot_ratings, model=formula)
    if "parse" not in match:
        assert "model='rating ~ system + (1 | worker) + (1 | item)'" in str(exc.value)


def test_error_unknown_model_word_mentions_formulas(pilot_ratings):
    with pytest.raises(RatingsError, match=r"model must be one of 'auto', 'paper'; got 'simple'\."
                                           r".*or pass an lme4 formula"):
        fit_ratings(pilot_ratings, model="simple")


# ----------------------------------------------------------------- printed tables
def test_tables_print_rounded_and_keep_precision(pilot_ratings):
    fit = fit_ratings(pilot_ratings)
    t = fit.table()
    assert isinstance(t, RatingsTable) and t.index.tolist() == ["pilot_ratings.csv"]
    text = str(t)
    assert text == repr(t)
    beta1 = t["beta1"].item()
    assert f"{beta1:.3f}" in text and f"{beta1:.6f}" not in text
    assert beta1 != round(beta1, 3)                    # the value itself is not rounded
    assert fit.to_record()["tables"]["Table 13"]["beta1"] == beta1
    for title, sub in fit.tables().items():
        assert isinstance(sub, RatingsTable), title
        assert all(f"{v:.3f}" in str(sub) for v in sub.iloc[0])


def test_table_of_seven_systems_prints_every_column():
    true = MultiSystemParams(beta0=0.5, effects=(0.02, -0.01, 0.03, 0.0, -0.02, 0.01),
                             sd_worker=0.1, sd_worker_systems=(0.0,) * 7, sd_item=0.1,
                             sd_item_systems=(0.0,) * 7, sigma=0.2)
    fit = fit_ratings(_read_sim(simulate(CrossedDesign(5, 12, 7), true, rng=143)), model=SIMPLE)
    t = fit.table()
    assert t.shape == (1, 7 + 1 + 8 + 8)
    text = str(t)
    assert "columns]" not in text and "..." not in text
    for col in t.columns:
        assert col in text, col
    assert max(len(line) for line in text.splitlines()) <= 100   # wraps instead of truncating
    assert "- : not in the fitted model" in text
    assert text.count(" -") >= 14                                  # sigma1..7 w and i


# ----------------------------------------------------------------- singular fits
def test_singular_fit_gets_one_explaining_line():
    true = LMMParams(beta0=0.5, effect=0.05, sd_worker=0.0, sd_worker_slope=0.0, sd_item=0.1,
                     sd_item_slope=0.0, sigma=0.2)
    fit = fit_ratings(_read_sim(simulate(CrossedDesign(6, 40), true, rng=144)), model=SIMPLE)
    assert fit.singular and fit.table()["sigma0w"].item() < 5e-4
    note = fit.singular_note()
    assert note is not None and "\n" not in note
    for piece in ("singular fit (sigma0w at 0)", "cannot separate", "lower bound",
                  "fixed effects remain valid", "optimistic"):
        assert piece in note, piece
    assert f"note: {note}" in fit.summary()
    assert note in fit.to_record()["notes"]


def test_no_singular_line_for_a_regular_fit(pilot_ratings):
    fit = fit_ratings(pilot_ratings)
    assert not fit.singular and fit.singular_note() is None
    assert "singular fit" not in fit.summary()


def test_paper_model_tables_are_unchanged_by_the_generic_reading(pilot_ratings):
    """The term-by-term reading gives the fitted (system || g) block and intercept as before."""
    fit = fit_ratings(pilot_ratings)
    assert fit.not_modelled == () and fit.model == "auto"
    for g in ("worker", "item"):
        terms = [t for t in fit.fit.var_terms if t.group == g]
        block = next(t for t in terms if len(t.cnames) == 2)
        np.testing.assert_allclose(fit.system_cov[g].to_numpy(), block.cov, atol=1e-12)
        inter = next(t for t in terms if t.cnames == ("(Intercept)",))
        assert fit.intercept_sd[g] == pytest.approx(math.sqrt(inter.cov[0, 0]))
