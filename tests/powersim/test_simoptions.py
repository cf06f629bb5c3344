"""SimOptions: the shared options of simulated power as one object, beside the keywords."""

from __future__ import annotations

import inspect

import pytest

import nlpower
from nlpower import CrossedDesign, presets
from nlpower.errors import InputError
from nlpower.powersim import SimOptions

HV = presets.high_variance


def test_sim_gives_the_numbers_of_the_same_keywords():
    d = CrossedDesign(4, 12, items="nested")
    a = nlpower.power(d, HV(0.2), sim=SimOptions(n_sims=30, alpha=0.1, rng=3))
    b = nlpower.power(d, HV(0.2), n_sims=30, alpha=0.1, rng=3)
    assert a.n_sims == 30 and a.alpha == 0.1
    assert a.power == b.power and (a.replicates.pvalue == b.replicates.pvalue).all()
    # a keyword equal to the field is not a conflict; fields left None keep the defaults
    c = nlpower.power(d, HV(0.2), n_sims=30, sim=SimOptions(n_sims=30, alpha=0.1, rng=3))
    assert c.power == a.power and c.alternative == "two-sided"


def test_sim_reaches_grid_mde_and_plan():
    g = nlpower.power_grid(HV(0.2), n_workers=[3], n_items=[20], progress=False,
                           sim=SimOptions(n_sims=40, rng=2))
    assert g.to_frame()["n_sims"].tolist() == [40]
    m = nlpower.mde(CrossedDesign(5, 40), HV(), sim=SimOptions(alpha=0.01))
    assert m.alpha == 0.01 and m.effect > nlpower.mde(CrossedDesign(5, 40), HV()).effect
    p = nlpower.plan(HV(), effect=0.2, max_items=400, max_workers=12, sim=SimOptions(alpha=0.01))
    q = nlpower.plan(HV(), effect=0.2, max_items=400, max_workers=12, alpha=0.01)
    assert p.alpha == 0.01 and (p.n_workers, p.n_items) == (q.n_workers, q.n_items)
    for fn in (nlpower.power, nlpower.power_grid, nlpower.mde, nlpower.plan):
        assert "sim" in inspect.signature(fn).parameters


def test_sim_refusals_name_the_option():
    d = CrossedDesign(3, 10)
    with pytest.raises(InputError, match=r"n_sims is given twice .*n_sims=50 and "
                                         r"sim=SimOptions\(n_sims=20\)"):
        nlpower.power(d, HV(0.2), n_sims=50, sim=SimOptions(n_sims=20))
    with pytest.raises(InputError, match=r"mde\(\) does not take n_jobs"):
        nlpower.mde(d, HV(), sim=SimOptions(n_jobs=2))
    with pytest.raises(InputError, match="sim must be a SimOptions"):
        nlpower.power(d, HV(0.2), sim={"n_sims": 10})
    with pytest.raises(InputError, match="n_sims must be"):      # validated by the function
        nlpower.power(d, HV(0.2), sim=SimOptions(n_sims=0))
