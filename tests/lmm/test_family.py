"""The family slot: links (values and derivatives) and family lookup."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

from nlpower.errors import InputError
from nlpower.lmm import family as fam

ETA = np.linspace(-4.0, 3.0, 29)


@pytest.mark.parametrize("name", ["identity", "log", "logit", "probit", "cloglog"])
def test_link_derivatives_match_finite_differences(name):
    lk = fam.get_link(name)
    h = 1e-5
    num = (lk.linkinv(ETA + h) - lk.linkinv(ETA - h)) / (2 * h)
    np.testing.assert_allclose(lk.mu_eta(ETA), num, rtol=1e-6, atol=1e-10)
    num2 = (lk.mu_eta(ETA + h) - lk.mu_eta(ETA - h)) / (2 * h)
    np.testing.assert_allclose(lk.dmu_eta(ETA), num2, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("name", ["identity", "log", "logit", "probit", "cloglog"])
def test_linkfun_inverts_linkinv(name):
    lk = fam.get_link(name)
    np.testing.assert_allclose(lk.linkfun(lk.linkinv(ETA)), ETA, rtol=1e-9, atol=1e-9)


def test_binomial_unit_deviance_is_twice_the_log_likelihood_ratio():
    y = np.array([0.0, 1.0, 0.3])
    mu = np.array([0.2, 0.7, 0.5])
    wt = np.array([1.0, 1.0, 10.0])
    sat = np.where(y > 0, y * np.log(np.where(y > 0, y, 1)), 0) + np.where(
        y < 1, (1 - y) * np.log(np.where(y < 1, 1 - y, 1)), 0)
    fitted = y * np.log(mu) + (1 - y) * np.log(1 - mu)
    np.testing.assert_allclose(fam.Binomial().dev_resids(y, mu, wt), 2 * wt * (sat - fitted))


def test_poisson_unit_deviance_at_the_saturated_fit_is_zero():
    y = np.array([0.0, 2.0, 5.0])
    np.testing.assert_allclose(fam.Poisson().dev_resids(y, np.maximum(y, 1e-300), np.ones(3)),
                               0.0, atol=1e-12)


def test_family_lookup_and_errors():
    assert fam.get_family("binomial").link.name == "logit"
    assert fam.get_family("Ordinal", "probit").link.name == "probit"
    assert fam.get_family(None).is_gaussian
    with pytest.raises(InputError, match="Did you mean 'binomial'"):
        fam.get_family("binomal")
    with pytest.raises(InputError, match="not available for the poisson family"):
        fam.get_family("poisson", "logit")
    with pytest.raises(InputError, match="Did you mean 'logit'"):
        fam.get_family("binomial", "logti")
    with pytest.raises(InputError, match="threshold"):
        fam.Ordinal(threshold="flexibel")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="contradicts"):
        fam.get_family(fam.Binomial("logit"), "probit")


def test_docstring_examples_run():
    assert doctest.testmod(fam, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0
