"""confint, anova and emmeans against lme4, lmerTest and emmeans (tests/reference/inference_reference.R).

Tolerances: Gaussian fits agree with lme4 to ~1e-6, so means, SEs and df
are compared to 1e-5 relative; profile limits to 2e-4 relative (lme4
interpolates its profile with splines, we find the crossings by root
finding); tiny Tukey p-values to 1e-9 absolute (R's ptukey is not more
accurate than that).  GLMM fits differ from lme4's within the tolerances
of tests/glmm/test_reference.py (estimates 1e-3, SEs 2%, lme4's looser
PIRLS), and so do their intervals, means and contrasts here.
"""

from __future__ import annotations

import json
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower.inference import anova, confint, emmeans

REF = Path(__file__).resolve().parents[1] / "reference"
DATA = REF / "data"


@cache
def ref() -> dict[str, Any]:
    return json.loads((REF / "inference_reference.json").read_text())  # type: ignore[no-any-return]


def arr(x: Any) -> np.ndarray:
    return np.atleast_1d(np.array(x, dtype=float))


@cache
def sleep() -> pd.DataFrame:
    return pd.read_csv(DATA / "sleepstudy.csv")


@cache
def ratings3() -> pd.DataFrame:
    d = pd.read_csv(DATA / "crossed4.csv")
    return d[d["system"].isin(["A", "B", "C"])].reset_index(drop=True)


@cache
def cbpp_fit(formula: str = "prop ~ period + (1 | herd)") -> Any:
    cb = pd.read_csv(DATA / "cbpp.csv", dtype={"herd": str, "period": str})
    return nlpower.glmer(formula, cb, "binomial", weights="size")


@pytest.mark.parametrize(("case", "formula", "REML"), [
    ("sleepstudy_reml", "Reaction ~ Days + (Days | Subject)", True),
    ("sleepstudy_ml", "Reaction ~ Days + (Days | Subject)", False),
])
@pytest.mark.parametrize("method", ["wald", pytest.param("profile", marks=pytest.mark.slow)])
def test_confint_sleepstudy(case: str, formula: str, REML: bool, method: str) -> None:
    fit = nlpower.lmer(formula, sleep(), REML=REML)
    got = confint(fit, method=method).to_frame()
    want = ref()["confint"][case][method]
    assert list(got.index) == want["names"]
    rtol = 1e-5 if method == "wald" else 2e-4
    np.testing.assert_allclose(got["lower"], arr(want["lower"]), rtol=rtol)
    np.testing.assert_allclose(got["upper"], arr(want["upper"]), rtol=rtol)


@pytest.mark.parametrize("method", ["wald", "profile"])
def test_confint_penicillin(method: str) -> None:
    """Also the fast check of the Gaussian profile (sleepstudy's run as slow tests)."""
    pen = pd.read_csv(DATA / "penicillin.csv")
    fit = nlpower.lmer("diameter ~ 1 + (1 | plate) + (1 | sample)", pen)
    got = confint(fit, method=method).to_frame()
    want = ref()["confint"]["penicillin_reml"][method]
    assert list(got.index) == want["names"]
    np.testing.assert_allclose(got["lower"], arr(want["lower"]), rtol=2e-4)
    np.testing.assert_allclose(got["upper"], arr(want["upper"]), rtol=2e-4)


def test_confint_cbpp_wald() -> None:
    got = confint(cbpp_fit(), method="wald").to_frame()
    want = ref()["confint"]["cbpp"]["wald"]
    assert list(got.index) == want["names"]
    lo, hi = arr(want["lower"]), arr(want["upper"])
    assert np.isnan(got["lower"].iloc[0]) and np.isnan(lo[0])
    half = (hi - lo)[1:] / 2
    # SEs within 2% of lme4's (its finite-difference Hessian), estimates within 1e-3
    np.testing.assert_allclose(got["lower"].to_numpy()[1:], lo[1:], atol=1e-3 + 0.02 * half.max())
    np.testing.assert_allclose(got["upper"].to_numpy()[1:], hi[1:], atol=1e-3 + 0.02 * half.max())


def test_confint_cbpp_profile() -> None:
    """The GLMM profile (joint Laplace deviance) against lme4's: the fits agree to ~1e-4
    in the parameters, lme4 interpolates its profile by splines."""
    got = confint(cbpp_fit()).to_frame()
    want = ref()["confint"]["cbpp"]["profile"]
    assert list(got.index) == want["names"]
    np.testing.assert_allclose(got["lower"], arr(want["lower"]), atol=3e-4)
    np.testing.assert_allclose(got["upper"], arr(want["upper"]), atol=3e-4)


def test_confint_boot_within_monte_carlo_error_of_lme4() -> None:
    """Percentile limits of 300 bootstrap refits against lme4's confint(method = "boot")
    with nsim = 2000 (tests/reference/inference_boot_reference.R).  The SE of a 2.5%
    quantile of n draws is about 2.67 s / sqrt(n) for a roughly normal distribution of SD
    s (s from lme4's interval: width / 3.92); the two runs' errors add in quadrature and
    the limits must agree within 4.5 of those SEs.  The same seed gives the same intervals."""
    fit = nlpower.lmer("Reaction ~ Days + (1 | Subject)", sleep())
    boot = confint(fit, method="boot", n_boot=300, rng=7).to_frame()
    want = json.loads((REF / "inference_boot_reference.json").read_text())
    assert list(boot.index) == want["names"]
    lo, hi = arr(want["lower"]), arr(want["upper"])
    s = (hi - lo) / 3.92
    tol = 4.5 * 2.67 * s * np.sqrt(1 / 300 + 1 / want["nsim"])
    assert np.all(np.abs(boot["lower"].to_numpy() - lo) < tol)
    assert np.all(np.abs(boot["upper"].to_numpy() - hi) < tol)
    again = confint(fit, method="boot", n_boot=300, rng=7).to_frame()
    pd.testing.assert_frame_equal(boot, again)


def test_anova_lrt_lmm() -> None:
    s0 = nlpower.lmer("Reaction ~ 1 + (1 | Subject)", sleep())
    s1 = nlpower.lmer("Reaction ~ Days + (1 | Subject)", sleep())
    s2 = nlpower.lmer("Reaction ~ Days + (Days | Subject)", sleep())
    got = anova(s2, s0, s1, names=["s2", "s0", "s1"]).to_frame()
    want = ref()["anova"]["sleepstudy"]
    assert list(got.index) == want["models"]
    for col, key in [("npar", "npar"), ("AIC", "AIC"), ("BIC", "BIC"), ("logLik", "logLik"),
                     ("Chisq", "Chisq"), ("Df", "Df")]:
        np.testing.assert_allclose(got[col].to_numpy(float), arr(want[key]), rtol=1e-6)
    np.testing.assert_allclose(got["p"].to_numpy()[1:], arr(want["p"])[1:], rtol=1e-4)


def test_anova_lrt_glmm() -> None:
    g0, g1 = cbpp_fit("prop ~ 1 + (1 | herd)"), cbpp_fit()
    got = anova(g0, g1).to_frame()
    want = ref()["anova"]["cbpp"]
    np.testing.assert_allclose(got["logLik"], arr(want["logLik"]), atol=1e-3)
    np.testing.assert_allclose(got["Chisq"].iloc[1], arr(want["Chisq"])[1], atol=2e-3)
    np.testing.assert_allclose(got["p"].iloc[1], arr(want["p"])[1], rtol=1e-2)


@pytest.mark.parametrize("ddf", ["satterthwaite", "kenward_roger"])
@pytest.mark.parametrize("case", ["sleepstudy", "ratings3", "ratings3_interaction"])
def test_type3(case: str, ddf: str) -> None:
    data = None
    if case == "sleepstudy":
        fit = nlpower.lmer("Reaction ~ Days + (Days | Subject)", sleep())
    elif case == "ratings3":
        fit = nlpower.lmer("rating ~ system + (1 | worker) + (1 | item)", ratings3(),
                           contrasts={"system": "sum"})
    else:   # treatment coding and an interaction: lmerTest's hypotheses need the data
        data = ratings3().assign(half=lambda d: np.where(
            d["item"].str[1:].astype(int) % 2 == 0, "even", "odd"))
        fit = nlpower.lmer("rating ~ system * half + (1 | worker) + (1 | item)", data)
    got = anova(fit, ddf=ddf.replace("_", "-"), data=data).to_frame()
    want = ref()["type3"][case][ddf]
    assert list(got.index) == list(np.atleast_1d(want["terms"]))
    for col, key, rtol in [("SumSq", "SumSq", 1e-5), ("NumDF", "NumDF", 0), ("DenDF", "DenDF", 1e-4),
                           ("F", "F", 1e-5), ("p", "p", 1e-4)]:
        np.testing.assert_allclose(got[col].to_numpy(float), arr(want[key]), rtol=rtol)


def _check_pairs(got: pd.DataFrame, want: dict[str, Any], rtol: float, atol_p: float) -> None:
    assert list(got.index) == list(np.atleast_1d(want["contrast"]))
    np.testing.assert_allclose(got["estimate"], arr(want["estimate"]), rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(got["SE"], arr(want["SE"]), rtol=rtol)
    np.testing.assert_allclose(got["p"], arr(want["p"]), rtol=max(rtol, 1e-5), atol=atol_p)


@pytest.mark.parametrize(("df", "key"), [("kenward-roger", "lmer_kr"),
                                         ("satterthwaite", "lmer_satterthwaite")])
def test_emmeans_lmer(df: str, key: str) -> None:
    fit = nlpower.lmer("rating ~ system + (1 | worker) + (1 | item)", ratings3(),
                       contrasts={"system": "sum"})
    em = emmeans(fit, "system", data=ratings3(), df=df)
    want = ref()["emmeans"][key]
    got = em.to_frame()
    assert list(got.index) == want["emmeans"]["levels"]
    np.testing.assert_allclose(got["emmean"], arr(want["emmeans"]["estimate"]), rtol=1e-6)
    np.testing.assert_allclose(got["SE"], arr(want["emmeans"]["SE"]), rtol=1e-5)
    np.testing.assert_allclose(got["df"], arr(want["emmeans"]["df"]), rtol=1e-4)
    for adj in ("tukey", "holm", "bonferroni", "fdr", "none"):
        _check_pairs(em.contrast(adjust=adj).to_frame(), want[adj], 1e-5, 1e-9)


@cache
def verbagg_fit() -> Any:
    va = pd.read_csv(DATA / "VerbAgg.csv", dtype={"id": str, "item": str})
    return nlpower.glmer("r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 | item)", va,
                         "binomial")


@pytest.mark.slow
def test_emmeans_glmer() -> None:
    fit = verbagg_fit()
    em = emmeans(fit, "btype")
    want = ref()["emmeans"]
    np.testing.assert_allclose(em.to_frame()["emmean"], arr(want["glmer_link"]["emmeans"]["estimate"]),
                               atol=1e-3)
    for adj in ("tukey", "holm"):
        _check_pairs(em.contrast(adjust=adj).to_frame(), want["glmer_link"][adj], 2e-2, 1e-6)
    resp = emmeans(fit, "btype", scale="response")
    np.testing.assert_allclose(resp.to_frame()["prob"],
                               arr(want["glmer_response"]["emmeans"]["estimate"]), atol=1e-3)
    _check_pairs(resp.contrast(adjust="tukey").to_frame(), want["glmer_response"]["tukey"], 2e-2, 1e-6)
    _check_pairs(em.contrast("baseline", adjust="holm").to_frame(), want["glmer_vs_baseline"],
                 2e-2, 1e-6)


def test_emmeans_clmm_latent() -> None:
    wine = pd.read_csv(DATA / "wine.csv", dtype={"judge": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nlpower.clmm("rating ~ temp * contact + (1 | judge)", wine)
    em = emmeans(fit, ["temp", "contact"])
    want = ref()["emmeans"]["clmm_latent"]
    got = em.to_frame()
    assert list(got.index) == want["emmeans"]["levels"]
    np.testing.assert_allclose(got["emmean"], arr(want["emmeans"]["estimate"]), atol=2e-3)
    np.testing.assert_allclose(got["SE"], arr(want["emmeans"]["SE"]), rtol=5e-3)
    for adj in ("tukey", "holm"):
        _check_pairs(em.contrast(adjust=adj).to_frame(), want[adj], 5e-3, 1e-6)


def test_emmeans_clmm_category_probabilities() -> None:
    wine = pd.read_csv(DATA / "wine.csv", dtype={"judge": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = nlpower.clmm("rating ~ temp * contact + (1 | judge)", wine)
    got = emmeans(fit, ["temp", "contact"], scale="prob").to_frame()
    want = pd.DataFrame(ref()["emmeans"]["clmm_prob"])
    merged = got.merge(want, on=["cell", "category"], suffixes=("", "_r"))
    assert len(merged) == len(want) == 20
    np.testing.assert_allclose(merged["prob"], merged["estimate"], atol=1e-3)
    np.testing.assert_allclose(merged["SE"], merged["SE_r"], atol=1e-3)
    np.testing.assert_allclose(got.groupby("cell")["prob"].sum(), 1.0, rtol=1e-12)


def test_confint_boot_glmm_runs_on_the_prepared_structure() -> None:
    """cbpp: 40 bootstrap refits; the fixed effects' percentile intervals lie within a few
    Wald half-widths of the Wald interval, and the fit's own state is left as it was."""
    fit = cbpp_fit()
    eta = fit.eta.copy()
    boot = confint(fit, method="boot", n_boot=40, rng=3).to_frame()
    wald = confint(fit, method="wald").to_frame()
    half = (wald["upper"] - wald["lower"]).to_numpy()[1:] / 2
    for col in ("lower", "upper"):
        assert np.all(np.abs(boot[col].to_numpy()[1:] - wald[col].to_numpy()[1:]) < 1.5 * half)
    assert boot.loc[".sig01", "lower"] < fit.varcorr()["sdcor"].iloc[0] < boot.loc[".sig01", "upper"]
    np.testing.assert_array_equal(fit.eta, eta)
