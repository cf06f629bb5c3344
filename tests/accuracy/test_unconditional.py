"""Suissa & Shuster's (1991) exact unconditional McNemar test (nlpower.accuracy.unconditional).

Pinned against (a) brute-force enumeration of every table on n items with the nuisance
parameter on a fine grid, written here independently of the module's per-d reduction;
(b) an independent base-R enumeration (tests/reference/unconditional_reference.R, R 4.2.2,
agreement to 1e-8 relative); (c) the p-value Fagerland, Lydersen & Laake (2013, BMC Med Res
Methodol 13:91) give for the Bentur et al. data (1 and 7 discordant pairs of 21: 0.035, three
decimals); (d) MESS's power region, reimplemented from its source's logic, which is the
mid-p rule.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from nlpower.accuracy import mcnemar, mcnemar_pvalue, power
from nlpower.accuracy.mcnemar import rejection_thresholds
from nlpower.accuracy.unconditional import (
    critical_z,
    unconditional_pvalue,
    unconditional_thresholds,
)
from nlpower.errors import InputError


def _brute_size(n: int, z: float, psi: np.ndarray) -> float:
    """max over psi of P(|Z| >= z), summing the trinomial over every table (x12, x21)."""
    x12, x21 = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    d = x12 + x21
    ok = d <= n
    with np.errstate(invalid="ignore", divide="ignore"):
        zz = np.abs(x12 - x21) / np.sqrt(np.where(d > 0, d, 1))
    region = ok & (d > 0) & (zz >= z - 1e-12)
    i, j = x12[region], x21[region]
    k = n - i - j
    logc = (math.lgamma(n + 1) - np.array([math.lgamma(v + 1) for v in i])
            - np.array([math.lgamma(v + 1) for v in j]) - np.array([math.lgamma(v + 1) for v in k]))
    best = 0.0
    for p in psi:
        logp = (i + j) * np.log(p / 2) + k * np.log1p(-p)
        best = max(best, float(np.exp(logc + logp).sum()))
    return best


@pytest.mark.parametrize(("b", "c", "n"), [(1, 7, 21), (0, 5, 12), (3, 11, 30), (2, 9, 25),
                                           (6, 6, 20), (10, 2, 15)])
def test_pvalue_matches_brute_force_enumeration(b, c, n):
    psi = np.linspace(1e-6, 1 - 1e-6, 4001)
    z = abs(b - c) / math.sqrt(b + c)
    expected = 1.0 if b == c else _brute_size(n, z, psi)
    got = unconditional_pvalue(b, c, n)
    assert got == pytest.approx(expected, abs=1e-6)
    assert got >= expected - 1e-12          # the refined supremum is never below the grid's


def test_published_example_bentur():
    """Fagerland, Lydersen & Laake (2013), Bentur et al. (2009) data: P = 0.035."""
    assert round(unconditional_pvalue(1, 7, 21), 3) == 0.035
    r = mcnemar(1, 7, test="exact-unconditional", n=21)
    assert r.pvalue == pytest.approx(unconditional_pvalue(1, 7, 21))
    assert r.statistic == pytest.approx(-6 / math.sqrt(8))
    assert "exact-unconditional" in r.summary()


@pytest.mark.parametrize("n", [10, 21, 40])
def test_critical_value_is_the_size_boundary(n):
    """Size of {|Z| >= z_crit} <= alpha; the next smaller attained statistic's region is > alpha."""
    z = critical_z(n, 0.05)
    psi = np.linspace(1e-6, 1 - 1e-6, 2001)
    assert _brute_size(n, z, psi) <= 0.05 + 1e-9
    d = np.arange(1, n + 1)
    stats_ = np.unique(np.concatenate([(dd - 2 * np.arange(dd // 2 + 1)) / np.sqrt(dd) for dd in d]))
    below = stats_[stats_ < z - 1e-9].max()
    assert _brute_size(n, below, psi) > 0.05


def test_thresholds_agree_with_pvalues():
    n = 40
    c = unconditional_thresholds(n, 0.05)
    for d in range(0, n + 1, 3):
        for m in range(0, d // 2 + 1):
            rejects = unconditional_pvalue(m, d - m, n) <= 0.05
            assert rejects == (m <= c[d]), (d, m)


def test_exact_power_matches_simulation():
    exact = power(300, 0.04, 0.85, test="exact-unconditional")
    sim = power(300, 0.04, 0.85, test="exact-unconditional", method="simulate", n_sims=20000,
                rng=11)
    assert abs(sim.power - exact.power) < 4 * math.sqrt(exact.power * (1 - exact.power) / 20000)
    assert exact.power > power(300, 0.04, 0.85, test="exact").power   # exact conditional is conservative


def test_size_holds_alpha():
    """Unlike mid-p, the unconditional test never exceeds alpha (here exactly, at delta 0)."""
    for pa in (0.5, 0.8, 0.95):
        assert power(60, 0.0, pa, test="exact-unconditional").rejection_rate <= 0.05 + 1e-12


def test_needs_n():
    with pytest.raises(InputError, match="needs n"):
        mcnemar_pvalue(1, 7, "exact-unconditional")
    with pytest.raises(InputError, match="pass n=<all paired items>"):
        mcnemar(1, 7, test="exact-unconditional")
    with pytest.raises(InputError, match="needs n=<number of paired items>"):
        rejection_thresholds(10, "exact-unconditional")
    assert mcnemar_pvalue([1, 3], [7, 3], "exact-unconditional", n=21).tolist() == \
        pytest.approx([unconditional_pvalue(1, 7, 21), 1.0])


def _mess_region(d: int, alpha: float) -> set[int]:
    """MESS::power_binom_test's two-sided region for Binomial(d, 1/2), from its source's logic:
    sort the outcome probabilities, keep the smallest while their cumulative sum is < alpha,
    and add every outcome as improbable as the last one kept (relative tolerance 1e-7)."""
    x = np.arange(d + 1)
    f = stats.binom.pmf(x, d, 0.5)
    order = np.argsort(f, kind="stable")
    cs = np.cumsum(f[order])
    keep = int(np.argmin(cs < alpha))            # which.min(cs < alpha) - 1, 0-based count
    if keep == 0:
        return set()
    ssh = f[order[keep - 1]]
    return {int(v) for v in x[f <= ssh * (1 + 1e-7)]}


def test_mess_exact_power_region_is_mid_p():
    """MESS's power_mcnemar_test(method="exact"), which Card et al. ran for Table 9's regression
    column, is the unconditional power of a binomial test whose region is the mid-p rule's."""
    c = rejection_thresholds(400, "mid-p", 0.05)
    for d in range(1, 401):
        region = _mess_region(d, 0.05)
        mid_p = {m for m in range(d + 1) if min(m, d - m) <= c[d]}
        assert region == mid_p, d


def test_estimate_runs_the_unconditional_test_on_all_items():
    from nlpower.accuracy import estimate
    y = np.ones(21, dtype=int)
    a = np.array([1] * 1 + [0] * 7 + [1] * 12 + [0] * 1)     # old model
    b = np.array([0] * 1 + [1] * 7 + [1] * 12 + [0] * 1)     # new: 7 only new, 1 only old
    est = estimate(a, b, y, test="exact-unconditional")
    assert (est.only_new, est.only_old) == (7, 1)
    assert est.mcnemar.pvalue == pytest.approx(unconditional_pvalue(7, 1, 21))


def test_against_the_committed_r_enumeration(reference_dir):
    """tests/reference/unconditional_reference.R: an independent base-R enumeration."""
    import json
    ref = json.loads((reference_dir / "unconditional_reference.json").read_text())
    for case in ref["pvalues"]:
        assert unconditional_pvalue(case["b"], case["c"], case["n"]) == \
            pytest.approx(case["pvalue"], rel=1e-8, abs=1e-12)
    for case in ref["sizes"]:
        n, z = int(case["n"]), float(case["z"])
        assert (z >= critical_z(n, 0.05)) == (case["size"] <= 0.05), case
