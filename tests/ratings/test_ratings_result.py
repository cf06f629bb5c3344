"""RatingsFit (nlpower.ratings.result): tables, identified quantities, simulation parameters."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, simulate
from nlpower.errors import RatingsError
from nlpower.ratings import RatingsFit, fit_ratings, read_ratings
from nlpower.ratings.result import RatingsFitWarning
from ratings_helpers import FIXTURES, _read_sim, fit_nested, fit_pilot


@pytest.fixture(scope="module")
def nested() -> RatingsFit:
    return fit_nested()


@pytest.fixture(scope="module")
def pilot() -> RatingsFit:
    return fit_pilot()



# ----------------------------------------------------------------- tables and coding
def test_table_layout_and_legend(pilot):
    t = pilot.table()
    assert list(t.columns) == ["beta0", "beta1", "sigma", "sigma0w", "sigma1w", "sigma2w",
                               "sigma0i", "sigma1i", "sigma2i"]
    assert t.shape == (1, 9)
    assert pilot.systems == ("B", "A") and pilot.baseline == "A"
    # the columns are the fit's numbers
    vc = pilot.fit.varcorr()
    assert t["sigma"].item() == pytest.approx(pilot.fit.sigma)
    w_int = vc[(vc.grp.str.startswith("worker")) & (vc.var1 == "(Intercept)")]["sdcor"].item()
    assert t["sigma0w"].item() == pytest.approx(w_int)
    assert "beta1 (system[B]) = mean(B) - grand mean = (mean(B) - mean(A)) / 2" in pilot.legend()
    tabs = pilot.tables()
    assert list(tabs) == ["Table 13", "Table 14", "Table 15"]
    assert list(tabs["Table 14"].columns) == ["sigma0w", "sigma1w", "sigma2w"]
    assert list(tabs["Table 15"].columns) == ["sigma0i", "sigma1i", "sigma2i"]
    tidy = pilot.to_frame()
    assert set(tidy["parameter"]) == set(t.columns)
    assert (tidy["coding"] == "sum").all()


def test_beta1_is_half_the_mean_difference_in_sum_coding(pilot):
    ident = pilot.identifiable().systems.set_index("system")
    diff = ident.loc["B", "mean"] - ident.loc["A", "mean"]
    assert pilot.fixef["system[B]"] == pytest.approx(diff / 2, rel=1e-10)
    # and the balanced raw means agree with the GLS means (balanced, fully crossed)
    raw = read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5)).data
    m = raw.groupby("system", observed=True)["rating"].mean()
    assert diff == pytest.approx(m["B"] - m["A"], abs=1e-6)


def test_summary_contains_report_tables_and_lme4_layout(pilot):
    text = pilot.summary()
    for piece in ("640 ratings by 8 workers", "Table 13 layout", "Table 14 layout", "Table 15 layout",
                  "Identified quantities", "Random effects:", "Fixed effects:",
                  "LMMParams (coding='sum'", "lme4 expands (system || g)"):
        assert piece in text, piece
    assert "RatingsFit(" in repr(pilot)
    d = pilot.to_record()
    json.dumps(d)  # serialisable
    assert d["tables"]["Table 13"]["beta1"] == pytest.approx(pilot.fixef["system[B]"])


# ----------------------------------------------------------------- identifiability
def test_nested_design_is_detected_and_explained(nested):
    assert nested.report.item_layout == "nested"
    assert nested.reduced == ("item",)
    assert "(0 + is_sys1 + is_sys2 + is_sys3 + is_sys4 || item)" in nested.formula
    t = nested.table()
    assert t["sigma0i"].item() == 0.0
    notes = " ".join(nested.identifiability_notes())
    assert "items are nested in systems" in notes
    ic = nested.identifiable().item_cov
    off = ic.to_numpy()[~np.eye(4, dtype=bool)]
    assert np.isnan(off).all()  # no item under two systems: not identified
    assert np.isfinite(np.diag(ic.to_numpy())).all()
    assert np.isfinite(nested.identifiable().worker_cov.to_numpy()).all()  # workers see all systems
    assert "items are nested in systems" in nested.summary()


def _fit_from_start(ratings, shift: float) -> RatingsFit:
    base = fit_ratings(ratings)
    names = base.fit.theta_names
    # start the intercept terms far from the default (1.0): they sit on the ridge
    start = np.array([2.5 if "Intercept" in n else (0.3 if "." not in n else 0.0) for n in names])
    return fit_ratings(ratings, start=start * shift)


@pytest.mark.parametrize("fixture", ["nested_4sys_ratings.csv", "pilot_ratings.csv"])
def test_identifiable_agrees_across_starts(fixture):
    r = read_ratings(FIXTURES / fixture, scale=(1, 5))
    a = fit_ratings(r)
    b = _fit_from_start(r, 1.0)
    # same likelihood
    assert b.fit.deviance == pytest.approx(a.fit.deviance, abs=2e-3)
    ia, ib = a.identifiable(), b.identifiable()
    cols = ["mean", "effect", "sd_worker_total", "sd_item_total"]
    np.testing.assert_allclose(ia.systems[cols].to_numpy(), ib.systems[cols].to_numpy(), atol=3e-3)
    assert ia.sigma == pytest.approx(ib.sigma, abs=1e-4)
    np.testing.assert_allclose(ia.worker_cov.to_numpy(), ib.worker_cov.to_numpy(), atol=1e-3,
                               equal_nan=True)
    np.testing.assert_allclose(ia.item_cov.to_numpy(), ib.item_cov.to_numpy(), atol=1e-3,
                               equal_nan=True)


def test_raw_split_is_not_identified_but_total_is():
    """Same data, two starts: intercept SDs may differ; s0^2 + s_k^2 may not."""
    r = read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5))
    a = fit_ratings(r)
    b = _fit_from_start(r, 1.0)
    tot_a = a.intercept_sd["item"] ** 2 + np.diag(a.system_cov["item"].to_numpy())
    tot_b = b.intercept_sd["item"] ** 2 + np.diag(b.system_cov["item"].to_numpy())
    np.testing.assert_allclose(tot_a, tot_b, atol=1e-3)
    # the likelihood is flat along s0^2 -> s0^2 + t, Sigma -> Sigma - t: check it directly
    from nlpower.lmm.frame import model_frame
    from nlpower.lmm.native import NativeModel
    from nlpower.ratings.model import FORMULA

    data = r.data.copy()
    data["system"] = pd.Categorical(data["system"].astype(str), categories=list(a.systems))
    model = NativeModel(model_frame(FORMULA, data, contrasts={"system": "sum"}))
    theta = np.asarray(a.fit.theta, dtype=float)
    names = list(a.fit.theta_names)
    dev0 = model.deviance(theta)
    # move item variance from the 2x2 block to the intercept, keeping the total fixed
    s2 = a.sigma**2
    S = a.system_cov["item"].to_numpy()
    # largest t keeping S - t J positive semi-definite is det(S) / (1' adj(S) 1); take half
    t = 0.5 * np.linalg.det(S) / (S[0, 0] + S[1, 1] - 2 * S[0, 1])
    cov = S - t
    v0 = a.intercept_sd["item"] ** 2 + t
    assert math.sqrt(v0) - a.intercept_sd["item"] > 0.01  # a real move of the intercept SD
    lchol = np.linalg.cholesky(cov / s2)
    moved = theta.copy()
    idx_int = [i for i, n in enumerate(names) if n.startswith("item") and "Intercept" in n]
    idx_blk = [i for i, n in enumerate(names) if n.startswith("item") and "Intercept" not in n]
    assert len(idx_int) == 1 and len(idx_blk) == 3
    moved[idx_int[0]] = math.sqrt(v0 / s2)
    moved[idx_blk] = [lchol[0, 0], lchol[1, 0], lchol[1, 1]]
    assert model.deviance(moved) == pytest.approx(dev0, abs=1e-6)


# ----------------------------------------------------------------- to_params
def test_to_params_mapping_formulas(pilot):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RatingsFitWarning)  # SDs 0.142 vs 0.126: not material
        p = pilot.to_params()
    wc = pilot.total_cov("worker").loc[["B", "A"], ["B", "A"]].to_numpy()
    va, vb, c = wc[0, 0], wc[1, 1], wc[0, 1]
    assert p.sd_worker_slope**2 == pytest.approx((va + vb - 2 * c) / 4)
    assert p.sd_worker**2 == pytest.approx((va + vb + 2 * c) / 4)
    # the brief's formulas in terms of the raw split
    s0 = pilot.intercept_sd["worker"]
    S = pilot.system_cov["worker"].loc[["B", "A"], ["B", "A"]].to_numpy()
    assert p.sd_worker_slope == pytest.approx(math.sqrt(S[0, 0] + S[1, 1] - 2 * S[0, 1]) / 2)
    assert p.sd_worker == pytest.approx(math.sqrt(s0**2 + (S[0, 0] + S[1, 1] + 2 * S[0, 1]) / 4))
    ident = pilot.identifiable().systems.set_index("system")
    assert p.effect == pytest.approx((ident.loc["B", "mean"] - ident.loc["A", "mean"]) / 2)
    assert p.beta0 == pytest.approx((ident.loc["B", "mean"] + ident.loc["A", "mean"]) / 2)
    assert p.coding == "sum" and p.sigma == pilot.sigma
    # reversed contrast flips the effect; half coding doubles it
    q = pilot.to_params(("A", "B"))
    assert q.effect == pytest.approx(-p.effect) and q.sd_item_slope == pytest.approx(p.sd_item_slope)
    assert pilot.to_params("B", coding="half").effect == pytest.approx(2 * p.effect)


def test_to_params_warns_when_dropping_a_material_correlation():
    # simulate per-system SDs that differ a lot: item SD 0.05 under A, 0.25 under B
    from nlpower.params import MultiSystemParams

    true = MultiSystemParams(beta0=0.5, effects=(0.05,), sd_worker=0.0,
                             sd_worker_systems=(0.05, 0.05), sd_item=0.0,
                             sd_item_systems=(0.05, 0.25), sigma=0.1)
    df = simulate(CrossedDesign(10, 80, 2), true, rng=5)
    fit = fit_ratings(_read_sim(df))
    with pytest.warns(RatingsFitWarning, match="intercept-slope correlation of"):
        fit.to_params()


def test_to_params_nested_items_warns_and_puts_variance_in_intercept(nested):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = nested.to_params("B")
    messages = [str(w.message) for w in caught if issubclass(w.category, RatingsFitWarning)]
    assert any("no item rated both 'B' and 'A'" in m for m in messages), messages
    assert p.sd_item_slope == 0.0
    ident = nested.identifiable().systems.set_index("system")
    v = (ident.loc["B", "sd_item_total"] ** 2 + ident.loc["A", "sd_item_total"] ** 2) / 2
    assert p.sd_item**2 == pytest.approx(v)


def test_to_multi_params_keeps_totals(nested):
    mp = nested.to_multi_params()
    assert mp.system_names == ("A", "B", "C", "D")
    ident = nested.identifiable().systems.set_index("system")
    for j, s in enumerate(mp.system_names):
        assert mp.sd_item**2 + mp.sd_item_systems[j] ** 2 == pytest.approx(
            ident.loc[s, "sd_item_total"] ** 2)
        assert mp.system_means[j] == pytest.approx(ident.loc[s, "mean"])


def test_error_to_params_contrasts(pilot, nested):
    with pytest.raises(RatingsError, match="contrast is required with 4 systems"):
        nested.to_params()
    with pytest.raises(RatingsError, match=r"unknown system 'b'.*Did you mean 'B'\?"):
        pilot.to_params("b")
    with pytest.raises(RatingsError, match="compares 'A' with itself"):
        pilot.to_params("A")
    with pytest.raises(RatingsError, match="contrast must be a system name or a pair"):
        pilot.to_params(("A", "B", "C"))
    with pytest.raises(RatingsError, match="coding must be one of"):
        pilot.to_params(coding="poly")
    with pytest.raises(RatingsError, match="group must be 'worker' or 'item'"):
        pilot.total_cov("rater")
    with pytest.raises(RatingsError, match="group must be 'worker' or 'item'"):
        pilot.identifiable().cor("rater")
