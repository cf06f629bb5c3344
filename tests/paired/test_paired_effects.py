"""Effect sizes (NLPStatTest sec. 3.3) against hand computations, scipy and R."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from conftest import REFERENCE
from nlpower.paired import effect_sizes, hedges_j, hodges_lehmann, wilcoxon_z
from nlpower.paired.effects import tie_groups, walsh_quantile

REF = json.loads((REFERENCE / "paired_reference.json").read_text())


def test_cohens_d_is_mean_over_sd_of_differences():
    a, b = np.array([0.3, 0.5, 0.2, 0.9, 0.4]), np.array([0.1, 0.4, 0.3, 0.5, 0.1])
    d = a - b                                   # 0.2, 0.1, -0.1, 0.4, 0.3: mean 0.18
    sd = np.sqrt(np.sum((d - 0.18) ** 2) / 4)   # 0.192354
    assert effect_sizes(a, b).cohens_d == pytest.approx(0.18 / sd, rel=1e-12)
    assert effect_sizes(a, b).cohens_d == pytest.approx(0.935775, abs=1e-6)


def test_hedges_g_uses_the_paired_correction():
    # Hedges (1981) J(df) = 1 - 3 / (4 df - 1), df = n - 1 for n paired differences
    # (Borenstein et al. 2009, eq. 4.22-4.23; Lakens 2013 eq. 4).  n = 5: J = 1 - 3/15 = 0.8.
    assert hedges_j(5) == pytest.approx(0.8)
    assert hedges_j(11) == pytest.approx(1 - 3 / 39)
    es = effect_sizes([0.3, 0.5, 0.2, 0.9, 0.4], [0.1, 0.4, 0.3, 0.5, 0.1])
    assert es.hedges_g == pytest.approx(es.cohens_d * 0.8, rel=1e-12)
    # NLPStatTest's eq. 3 (two-sample J = 1 - 3 / (4n - 9)) would give 1 - 3/11 here.
    assert es.hedges_g != pytest.approx(es.cohens_d * (1 - 3 / 11))


def test_hedges_j_matches_the_exact_gamma_form_asymptotically():
    # Exact J(df) = Gamma(df/2) / (sqrt(df/2) Gamma((df-1)/2)); the approximation is within
    # 1e-3 from df = 9 on (Hedges 1981).
    for n in (10, 20, 50):
        df = n - 1
        exact = np.exp(gammaln(df / 2) - gammaln((df - 1) / 2)) / np.sqrt(df / 2)
        assert hedges_j(n) == pytest.approx(exact, abs=1e-3)


def test_tie_correction_uses_group_sizes():
    # |w| has ties {1.0 x 3, 2.0 x 2}; sum(t^3 - t) = (27 - 3) + (8 - 2) = 30 (eq. 4).
    w = np.array([1.0, -1.0, 1.0, 2.0, 2.0, 3.0, 4.0, -5.0])
    assert sorted(tie_groups(np.abs(w))) == [1, 1, 1, 2, 3]
    w_plus, z, n = wilcoxon_z(w)
    # ranks of |w|: 1,1,1 -> 2; 2,2 -> 4.5; 3 -> 6; 4 -> 7; 5 -> 8.  W+ = 2+2+4.5+4.5+6+7 = 26
    assert (w_plus, n) == (26.0, 8)
    var = 8 * 9 * 17 / 24 - 30 / 48
    assert z == pytest.approx((26 - 18) / np.sqrt(var), rel=1e-12)
    # NLPStatTest computes the correction from the tied *values* (1 and 2): (1 - 1) + (8 - 2) = 6
    wrong = (26 - 18) / np.sqrt(8 * 9 * 17 / 24 - 6 / 48)
    assert z != pytest.approx(wrong, rel=1e-6)


def test_wilcoxon_z_agrees_with_scipy_normal_approximation():
    # scipy.stats.wilcoxon(method="approx", correction=False) uses the same tie-corrected variance.
    gen = np.random.default_rng(1)
    w = np.round(gen.normal(0.3, 1, 80), 1)          # many ties and some zeros
    _, z, _ = wilcoxon_z(w)
    ref = stats.wilcoxon(w, method="approx", correction=False)
    assert abs(z) == pytest.approx(abs(ref.zstatistic), rel=1e-12)
    assert effect_sizes(w).wilcoxon_r == pytest.approx(z / np.sqrt(np.sum(w != 0)), rel=1e-12)


def test_hodges_lehmann_matches_r_and_brute_force():
    x, y = np.array(REF["depression"]["x"]), np.array(REF["depression"]["y"])
    # R wilcox.test(x, y, paired = TRUE, conf.int = TRUE): (pseudo)median 0.46
    assert hodges_lehmann(x - y) == pytest.approx(REF["depression"]["wilcoxon"]["two-sided"]
                                                  ["estimate"], abs=1e-12)
    gen = np.random.default_rng(0)
    for n in (1, 2, 5, 40, 301):
        w = np.round(gen.normal(size=n), 1)
        walsh = np.array([(w[i] + w[j]) / 2 for i in range(n) for j in range(i, n)])
        assert hodges_lehmann(w) == pytest.approx(np.median(walsh), abs=1e-12)
        for k in (1, walsh.size // 3 + 1, walsh.size):
            assert walsh_quantile(w, k) == pytest.approx(np.sort(walsh)[k - 1], abs=1e-12)


def test_walsh_quantile_rejects_bad_rank():
    with pytest.raises(ValueError, match="k must be in 1..3"):
        walsh_quantile(np.array([1.0, 2.0]), 4)


def test_effect_sizes_frame_and_dict():
    es = effect_sizes([1.0, 2.0, 3.0, 5.0], [0.5, 1.5, 3.5, 4.0])
    assert set(es.to_dict()) >= {"cohens_d", "hedges_g", "wilcoxon_r", "hodges_lehmann"}
    frame = es.to_frame()
    assert list(frame["effect_size"])[:4] == ["cohens_d", "hedges_g", "wilcoxon_r",
                                              "hodges_lehmann"]
    assert "cohens_d=" in repr(es)


def test_cohens_d_interval_covers_at_its_level():
    # normal differences with true d = 0.5 at n = 12: coverage within 3 Monte Carlo SE of 0.95
    from nlpower.paired.effects import cohens_d_interval

    rng = np.random.default_rng(11)
    n, sims, delta = 12, 600, 0.5
    hits = 0
    for _ in range(sims):
        w = rng.normal(delta, 1.0, size=n)
        lo, hi = cohens_d_interval(float(w.mean() / w.std(ddof=1)), n)
        hits += lo <= delta <= hi
    se = np.sqrt(0.95 * 0.05 / sims)
    assert abs(hits / sims - 0.95) < 3 * se


def test_cohens_d_interval_approaches_the_normal_one_for_large_n():
    from nlpower.paired.effects import cohens_d_interval

    d, n = 0.3, 2000
    lo, hi = cohens_d_interval(d, n)
    half = 1.959964 * np.sqrt(1 / n + d**2 / (2 * n))
    assert lo == pytest.approx(d - half, abs=2e-3) and hi == pytest.approx(d + half, abs=2e-3)
    assert np.isnan(cohens_d_interval(float("nan"), 10)[0])
