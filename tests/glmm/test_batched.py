"""Batched GLMM refits (``GlmmModel.refit_many``): the same fits as ``GlmmModel.refit``, row by row.

The reference is the per-replicate refit itself (its agreement with lme4 is
tested in test_reference.py): every batched fit must reach the same optimum
within the optimisers' tolerances, on singular and non-singular replicates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import InputError
from nlpower.glmm import glmer
from nlpower.glmm.batched import BatchedLaplace, refit_many

from .glmm_cases import dataset

DEV_TOL = 1e-6
PAR_TOL = 1e-5


def _crossed(family: str, n_workers: int = 6, n_items: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    d = pd.DataFrame([(f"w{w}", f"i{i}") for w in range(n_workers) for i in range(n_items)],
                     columns=["worker", "item"])
    d["system"] = np.where(rng.random(len(d)) < 0.5, "A", "B")
    eta = ((0.3 if family == "poisson" else 0.0) + 0.3 * (d["system"] == "B")
           + rng.normal(0, 0.5, n_workers)[d["worker"].str[1:].astype(int)]
           + rng.normal(0, 0.8, n_items)[d["item"].str[1:].astype(int)])
    d["y"] = (rng.poisson(np.exp(eta)) if family == "poisson"
              else rng.binomial(1, 1.0 / (1.0 + np.exp(-eta))))
    return d


def _compare(fit, n: int, seed: int) -> tuple[int, int]:
    """Batched vs per-row refits on ``n`` simulated responses: (singular, batched) counts."""
    m = fit.model
    Y = m.simulate(n, rng=seed, params=fit)
    many = m.refit_many(Y, start=fit)
    assert len(many) == n
    n_sing = n_batched = 0
    for core, y in zip(many, Y, strict=True):
        ref = m.refit(y, start=fit)
        assert core.deviance == pytest.approx(ref.deviance, abs=DEV_TOL)
        np.testing.assert_allclose(core.beta, ref.beta, atol=PAR_TOL)
        # at a singular optimum (a theta of 0) the deviance is flat to second order: refit's
        # optimiser stops within ~1e-5 of 0, Newton's steps go closer
        at0 = ref.theta < 1e-4
        np.testing.assert_allclose(core.theta[~at0], ref.theta[~at0], atol=PAR_TOL)
        assert np.all(core.theta[at0] < 1e-4)
        # both glmer's Hessian-based vcov: refit's from forward differences at its optimum,
        # the batch's from those of its last Newton steps (~1e-3 SEs from the optimum)
        np.testing.assert_allclose(core.vcov_beta, ref.vcov_beta, rtol=2e-3,
                                   atol=2e-3 * np.abs(ref.vcov_beta).max())
        assert core.hessian is not None
        assert core.singular == ref.singular
        assert core.converged == ref.converged
        n_sing += ref.singular
        n_batched += "batched" in core.message
    return n_sing, n_batched


@pytest.mark.parametrize("seed", [1, 2])
def test_single_term_poisson_matches_refit(seed: int) -> None:
    """simr's vignette model, x set to -0.05: about a third of the replicates are singular."""
    d = pd.read_csv("tests/reference/data/simdata.csv", dtype={"g": str})
    fit = glmer("z ~ x + (1 | g)", d, "poisson").with_params(fixef={"x": -0.05})
    assert BatchedLaplace.supports(fit.model)
    n_sing, n_batched = _compare(fit, 40, seed)
    assert 0 < n_sing < 40                   # both kinds of replicate are covered
    assert n_batched >= 36                   # the batch, not the fallback, fits nearly all


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_crossed_matches_refit(family: str) -> None:
    fit = glmer("y ~ system + (1 | worker) + (1 | item)", _crossed(family), family)
    assert BatchedLaplace.supports(fit.model)
    _, n_batched = _compare(fit, 12, 3)
    assert n_batched >= 10


def test_crossed_singular_replicates_match_refit() -> None:
    """A tiny worker SD: the worker term is estimated at 0 in many replicates."""
    fit = glmer("y ~ system + (1 | worker) + (1 | item)", _crossed("binomial"), "binomial")
    fit = fit.with_params(sd={"worker": 0.05})
    n_sing, _ = _compare(fit, 12, 4)
    assert n_sing > 0


def test_binomial_with_trials_matches_refit() -> None:
    fit = glmer("prop ~ period + (1 | herd)", dataset("cbpp"), weights="size")
    _compare(fit, 10, 5)


def test_unsupported_models_go_through_refit() -> None:
    d = dataset("cbpp")
    probit = glmer("prop ~ period + (1 | herd)", d, "binomial", link="probit", weights="size")
    assert not BatchedLaplace.supports(probit.model)
    Y = probit.simulate(2, rng=6)
    many = refit_many(probit.model, Y, start=probit)
    for core, y in zip(many, Y, strict=True):
        assert "batched" not in core.message
        assert core.deviance == pytest.approx(probit.model.refit(y, start=probit).deviance,
                                              abs=1e-8)
    # without a start there is nothing to batch from: refit's two stages per row
    logit = glmer("prop ~ period + (1 | herd)", d, weights="size")
    core = logit.model.refit_many(Y[:1])[0]
    assert "batched" not in core.message
    assert core.deviance == pytest.approx(logit.model.refit(Y[0]).deviance, abs=1e-6)


def test_a_failing_row_is_returned_as_its_error() -> None:
    d = pd.read_csv("tests/reference/data/simdata.csv", dtype={"g": str})
    fit = glmer("z ~ x + (1 | g)", d, "poisson")
    Y = fit.simulate(2, rng=7)
    Y[1] = 0.0                                  # no counts: refit refuses the response
    many = fit.model.refit_many(Y, start=fit)
    assert "batched" in many[0].message
    assert isinstance(many[1], Exception)
    with pytest.raises(type(many[1])):
        fit.model.refit(Y[1], start=fit)


def test_REML_is_refused_as_by_refit() -> None:
    fit = glmer("prop ~ period + (1 | herd)", dataset("cbpp"), weights="size")
    with pytest.raises(InputError) as many_err:
        fit.model.refit_many(fit.simulate(1, rng=9), REML=True, start=fit)
    with pytest.raises(InputError) as one_err:
        fit.model.refit(fit.simulate(1, rng=9)[0], REML=True, start=fit)
    assert str(many_err.value) == str(one_err.value)


def test_bad_Y_is_refused() -> None:
    fit = glmer("prop ~ period + (1 | herd)", dataset("cbpp"), weights="size")
    n = fit.nobs
    with pytest.raises(InputError, match=r"Y must be an array of shape \(n_replicates, 56\)"):
        fit.model.refit_many(np.zeros((2, n + 1)), start=fit)
    bad = fit.model.refit_many(np.full((1, n), 2.0), start=fit)[0]     # refit's own check
    assert isinstance(bad, InputError) and "binomial response must be 0/1" in str(bad)
    with pytest.raises(InputError, match="start beta"):
        fit.model.refit_many(fit.simulate(1, rng=8), start={"theta": fit.theta, "beta": [1.0]})


def test_nested_null_fits_from_the_full_fits() -> None:
    """A likelihood-ratio test's null, started from each full fit: the null's own optimum."""
    from nlpower.glmm.batched import refit_nested
    d = pd.read_csv("tests/reference/data/simdata.csv", dtype={"g": str})
    full = glmer("z ~ x + (1 | g)", d, "poisson").with_params(fixef={"x": -0.05})
    null = glmer("z ~ 1 + (1 | g)", d, "poisson")
    Y = full.model.simulate(40, rng=8, params=full)
    cores = full.model.refit_many(Y, start=full)
    nested = refit_nested(full.model, null.model, Y, cores)
    assert nested is not None
    n_batched = 0
    for c0, y in zip(nested, Y, strict=True):
        ref = null.model.refit(y)          # lme4's two stages from its own start
        assert c0.deviance == pytest.approx(ref.deviance, abs=DEV_TOL)
        np.testing.assert_allclose(c0.beta, ref.beta, atol=PAR_TOL)
        n_batched += "batched" in c0.message
    assert n_batched >= 36
    # a null with another random part is not nested this way; a wrong number of fits is refused
    other = glmer("z ~ 1 + (1 | x)", d.assign(x=d["x"].astype(str)), "poisson")
    assert refit_nested(full.model, other.model, Y, cores) is None
    with pytest.raises(InputError, match="one fit per row"):
        refit_nested(full.model, null.model, Y, cores[:3])


def test_simulate_each_draws_what_simulate_draws() -> None:
    fit = glmer("y ~ system + (1 | worker) + (1 | item)", _crossed("binomial"), "binomial")
    m = fit.model
    gens = [np.random.default_rng(s) for s in range(4)]
    each = m.simulate_each(gens, params=fit)
    one = np.vstack([m.simulate(1, rng=np.random.default_rng(s), params=fit) for s in range(4)])
    np.testing.assert_array_equal(each, one)
