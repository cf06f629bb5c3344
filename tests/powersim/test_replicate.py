"""Stage 2: replicate runs (failure policy, the engine protocol, lme4 refits)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from nlpower import CrossedDesign, presets
from nlpower.errors import FitError, NlpowerWarning
from nlpower.lmm import lme4 as lme4_engine
from nlpower.powersim import loop, power
from nlpower.powersim import replicate as rep

HIGH = presets.high_variance
DESIGN = CrossedDesign(3, 8)


class _Flaky:
    """A prepared model whose refit fails on the given calls (one call per replicate)."""

    def __init__(self, model, bad):
        self.model, self.bad, self.calls = model, set(bad), 0

    def refit(self, y, **kw):
        k, self.calls = self.calls, self.calls + 1
        if k in self.bad:
            raise FitError("deviance not finite at the start")
        return self.model.refit(y, **kw)

    def satterthwaite_df(self, core, L):
        return self.model.satterthwaite_df(core, L)


@pytest.fixture
def flaky(monkeypatch):
    real = loop.prepare
    monkeypatch.setattr(loop, "prepare",
                        lambda engine, spec: _Flaky(real(engine, spec), bad={1, 3}))


def test_failed_fits_are_recorded_by_default(flaky):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NlpowerWarning)
        res = power(DESIGN, HIGH(0.1), n_sims=5, method="simulate", test="z", rng=1)
    assert res.n_failed == 2 and any("2 replicate fit(s) failed" in n for n in res.notes)
    r = res.replicates
    np.testing.assert_array_equal(r.failed, [False, True, False, True, False])
    assert np.isnan(r.pvalue[[1, 3]]).all() and np.isfinite(r.pvalue[[0, 2, 4]]).all()


def test_failure_policy_warn(flaky):
    with pytest.warns(NlpowerWarning, match=r"2 of 5 replicate fits failed in the main run "
                                            r"\(first: replicate 1"):
        res = power(DESIGN, HIGH(0.1), n_sims=5, method="simulate", test="z", rng=1,
                    on_failure="warn")
    assert res.n_failed == 2


def test_failure_policy_raise(flaky):
    with pytest.raises(FitError, match=r"replicate 1 of 5 failed to fit with engine='native': "
                                       r"deviance not finite .*on_failure='raise'"):
        power(DESIGN, HIGH(0.1), n_sims=5, method="simulate", test="z", rng=1, on_failure="raise")


def test_failure_policy_raise_on_the_balanced_path(monkeypatch):
    real = rep.fit_balanced

    def nan_t(st, **kw):
        fit = real(st, **kw)
        fit.t[2] = np.nan
        return fit

    monkeypatch.setattr(rep, "fit_balanced", nan_t)
    res = power(DESIGN, HIGH(0.1), n_sims=4, method="balanced", test="z", rng=1)
    assert res.n_failed == 1 and res.replicates.failed[2]
    with pytest.raises(FitError, match=r"1 of 4 replicate fits failed in the main run "
                                       r"\(first: replicate 2; no finite test statistic\)"):
        power(DESIGN, HIGH(0.1), n_sims=4, method="balanced", test="z", rng=1, on_failure="raise")


def test_simulate_uses_the_engine_protocol(monkeypatch):
    seen = []
    real = loop.get_engine

    def spy(name):
        seen.append(name)
        return real(name)

    monkeypatch.setattr(loop, "get_engine", spy)
    res = power(DESIGN, HIGH(0.1), n_sims=3, method="simulate", test="lrt", rng=2)
    assert seen == ["native", "native"]  # the model and its null model, prepared once each
    assert res.method == "simulate" and res.engine == "native" and res.n_failed == 0


@pytest.mark.requires_r
def test_lme4_refits_agree_with_the_native_engine():
    ok, reason = lme4_engine.available()
    if not ok:
        if os.environ.get("NLPOWER_REQUIRE_R") == "1":
            pytest.fail(f"NLPOWER_REQUIRE_R=1 but engine='lme4' is unavailable: {reason}")
        pytest.skip(f"engine='lme4' unavailable: {reason}")
    kw = dict(n_sims=4, test="z", rng=3)
    a = power(DESIGN, HIGH(0.15), engine="lme4", **kw)  # method="auto" simulates with lme4
    b = power(DESIGN, HIGH(0.15), method="simulate", **kw)
    assert a.method == "simulate" and a.engine == "lme4" and a.n_failed == 0
    # same simulated data (same seeds), two optimisers: estimates and t to their tolerance
    np.testing.assert_allclose(a.replicates.estimate, b.replicates.estimate, rtol=1e-6)
    np.testing.assert_allclose(a.replicates.statistic, b.replicates.statistic, rtol=1e-3)
