"""as_params: one hand-off from parameters or a fitted pilot (+ the user's effect) to parameters."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from nlpower import presets
from nlpower.errors import InputError
from nlpower.params import LMMParams, MultiSystemParams
from nlpower.pilot import as_params, is_pilot_fit
from nlpower.ratings import fit_ratings, read_ratings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(scope="module")
def pilot_fit():
    return fit_ratings(read_ratings(FIXTURES / "pilot_ratings.csv", scale=(1, 5)))


@pytest.fixture(scope="module")
def fit4():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_ratings(read_ratings(FIXTURES / "nested_4sys_ratings.csv", scale=(1, 5)))


def test_params_are_returned_unchanged():
    p = presets.high_variance(0.1)
    assert as_params(p) is p
    m = presets.dataset("dathathri-pplm").params
    assert as_params(m) is m


def test_params_effect_is_read_in_the_stated_coding():
    p = presets.high_variance(0.1)  # sum coding
    # a mean difference of 0.1 is 0.1 in half coding and 0.05 in sum coding
    assert as_params(p, effect=0.1, coding="half").effect == pytest.approx(0.05)
    assert as_params(p, effect=0.1, coding="treatment").mean_difference == pytest.approx(0.1)
    half = p.to_coding("half")
    assert as_params(half, effect=0.05, coding="sum").effect == pytest.approx(0.1)
    assert as_params(half, effect=0.05, coding="sum").coding == "half"


def test_fit_without_effect_is_refused(pilot_fit):
    with pytest.raises(InputError, match="effect is required.*smallest effect.*coding="):
        as_params(pilot_fit)


def test_fit_gives_the_fits_variances_and_the_users_effect(pilot_fit):
    p = as_params(pilot_fit, effect=0.05)
    ref = pilot_fit.to_params()
    assert isinstance(p, LMMParams) and p.coding == "sum"
    assert p.effect == 0.05 and ref.effect != pytest.approx(0.05, abs=0.01)  # not the pilot's
    assert p.sds == ref.sds and p.sigma == ref.sigma and p.beta0 == ref.beta0


def test_fit_in_half_coding_is_the_same_model(pilot_fit):
    s = as_params(pilot_fit, effect=0.05, coding="sum")
    h = as_params(pilot_fit, effect=0.1, coding="half")
    assert h.coding == "half"
    assert h.mean_difference == pytest.approx(s.mean_difference)
    assert h.to_coding("sum").sds == pytest.approx(s.sds)


def test_lmmfit_of_the_papers_model(pilot_fit):
    assert is_pilot_fit(pilot_fit) and is_pilot_fit(pilot_fit.fit)
    a = as_params(pilot_fit.fit, effect=0.05)
    b = as_params(pilot_fit, effect=0.05)
    assert a.sds == pytest.approx(b.sds, rel=1e-12) and a.sigma == pytest.approx(b.sigma)


@pytest.mark.filterwarnings("ignore::nlpower.errors.SingularFitWarning")
def test_lmmfit_of_another_model_is_refused():
    import pandas as pd

    from nlpower.lmm import lmer

    df = pd.read_csv(FIXTURES / "pilot_ratings.csv")
    fit = lmer("rating ~ system + (1 | worker)", df, REML=False)
    with pytest.raises(InputError, match="paper's model.*fit_ratings"):
        as_params(fit, effect=0.05)


def test_other_objects_are_refused():
    with pytest.raises(InputError, match="LMMParams, MultiSystemParams, a RatingsFit.*got dict"):
        as_params({"sigma": 0.2}, effect=0.1)


@pytest.mark.parametrize("bad", [0, 0.0, float("nan")])
def test_zero_or_nan_effect_is_refused(pilot_fit, bad):
    with pytest.raises(InputError, match="effect"):
        as_params(pilot_fit, effect=bad)


def test_bad_coding_is_refused(pilot_fit):
    with pytest.raises(InputError, match="coding"):
        as_params(pilot_fit, effect=0.05, coding="contr.sum")


def test_k_systems_without_contrast_give_multi_params(fit4):
    m = as_params(fit4, effect=0.05)
    assert isinstance(m, MultiSystemParams)
    assert m.effects == (0.05, 0.0, 0.0)
    m3 = as_params(fit4, effect=[0.05, 0.01, -0.02])
    assert m3.effects == pytest.approx((0.05, 0.01, -0.02))


def test_k_systems_errors(fit4):
    with pytest.raises(InputError, match="sum coding only"):
        as_params(fit4, effect=0.05, coding="half")
    with pytest.raises(InputError, match="need one effect or 3 effects"):
        as_params(fit4, effect=[0.05, 0.01])
    with pytest.raises(InputError, match="one number for a two-system comparison"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            as_params(fit4, effect=[0.05, 0.01], contrast="B")
    with pytest.raises(InputError, match="sum coding only"):
        as_params(presets.dataset("dathathri-pplm").params, effect=0.05, coding="half")


def test_k_systems_with_contrast_give_two_system_params(fit4):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = as_params(fit4, effect=0.05, contrast="B")
    assert isinstance(p, LMMParams) and p.effect == 0.05
