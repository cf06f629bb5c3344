"""Elicitation: a target agreement -> LMMParams, checked on simulated ratings."""

from __future__ import annotations

import numpy as np
import pytest

import nlpower
from nlpower.agreement import (
    AgreementSplit,
    elicit,
    elicitation,
    implied_agreement,
    krippendorff_alpha,
)
from nlpower.errors import InputError


@pytest.mark.parametrize("measure,k", [("alpha", None), ("ICC(A,1)", None), ("ICC(C,1)", None),
                                       ("ICC(A,k)", 3), ("ICC(C,k)", 5)])
@pytest.mark.parametrize("target", [0.2, 0.6, 0.9])
def test_round_trip(measure: str, k: float | None, target: float) -> None:
    p = elicit(target, measure=measure, k=k, total_sd=0.3)  # type: ignore[arg-type]
    assert implied_agreement(p, measure, k=k) == pytest.approx(target)  # type: ignore[arg-type]
    assert np.sqrt(sum(v**2 for v in p.sds.values())) == pytest.approx(0.3)


def test_default_split_reproduces_the_high_variance_preset() -> None:
    hv = nlpower.presets.high_variance()
    total = np.sqrt(sum(v**2 for v in hv.sds.values()))
    p = elicit(implied_agreement(hv), total_sd=total)
    for name, value in hv.sds.items():
        assert p.sds[name] == pytest.approx(value, rel=1e-9)


def test_split_is_the_users() -> None:
    sp = AgreementSplit(item_slope_share=0.0, worker_share=0.5, worker_slope_share=0.0)
    p = elicit(0.5, total_sd=1.0, split=sp)
    assert p.sd_item_slope == 0 and p.sd_worker_slope == 0
    assert p.sd_item**2 == pytest.approx(0.5)
    assert p.sd_worker**2 == pytest.approx(0.25) and p.sigma**2 == pytest.approx(0.25)


def test_simulated_ratings_have_the_target_alpha() -> None:
    """Krippendorff's alpha of data drawn from elicited parameters is the target (3 bootstrap SE)."""
    p = elicit(0.6, total_sd=0.3)
    data = nlpower.simulate(nlpower.CrossedDesign(25, 150), p, rng=2)
    res = krippendorff_alpha(data, n_boot=200, rng=3)
    assert res.ci is not None
    se = (res.ci.high - res.ci.low) / (2 * 1.96)
    assert abs(res.alpha - 0.6) < 3 * se + 0.01  # + 0.01: alpha's finite-sample bias, O(1/n)


def test_errors() -> None:
    with pytest.raises(InputError, match="agreement"):
        elicit(1.0)
    with pytest.raises(InputError, match="pass k"):
        elicit(0.5, measure="ICC(A,k)")
    with pytest.raises(InputError, match="measure"):
        elicit(0.5, measure="kappa")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="worker_share"):
        AgreementSplit(worker_share=1.0)
    with pytest.raises(InputError, match="split"):
        elicit(0.5, split=0.3)  # type: ignore[arg-type]


def test_elicitation_keeps_and_states_its_assumptions() -> None:
    split = AgreementSplit(0.3, 0.4, 0.6)
    e = elicitation(0.5, measure="ICC(C,k)", k=4, total_sd=0.25, split=split, effect=0.1)
    assert e.params == elicit(0.5, measure="ICC(C,k)", k=4, total_sd=0.25, split=split,
                              effect=0.1)
    assert e.total_sd == pytest.approx(0.25) and not e.default_split and not e.default_total_sd
    text = e.summary()
    assert "ICC(C,k) = 0.5, k = 4" in text and "ICC(C,k) 0.500" in text
    assert "item x system 30%" in text and "workers 40%" in text and "worker x system 60%" in text
    row = e.to_frame().iloc[0]
    assert row["worker_share"] == 0.4 and row["sigma"] == pytest.approx(e.params.sigma)
    default = elicitation(0.6)
    assert default.default_split and "high-variance" in default.summary()
    assert default.split == AgreementSplit.from_params(nlpower.presets.high_variance())


def test_elicited_params_drive_power_plan_and_mde() -> None:
    params = elicitation(0.6, effect=0.1).params
    design = nlpower.CrossedDesign(4, 80)
    a = nlpower.analytic_power(design, params).power
    m = nlpower.mde(design, params)
    assert 0 < a < 1
    assert nlpower.analytic_power(design, params.with_effect(m.effect)).power == pytest.approx(0.8)
    p = nlpower.plan(params, effect=0.1, max_workers=20)
    assert p.power >= 0.8
    fewer = nlpower.CrossedDesign(p.n_workers, p.n_items - 1)
    assert nlpower.analytic_power(fewer, params).power < 0.8


def test_designs_needed_reach_the_target_and_no_fewer_items_do() -> None:
    from nlpower.agreement import designs_needed, items_needed

    tab = designs_needed((0.3, 0.7), (0.1, 0.2))
    for row in tab.itertuples():
        params = elicit(row.agreement, effect=row.effect)
        design = nlpower.CrossedDesign(int(row.n_workers), int(row.n_items))
        assert nlpower.analytic_power(design, params).power >= 0.8
        fewer = nlpower.CrossedDesign(int(row.n_workers), int(row.n_items) - 1)
        assert nlpower.analytic_power(fewer, params).power < 0.8
    fixed = items_needed((0.3, 0.7), (0.05, 0.2), n_workers=6)
    long = designs_needed((0.3, 0.7), (0.05, 0.2), n_workers=6)
    assert (long.n_workers.dropna() == 6).all()
    assert np.allclose(fixed.to_numpy().ravel(), long.n_items.to_numpy(), equal_nan=True)
    assert np.isnan(fixed.loc[0.3, 0.05])  # 6 workers: the worker x system floor
