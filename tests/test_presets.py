"""Presets: Card et al. (2020) Tables 12-16."""

from __future__ import annotations

import pytest

from nlpower import presets
from nlpower.errors import InputError
from nlpower.params import LMMParams, MultiSystemParams


def test_table16_scenarios():
    lo = presets.low_variance()
    hi = presets.high_variance(0.1)
    assert isinstance(lo, LMMParams) and lo.coding == "sum" and lo.beta0 == 0.5 and lo.effect == 0.0
    assert (lo.sd_worker, lo.sd_worker_slope, lo.sd_item, lo.sd_item_slope, lo.sigma) == (
        0.01, 0.04, 0.01, 0.13, 0.16)
    assert (hi.sd_worker, hi.sd_worker_slope, hi.sd_item, hi.sd_item_slope, hi.sigma) == (
        0.01, 0.11, 0.04, 0.14, 0.26)
    assert hi.effect == 0.1 and hi.mean_difference == pytest.approx(0.2)
    assert presets.SCENARIOS["high_variance"](0.05).effect == 0.05


# name: (n_workers, n_items, beta0, effects, sigma, worker SDs, item SDs) -- SPEC 1.2
TABLES = {
    "hashimoto-lm": (124, 50, 0.55, (-0.03,), 0.25, (0, 0.11, 0.11), (0.04, 0.14, 0.10)),
    "hashimoto-summarization": (96, 99, 0.58, (0.06,), 0.26, (0, 0.13, 0.11), (0.07, 0, 0.18)),
    "hashimoto-reddit": (123, 99, 0.55, (0.05, 0.03, 0.01), 0.23, (0.11, 0.04, 0.08, 0.06, 0.17),
                         (0, 0.13, 0.11, 0.14, 0.14)),
    "wmt19": (176, 1997, 0.86, (0.04,), 0.12, (0.07, 0.04, 0.13), (0.05, 0.03, 0.15)),
    "dathathri-pplm": (15, 1358, 0.62, (0.04, -0.05, -0.03), 0.16, (0, 0.04, 0.05, 0.05, 0.05),
                       (0, 0.16, 0.19, 0.16, 0.16)),
    "holtzman": (140, 1399, 0.59, (0.02, 0.04, 0.02, 0.01, 0, -0.04), 0.16,
                 (0.09, 0.05, 0.03, 0.04, 0.04, 0.02, 0.04), (0, 0.13, 0.1, 0.12, 0.11, 0.13, 0.13)),
}


@pytest.mark.parametrize("name", list(TABLES))
def test_dataset_values(name):
    nw, ni, b0, eff, sigma, wsd, isd = TABLES[name]
    p = presets.dataset(name)
    assert p.name == name and (p.n_workers, p.n_items) == (nw, ni)
    m = p.params
    assert isinstance(m, MultiSystemParams)
    assert m.beta0 == b0 and m.effects == eff and m.sigma == sigma
    assert m.n_systems == len(eff) + 1 == p.n_systems
    assert m.sd_worker == wsd[0] and m.sd_item == isd[0]
    # reported per-system SDs come first and unchanged
    assert m.sd_worker_systems[: len(wsd) - 1] == wsd[1:]
    assert m.sd_item_systems[: len(isd) - 1] == isd[1:]
    d = p.design(workers_per_item=3)
    assert (d.n_workers, d.n_items, d.n_systems) == (nw, ni, m.n_systems)
    assert d.workers_per_item == 3


def test_pplm_has_four_systems():
    assert presets.dataset("dathathri-pplm").n_systems == 4
    assert presets.dataset("hashimoto-reddit").n_systems == 4


def test_holtzman_missing_sd_is_imputed_and_flagged():
    p = presets.dataset("holtzman")
    assert p.n_systems == 7
    assert p.imputed == ("sd_worker_systems[6]", "sd_item_systems[6]")
    assert p.params.sd_worker_systems[6] == pytest.approx(0.04)  # median of 0.05 .03 .04 .04 .02 .04
    assert p.params.sd_item_systems[6] == pytest.approx(0.125)
    assert "imputed" in p.notes and "note:" in p.summary()
    df = p.to_frame()
    assert df.imputed.sum() == 2 and (df.dataset == "holtzman").all()
    assert all(not q.imputed for n, q in presets.DATASETS.items() if n != "holtzman")


def test_two_system_dataset_to_lmm_params():
    p = presets.dataset("hashimoto-lm")
    q = p.to_lmm_params()  # drops the item intercept-slope covariance (0.14 vs 0.10)
    assert q.coding == "sum" and q.effect == -0.03
    assert q.sd_worker_slope ** 2 == pytest.approx((0.11**2 * 2) / 4)
    assert q.sd_worker ** 2 == pytest.approx(0 + (0.11**2 * 2) / 4)
    with pytest.raises(InputError, match="per-system item SDs differ"):
        p.to_lmm_params(exact=True)


def test_dataset_lookup_is_forgiving_about_case_and_separators():
    assert presets.dataset("WMT19") is presets.DATASETS["wmt19"]
    assert presets.dataset("hashimoto_lm").name == "hashimoto-lm"
    assert presets.dataset(" Dathathri PPLM ").name == "dathathri-pplm"


def test_repr_and_summary():
    p = presets.dataset("wmt19")
    assert repr(p) == "DatasetPreset('wmt19', n_workers=176, n_items=1997, n_systems=2)"
    assert "WMT19" in p.summary() and "176 workers" in p.summary()


def test_unknown_dataset_lists_names_and_suggests():
    with pytest.raises(InputError, match=r"unknown dataset 'holzman'; valid names: 'hashimoto-lm',.*'holtzman'\. Did you mean 'holtzman'\?"):
        presets.dataset("holzman")
    with pytest.raises(InputError, match=r"unknown dataset 'zzz'; valid names: .*'holtzman'\.$"):
        presets.dataset("zzz")
    with pytest.raises(InputError, match=r"name must be a string.*got 3"):
        presets.dataset(3)  # type: ignore[arg-type]
