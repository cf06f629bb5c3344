"""glmer and clmm through the native strategy of the factorisation: the same fits.

Reference: the same fit with the native strategy switched off (the blocked
factorisation, which the GLMM corpus and the ordinal agreement check against
lme4 and ordinal).  The designs are small crowd-shaped files, so the rule is
forced both ways by its module constant (:data:`nlpower.mixed.blocked.NATIVE_MIN_WORK`);
one has a correlated slope on the rest block (a non-diagonal ``Lambda_r``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import nlpower
import nlpower.mixed.blocked as bl
from nlpower.mixed.native.weighted import NativeFactor, NativePlan


def _crowd(seed: int, n_w: int, n_i: int, per_item: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_i * per_item
    i = np.repeat(np.arange(n_i), per_item)
    w = rng.integers(0, n_w, n)
    w[:n_w] = np.arange(n_w)
    s = rng.integers(0, 4, n)
    x = rng.normal(size=n)
    eta = (np.array([-0.3, 0.0, 0.3, 0.6])[s] + rng.normal(0, 0.8, n_w)[w]
           + rng.normal(0, 0.6, n_i)[i] + 0.4 * x * rng.normal(0, 1.0, n_w)[w])
    return pd.DataFrame({"worker": [f"w{k}" for k in w], "item": [f"i{k}" for k in i],
                         "system": np.array(list("ABCD"))[s], "x": x,
                         "y": (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float),
                         "count": rng.poisson(np.exp(0.3 * eta)).astype(float),
                         "rating": np.digitize(eta + rng.logistic(size=n), [-1.5, 0.0, 1.5]) + 1})


def _both(monkeypatch: pytest.MonkeyPatch, fit_fn):  # type: ignore[no-untyped-def]
    """The fit without and with the native strategy (which then factors at least once)."""
    calls = []
    orig = NativePlan.factor
    monkeypatch.setattr(NativePlan, "factor", lambda self, *a: calls.append(1) or orig(self, *a))
    monkeypatch.setattr(bl, "NATIVE_MIN_WORK", math.inf)
    ref = fit_fn()
    assert not calls
    monkeypatch.setattr(bl, "NATIVE_MIN_WORK", 0.0)
    fit = fit_fn()
    assert calls
    return ref, fit


@pytest.mark.filterwarnings("ignore::nlpower.errors.SingularFitWarning")
@pytest.mark.parametrize(("family", "formula"), [
    ("binomial", "y ~ system + (1 | worker) + (1 | item)"),
    ("poisson", "count ~ system + (1 | worker) + (1 | item)"),
    ("binomial", "y ~ system + x + (1 + x | worker) + (1 | item)"),
])
def test_glmer_on_the_native_strategy(monkeypatch: pytest.MonkeyPatch, family: str,
                                      formula: str) -> None:
    data = _crowd(3, 30, 100, 12)
    ref, fit = _both(monkeypatch, lambda: nlpower.glmer(formula, data, family))
    assert ref.model.pirls.layout.native is None
    assert fit.model.pirls.layout.native is not None
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-7)
    np.testing.assert_allclose(fit.fixef, ref.fixef, atol=1e-5)
    np.testing.assert_allclose(fit.se, ref.se, rtol=1e-4)
    # PIRLS's covariance of beta (X's block of the joint factor) at the same point
    x = ref.model.canonical(np.r_[ref.theta, ref.fixef])
    np.testing.assert_allclose(fit.model.vcov_rx(x), ref.model.vcov_rx(x), rtol=1e-9)
    mode = fit.model.pirls.run(x[:fit.model.k], x[fit.model.k:], None, update_beta=True)
    assert isinstance(mode.factor, NativeFactor)


@pytest.mark.filterwarnings("ignore::nlpower.errors.SingularFitWarning")
def test_nagq0_on_the_native_strategy(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _crowd(5, 30, 100, 12)
    ref, fit = _both(monkeypatch, lambda: nlpower.glmer(
        "y ~ system + (1 | worker) + (1 | item)", data, "binomial", nAGQ=0))
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-8)
    np.testing.assert_allclose(fit.fixef, ref.fixef, atol=1e-6)
    np.testing.assert_allclose(fit.theta, ref.theta, atol=1e-5)


@pytest.mark.parametrize("formula", [
    "rating ~ system + (1 | worker) + (1 | item)",
    "rating ~ system + x + (1 + x | worker) + (1 | item)",
])
def test_clmm_on_the_native_strategy(monkeypatch: pytest.MonkeyPatch, formula: str) -> None:
    data = _crowd(7, 30, 100, 12)
    ref, fit = _both(monkeypatch, lambda: nlpower.clmm(formula, data))
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-7)
    np.testing.assert_allclose(np.asarray(fit.fixef), np.asarray(ref.fixef), atol=1e-5)
    np.testing.assert_allclose(np.asarray(fit.theta), np.asarray(ref.theta), atol=1e-4)


def test_the_rule_takes_native_before_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scalar terms: the native strategy where both would apply (measured faster than pairs);
    the pair rule's answer is kept for the batched refits; ``pairs=True`` still forces pairs."""
    import nlpower.mixed.pairs as pm
    from nlpower.mixed.blocked import BlockedLayout

    data = _crowd(3, 30, 100, 12)
    codes = [pd.factorize(data[g])[0] for g in ("item", "worker")]
    ones = [np.ones((len(data), 1)), np.ones((len(data), 1))]

    def layout(**kw: object) -> BlockedLayout:  # type: ignore[type-arg]
        return BlockedLayout(codes, [1, 1], [100, 30], 4, designs=ones, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pm, "PAIR_MIN_WORK", 0.0)
    monkeypatch.setattr(pm, "PAIR_WORK_PER_PAIR", 0.0)
    monkeypatch.setattr(bl, "NATIVE_MIN_WORK", 0.0)
    lay = layout()
    assert lay.use_native and lay.pairs is None and lay.pairs_rule is not None
    forced = layout(pairs=True)
    assert not forced.use_native and forced.pairs is not None
    monkeypatch.setattr(bl, "NATIVE_MIN_WORK", math.inf)
    lay = layout()
    assert not lay.use_native and lay.pairs is not None
