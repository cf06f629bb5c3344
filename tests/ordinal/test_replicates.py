"""clmm power replicates: every replicate starts from the truth, so chunking changes nothing."""

from __future__ import annotations

import numpy as np

from nlpower import CrossedDesign, presets
from nlpower.outcomes import LikertParams
from nlpower.outcomes.analyses import clmm_replicates
from nlpower.outcomes.power import _simulate
from nlpower.powersim.options import power_options


def test_chunks_give_the_same_replicates() -> None:
    design = CrossedDesign(5, 16)
    lp = LikertParams.from_preset(presets.high_variance(0.3), 5, link="logit")
    y = _simulate(design, lp, np.random.SeedSequence(7), 6)

    def run(rows: np.ndarray):  # type: ignore[no-untyped-def]
        return clmm_replicates(design, y[rows], lp,
                               power_options(n_sims=len(rows), test="z", method="simulate"))

    whole = run(np.arange(6))
    parts = [run(np.arange(0, 2)), run(np.arange(2, 6))]
    rev = run(np.arange(6)[::-1])
    assert np.all(np.isfinite(whole.estimate)) and np.all(whole.se > 0)
    np.testing.assert_array_equal(np.concatenate([p.estimate for p in parts]), whole.estimate)
    np.testing.assert_array_equal(np.concatenate([p.se for p in parts]), whole.se)
    np.testing.assert_array_equal(rev.estimate[::-1], whole.estimate)


def test_replicate_fit_is_the_maximum_likelihood_fit() -> None:
    """The replicate path (from the truth, scaled by the reference Hessian) ends at a
    log-likelihood at least as high as a cold fit of the same data, at the same estimates
    when both agree."""
    from nlpower.lmm import get_engine
    from nlpower.lmm.family import Ordinal
    from nlpower.ordinal.scaling import reference_hessian
    from nlpower.outcomes.analyses import _REPLICATE_CONTROL, _truth_start
    from nlpower.powersim.models import build_model

    design = CrossedDesign(6, 20)
    lp = LikertParams.from_preset(presets.high_variance(0.3), 5, link="logit")
    y = _simulate(design, lp, np.random.SeedSequence(8), 3)
    reps = clmm_replicates(design, y, lp, power_options(n_sims=3, test="z", method="simulate"))
    dm = build_model(design, lp.latent_params())
    m = get_engine("native").prepare(dm.spec.with_response(y[0].astype(float)),
                                     family=Ordinal("logit"))
    x0 = _truth_start(m, lp, 0)
    H = reference_hessian(m, x0)
    for k in range(3):
        rep = m.refit(y[k] - 1, start=x0, curvature=H, control=_REPLICATE_CONTROL)
        cold = m.refit(y[k] - 1)
        assert reps.estimate[k] == rep.beta[0]
        assert rep.loglik >= cold.loglik - 1e-6
        if abs(rep.loglik - cold.loglik) < 1e-6:
            np.testing.assert_allclose(rep.beta, cold.beta, atol=1e-4)
            np.testing.assert_allclose(rep.se, cold.se, rtol=1e-3)
