"""power(test="kenward-roger" | "pblrt"): options, agreement between paths, Type I error.

Monte Carlo checks use tolerances from their standard errors; the Kenward-Roger
reference is nlpower.lmm.kenward_roger.kr_state (pinned to pbkrtest by
tests/reference/kenward_roger.R).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from nlpower import CrossedDesign, LMMParams, presets, simulate
from nlpower.errors import InputError
from nlpower.lmm import lmer
from nlpower.lmm.frame import model_frame
from nlpower.lmm.kenward_roger import kr_state
from nlpower.powersim import analytic_power, power
from nlpower.powersim.balanced_fit import fit_balanced, kr_df
from nlpower.powersim.fastpath import stats_from_ratings
from nlpower.powersim.grid import power_grid
from nlpower.powersim.options import power_options
from nlpower.powersim.pblrt import GeneralPBLRT
from nlpower.powersim.result import PowerResult
from nlpower.powersim.rules import get_test

HIGH = presets.high_variance
# interior fits are common with these (every SD well above 0)
P = LMMParams(beta0=0.5, effect=0.0, sigma=0.3, sd_worker=0.2, sd_worker_slope=0.1,
              sd_item=0.1, sd_item_slope=0.1)


# ----------------------------------------------------------------------------------------
# options
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"test": "pblrt", "n_resamples": 0}, "n_resamples must be >= 1"),
        ({"test": "pblrt", "n_resamples": 9.5}, "n_resamples must be an integer"),
        ({"test": "pblrt", "n_resamples": 10}, r"n_resamples=10 cannot reject at alpha=0.05.*n_resamples >= 19"),
        ({"test": "pblrt", "n_resamples": 49, "alpha": 0.01}, r"n_resamples >= 99"),
        ({"test": "pblrt", "alternative": "greater"}, "test='pblrt' is two-sided"),
        ({"test": "pblrt", "method": "analytic"}, "test='pblrt' has no analytic approximation"),
        ({"test": "pblrt", "REML": True}, "REML likelihoods"),
        ({"test": "kenward-roger", "REML": False}, "defined at a REML fit"),
        ({"test": "kenward_roger"}, "Did you mean 'kenward-roger'"),
    ],
)
def test_bad_options(kwargs, match):
    with pytest.raises(InputError, match=match):
        power(CrossedDesign(3, 10), HIGH(0.1), n_sims=5, **kwargs)


def test_option_defaults_and_records():
    assert power_options(test="kenward-roger").REML is True
    assert power_options(test="pblrt").REML is False
    assert power_options(test="pblrt", n_resamples=19).n_resamples == 19
    res = power(CrossedDesign(3, 10), HIGH(0.1), n_sims=20, rng=1, test="pblrt", n_resamples=19)
    assert res.n_resamples == 19 and "19 bootstrap samples" in res.summary()
    back = PowerResult.from_record(res.to_record())
    assert back.n_resamples == 19 and back.test == "pblrt"
    assert power(CrossedDesign(3, 10), HIGH(0.1), n_sims=5, rng=1, n_resamples=19).n_resamples is None


def test_analytic_refuses_pblrt_and_treats_kr_as_satterthwaite():
    with pytest.raises(InputError, match="no analytic approximation"):
        analytic_power(CrossedDesign(3, 10), HIGH(0.1), test="pblrt")
    kr = analytic_power(CrossedDesign(3, 50), HIGH(0.1), test="kenward-roger")
    satt = analytic_power(CrossedDesign(3, 50), HIGH(0.1), test="satterthwaite")
    assert kr.power == satt.power and kr.df == satt.df


def test_assurance_moments_treat_kr_as_satterthwaite_and_pblrt_as_lrt():
    se, df = np.array([0.04, 0.05]), np.array([2.5, 8.0])
    kw = {"alpha": 0.05, "alternative": "two-sided"}
    def pw(test):
        return get_test(test).approximate().power(0.1, se, df, **kw)

    np.testing.assert_array_equal(pw("kenward-roger"), pw("satterthwaite"))
    np.testing.assert_array_equal(pw("pblrt"), pw("lrt"))


# ----------------------------------------------------------------------------------------
# Kenward-Roger
# ----------------------------------------------------------------------------------------

FORMULA = "rating ~ x + (1 + x || worker) + (1 + x || item)"


def test_balanced_kr_df_equals_general_kr_also_at_boundary_fits():
    """Closed-form KR df of the fast path = kr_state on the same data (singular fits included)."""
    design = CrossedDesign(3, 10)
    rng = np.random.default_rng(5)
    singular = interior = 0
    for _ in range(8):
        df = simulate(design, HIGH(0.0), rng=rng)
        fit = lmer(FORMULA, df, REML=True, checkconv="ignore")
        y = df.pivot_table(index=["worker", "item"], columns="x", values="rating").to_numpy()
        fb = fit_balanced(stats_from_ratings(y.reshape(1, 3, 10, 2)), REML=True)
        state_df = _kr_df_of_fit(fit, df)
        assert kr_df(fb.variances, 3, 10)[0] == pytest.approx(state_df, rel=1e-4)
        if fit.singular:
            singular += 1
        else:
            interior += 1
            assert fb.df[0] == pytest.approx(state_df, rel=1e-4)  # = Satterthwaite when interior
    assert singular >= 2 and interior >= 1  # both cases were exercised


def _kr_df_of_fit(fit, data) -> float:
    spec = model_frame(FORMULA, data)
    covs = [next(v.cov for v in fit.var_terms if v.group == t.group and tuple(v.cnames) == tuple(t.cnames))
            for t in spec.re_terms]
    return kr_state(spec, fit.fixef.to_numpy(), covs, fit.sigma).t_test([0.0, 1.0])[2]


def test_kr_equals_satterthwaite_on_balanced_designs_at_interior_fits():
    """General path: same SE; same df wherever the REML fit is not singular."""
    design = CrossedDesign(4, 8)
    kw = {"n_sims": 6, "rng": 3, "method": "simulate"}
    kr = power(design, P, test="kenward-roger", **kw).replicates
    satt = power(design, P, test="satterthwaite", **kw).replicates
    np.testing.assert_allclose(kr.se, satt.se, rtol=1e-6)
    interior = ~kr.singular
    assert interior.sum() >= 2
    np.testing.assert_allclose(kr.df[interior], satt.df[interior], rtol=1e-3)
    np.testing.assert_allclose(kr.pvalue[interior], satt.pvalue[interior], rtol=1e-3)


def test_kr_runs_on_an_unbalanced_design_and_differs_there():
    design = CrossedDesign(7, 12, workers_per_item=3)
    kw = {"n_sims": 3, "rng": 1}
    kr = power(design, P.with_effect(0.1), test="kenward-roger", **kw)
    satt = power(design, P.with_effect(0.1), test="satterthwaite", **kw)
    assert kr.method == "simulate" and kr.REML and kr.n_failed == 0
    r, s = kr.replicates, satt.replicates
    assert np.all(np.isfinite(r.pvalue)) and np.all(r.df > 0)
    assert np.all(r.se >= s.se * (1 - 1e-9))       # KR inflates the covariance here
    assert np.max(np.abs(r.se / s.se - 1)) > 1e-5   # ... measurably: not the Satterthwaite test


# ----------------------------------------------------------------------------------------
# PB-LRT
# ----------------------------------------------------------------------------------------


def test_pblrt_holds_alpha_with_ten_workers():
    """Balanced path, 10 workers: rejection rate within 3 MC SE of alpha (B = 19: exact size)."""
    n = 1000
    res = power(CrossedDesign(10, 20), presets.low_variance(0.0), n_sims=n, rng=11, test="pblrt",
                n_resamples=19)
    se = math.sqrt(0.05 * 0.95 / n)
    assert abs(res.rejection_rate - 0.05) < 3 * se
    p = res.replicates.pvalue
    np.testing.assert_allclose(p * 20, np.round(p * 20))        # (1 + count) / (B + 1)


def test_pblrt_replicates_do_not_depend_on_the_run_length():
    short = power(CrossedDesign(3, 10), HIGH(0.0), n_sims=30, rng=4, test="pblrt", n_resamples=19)
    long = power(CrossedDesign(3, 10), HIGH(0.0), n_sims=60, rng=4, test="pblrt", n_resamples=19)
    np.testing.assert_array_equal(short.replicates.pvalue, long.replicates.pvalue[:30])


def test_general_pblrt_agrees_with_the_balanced_path_in_distribution():
    """B null refits through the engine vs the vectorised fast path: mean p-value within 4 SE."""
    design, params = CrossedDesign(3, 6), P.with_effect(0.08)
    gen = power(design, params, n_sims=20, rng=8, test="pblrt", n_resamples=19, method="simulate")
    bal = power(design, params, n_sims=800, rng=9, test="pblrt", n_resamples=19)
    assert gen.method == "simulate" and bal.method == "balanced" and gen.n_failed == 0
    pg, pb = gen.replicates.pvalue, bal.replicates.pvalue
    se = math.sqrt(pg.var(ddof=1) / pg.size + pb.var(ddof=1) / pb.size)
    assert abs(pg.mean() - pb.mean()) < 4 * se
    # the observed statistic itself is the same LR on both paths (signed root, normal scale)
    np.testing.assert_allclose(np.abs(gen.replicates.statistic).mean(),
                               np.abs(bal.replicates.statistic).mean(),
                               atol=4 * np.abs(gen.replicates.statistic).std() / math.sqrt(20))


def test_power_grid_passes_n_resamples():
    grid = power_grid(HIGH(), n_workers=3, n_items=10, effect=[0.0, 0.3], n_sims=10, rng=1,
                      test="pblrt", n_resamples=19, progress=False)
    frame = grid.to_frame()
    assert list(frame["test"]) == ["pblrt", "pblrt"]
    assert all(c.result.n_resamples == 19 for c in grid.cells)


@pytest.mark.slow
def test_default_test_holds_alpha_with_ten_workers():
    """The default (REML + Satterthwaite): within 3 MC SE of alpha at 10 workers, both scenarios."""
    n = 20_000
    se = math.sqrt(0.05 * 0.95 / n)
    for preset in (presets.high_variance, presets.low_variance):
        res = power(CrossedDesign(10, 50), preset(0.0), n_sims=n, rng=31)
        assert res.test == "satterthwaite"
        assert abs(res.rejection_rate - 0.05) < 3 * se


def test_general_pblrt_screen_changes_no_pvalue(monkeypatch):
    """The exact bound LR* <= n log(1 + z*^2/n) only skips null refits that cannot exceed."""
    design, params = CrossedDesign(6, 12, workers_per_item=3), HIGH(0.0)
    kw = {"n_sims": 5, "rng": 3, "test": "pblrt", "n_resamples": 19, "method": "simulate"}
    screened = power(design, params, **kw).replicates.pvalue
    build = GeneralPBLRT.build
    monkeypatch.setattr(GeneralPBLRT, "build", classmethod(
        lambda cls, full, null, j: dataclasses.replace(build(full, null, j), screen=False)))
    np.testing.assert_array_equal(power(design, params, **kw).replicates.pvalue, screened)


def test_general_path_kenward_roger_warns_about_its_cost_on_large_designs(monkeypatch):
    # kr_state is dense n x n: a large design gets a warning with the expected cost before
    # any replicate runs (the threshold is lowered so that the test stays fast)
    import nlpower.powersim.rules as rep
    from nlpower.errors import NlpowerWarning

    monkeypatch.setattr(rep, "KR_DENSE_WARN_N", 100)
    design = CrossedDesign(6, 20, workers_per_item=3)           # n = 120 > 100
    with pytest.warns(NlpowerWarning, match=r"dense n x n algebra .* n = 120 ratings"):
        power(design, presets.high_variance(0.1), method="simulate", test="kenward-roger",
              n_sims=1, rng=1, progress=False)
