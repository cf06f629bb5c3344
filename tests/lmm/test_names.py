"""Coefficient names (nlpower.lmm.names): sum-coded columns by level, lme4's names as aliases."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import nlpower
from nlpower.errors import InputError, NlpowerWarning
from nlpower.lmm.names import canonical, coef_aliases, lme4_aliases, lme4_name, split_name
from nlpower.ratings import fit_ratings, read_ratings

SYSTEMS = ["gpt", "llama", "t5"]
SUM_NAMES = ["(Intercept)", "system[gpt]", "system[llama]"]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    """12 workers x 20 items, each rating every system; gpt better, t5 worse."""
    rng = np.random.default_rng(3)
    w, i, s = np.meshgrid(np.arange(12), np.arange(20), np.arange(3), indexing="ij")
    w, i, s = w.ravel(), i.ravel(), s.ravel()
    eta = np.array([0.6, 0.0, -0.6])[s] + rng.normal(0, 0.4, 12)[w] + rng.normal(0, 0.4, 20)[i]
    y = eta + rng.normal(0, 1.0, w.size)
    return pd.DataFrame({
        "worker": [f"w{k}" for k in w], "item": [f"i{k}" for k in i],
        "system": np.array(SYSTEMS)[s], "y": y, "z": rng.normal(size=w.size),
        "win": (rng.random(w.size) < 1 / (1 + np.exp(-eta))).astype(int),
        "errors": rng.negative_binomial(3, 3 / (3 + np.exp(eta))),
        "score": np.digitize(y, [-1.0, 0.0, 1.0]) + 1,
    })


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NlpowerWarning)
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def lmm(data: pd.DataFrame):
    return _quiet(nlpower.lmer, "y ~ system + (1 | worker) + (1 | item)", data, REML=False,
                  contrasts={"system": "sum"})


# ---------------------------------------------------------------------------- the names


def test_aliases_and_name_helpers() -> None:
    al = lme4_aliases({"system": SYSTEMS, "task": ["a", "b"], "h": ["u", "v"]},
                      {"system": "sum", "task": "treatment", "h": "half"})
    assert al == {"system1": "system[gpt]", "system2": "system[llama]", "h1": "h[u]"}
    names = ["(Intercept)", "system[gpt]", "system[llama]", "system[gpt]:h[u]"]
    assert canonical("system2", names, al) == "system[llama]"
    assert canonical("system1:h1", names, al) == "system[gpt]:h[u]"
    assert canonical("system[gpt]", names, al) == "system[gpt]"
    assert canonical("system3", names, al) is None           # the last level has no column
    assert lme4_name("system[gpt]:h[u]", al) == "system1:h1"
    assert split_name("system[a:b]:h[u]") == ["system[a:b]", "h[u]"]


@pytest.mark.parametrize("family", ["binomial", "negative_binomial"])
def test_glmm_names_by_level(data: pd.DataFrame, family: str) -> None:
    y = "win" if family == "binomial" else "errors"
    fit = _quiet(nlpower.glmer, f"{y} ~ system + (1 | worker)", data, family,
                 contrasts={"system": "sum"})
    assert list(fit.fixef.index) == SUM_NAMES
    assert list(fit.to_frame().query("effect == 'fixed'")["term"]) == SUM_NAMES
    new = fit.with_params(fixef={"system1": 0.25})
    assert float(new.fixef["system[gpt]"]) == 0.25


def test_clmm_names_by_level_and_treatment_names_unchanged(data: pd.DataFrame) -> None:
    d = data
    fit = _quiet(nlpower.clmm, "score ~ system + (1 | worker)", d, contrasts={"system": "sum"})
    assert list(fit.fixef.index) == SUM_NAMES[1:]            # no intercept: thresholds
    assert float(fit.with_params(fixef={"system2": 0.5}).fixef["system[llama]"]) == 0.5
    treat = _quiet(nlpower.clmm, "score ~ system + (1 | worker)", d)
    assert list(treat.fixef.index) == ["systemllama", "systemt5"]      # R's names
    assert coef_aliases(treat) == {}


def test_fit_ratings_names_and_legend(data: pd.DataFrame, tmp_path) -> None:
    path = tmp_path / "r.csv"
    data.assign(rating=data["score"])[["worker", "item", "system", "rating"]].to_csv(path,
                                                                                 index=False)
    r = read_ratings(path, scale=(1, 4))
    fit = _quiet(fit_ratings, r, baseline="llama", model="rating ~ system + (1 | worker) + "
                 "(1 | item)")
    # the baseline goes last (contr.sum gives it -1): the others keep their names
    assert list(fit.fixef.index) == ["(Intercept)", "system[gpt]", "system[t5]"]
    assert "beta2 (system[t5]) = mean(t5) - grand mean" in fit.legend()


def test_interactions_and_random_slopes_named_by_level(data: pd.DataFrame) -> None:
    fit = _quiet(nlpower.lmer, "y ~ system * z + (1 + system | worker)", data, REML=False,
                 contrasts={"system": "sum"})
    assert list(fit.fixef.index) == [*SUM_NAMES, "z", "system[gpt]:z", "system[llama]:z"]
    vc = fit.varcorr()
    assert list(vc["var1"].iloc[:3]) == SUM_NAMES
    sd = fit.with_params(sd={"worker": {"system2": 0.3}}).varcorr()
    assert float(sd.loc[sd["var1"].eq("system[llama]") & sd["var2"].isna(), "sdcor"].item()) == \
        pytest.approx(0.3)


# ---------------------------------------------------------------------------- where they show


def test_every_display_shows_level_names(lmm) -> None:
    for text in (lmm.summary(), lmm.to_markdown(), lmm.to_latex(), lmm._repr_html_(),
                 str(lmm.coef_table()), str(lmm.confint(method="wald"))):
        assert "system[gpt]" in text and "system[llama]" in text
        assert "system1" not in text


def test_anova_and_emmeans_unchanged_by_the_names(lmm, data: pd.DataFrame) -> None:
    # Type III F test of the term, marginal means by level: the same numbers as treatment coding
    treat = _quiet(nlpower.lmer, "y ~ system + (1 | worker) + (1 | item)", data, REML=False)
    f_sum = lmm.anova().to_frame()
    f_trt = treat.anova().to_frame()
    assert list(f_sum.index) == ["system"]
    assert float(f_sum["F"].iloc[0]) == pytest.approx(float(f_trt["F"].iloc[0]), rel=1e-6)
    em = lmm.emmeans("system", df="asymptotic").to_frame()
    np.testing.assert_allclose(em["emmean"].to_numpy(),
                               treat.emmeans("system", df="asymptotic").to_frame()["emmean"],
                               rtol=1e-6)


# ---------------------------------------------------------------------------- lme4's names as input


def test_with_params_accepts_lme4_names(lmm) -> None:
    a = lmm.with_params(fixef={"system1": 0.3, "system[llama]": -0.1})
    assert a.fixef["system[gpt]"] == 0.3 and a.fixef["system[llama]"] == -0.1
    with pytest.raises(InputError, match=r"fixef: no coefficient 'system3'; the model has "
                                         r"\(Intercept\), system\[gpt\], system\[llama\]"):
        lmm.with_params(fixef={"system3": 0.3})


def test_confint_parm_accepts_lme4_names(lmm) -> None:
    ci = lmm.confint(parm=["system2"], method="wald").to_frame()
    assert list(ci.index) == ["system[llama]"]


def test_power_term_accepts_lme4_names_and_contrasts(lmm) -> None:
    truth = lmm.with_params(fixef={"system1": 0.4, "system2": 0.0})
    kw = {"n_sims": 12, "test": "z", "rng": 7}
    by_level = nlpower.power(truth, term="system[gpt]", **kw)
    by_lme4 = nlpower.power(truth, term="system1", **kw)
    assert by_lme4.power == by_level.power and by_lme4.effect == pytest.approx(0.4)
    diff = nlpower.power(truth, term="system1 - system2", **kw)
    same = nlpower.power(truth, term="system[gpt] - system[llama]", **kw)
    assert diff.power == same.power and diff.effect == pytest.approx(0.4)
    with pytest.raises(InputError, match="term 'system3' is not a coefficient"):
        nlpower.power(truth, term="system3", **kw)


def test_sequential_monitor_term_accepts_lme4_names(data: pd.DataFrame) -> None:
    from nlpower.sequential import group_sequential
    from nlpower.sequential.monitor import Monitor

    kw = {"formula": "y ~ system + (1 | worker) + (1 | item)", "max_items": 20,
          "contrasts": {"system": "sum"}}
    d = data[data["item"].isin([f"i{k}" for k in range(10)])]
    a = _quiet(Monitor(group_sequential(2), term="system1", **kw).update, d)
    b = _quiet(Monitor(group_sequential(2), term="system[gpt]", **kw).update, d)
    assert (a.estimate, a.se) == (b.estimate, b.se)
    assert a.estimate > 0                                  # gpt is the better system
