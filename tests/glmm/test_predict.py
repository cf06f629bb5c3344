"""GlmmFit.predict(newdata=...) as lme4's predict.merMod (tests/reference/glmer_predict_reference.R).

lme4's predictions are of lme4's estimates; nlpower's fit agrees with them to
about 1e-3 (test_reference.py), and a prediction is linear in the fixed
effects and conditional modes, so the link-scale predictions are compared
within 2e-3 (the response scale, whose slope is at most 1/4, within 5e-4).
What the comparison checks is which effects enter each row: new levels get
random effects 0, re_form=NA drops them all, a one-term re_form keeps that
term.  Exact checks against the fit itself come first.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.glmm import glmer

from .glmm_cases import dataset, fit_case

REF = Path(__file__).resolve().parents[1] / "reference" / "glmer_predict_reference.json"
DATA = Path(__file__).resolve().parents[1] / "reference" / "data"
CASES = {"cbpp": "cbpp_weights", "crossed_sim": "crossed_sim", "verbagg_crossed": "verbagg_crossed"}


@pytest.fixture(scope="module")
def fits() -> dict:
    return {}


def _fit(fits: dict, name: str):
    if name not in fits:
        fits[name] = fit_case(name)
    return fits[name]


def test_newdata_equal_to_the_data_gives_the_fitted_values(fits) -> None:
    fit = _fit(fits, "cbpp_weights")
    d = dataset("cbpp")
    np.testing.assert_allclose(fit.predict(d), fit.predict(), atol=1e-10)
    np.testing.assert_allclose(fit.predict(d, type="response"), fit.predict(type="response"),
                               atol=1e-12)
    fixed = fit.model.spec.X @ fit.fixef.to_numpy()
    np.testing.assert_allclose(fit.predict(re_form="NA"), fixed, atol=1e-12)
    np.testing.assert_allclose(fit.predict(d, re_form="~0"), fixed, atol=1e-12)
    np.testing.assert_allclose(fit.predict(d, re_form=np.nan), fixed, atol=1e-12)


def test_rows_in_any_order_and_new_levels_at_the_population_level(fits) -> None:
    fit = _fit(fits, "crossed_sim")
    b = fit.ranef()
    nd = pd.DataFrame({"worker": ["w07", "new", "w02"], "item": ["i03", "i05", "zz"],
                       "x": [0.5, -0.5, 0.25]})
    eta = fit.predict(nd, allow_new_levels=True)
    fx = fit.fixef.to_numpy()
    w, it = b["worker"], b["item"]
    want = [fx[0] + 0.5 * fx[1] + w.loc["w07"].iloc[0] + 0.5 * w.loc["w07"].iloc[1]
            + it.loc["i03"].iloc[0] + 0.5 * it.loc["i03"].iloc[1],
            fx[0] - 0.5 * fx[1] + it.loc["i05"].iloc[0] - 0.5 * it.loc["i05"].iloc[1],
            fx[0] + 0.25 * fx[1] + w.loc["w02"].iloc[0] + 0.25 * w.loc["w02"].iloc[1]]
    np.testing.assert_allclose(eta, want, atol=1e-12)
    only_worker = fit.predict(nd, re_form="~ (1 | worker)", allow_new_levels=True)
    np.testing.assert_allclose(only_worker, [fx[0] + 0.5 * fx[1] + w.loc["w07"].iloc[0],
                                             fx[0] - 0.5 * fx[1],
                                             fx[0] + 0.25 * fx[1] + w.loc["w02"].iloc[0]],
                               atol=1e-12)


def test_bad_newdata_is_refused_with_what_to_do(fits) -> None:
    fit = _fit(fits, "cbpp_weights")
    with pytest.raises(InputError, match=r"'99' of 'herd'.*allow_new_levels=True"):
        fit.predict(pd.DataFrame({"period": ["1"], "herd": ["99"]}))
    with pytest.raises(InputError, match=r"newdata\['period'\] has level '7'.*lme4 refuses"):
        fit.predict(pd.DataFrame({"period": ["7"], "herd": ["1"]}))
    with pytest.raises(InputError, match="lacks the column 'herd'"):
        fit.predict(pd.DataFrame({"period": ["1"]}))
    with pytest.raises(InputError, match="re_form must be None"):
        fit.predict(pd.DataFrame({"period": ["1"], "herd": ["1"]}), re_form="herd")
    with pytest.raises(InputError, match="grouping factors 'worker'"):
        fit.predict(pd.DataFrame({"period": ["1"], "herd": ["1"]}), re_form="~ (1 | worker)")
    with pytest.raises(InputError, match="DataFrame"):
        fit.predict([1, 2])
    # the population level needs no grouping column
    assert np.isfinite(fit.predict(pd.DataFrame({"period": ["2"]}), re_form="NA")).all()


def test_missing_values_give_nan_and_offsets_are_read_or_asked_for() -> None:
    d = dataset("cbpp")
    fit = glmer("incidence ~ period + (1 | herd)", d, "poisson", offset="log_size")
    nd = pd.DataFrame({"period": ["1", None], "herd": ["1", "2"], "log_size": [np.log(10.0), 1.0]})
    eta = fit.predict(nd)
    b = fit.ranef()["herd"]["(Intercept)"]
    assert eta[0] == pytest.approx(fit.fixef.iloc[0] + b.loc["1"] + np.log(10.0), abs=1e-12)
    assert np.isnan(eta[1])
    given = glmer("incidence ~ period + (1 | herd)", d, "poisson", offset=d["log_size"].to_numpy())
    with pytest.raises(InputError, match="offset=..."):
        given.predict(nd)
    np.testing.assert_allclose(given.predict(nd, offset=nd["log_size"]), eta, atol=1e-6)
    np.testing.assert_allclose(given.predict(re_form="NA"),
                               given.model.spec.X @ given.fixef.to_numpy() + d["log_size"],
                               atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_matches_lme4_predict(name: str, fits) -> None:
    ref = json.loads(REF.read_text())["cases"][name]
    fit = _fit(fits, CASES[name])
    nd = pd.DataFrame(ref["newdata"])
    np.testing.assert_allclose(fit.predict(nd, allow_new_levels=True), ref["link"], atol=2e-3)
    np.testing.assert_allclose(fit.predict(nd, type="response", allow_new_levels=True),
                               ref["response"], atol=5e-4)
    np.testing.assert_allclose(fit.predict(nd, re_form="NA"), ref["link_fixed"], atol=2e-3)
    np.testing.assert_allclose(fit.predict(nd, re_form="NA", type="response"),
                               ref["response_fixed"], atol=5e-4)
    np.testing.assert_allclose(fit.predict(nd, re_form=ref["re_one"], allow_new_levels=True),
                               ref["link_one"], atol=2e-3)
    assert ref["refuses_new_levels"]
    with pytest.raises(InputError, match="has not seen"):
        fit.predict(nd)


R_LIVE = r"""
suppressPackageStartupMessages({library(lme4); library(jsonlite)})
a <- commandArgs(TRUE)
d <- read.csv(a[1], stringsAsFactors = FALSE)
d$herd <- factor(d$herd); d$period <- factor(d$period)
nd <- read.csv(a[2], colClasses = "character")
m <- glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), data = d, family = binomial)
cat(toJSON(list(all = predict(m, nd, allow.new.levels = TRUE, type = "response"),
                none = predict(m, nd, re.form = NA)), digits = NA))
"""


@pytest.mark.requires_r
def test_matches_lme4_predict_live(fits, tmp_path: Path) -> None:
    """lme4 run now on new rows drawn here (known and new herds, periods in any order)."""
    rng = np.random.default_rng(19)
    herds = [str(h) for h in range(1, 16)] + ["new1", "new2"]
    nd = pd.DataFrame({"period": rng.choice(["1", "2", "3", "4"], 25),
                       "herd": rng.choice(herds, 25)})
    nd.to_csv(tmp_path / "nd.csv", index=False)
    (tmp_path / "p.R").write_text(R_LIVE)
    proc = subprocess.run(["Rscript", "--vanilla", str(tmp_path / "p.R"), str(DATA / "cbpp.csv"),
                           str(tmp_path / "nd.csv")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)
    fit = _fit(fits, "cbpp_weights")
    np.testing.assert_allclose(fit.predict(nd, type="response", allow_new_levels=True), r["all"],
                               atol=5e-4)
    np.testing.assert_allclose(fit.predict(nd, re_form="NA"), r["none"], atol=2e-3)
