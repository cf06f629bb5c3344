"""Power for any term of a fitted model: nlpower.power(fit, term=...), extend, power_curve."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import nlpower
from conftest import REFERENCE
from nlpower.errors import InputError
from nlpower.study.extension import extend_rows

DATA = REFERENCE / "data"


@pytest.fixture(scope="module")
def sleep_fit():
    d = pd.read_csv(DATA / "sleepstudy.csv")
    return nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)


def _within(p: float, power: float, n: int, k: float = 3.5) -> bool:
    return abs(p - power) <= k * math.sqrt(power * (1 - power) / n) + 1e-12


def test_type1_of_a_satterthwaite_test_holds_alpha(sleep_fit):
    null = sleep_fit.with_params(fixef={"Days": 0.0})
    res = nlpower.power(null, term="Days", n_sims=300, rng=11)
    assert math.isnan(res.power) and res.effect == 0.0
    assert _within(res.rejection_rate, 0.05, 300)


def test_power_matches_the_normal_theory_value(sleep_fit):
    """A balanced random-intercept design: SE of the slope is sigma / sqrt(sum (d - dbar)^2)."""
    m = sleep_fit.with_params(fixef={"Days": 1.5}, sigma=25.0)
    se = 25.0 / math.sqrt(18 * np.sum((np.arange(10) - 4.5) ** 2))
    expect = 0.5 * math.erfc((1.959964 - 1.5 / se) / math.sqrt(2))
    res = nlpower.power(m, term="Days", test="z", n_sims=300, rng=12)
    assert _within(res.power, expect, 300)
    lrt = nlpower.power(m, term="Days", test="lrt", n_sims=300, rng=12)
    assert _within(lrt.power, expect, 300)


def test_contrast_comparison_and_multi_df_terms():
    rng = np.random.default_rng(3)
    d = pd.DataFrame({"system": np.tile(list("ABC"), 120), "g": np.repeat(np.arange(30), 12)})
    d["y"] = rng.normal(size=len(d)) + d.system.map({"A": 0.0, "B": 0.3, "C": 0.6})
    fit = nlpower.lmer("y ~ system + (1 | g)", d, REML=False)
    names = list(fit.fixef.index)
    contrast = f"{names[1]} - {names[2]}"
    res = nlpower.power(fit, term=contrast, test="z", n_sims=60, rng=1)
    assert res.effect == pytest.approx(float(fit.fixef.iloc[1] - fit.fixef.iloc[2]))
    multi = nlpower.power(fit, term="system", n_sims=60, rng=1)
    assert multi.test == "lrt" and math.isnan(multi.effect)
    comp = nlpower.power(fit, compare="~ . - system", n_sims=60, rng=1)
    assert comp.mc.n_rejected == multi.mc.n_rejected     # the same comparison, same seeds


def test_same_numbers_for_any_n_jobs_and_after_a_checkpoint(sleep_fit, tmp_path):
    m = sleep_fit.with_params(fixef={"Days": 1.0})
    n = 250                                   # two batches of the study loop
    a = nlpower.power(m, term="Days", n_sims=n, rng=5)
    b = nlpower.power(m, term="Days", n_sims=n, rng=5, n_jobs=2)
    ck = tmp_path / "run.ckpt"
    c = nlpower.power(m, term="Days", n_sims=n, rng=5, checkpoint=ck)
    d = nlpower.power(m, term="Days", n_sims=n, rng=5, checkpoint=ck)
    assert a.mc == b.mc == c.mc == d.mc


@pytest.mark.parametrize("family", ["poisson", "ordinal"])
def test_glmm_and_clmm_terms(family):
    if family == "poisson":
        cbpp = pd.read_csv(DATA / "cbpp.csv")
        fit = nlpower.glmer("incidence ~ period + (1 | herd)", cbpp, "poisson")
        term = "period"
    else:
        wine = pd.read_csv(DATA / "wine.csv")
        fit = nlpower.clmm("rating ~ temp + contact + (1 | judge)", wine)
        term = "contactyes"
    null = nlpower.power(fit.with_params(fixef={term: 0.0}), term=term, n_sims=100, rng=2)
    assert null.n_failed < 5
    # Wald z / LRT sizes on these small designs are near alpha; 4.5 SE covers their bias
    assert _within(null.rejection_rate, 0.05, 100, k=4.5)
    lrt = nlpower.power(fit, term=term, test="lrt", n_sims=40, rng=2)
    assert lrt.power > 0.5


def test_extend_along_a_group_and_a_covariate_and_within():
    d = pd.DataFrame({"y": np.arange(8.0), "x": [1, 2, 3, 4] * 2, "g": ["a"] * 4 + ["b"] * 4})
    out = extend_rows(d, "y ~ x + (1 | g)", along="g", n=5, within=None, values=None)
    assert out.g.nunique() == 5 and len(out) == 20
    pd.testing.assert_frame_equal(out[out.g == "g.3"].drop(columns="g").reset_index(drop=True),
                                  d[d.g == "a"].drop(columns="g").reset_index(drop=True))
    out = extend_rows(d, "y ~ x + (1 | g)", along="x", n=10, within=None, values=None)
    assert sorted(out.x.unique()) == list(range(1, 11)) and len(out) == 20
    out = extend_rows(d, "y ~ x + (1 | g)", along=None, n=3, within="g + x", values=None)
    assert out.groupby(["g", "x"]).size().eq(3).all()


def test_extend_refuses_a_fixed_factor_and_unknown_columns(sleep_fit):
    d = pd.DataFrame({"y": np.arange(6.0), "s": list("ABCABC"), "g": list("aabbcc")})
    with pytest.raises(InputError, match="fixed part"):
        extend_rows(d, "y ~ s + (1 | g)", along="s", n=5, within=None, values=None)
    with pytest.raises(InputError, match="did you mean 'Subject'"):
        nlpower.extend(sleep_fit, along="Subjct", n=30)


def test_power_curve_grows_with_the_design(sleep_fit):
    big = nlpower.extend(sleep_fit.with_params(fixef={"Days": 1.0}), along="Subject", n=40)
    curve = nlpower.power_curve(big, along="Subject", breaks=[4, 40], term="Days", test="z",
                                n_sims=80, rng=3)
    frame = curve.to_frame()
    assert frame.n_Subject.tolist() == [4, 40] and frame.nobs.tolist() == [40, 400]
    assert frame.power.iloc[1] > frame.power.iloc[0]
    assert "Subject" in curve.summary()


def test_one_point_curve_runs_its_replicates_in_n_jobs_with_the_same_numbers(sleep_fit):
    m = sleep_fit.with_params(fixef={"Days": 0.6})
    kw = {"along": "Subject", "breaks": [10], "term": "Days", "test": "z", "n_sims": 210,
          "rng": 5}
    one = nlpower.power_curve(m, n_jobs=1, **kw).to_frame()
    two = nlpower.power_curve(m, n_jobs=2, **kw).to_frame()     # two batches, two processes
    assert 0.0 < one.power.iloc[0] < 1.0
    pd.testing.assert_frame_equal(one, two)


@pytest.mark.parametrize("kwargs,match", [
    ({}, "exactly one of term= .* and compare="),
    ({"term": "Dayz"}, "did you mean 'Days'"),
    ({"term": "Days", "test": "calibrated"}, "balanced fast path"),
    ({"term": "Days", "n_sims": 0}, "n_sims"),
    ({"compare": "Days"}, "reduced model"),
])
def test_bad_requests_are_refused(sleep_fit, kwargs, match):
    with pytest.raises(InputError, match=match):
        nlpower.power(sleep_fit, **kwargs)


def test_term_needs_a_fitted_model():
    with pytest.raises(InputError, match="fitted model"):
        nlpower.power(nlpower.CrossedDesign(3, 10), nlpower.presets.high_variance(0.1), term="x")


def test_an_extended_design_takes_new_parameters(sleep_fit):
    big = nlpower.extend(sleep_fit, along="Subject", n=30)
    new = big.with_params(fixef={"Days": 1.0}, sd={"Subject": 10.0}, sigma=20.0)
    assert float(new.fixef["Days"]) == 1.0 and new.sigma == 20.0
    assert new.theta[0] == pytest.approx(0.5)               # SD 10 on residual SD 20
    assert new.nobs == 300 and big.fixef["Days"] == sleep_fit.fixef["Days"]
    with pytest.raises(InputError, match="no random-effects term"):
        big.with_params(sd={"worker": 1.0})


def test_a_power_curve_resumes_from_its_checkpoint_without_refitting(sleep_fit, tmp_path,
                                                                       monkeypatch):
    """Every point of a curve is read back from the checkpoint: none is dropped or re-run."""
    import nlpower.study.power as study_power

    m = sleep_fit.with_params(fixef={"Days": 2.0})
    ck = tmp_path / "curve.ckpt"
    first = nlpower.power_curve(m, term="Days", along="Subject", breaks=[6, 10], test="z",
                                n_sims=20, rng=3, checkpoint=ck)

    batches = []
    real = study_power.replicate_batch

    def counted(gen, analysis, options, lo, hi, **kwargs):
        batches.append(hi - lo)
        return real(gen, analysis, options, lo, hi, **kwargs)

    monkeypatch.setattr(study_power, "replicate_batch", counted)
    again = nlpower.power_curve(m, term="Days", along="Subject", breaks=[6, 10], test="z",
                                n_sims=20, rng=3, checkpoint=ck)
    assert batches == [1]     # the one-replicate check of the options; no point re-simulated
    pd.testing.assert_frame_equal(first.to_frame(), again.to_frame())
