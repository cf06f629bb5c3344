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


def test_each_family_answers_for_its_own_response():
    """What the fit and study layers ask a family instead of testing its name."""
    theta, beta, alpha = np.array([0.5]), np.array([1.0, -2.0]), np.array([-1.0, 1.0])
    gauss, binom, pois = fam.Gaussian(), fam.Binomial(), fam.Poisson()
    nb, ordl = fam.NegativeBinomial(theta=2.0), fam.Ordinal()
    assert gauss.has_sigma and gauss.is_gaussian
    assert not any(f.has_sigma or f.is_gaussian for f in (binom, pois, nb, ordl))
    # warm starts: lme4's theta (LMM), PIRLS's (theta, beta) (GLMM), clmm's (alpha, beta, theta)
    assert gauss.warm_start(theta, beta, alpha).tolist() == [0.5]
    start = nb.warm_start(theta, beta, alpha)
    assert start["theta"].tolist() == [0.5] and start["beta"].tolist() == [1.0, -2.0]
    assert ordl.warm_start(theta, beta, alpha).tolist() == [-1.0, 1.0, 1.0, -2.0, 0.5]
    # placeholders that every model frame of the family accepts
    assert gauss.placeholder(4) is None
    assert pois.placeholder(4).tolist() == [0.0, 1.0, 0.0, 1.0]
    cat = ordl.placeholder(5, ["lo", "mid", "hi"])
    assert list(cat) == ["lo", "mid", "hi", "lo", "mid"] and cat.ordered
    # the binomial's separation note, from fitted probabilities at 0 or 1
    assert binom.fit_notes(np.array([0.0, 1.0])) == {"separation": False}
    assert binom.fit_notes(np.array([0.0, 40.0])) == {"separation": True}
    assert pois.fit_notes(np.array([40.0])) == {} == gauss.fit_notes(np.zeros(2))


def test_a_design_frame_is_refused_for_a_family_without_one():
    from nlpower.study.design import design_frame

    class Unframed(fam.Family):
        pass

    fake = Unframed(name="gaussian", link=fam.get_link("identity"))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="no model frame is registered"):
        design_frame(fake, "y ~ (1 | g)", None, None, {})  # type: ignore[arg-type]
