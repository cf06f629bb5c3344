"""LMMParams / MultiSystemParams: codings, conversions, validation messages."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpower.errors import InputError
from nlpower.params import (
    CODINGS,
    ConversionWarning,
    LMMParams,
    MultiSystemParams,
    pm1_random_effects,
    x_values,
)

sd = st.floats(0.0, 1.0)


def test_defaults_and_mean_difference_per_coding():
    p = LMMParams(effect=0.1)
    assert p.coding == "sum" and p.beta0 == 0.5
    # the paper's beta1 = 0.1 under +-1 coding is a mean difference of 0.2
    assert p.mean_difference == pytest.approx(0.2)
    assert p.system_means == pytest.approx((0.4, 0.6))
    assert LMMParams(effect=0.1, coding="half").mean_difference == pytest.approx(0.1)
    assert LMMParams(effect=0.1, coding="treatment").mean_difference == pytest.approx(0.1)
    assert LMMParams(beta0=0.3, effect=0.1, coding="treatment").system_means == pytest.approx((0.3, 0.4))
    assert x_values("sum") == (-1.0, 1.0)
    assert x_values("half") == (-0.5, 0.5)
    assert x_values("treatment") == (0.0, 1.0)


@settings(max_examples=80, deadline=None)
@given(b0=st.floats(-1, 1), eff=st.floats(-1, 1), a=sd, b=sd, c=sd, d=sd, s=st.floats(0.01, 1))
def test_sum_half_round_trip_is_exact(b0, eff, a, b, c, d, s):
    p = LMMParams(b0, eff, a, b, c, d, s, coding="sum")
    h = p.to_coding("half")
    assert h.coding == "half"
    assert h.effect == pytest.approx(2 * eff)
    assert h.sd_worker_slope == pytest.approx(2 * b)
    assert h.sd_item_slope == pytest.approx(2 * d)
    assert (h.beta0, h.sd_worker, h.sd_item, h.sigma) == pytest.approx((b0, a, c, s))
    assert h.mean_difference == pytest.approx(p.mean_difference)
    assert h.system_means == pytest.approx(p.system_means)
    back = h.to_coding("sum")
    for name in ("beta0", "effect", "sd_worker", "sd_worker_slope", "sd_item", "sd_item_slope", "sigma"):
        assert getattr(back, name) == pytest.approx(getattr(p, name), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(b0=st.floats(-1, 1), eff=st.floats(-1, 1), a=sd, c=sd, s=st.floats(0.01, 1),
       src=st.sampled_from(CODINGS), dst=st.sampled_from(CODINGS))
def test_treatment_conversion_without_slopes_keeps_the_model(b0, eff, a, c, s, src, dst):
    p = LMMParams(b0, eff, a, 0.0, c, 0.0, s, coding=src)
    q = p.to_coding(dst)
    assert q.coding == dst
    assert q.system_means == pytest.approx(p.system_means, abs=1e-12)
    assert q.mean_difference == pytest.approx(p.mean_difference, abs=1e-12)
    assert (q.sd_worker, q.sd_item, q.sigma) == pytest.approx((a, c, s))


def test_sum_to_treatment_intercept_moves_to_baseline():
    q = LMMParams(beta0=0.5, effect=0.1, sd_worker=0.2, sd_item=0.1, sigma=0.2).to_coding("treatment")
    assert q.beta0 == pytest.approx(0.4)  # beta0 - beta1 (x: -1 -> 0)
    assert q.effect == pytest.approx(0.2)


def test_same_coding_returns_self():
    p = LMMParams(effect=0.3)
    assert p.to_coding("sum") is p


def test_random_part_invariant_under_sum_half():
    # the covariance of the two ratings of one worker (baseline, other) is unchanged
    p = LMMParams(effect=0.1, sd_worker=0.2, sd_worker_slope=0.15, sigma=0.3)
    for q in (p, p.to_coding("half")):
        lo, hi = q.x_values
        z = np.array([[1.0, lo], [1.0, hi]])
        cov = z @ np.diag([q.sd_worker**2, q.sd_worker_slope**2]) @ z.T
        if q is p:
            ref = cov
        else:
            np.testing.assert_allclose(cov, ref, atol=1e-15)


# ----------------------------------------------------------- multi-system
def _indicator_cov(s0, sa, sb):
    """Covariance of (u_A, u_B) per-rating effects from (1|g) + (0+system|g)."""
    return np.array([[s0**2 + sa**2, s0**2], [s0**2, s0**2 + sb**2]])


def _pm1_cov(sd0, sd1):
    z = np.array([[1.0, -1.0], [1.0, 1.0]])
    return z @ np.diag([sd0**2, sd1**2]) @ z.T


@settings(max_examples=60, deadline=None)
@given(s0=sd, s=sd)
def test_per_system_to_pm1_equal_sds_is_exact(s0, s):
    m = MultiSystemParams(0.5, (0.05,), s0, (s, s), s0 / 2, (s / 2, s / 2), 0.2)
    p = m.to_lmm_params()
    # per-rating covariance matrices agree
    np.testing.assert_allclose(_pm1_cov(p.sd_worker, p.sd_worker_slope), _indicator_cov(s0, s, s), atol=1e-12)
    np.testing.assert_allclose(_pm1_cov(p.sd_item, p.sd_item_slope),
                               _indicator_cov(s0 / 2, s / 2, s / 2), atol=1e-12)
    assert p.effect == 0.05 and p.mean_difference == pytest.approx(m.mean_differences[0])
    assert p.sd_worker_slope == pytest.approx(math.sqrt(s**2 / 2))
    assert p.sd_worker == pytest.approx(math.sqrt(s0**2 + s**2 / 2))


@settings(max_examples=60, deadline=None)
@given(s0=sd, s1=sd, eff=st.floats(-1, 1))
def test_pm1_to_per_system_round_trip(s0, s1, eff):
    hi, lo = max(s0, s1), min(s0, s1)
    p = LMMParams(0.5, eff, hi, lo, hi, lo, 0.3)
    m = p.to_multi_system(["base", "new"])
    assert m.system_names == ("base", "new")
    np.testing.assert_allclose(_indicator_cov(m.sd_worker, *m.sd_worker_systems),
                               _pm1_cov(hi, lo), atol=1e-12)
    back = m.to_lmm_params()
    assert (back.sd_worker, back.sd_worker_slope, back.effect) == pytest.approx((hi, lo, eff), abs=1e-9)
    # from half coding too
    m2 = p.to_coding("half").to_multi_system()
    assert m2.sd_worker_systems == pytest.approx(m.sd_worker_systems)


def test_unequal_per_system_sds_imply_a_correlation():
    # Hashimoto LM item SDs: intercept 0.04, systems 0.14 / 0.10 (Table 15)
    m = MultiSystemParams(0.55, (-0.03,), 0.0, (0.11, 0.11), 0.04, (0.14, 0.10), 0.25)
    with pytest.raises(InputError, match=r"per-system item SDs differ \(0\.14 vs 0\.1\).*covariance of -0\.0024.*exact=False"):
        m.to_lmm_params()
    p = m.to_lmm_params(exact=False)
    # variances: intercept s0^2 + (sA^2+sB^2)/4, slope (sA^2+sB^2)/4
    assert p.sd_item**2 == pytest.approx(0.04**2 + (0.14**2 + 0.10**2) / 4)
    assert p.sd_item_slope**2 == pytest.approx((0.14**2 + 0.10**2) / 4)
    # check the covariance algebra numerically with the indicator model
    c = _indicator_cov(0.04, 0.14, 0.10)
    z_inv = np.linalg.inv(np.array([[1.0, -1.0], [1.0, 1.0]]))
    c01 = z_inv @ c @ z_inv.T
    assert c01[0, 0] == pytest.approx(p.sd_item**2)
    assert c01[1, 1] == pytest.approx(p.sd_item_slope**2)
    assert c01[0, 1] == pytest.approx((0.10**2 - 0.14**2) / 4)
    assert m.to_lmm_params("half", exact=False).coding == "half"


def test_multi_system_means():
    m = MultiSystemParams(0.62, (0.04, -0.05, -0.03), 0, (0.04, 0.05, 0.05, 0.05), 0,
                          (0.16, 0.19, 0.16, 0.16), 0.16)
    assert m.n_systems == 4 and m.coding == "sum"
    means = m.system_means
    assert np.mean(means) == pytest.approx(0.62)  # beta0 is the grand mean
    assert means == pytest.approx((0.66, 0.66, 0.57, 0.59))
    assert m.mean_differences == pytest.approx((0.0, -0.09, -0.07))
    assert m.with_effects((0, 0, 0)).system_means == pytest.approx((0.62,) * 4)


# -------------------------------------------------------------- output
def test_lmm_summary_repr_frame():
    p = LMMParams(effect=0.1, sd_item_slope=0.14)
    assert repr(p).startswith("LMMParams(beta0=0.5, effect=0.1,") and "coding='sum'" in repr(p)
    text = p.summary()
    assert "coding='sum'" in text and "mean difference = 0.2" in text and "x = -1 baseline" in text
    df = p.to_frame()
    assert list(df.parameter) == ["beta0", "effect", "sd_worker", "sd_worker_slope", "sd_item",
                                  "sd_item_slope", "sigma"]
    assert (df.coding == "sum").all() and df.value.iloc[5] == 0.14
    assert p.sds["sigma"] == 0.26
    assert p.with_effect(0.2).effect == 0.2 and p.with_effect(0.2).sd_item_slope == 0.14


def test_multi_summary_repr_frame():
    m = MultiSystemParams(0.5, (0.1, 0.0), 0.1, (0.1, 0.2, 0.3), 0.0, (0, 0, 0), 0.2,
                          system_names=("a", "b", "c"))
    assert repr(m) == "MultiSystemParams(K=3, beta0=0.5, effects=(0.1, 0), sigma=0.2)"
    assert "baseline 'a'" in m.summary() and "a=0.4" in m.summary()
    df = m.to_frame()
    assert len(df) == 1 + 2 + 1 + 3 + 1 + 3 + 1
    assert df.loc[df.parameter == "sd_worker_systems[2]", "term"].item() == "c"


def test_frozen():
    with pytest.raises(AttributeError):
        LMMParams().effect = 1.0  # type: ignore[misc]


# -------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"sd_worker": -0.1}, r"sd_worker must be a standard deviation >= 0; got -0\.1\. Pass the SD \(not a variance\)"),
        ({"sd_item_slope": -1}, r"sd_item_slope must be a standard deviation >= 0; got -1"),
        ({"sigma": 0}, r"sigma \(the residual SD\) must be > 0; got 0"),
        ({"sigma": -0.2}, r"sigma \(the residual SD\) must be > 0; got -0\.2"),
        ({"effect": float("nan")}, r"effect must be finite; got nan"),
        ({"beta0": "0.5"}, r"beta0 must be a real number; got '0\.5'"),
        ({"sd_worker": None}, r"sd_worker must be a real number; got None"),
        ({"coding": "contrast"}, r"coding must be one of 'sum', 'half', 'treatment'; got 'contrast'"),
    ],
)
def test_lmm_params_errors(kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        LMMParams(**kwargs)


def test_to_coding_errors():
    p = LMMParams(effect=0.1, sd_worker_slope=0.1)
    with pytest.raises(InputError, match=r"coding must be one of.*got 'dummy'"):
        p.to_coding("dummy")
    with pytest.raises(InputError, match=r"cannot convert LMMParams from coding='sum' to coding='treatment' exactly.*sd_worker_slope=0\.1"):
        p.to_coding("treatment")
    with pytest.raises(InputError, match=r"from coding='treatment' to coding='half'"):
        LMMParams(sd_item_slope=0.1, coding="treatment").to_coding("half")


def test_to_multi_system_error():
    with pytest.raises(InputError, match=r"sd_item=0\.0 is smaller than sd_item_slope=0\.14.*negative intercept variance"):
        LMMParams(sd_item_slope=0.14).to_multi_system()


def _multi(**kw):
    base = dict(beta0=0.5, effects=(0.1,), sd_worker=0.0, sd_worker_systems=(0.1, 0.1), sd_item=0.0,
                sd_item_systems=(0.1, 0.1), sigma=0.2)
    base.update(kw)
    return MultiSystemParams(**base)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"effects": 0.1}, r"effects must be a sequence of K - 1 sum-contrast effects.*effects=\(0\.1,\)"),
        ({"effects": ()}, r"effects must hold at least one effect"),
        ({"effects": (0.1, "x")}, r"effects\[1\] must be a real number; got 'x'"),
        ({"sd_worker_systems": (0.1,)}, r"sd_worker_systems must have one SD per system, K = 2.*got 1 values.*sd_worker\."),
        ({"sd_item_systems": (0.1, 0.1, 0.1)}, r"sd_item_systems must have one SD per system, K = 2.*got 3"),
        ({"sd_item_systems": 0.1}, r"sd_item_systems must be a sequence of standard deviations"),
        ({"sd_worker_systems": (0.1, -0.1)}, r"sd_worker_systems\[1\] must be a standard deviation >= 0; got -0\.1"),
        ({"sd_item": -1.0}, r"sd_item must be a standard deviation >= 0"),
        ({"sigma": 0.0}, r"sigma \(the residual SD\) must be > 0"),
        ({"system_names": ("a", "a")}, r"system_names must be 2 unique names"),
        ({"system_names": "ab"}, r"system_names must be a sequence of 2 names"),
    ],
)
def test_multi_params_errors(kwargs, pattern):
    with pytest.raises(InputError, match=pattern):
        _multi(**kwargs)


def test_to_lmm_params_needs_two_systems():
    m = _multi(effects=(0.1, 0.2), sd_worker_systems=(0, 0, 0), sd_item_systems=(0, 0, 0))
    with pytest.raises(InputError, match=r"to_lmm_params needs exactly 2 systems; these parameters have K = 3"):
        m.to_lmm_params()


def test_multi_repr_single_effect_is_a_tuple():
    assert "effects=(0.1,)" in repr(_multi())


# ------------------------------------------- the one per-system -> +-1 conversion and its policy
def test_pm1_random_effects_algebra_and_policies():
    # total covariance of the per-system effects: v_m = 0.02^2 + 0.1^2, v_p = 0.02^2 + 0.3^2,
    # c = 0.02^2 + 0.01; the +-1 variances are (v_m + v_p +- 2c) / 4
    vm, vp, c = 0.02**2 + 0.1**2, 0.02**2 + 0.3**2, 0.02**2 + 0.01
    with pytest.warns(ConversionWarning, match=r"to_params: the item effects of 'B' and 'A' have "
                                               r"different SDs \(0\.301 vs 0\.102\).*correlation"):
        sd, slope = pm1_random_effects(0.02, 0.1, 0.3, 0.01, group="item", unequal="warn",
                                       systems=("A", "B"), where="to_params")
    assert sd**2 == pytest.approx((vm + vp + 2 * c) / 4) and slope**2 == pytest.approx((vm + vp - 2 * c) / 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pm1_random_effects(0.02, 0.1, 0.3, 0.01, group="item", unequal="ignore") == (sd, slope)
        # not material: SDs 0.142 vs 0.126 (a ratio below ~1.3) do not warn
        pm1_random_effects(0.0, 0.126, 0.142, 0.0, group="worker", unequal="warn")
        # material ratio but a tiny absolute change (< 0.01 on the SD scale) does not warn either
        pm1_random_effects(0.0, 0.001, 0.004, 0.0, group="worker", unequal="warn")
    with pytest.raises(InputError, match=r"per-system worker SDs differ \(0\.1 vs 0\.3\)"):
        pm1_random_effects(0.0, 0.1, 0.3, group="worker")
    # a large shared intercept does not swamp tiny per-system SDs (hypothesis found
    # s0 = 1, s = 5.8e-11 once: the slope variance must be s^2 / 2, not 0)
    assert pm1_random_effects(1.0, 5.8e-11, 5.8e-11, group="worker")[1] == pytest.approx(
        math.sqrt(5.8e-11**2 / 2), rel=1e-12)
    # equal SDs within 1e-12 pass the exact policy
    assert pm1_random_effects(0.1, 0.2, 0.2 + 1e-13, group="worker")[1] == pytest.approx(0.2 / math.sqrt(2))


def test_pm1_random_effects_unidentified_covariance():
    nan = float("nan")
    with pytest.warns(ConversionWarning, match=r"no item rated both 'B' and 'A'"):
        sd, slope = pm1_random_effects(0.0, 0.1, 0.3, nan, group="item", unequal="warn",
                                       systems=("A", "B"))
    assert slope == 0.0 and sd**2 == pytest.approx((0.1**2 + 0.3**2) / 2)
    with pytest.raises(InputError, match="not identified"):
        pm1_random_effects(0.0, 0.1, 0.1, nan, group="item", unequal="raise")
    with pytest.raises(InputError, match=r"unequal must be one of 'raise', 'warn', 'ignore'; got 'drop'"):
        pm1_random_effects(0.0, 0.1, 0.1, group="item", unequal="drop")  # type: ignore[arg-type]


def test_coding_errors_say_what_each_coding_means():
    with pytest.raises(InputError, match=r"coding must be one of 'sum', 'half', 'treatment'; got 'summ'\. "
                                         r"Did you mean 'sum'\? Use 'sum' \(x = -1"):
        LMMParams(coding="summ")
