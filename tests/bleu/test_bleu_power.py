"""BLEU power: the Delta–Laplace randomization test (Card et al. 2020, §4, App. G.2)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from nlpower import bleu
from nlpower.bleu import _kernels
from nlpower.bleu.power import BleuPowerResult
from nlpower.bleu.process import draw_effects, draw_parts, laplace_location
from nlpower.errors import InputError

AVG = bleu.preset("average")


def normal_power(n: float, delta: float, p0: float, b0: float, alpha: float = 0.05) -> float:
    """Independent large-n approximation: dB_hat ~ N(dB, s^2) with the process's own variance.

    ``Var(dB_hat) = n Var(delta_i) / 4`` and the null SD of the randomization
    test is ``sqrt(sum delta_i^2) / 2 ~ sqrt(n E[delta_i^2]) / 2``; power
    counts sign-correct rejections.
    """
    mu, b = laplace_location(n, delta, p0), b0 / n
    second = (1 - p0) * (2 * b * b + mu * mu)
    var = second - ((1 - p0) * mu) ** 2
    s_est, s_null = math.sqrt(n * var) / 2, math.sqrt(n * second) / 2
    z = stats.norm.ppf(1 - alpha / 2)
    return float(stats.norm.sf((z * s_null - abs(delta)) / s_est))


def notebook_power(n: int, delta: float, p0: float, b0: float, n_sims: int, n_resamples: int,
                   seed: int, alpha: float = 0.05) -> tuple[int, int]:
    """The paper's notebook method: a Python loop, fresh swap sets for every replicate."""
    gen = np.random.default_rng(seed)
    hits = 0
    for _ in range(n_sims):
        d = draw_effects(gen, 1, n, delta, p0, b0)[0]
        obs = -0.5 * d.sum()
        exceed = 0
        for _ in range(n_resamples):
            swap = gen.integers(0, 2, n)
            exceed += abs(obs + swap @ d) >= abs(obs)
        p = (1 + exceed) / (1 + n_resamples)
        hits += (p <= alpha) and (np.sign(obs) == np.sign(delta))
    return hits, n_sims


def test_headline_n2000_delta1_table3_average():
    # Card et al. 2020, §4 / Fig. 4: about 75% power at n = 2000, dB = 1 (Table 3 averages).
    res = bleu.power(2000, 1.0, AVG.p0, AVG.b0, n_sims=1000, n_resamples=1000, rng=2020)
    approx = normal_power(2000, 1.0, AVG.p0, AVG.b0)
    assert abs(res.power - approx) < 4 * res.se + 0.01
    assert abs(res.power - 0.75) < 4 * res.se + 0.025  # "approximately 75%"
    assert res.ci.low < res.power < res.ci.high
    assert res.type_s == 0.0 and 1.0 < res.type_m < 1.4
    assert abs(res.mean_estimate - 1.0) < 5 * math.sqrt(1 / 1000) * 0.4


def test_app_g2_example():
    # App. G.2: P0 = 0.2, b0 = 26, n = 2000, dB = 1.
    res = bleu.power(2000, 1.0, 0.2, 26.0, n_sims=1000, n_resamples=1000, rng=7)
    assert abs(res.power - normal_power(2000, 1.0, 0.2, 26.0)) < 4 * res.se + 0.01


def test_vectorised_matches_notebook_loop_with_independent_swap_sets():
    n, delta, n_sims, r = 300, 3.0, 300, 200
    fast = bleu.power(n, delta, AVG.p0, AVG.b0, n_sims=n_sims, n_resamples=r, rng=11)
    hits, sims = notebook_power(n, delta, AVG.p0, AVG.b0, n_sims, r, seed=12)
    slow = hits / sims
    se = math.sqrt(fast.se**2 + slow * (1 - slow) / sims)
    assert 0.2 < fast.power < 0.95
    assert abs(fast.power - slow) < 4 * se


def test_normal_shortcut_agrees_with_randomization_per_replicate():
    gen = np.random.default_rng(5)
    d = draw_effects(gen, 40, 2000, 1.0, AVG.p0, AVG.b0)
    r = 20000
    p_rand = _kernels.randomization_pvalues(gen, d, r)
    p_norm, bound = _kernels.normal_pvalues(d)
    mc = np.sqrt(p_norm * (1 - p_norm) / r)
    assert bound < 0.05
    assert np.all(np.abs(p_rand - p_norm) < 5 * mc + 2 * bound + 1 / r)
    assert np.max(np.abs(p_rand - p_norm)) < 0.02


def test_type1_error_at_zero_difference():
    res = bleu.power(500, 0.0, AVG.p0, AVG.b0, n_sims=2000, n_resamples=500, rng=3)
    assert math.isnan(res.power)
    se = math.sqrt(0.05 * 0.95 / 2000)
    assert abs(res.rejection_rate - 0.05) < 4 * se
    assert "Type I error" in res.summary()


def test_negative_difference_counts_negative_estimates():
    pos = bleu.power(1000, 1.5, 0.1, 25.0, n_sims=400, method="normal", rng=9)
    neg = bleu.power(1000, -1.5, 0.1, 25.0, n_sims=400, method="normal", rng=9)
    assert abs(neg.power - pos.power) < 4 * math.sqrt(2) * pos.se  # symmetric problem
    assert neg.mean_estimate < 0


def test_power_rises_with_n_and_delta():
    kw = {"n_sims": 400, "method": "normal", "rng": 1}
    small = bleu.power(1000, 1.0, AVG.p0, AVG.b0, **kw).power
    big_n = bleu.power(4000, 1.0, AVG.p0, AVG.b0, **kw).power
    big_d = bleu.power(1000, 2.0, AVG.p0, AVG.b0, **kw).power
    assert big_n > small + 0.1 and big_d > small + 0.1


def test_rng_policy_and_reproducibility():
    kw = {"n_sims": 150, "n_resamples": 200}
    a = bleu.power(500, 2.0, 0.1, 25.0, rng=4, **kw)
    b = bleu.power(500, 2.0, 0.1, 25.0, rng=4, **kw)
    assert np.array_equal(a.pvalues, b.pvalues) and a.seed == b.seed
    gen = np.random.default_rng(4)
    c = bleu.power(500, 2.0, 0.1, 25.0, rng=gen, **kw)
    d = bleu.power(500, 2.0, 0.1, 25.0, rng=gen, **kw)
    assert not np.array_equal(c.estimates, d.estimates)
    e = bleu.power(500, 2.0, 0.1, 25.0, rng=np.random.default_rng(4), **kw)
    assert np.array_equal(c.estimates, e.estimates)


def test_record_round_trip_and_frame():
    res = bleu.power(300, 2.0, 0.1, 25.0, n_sims=120, n_resamples=100, rng=1)
    rec = res.to_record()
    back = BleuPowerResult.from_record(rec)
    assert back == res
    frame = res.to_frame()
    assert list(frame[["power", "ci_low", "ci_high"]].iloc[0]) == [res.power, res.ci.low, res.ci.high]
    assert "BleuPowerResult(power=" in repr(res) and "sign-correct" in res.summary()
    assert res.proportion_ci(0.5).high < res.ci.high


def test_memory_is_bounded_by_chunks():
    gen = np.random.default_rng(0)
    n = 50_000
    chunks = list(_kernels.sign_chunks(gen, 100, n))
    assert sum(c.shape[0] for c in chunks) == 100
    assert max(c.size for c in chunks) <= _kernels.MAX_ELEMENTS


def test_mde_matches_power_and_normal_approximation():
    res = bleu.mde(2000, AVG.p0, AVG.b0, n_sims=600, n_resamples=400, rng=3)
    assert res.power >= 0.8
    # the normal approximation's MDE, from normal_power
    lo, hi = 0.1, 5.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if normal_power(2000, mid, AVG.p0, AVG.b0) >= 0.8 else (mid, hi)
    assert abs(res.mde - hi) / hi < 0.08
    again = bleu.power(2000, res.mde, AVG.p0, AVG.b0, n_sims=600, method="normal", rng=8)
    assert abs(again.power - 0.8) < 4 * again.se + 0.02
    assert "MDE" in res.summary() and res.to_frame().loc[0, "mde"] == res.mde


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n": 1}, "n must be >= 2"),
    ({"n": 2.5}, "n must be an integer"),
    ({"delta": float("nan")}, "delta must be finite"),
    ({"p0": 1.0}, "p0 must be < 1.0"),
    ({"p0": -0.1}, "p0 must be >= 0.0"),
    ({"b0": 0.0}, "b0 must be > 0.0"),
    ({"alpha": 1.5}, "alpha must be < 1.0"),
    ({"method": "exact"}, "method must be one of 'randomization', 'normal'"),
    ({"n_sims": 0}, "n_sims must be >= 1"),
    ({"n_resamples": 10}, "n_resamples = 10 is too few for alpha = 0.05"),
])
def test_power_errors(kwargs, match):
    args = {"n": 100, "delta": 1.0, "p0": 0.1, "b0": 25.0, "n_sims": 10} | kwargs
    n, delta, p0, b0 = (args.pop(k) for k in ("n", "delta", "p0", "b0"))
    with pytest.raises(InputError, match=match):
        bleu.power(n, delta, p0, b0, **args)


def test_mde_errors():
    with pytest.raises(InputError, match="null statistics would be kept in memory"):
        bleu.mde(100, 0.1, 25.0, n_sims=20_000, n_resamples=1000)
    with pytest.raises(InputError, match="target_power = 0.8 is not reached for any dB up to 1e4"):
        bleu.mde(2, 0.1, 25.0, n_sims=50, n_resamples=100, rng=1)  # 2 sentences: p >= 1/4
    with pytest.raises(InputError, match="target_power must be < 1.0"):
        bleu.mde(100, 0.1, 25.0, target_power=1.0)


def test_presets_table3():
    assert set(bleu.TABLE3) == {"TF19-TF18", "TF18-TF16", "TF16-Conv17", "TF16-Conv14"}
    assert bleu.preset("TF19-TF18").p0 == 0.19 and bleu.preset("TF18-TF16").b0 == 29.4
    assert AVG.p0 == pytest.approx(0.125) and AVG.b0 == pytest.approx(25.8)
    with pytest.raises(InputError, match="preset must be one of"):
        bleu.preset("TF19")


def test_float32_shared_signs_agree_with_float64_in_distribution():
    # the same effects, tested by the float32 kernel with signs shared by all replicates and by
    # the float64 reference with its own signs: each p-value is a Monte Carlo estimate with SE
    # sqrt(p (1 - p) / r), so their standardised differences are about N(0, 1)
    gen = np.random.default_rng(8)
    d = draw_effects(gen, 60, 2000, 1.0, AVG.p0, AVG.b0)
    r = 20000
    p32 = _kernels.SharedSigns(np.random.SeedSequence(9), r, 2000).pvalues(d)
    p64 = _kernels.randomization_pvalues(gen, d, r)
    p_norm, _ = _kernels.normal_pvalues(d)
    z = (p32 - p64) / np.sqrt(2 * np.maximum(p_norm * (1 - p_norm), 1 / r) / r)
    assert abs(z.mean()) < 4 / math.sqrt(z.size)
    assert np.all(np.abs(z) < 5.5) and 0.3 < z.var() < 2.0


def test_shared_signs_are_the_same_for_every_block(monkeypatch):
    d = draw_effects(np.random.default_rng(2), 30, 500, 1.0, AVG.p0, AVG.b0)
    for cache in (_kernels.SIGN_CACHE, 0):  # kept in memory, or drawn again per block
        monkeypatch.setattr(_kernels, "SIGN_CACHE", cache)
        monkeypatch.setattr(_kernels, "MAX_ELEMENTS", 500 * 64)
        signs = _kernels.SharedSigns(np.random.SeedSequence(3), 300, 500)
        assert (signs._cache is None) == (cache == 0)
        assert max(c.size for c in signs.chunks()) <= 500 * 300
        whole = signs.pvalues(d)
        assert np.array_equal(whole[:10], signs.pvalues(d[:10]))
        assert np.array_equal(whole[10:], signs.pvalues(d[10:]))


def test_laplace_draws_are_standard_laplace_where_nonzero():
    nonzero, laplace = draw_parts(np.random.default_rng(4), 100, 1000, 0.3)
    assert abs(nonzero.mean() - 0.7) < 5 * math.sqrt(0.7 * 0.3 / nonzero.size)
    assert stats.kstest(laplace[nonzero], "laplace").pvalue > 1e-3


def test_power_imports_neither_pandas_nor_scipy():
    code = ("import sys; from nlpower.bleu import power; "
            "power(200, 1.0, 0.125, 25.8, n_sims=20, n_resamples=50, rng=1); "
            "print(sorted(m for m in ('pandas', 'scipy', 'tqdm', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_mde_has_a_monte_carlo_interval_that_narrows_and_covers():
    from nlpower.bleu.power import mde

    small = mde(2000, 0.125, 25.8, n_sims=300, method="normal", rng=3)
    large = mde(2000, 0.125, 25.8, n_sims=1200, method="normal", rng=4)
    precise = mde(2000, 0.125, 25.8, n_sims=20000, method="normal", rng=5, tol=1e-3)
    for r in (small, large):
        assert r.mde_ci.low <= r.mde <= r.mde_ci.high
        assert r.mde_ci.low <= precise.mde <= r.mde_ci.high
    # the interval's width falls like 1 / sqrt(n_sims): 4x the replicates, about half the width
    ratio = (large.mde_ci.high - large.mde_ci.low) / (small.mde_ci.high - small.mde_ci.low)
    assert 0.3 < ratio < 0.75
    assert "Monte Carlo 95% interval" in small.summary()
