"""glmer through the pair strategy of the factorisation (``nlpower.mixed.pairs``): the same fit.

Reference: the blocked factorisation on the same data (pairs switched off), which the
GLMM corpus checks against lme4 (tests/glmm/test_reference.py).  The designs are
crowd-shaped (workers x items, 4 systems) and small, so the rule is forced both ways
by its module constants; ``X`` joins PIRLS after the pair factor of ``M`` (stage 1 and
``nAGQ = 0``, PIRLS's covariance of ``beta``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import nlpower
import nlpower.mixed.pairs as pm
from nlpower.mixed.blocked import FixedLast


def _crowd(seed: int, family: str, n_w: int, n_i: int, per_item: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_i * per_item
    i = np.repeat(np.arange(n_i), per_item)
    w = rng.integers(0, n_w, n)
    w[:n_w] = np.arange(n_w)
    s = rng.integers(0, 4, n)
    eta = (np.array([-0.3, 0.0, 0.3, 0.6])[s] + rng.normal(0, 0.8, n_w)[w]
           + rng.normal(0, 0.6, n_i)[i] + rng.normal(0, 0.3, (n_w, 4))[w, s])
    y = (rng.random(n) < 1 / (1 + np.exp(-eta)) if family == "binomial"
         else rng.poisson(np.exp(eta)))
    return pd.DataFrame({"worker": [f"w{k}" for k in w], "item": [f"i{k}" for k in i],
                         "system": np.array(list("ABCD"))[s], "y": y.astype(float)})


def _both(monkeypatch: pytest.MonkeyPatch, formula: str, data: pd.DataFrame, family: str,
          **kw: object) -> tuple[nlpower.GlmmFit, nlpower.GlmmFit]:
    monkeypatch.setattr(pm, "PAIR_MIN_WORK", math.inf)
    ref = nlpower.glmer(formula, data, family, **kw)
    assert ref.model.pirls.layout.pairs is None
    monkeypatch.setattr(pm, "PAIR_MIN_WORK", 0.0)
    monkeypatch.setattr(pm, "PAIR_WORK_PER_PAIR", 0.0)
    fit = nlpower.glmer(formula, data, family, **kw)
    assert fit.model.pirls.layout.pairs is not None
    return ref, fit


@pytest.mark.filterwarnings("ignore::nlpower.errors.SingularFitWarning")
@pytest.mark.parametrize(("family", "formula", "n_w", "n_i"), [
    ("binomial", "y ~ system + (1 | worker) + (1 | item)", 30, 100),
    ("poisson", "y ~ system + (1 | worker) + (1 | item)", 30, 100),
    ("binomial", "y ~ system + (system || worker) + (system || item)", 10, 40),
])
def test_pairs_reach_the_blocked_fit(monkeypatch: pytest.MonkeyPatch, family: str, formula: str,
                                     n_w: int, n_i: int) -> None:
    data = _crowd(3, family, n_w, n_i, 12)
    ref, fit = _both(monkeypatch, formula, data, family)
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-7)
    np.testing.assert_allclose(fit.fixef, ref.fixef, atol=1e-5)
    np.testing.assert_allclose(fit.se, ref.se, rtol=1e-4)
    # PIRLS's covariance of beta: X's block of the joint factor, either way
    x = ref.model.canonical(np.r_[ref.theta, ref.fixef])
    np.testing.assert_allclose(fit.model.vcov_rx(x), ref.model.vcov_rx(x), rtol=1e-9)
    mode = fit.model.pirls.run(x[:fit.model.k], x[fit.model.k:], None, update_beta=True)
    assert isinstance(mode.factor, FixedLast)


def test_nagq0_updates_beta_through_the_pair_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _crowd(5, "binomial", 30, 100, 12)
    ref, fit = _both(monkeypatch, "y ~ system + (1 | worker) + (1 | item)", data, "binomial",
                     nAGQ=0)
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-8)
    np.testing.assert_allclose(fit.fixef, ref.fixef, atol=1e-6)
    np.testing.assert_allclose(fit.theta, ref.theta, atol=1e-5)
