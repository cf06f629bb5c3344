"""Power replicates and the analytic gradient on the pair strategy of the factorisation.

``refit_many`` factors the batch the way one fit of the design does
(``nlpower.mixed.pairs_batch`` where the model's layout took pairs).
References: the same batch with the dense Schur complement (``pairs=False``)
on the same replicates -- which tests/glmm/test_batched.py checks against
``refit`` -- and ``refit`` itself through the pair factor; for the gradient,
the blocked factorisation's gradient at the same point.  The rule is forced
by its module constants on small crowd designs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import nlpower
import nlpower.glmm.gradient as gm
import nlpower.mixed.pairs as pm
from nlpower.glmm.laplace_batch import BatchedLaplace
from nlpower.glmm.model import GlmmModel
from nlpower.lmm.family import Binomial
from nlpower.lmm.frame import model_frame
from nlpower.mixed.blocked_batch import BatchedLayout
from nlpower.mixed.pairs_batch import PairBatchedFactor


def _crowd(seed: int, family: str, n_w: int, n_i: int, per_item: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_i * per_item
    i = np.repeat(np.arange(n_i), per_item)
    w = rng.integers(0, n_w, n)
    w[:n_w] = np.arange(n_w)
    s = rng.integers(0, 4, n)
    eta = (np.array([-0.3, 0.0, 0.3, 0.6])[s] + rng.normal(0, 0.8, n_w)[w]
           + rng.normal(0, 0.6, n_i)[i])
    y = (rng.random(n) < 1 / (1 + np.exp(-eta)) if family == "binomial"
         else rng.poisson(np.exp(eta)))
    return pd.DataFrame({"worker": [f"w{k}" for k in w], "item": [f"i{k}" for k in i],
                         "system": np.array(list("ABCD"))[s], "y": y.astype(float)})


def _force_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pm, "PAIR_MIN_WORK", 0.0)
    monkeypatch.setattr(pm, "PAIR_WORK_PER_PAIR", 0.0)


@pytest.mark.filterwarnings("ignore::nlpower.errors.SingularFitWarning")
@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_the_batch_follows_the_single_fit_onto_pairs(monkeypatch: pytest.MonkeyPatch,
                                                     family: str) -> None:
    _force_pairs(monkeypatch)
    fit = nlpower.glmer("y ~ system + (1 | worker) + (1 | item)", _crowd(7, family, 40, 120, 5),
                        family)
    m = fit.model
    assert m.pirls.layout.pairs is not None
    Y = m.simulate(20, rng=3, params=fit)
    many = m.refit_many(Y, start=fit)
    assert m._batched.lay.pair_batch is not None
    assert sum("batched" in c.message for c in many) >= 18
    md = m._batched.pirls(np.tile(np.r_[fit.theta, fit.fixef][:m.k], (2, 1)),
                          np.tile(fit.fixef, (2, 1)), Y[:2] * m.wt,
                          m._batched.constants(Y[:2]), None)
    assert isinstance(md.fac, PairBatchedFactor)
    # the dense Schur complement on the same replicates: the same fits to rounding
    dense = BatchedLaplace(m)
    dense.lay = BatchedLayout([b.codes for b in m.blocks], [b.Z[:, 0] for b in m.blocks],
                              [b.m for b in m.blocks], pairs=False)
    m._batched = dense
    ref = m.refit_many(Y, start=fit)
    for a, b in zip(many, ref, strict=True):
        assert a.message == b.message
        assert a.deviance == pytest.approx(b.deviance, abs=1e-8)
        np.testing.assert_allclose(a.theta, b.theta, atol=1e-8)
        np.testing.assert_allclose(a.beta, b.beta, atol=1e-8)
        np.testing.assert_allclose(a.vcov_beta, b.vcov_beta, rtol=1e-6)
    # and refit through the pair factor: the same optimum (the batch's tolerance)
    for a, y in zip(many[:4], Y[:4], strict=True):
        r = m.refit(y, start=fit)
        assert a.deviance == pytest.approx(r.deviance, abs=1e-6)
        np.testing.assert_allclose(a.beta, r.beta, atol=1e-5)


def test_the_gradient_on_pairs_needs_no_dense_inverse(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _crowd(9, "binomial", 12, 40, 6)
    frame = model_frame("y ~ system + (system || worker) + (system || item)", data)
    monkeypatch.setattr(gm, "MAX_DENSE", 0)          # every layout "too large" to invert densely
    monkeypatch.setattr(pm, "PAIR_MIN_WORK", math.inf)
    assert not GlmmModel(frame, Binomial()).grad.ok
    _force_pairs(monkeypatch)
    m = GlmmModel(frame, Binomial())
    assert m.pirls.layout.pairs is not None and m.grad.ok
    # the reference: the blocked factorisation's gradient, where it is allowed
    monkeypatch.setattr(gm, "MAX_DENSE", 20_000_000)
    monkeypatch.setattr(pm, "PAIR_MIN_WORK", math.inf)
    blocked = GlmmModel(frame, Binomial())
    assert blocked.pirls.layout.pairs is None and blocked.grad.ok
    x = np.r_[np.linspace(0.3, 0.9, m.k), -0.2, 0.1, 0.3, 0.5]
    for stage2 in (True, False):                 # over (theta, beta); over theta, beta in PIRLS
        g, g_ref = (
            mod.grad(mod.pirls.run(x[:m.k], x[m.k:], None, update_beta=not stage2), stage2)
            for mod in (m, blocked))
        assert g is not None and g_ref is not None
        np.testing.assert_allclose(g, g_ref, rtol=1e-7, atol=1e-9 * np.abs(g_ref).max())
