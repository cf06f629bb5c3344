"""The covariance of a refit's ``beta``: glmer's Hessian-based ``vcov`` (the default) or PIRLS's.

lme4's ``vcov`` of a Laplace ``glmer`` fit inverts the Hessian of the deviance
over ``(theta, beta)`` (``use.hessian = TRUE``); PIRLS's ``RX`` factor at the
modes (``use.hessian = FALSE``) ignores how the modes and ``theta`` move with
``beta`` and gives slightly smaller SEs -- a liberal Wald z.  Power
replicates refit with :meth:`GlmmModel.refit` and ``refit_many``, so their SEs
must be lme4's: compared here with the reference fits of
tests/reference/glmer_reference.R (lme4 1.1-31), within the 2% of
test_reference.py (lme4's PIRLS tolerance), and with the full fit's within 1e-3.
"""

from __future__ import annotations

import numpy as np
import pytest

from nlpower.errors import InputError

from .glmm_cases import fit_case, reference

CASES = ["cbpp_weights", "cbpp_probit", "cbpp_poisson_offset", "verbagg_crossed"]


@pytest.mark.parametrize("name", CASES)
def test_refit_se_is_lme4s(name: str) -> None:
    fit = fit_case(name)
    m = fit.model
    core = m.refit(m.spec.y, start=fit)
    ref = np.array(list(reference()[name]["se"].values()))
    np.testing.assert_allclose(core.se, fit.se.to_numpy(), rtol=1e-3)
    np.testing.assert_allclose(core.se, ref, rtol=2e-2)
    assert core.hessian is not None and core.hessian.shape == (m.k + m.p,) * 2
    # PIRLS's covariance on request: the RX-based one, which is not the Hessian's
    rx = m.refit(m.spec.y, start=fit, vcov="rx")
    assert rx.hessian is None
    np.testing.assert_allclose(rx.vcov_beta, m.vcov_rx(np.r_[rx.theta, rx.beta]), rtol=1e-6)
    assert np.max(np.abs(rx.se / core.se - 1)) > 1e-3


def test_batched_refits_carry_the_hessian_se() -> None:
    fit = fit_case("cbpp_weights")
    m = fit.model
    Y = np.vstack([m.spec.y, m.spec.y])
    many = m.refit_many(Y, start=fit)
    for core in many:
        assert "batched" in core.message
        np.testing.assert_allclose(core.se, fit.se.to_numpy(), rtol=2e-3)
    rx = m.refit_many(Y, start=fit, vcov="rx")
    np.testing.assert_allclose(rx[0].vcov_beta, m.refit(m.spec.y, start=fit, vcov="rx").vcov_beta,
                               rtol=1e-4)


def test_vcov_choice_is_checked() -> None:
    m = fit_case("cbpp_weights").model
    with pytest.raises(InputError, match="vcov must be 'hessian'.*got 'lme4'"):
        m.refit(m.spec.y, vcov="lme4")
    with pytest.raises(InputError, match="vcov must be"):
        m.refit_many(np.vstack([m.spec.y]), vcov=None)
