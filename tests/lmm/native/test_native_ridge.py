"""The exact ridge of ``(f || g)`` with a factor ``f`` (nlpower.lmm.native.ridge).

``(system || g)`` expands to ``(1 | g) + (0 + system | g)``; the intercept
column is the row sum of the system columns, so the likelihood depends on the
two terms only through ``Sigma + s0^2 11'``.  Checked here: the detection from
the model matrices (whatever the names; not across grouping factors, not for
numeric slopes or diagonal terms), the maps between the full and the reduced
``theta`` (the deviance is the same at both, the split is the documented
midpoint), and fits through the reduced model against the ordinary fit of
the same model object (deviance no higher, the same fixed effects, standard
errors and identified covariance, not singular, lme4's check in the identified
parameters), ML and REML; a reduced optimum at a zero variance falls back to the
ordinary fit.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import ridge as rd

PAPER = "rating ~ system + (system || worker) + (system || item)"
REFERENCE = Path(__file__).resolve().parents[2] / "reference"


def _data(seed: int = 3, sd_w: float = 0.6, sd_ws: float = 0.4) -> pd.DataFrame:
    """2 systems, 70 workers, 150 items; every (item, system) cell rated by 2 random workers."""
    rng = np.random.default_rng(seed)
    nw, ni = 70, 150
    i = np.repeat(np.arange(ni), 4)
    s = np.tile([0, 0, 1, 1], ni)
    w = rng.integers(0, nw, i.size)
    y = (0.3 * np.where(s == 0, -1.0, 1.0) + sd_w * rng.normal(size=nw)[w]
         + sd_ws * rng.normal(size=(nw, 2))[w, s] + 0.7 * rng.normal(size=ni)[i]
         + 0.3 * rng.normal(size=(ni, 2))[i, s] + rng.normal(size=i.size))
    return pd.DataFrame({"rating": y, "system": np.array(["A", "B"])[s],
                         "worker": [f"w{v:02d}" for v in w], "item": [f"i{v:03d}" for v in i]})


def _spec(df: pd.DataFrame, formula: str = PAPER):
    return model_frame(formula, df, contrasts={"system": "sum"})


def _fit(model: NativeModel, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(**kw)


def test_detected_from_the_matrices_not_the_names():
    df = _data().rename(columns={"system": "arm", "worker": "rater"})
    spec = model_frame("rating ~ arm + (arm || rater) + (arm || item)", df,
                       contrasts={"arm": "sum"})
    ridges = rd.find_ridges(spec.re_terms)
    assert sorted(r.term.group for r in ridges) == ["item", "rater"]
    for r in ridges:
        assert r.scalar.q == 1 and r.term.q == 2 and r.scalar.group == r.term.group
    # explicitly written, the same
    spec2 = _spec(_data(), "rating ~ system + (1 | worker) + (0 + system | worker)")
    assert len(rd.find_ridges(spec2.re_terms)) == 1


def test_not_detected_without_an_exact_sum():
    df = _data().assign(x=lambda d: np.where(d["system"] == "A", -1.0, 1.0))
    # a numeric slope: (1 | g) + (0 + x | g), no multi-column term
    assert rd.find_ridges(model_frame("rating ~ x + (x || worker) + (1 | item)", df).re_terms) == ()
    # a correlated term (intercept inside it), and per-system diagonal terms
    assert rd.find_ridges(_spec(df, "rating ~ system + (system | worker)").re_terms) == ()
    df2 = df.assign(a=(df["system"] == "A").astype(float), b=(df["system"] == "B").astype(float))
    assert rd.find_ridges(_spec(df2, "rating ~ system + (1 | worker) + (0 + a + b || worker)"
                                ).re_terms) == ()
    # the sum of the columns is not the intercept column: a and 2b
    df3 = df2.assign(b=2.0 * df2["b"])
    assert rd.find_ridges(_spec(df3, "rating ~ system + (1 | worker) + (0 + a + b | worker)"
                                ).re_terms) == ()
    # the intercept of another grouping factor
    assert rd.find_ridges(_spec(df2, "rating ~ system + (1 | item) + (0 + a + b | worker)"
                                ).re_terms) == ()


def test_split_is_the_midpoint_of_the_admissible_intercept_variances():
    M = np.array([[1.3, 0.4, 0.2], [0.4, 0.9, 0.1], [0.2, 0.1, 1.1]])
    t, S = rd.split_covariance(M)
    np.testing.assert_allclose(S + t, M, rtol=0, atol=1e-15)
    t_max = 1.0 / (np.ones(3) @ np.linalg.solve(M, np.ones(3)))
    assert t == pytest.approx(t_max / 2, rel=1e-12)
    assert np.linalg.eigvalsh(S).min() > 0                       # interior: non-singular
    assert np.linalg.eigvalsh(M - t_max).min() == pytest.approx(0, abs=1e-12)   # the end
    assert rd.split_covariance(np.array([[1.0, 1.0], [1.0, 1.0]])) is None       # singular M


def test_theta_maps_keep_the_deviance():
    spec = _spec(_data())
    ridges = rd.find_ridges(spec.re_terms)
    full = NativeModel(spec)
    red = NativeModel(rd.reduced_spec(spec, ridges))
    rng = np.random.default_rng(1)
    for _ in range(3):
        th_r = red.layout.start + np.where(red.layout.diag, rng.uniform(-0.5, 0.5, red.layout.size),
                                           rng.uniform(-0.3, 0.3, red.layout.size))
        th_f = rd.to_full_theta(th_r, red.layout, full.layout, ridges)
        assert full.deviance(th_f) == pytest.approx(red.deviance(th_r), rel=1e-12)
        assert full.deviance(th_f, REML=True) == pytest.approx(red.deviance(th_r, REML=True),
                                                               rel=1e-12)
        back = rd.to_reduced_theta(th_f, red.layout, full.layout, ridges)
        np.testing.assert_allclose(back, th_r, rtol=0, atol=1e-12)
        # the chain-rule gradient against the full model's analytic one
        g_r = red.value_and_gradient(th_r)[1]
        g_f = full.value_and_gradient(th_f)[1]
        np.testing.assert_allclose(rd.full_gradient(g_r, th_f, red.layout, full.layout, ridges),
                                   g_f, rtol=1e-5, atol=1e-5 * np.abs(g_f).max())


def _identified(fit) -> dict[str, np.ndarray]:
    """Per grouping factor, the covariance of the per-system effects (ridge-invariant)."""
    out = {}
    for g in ("worker", "item"):
        terms = [t for t in fit.var_terms if t.group == g]
        s0 = next(t.cov[0, 0] for t in terms if t.cov.shape == (1, 1))
        out[g] = next(t.cov for t in terms if t.cov.shape == (2, 2)) + s0
    return out


@pytest.mark.parametrize("REML", [False, True])
def test_fit_through_the_reduced_model_matches_the_ordinary_fit(REML):
    spec = _spec(_data())
    model = NativeModel(spec)
    assert model._ridges, "the ridge path must apply to this design"
    fit = _fit(model, REML=REML)
    assert any(s.startswith("ridge") for s in fit.optinfo["steps"])
    plain = NativeModel(spec)
    plain._ridges = ()
    ref = _fit(plain, REML=REML)
    assert not any(s.startswith("ridge") for s in ref.optinfo["steps"])
    assert fit.deviance <= ref.deviance + 1e-9
    np.testing.assert_allclose(fit.fixef, ref.fixef, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), np.sqrt(np.diag(ref.vcov)), rtol=1e-5)
    assert fit.sigma == pytest.approx(ref.sigma, rel=1e-6)
    a, b = _identified(fit), _identified(ref)
    for g in a:
        np.testing.assert_allclose(a[g], b[g], rtol=2e-4, atol=2e-4 * np.abs(b[g]).max())
    assert not fit.singular and fit.converged
    # the reported split: the intercept variance is half the largest admissible one
    for g in ("worker", "item"):
        M = a[g]
        s0 = next(t.cov[0, 0] for t in fit.var_terms if t.group == g and t.cov.shape == (1, 1))
        t_max = 1.0 / (np.ones(2) @ np.linalg.solve(M, np.ones(2)))
        assert s0 == pytest.approx(t_max / 2, rel=1e-9)
    # lme4's check in the identified parameters: the ridge's singular Hessian is a note
    cc = fit.optinfo["checkconv"]
    assert cc["code"] == 0 and cc["ok"] and cc["messages"] == []
    assert len(cc["notes"]) == 2 and all("is not identified" in m for m in cc["notes"])
    assert fit.optsum.notes == tuple(cc["notes"]) and cc["notes"][0] in fit.summary()
    assert len(cc["gradient"]) == model.layout.size
    assert max(abs(v) for v in cc["gradient"]) < 2e-3


def test_a_singular_reduced_optimum_maps_to_a_singular_fit():
    """No worker-by-system variance: the per-system worker covariance is singular, so is the
    fit whatever the split; the intercept's variance is then 0 (the split at t = 0)."""
    spec = _spec(_data(seed=6, sd_ws=0.0))
    model = NativeModel(spec)
    fit = _fit(model)
    plain = NativeModel(spec)
    plain._ridges = ()
    ref = _fit(plain)
    assert any(s.startswith("ridge") for s in fit.optinfo["steps"])
    assert fit.singular and ref.singular
    assert fit.deviance <= ref.deviance + 1e-8
    np.testing.assert_allclose(fit.fixef, ref.fixef, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), np.sqrt(np.diag(ref.vcov)), rtol=1e-5)
    a, b = _identified(fit), _identified(ref)
    np.testing.assert_allclose(a["worker"], b["worker"], rtol=0, atol=2e-3 * np.abs(b["worker"]).max())
    assert np.linalg.eigvalsh(a["worker"]).min() < 1e-6 * np.abs(a["worker"]).max()
    s0 = next(t.cov[0, 0] for t in fit.var_terms if t.group == "worker" and t.cov.shape == (1, 1))
    assert s0 == 0.0
    assert fit.optinfo["checkconv"]["messages"] == ["boundary (singular) fit: see help('isSingular')"]


def test_used_only_where_it_pays():
    # the 2-system design: a third of the random-effects columns go, the rest is >= 200
    spec = _spec(_data())
    assert len(rd.ridges_that_pay(spec, NativeModel(spec).blocks.N2)) == 2
    assert rd.ridges_that_pay(spec, rd.RIDGE_MIN_N2 - 1) == ()
    # 4 systems: a fifth of the columns
    rng = np.random.default_rng(2)
    i = np.repeat(np.arange(150), 8)
    s4 = np.tile(np.repeat(np.arange(4), 2), 150)
    df = pd.DataFrame({"rating": rng.normal(size=i.size), "system": np.array(list("ABCD"))[s4],
                       "worker": [f"w{v}" for v in rng.integers(0, 70, i.size)],
                       "item": [f"i{v}" for v in i]})
    spec4 = _spec(df)
    assert len(rd.find_ridges(spec4.re_terms)) == 2
    assert rd.ridges_that_pay(spec4, 10_000) == ()


@pytest.mark.parametrize("REML", [False, True])
def test_fit_through_the_reduced_model_against_lme4(REML):
    """lme4 converged tightly on the same file (tests/reference/ridge_reference.R)."""
    ref = json.loads((REFERENCE / "ridge_reference.json").read_text())["REML_tight" if REML
                                                                         else "ML_tight"]
    df = pd.read_csv(REFERENCE / "data" / "ridge2.csv",
                     dtype={"system": str, "worker": str, "item": str})
    fit = _fit(NativeModel(_spec(df)), REML=REML)
    assert any(s.startswith("ridge") for s in fit.optinfo["steps"])
    assert fit.deviance <= ref["criterion"] + 1e-6
    assert fit.deviance == pytest.approx(ref["criterion"], abs=1e-5)
    np.testing.assert_allclose(fit.fixef, ref["fixef"], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), ref["se"], rtol=1e-5)
    assert fit.sigma == pytest.approx(ref["sigma"], rel=1e-5)
    ident = _identified(fit)
    for g in ("worker", "item"):
        np.testing.assert_allclose(ident[g], ref["M"][g], rtol=2e-4)
