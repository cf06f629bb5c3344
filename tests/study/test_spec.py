"""A study as one value: both spellings of power, power_grid, mde and plan are one path.

Each front door takes a :class:`nlpower.Study` or its keywords; the keyword
spelling builds the same Study and runs the same code, so the same seed gives
the same numbers bit for bit.  Conflicts between a Study and a keyword are
refused, naming the keyword.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

import nlpower
from nlpower import (
    Analysis,
    CrossedDesign,
    InputError,
    PlanOptions,
    SimOptions,
    Study,
    Test,
    Truth,
    mde,
    plan,
    power,
    power_grid,
    presets,
)
from nlpower.outcomes import LikertParams
from nlpower.powersim import run as run_module

HV = presets.high_variance()
D = CrossedDesign(5, 30)


def _sleep_fit():
    d = pd.read_csv("tests/reference/data/sleepstudy.csv")
    m = nlpower.lmer("Reaction ~ Days + (1 | Subject)", d, REML=False)
    return m.with_params(fixef={"Days": 2.0})


def test_power_same_numbers_both_spellings():
    study = Study.ratings(D, HV, effect=0.2, test="satterthwaite")
    a = power(study, sim=SimOptions(n_sims=300, rng=7))
    b = power(D, HV, effect=0.2, test="satterthwaite", n_sims=300, rng=7)
    assert a.method == b.method == "balanced"
    assert (a.power, a.n_rejected, a.type_m, a.mean_estimate) == \
        (b.power, b.n_rejected, b.type_m, b.mean_estimate)
    assert a.seed == b.seed


def test_keyword_spelling_builds_the_same_study(monkeypatch):
    seen = []
    monkeypatch.setattr(run_module, "run_power", lambda study, **kw: seen.append(study))
    power(D, HV, effect=0.2, test="z", engine="native", n_sims=10, rng=1)
    power(Study.ratings(D, HV, effect=0.2, test="z"), n_sims=10, rng=1)
    assert seen[0] == seen[1] == Study(D, Truth(HV, effect=0.2), Analysis(), Test("z"))


def test_likert_study_same_numbers():
    lp = LikertParams.from_preset(presets.high_variance(0.3), levels=5)
    a = power(Study.likert(CrossedDesign(4, 20), lp, analysis="lmm"),
              sim=SimOptions(n_sims=40, rng=3))
    b = power(CrossedDesign(4, 20), lp, outcome="likert", analysis="lmm", n_sims=40, rng=3)
    assert (a.power, a.n_rejected, a.mean_estimate) == (b.power, b.n_rejected, b.mean_estimate)


def test_model_study_same_numbers():
    fit = _sleep_fit()
    a = power(Study.model(fit, term="Days", test="z"), sim=SimOptions(n_sims=20, rng=2))
    b = power(fit, term="Days", test="z", n_sims=20, rng=2)
    assert (a.power, a.mean_estimate, a.n_failed) == (b.power, b.mean_estimate, b.n_failed)


@pytest.mark.filterwarnings("ignore::nlpower.errors.SizeWarning")
def test_power_grid_same_numbers_both_spellings():
    study = Study.ratings(None, {"low": presets.low_variance(), "high": HV}, test="z")
    a = power_grid(study, n_workers=[3, 6], n_items=40, effect=0.1,
                   sim=SimOptions(n_sims=60, rng=11, progress=False))
    b = power_grid({"low": presets.low_variance(), "high": HV}, n_workers=[3, 6], n_items=40,
                   effect=0.1, test="z", n_sims=60, rng=11, progress=False)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())


def test_mde_same_numbers_both_spellings():
    study = Study.ratings(D, HV, test="z")
    a = mde(study, method="simulation", sim=SimOptions(n_sims=50, rng=4))
    b = mde(D, HV, test="z", method="simulation", n_sims=50, rng=4)
    assert (a.effect, a.se, a.df) == (b.effect, b.se, b.df)
    assert a.simulated.power == b.simulated.power


def test_plan_same_numbers_both_spellings():
    study = Study.ratings(None, HV, effect=0.2)
    a = plan(study, planning=PlanOptions(max_workers=8, max_items=400),
             sim=SimOptions(n_sims=40, rng=5))
    b = plan(HV, effect=0.2, max_workers=8, max_items=400, n_sims=40, rng=5)
    assert (a.n_workers, a.n_items, a.power, a.cost) == (b.n_workers, b.n_items, b.power, b.cost)
    assert a.simulated.power == b.simulated.power
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())


def test_plan_takes_the_layout_of_the_study_design():
    a = plan(Study.ratings(CrossedDesign(4, 10, workers_per_item=2), HV, effect=0.3),
             planning=PlanOptions(max_workers=6, max_items=300))
    b = plan(HV, effect=0.3, workers_per_item=2, max_workers=6, max_items=300)
    assert (a.n_workers, a.n_items, a.power) == (b.n_workers, b.n_items, b.power)


# ---- refusals: each names what to change ------------------------------------------------

@pytest.mark.parametrize(("call", "match"), [
    (lambda s: power(s, engine="lme4"), r"engine='lme4' is given to power\(\) beside a Study "
                                        r"that holds analysis.engine='native'"),
    (lambda s: power(s, effect=0.3), r"effect=0.3 .* truth.effect=0.2"),
    (lambda s: power(s, HV), r"power\(study, ...\) takes the parameters from the Study"),
    (lambda s: mde(s, test="lrt"), r"test='lrt' is given to mde\(\) .* test.rule='z'"),
    (lambda s: plan(s, coding="half"), r"coding='half' is given to plan\(\)"),
    (lambda s: power_grid(s, n_workers=3, n_items=20, effect=0.5),
     r"effect=0.5 is given to power_grid\(\) beside a Study that holds truth.effect=0.2"),
    (lambda s: power_grid(s, n_workers=3, n_items=20, design=CrossedDesign(3, 9)),
     r"design=.* beside a Study whose design"),
])
def test_conflicting_keyword_is_refused(call, match):
    with pytest.raises(InputError, match=match):
        call(Study.ratings(D, HV, effect=0.2, test="z"))


def test_keyword_equal_to_the_study_is_accepted():
    s = Study.ratings(D, HV, effect=0.2, test="z")
    assert power(s, test="z", effect=0.2, n_sims=20, rng=1).power == \
        power(s, n_sims=20, rng=1).power


@pytest.mark.parametrize(("build", "match"), [
    (lambda: Study(D, HV), r"Study truth must be a Truth\(params, ...\)"),
    (lambda: Study(D, Truth(HV), "lmm"), r"Study analysis must be a Analysis"),
    (lambda: Study(D, Truth(HV), Analysis(), "z"), r"Study test must be a Test"),
    (lambda: Study(D, Truth(HV), Analysis(), Test(term="x")), r"term= and compare= test a term"),
    (lambda: Study.model(HV, term="x"), r"Study.model needs a fitted model"),
    (lambda: Study.ratings(D, HV, test=3), r"test must be a test's name"),
    (lambda: Study(D, _sleep_fit(), Analysis(), Test(term="Days")),
     r"a fitted model's study uses the model's own rows"),
])
def test_bad_study_is_refused(build, match):
    with pytest.raises(InputError, match=match):
        build()


def test_parts_a_function_does_not_use_are_refused():
    with pytest.raises(InputError, match=r"power\(\) does not use truth.sd"):
        power(Study.ratings(D, HV, effect=0.2, sd={"item_slope": 0.1}), n_sims=10)
    with pytest.raises(InputError, match=r"mde\(\) does not use analysis.method"):
        mde(Study(D, Truth(HV), Analysis(method="simulate")))
    model = Study.model(_sleep_fit(), term="Days")
    with pytest.raises(InputError, match=r"plan\(\) plans a rating study.*plan_model"):
        plan(model)
    with pytest.raises(InputError, match=r"mde\(\) plans a rating study"):
        mde(model)
    with pytest.raises(InputError, match=r"power_grid\(\) runs rating studies.*power_curve"):
        power_grid(model, n_workers=3, n_items=10)


def test_a_fitted_model_refuses_rating_study_options():
    fit = _sleep_fit()
    with pytest.raises(InputError, match=r"effect=0.2 does not apply"):
        power(fit, term="Days", effect=0.2)
    with pytest.raises(InputError, match=r"power\(\) does not use analysis.method"):
        power(fit, term="Days", method="analytic")
    with pytest.raises(InputError, match=r"power\(\) does not use analysis.method"):
        power(Study(None, fit, Analysis(method="balanced"), Test(term="Days")))
    with pytest.raises(InputError, match=r"levels=5 is given to power\(\) beside a Study that "
                                         r"holds truth.levels=None"):
        power(Study.model(fit, term="Days"), levels=5)


def test_plan_refusals():
    with pytest.raises(InputError, match=r"plan\(\) needs the effect to plan for"):
        plan(HV)
    with pytest.raises(InputError, match=r"max_workers is given twice to plan\(\): "
                                         r"max_workers=9 and planning=PlanOptions\(max_workers=8"):
        plan(HV, effect=0.2, max_workers=9, planning=PlanOptions(max_workers=8))
    with pytest.raises(InputError, match=r"planning must be a PlanOptions"):
        plan(HV, effect=0.2, planning={"max_workers": 8})
    with pytest.raises(InputError, match=r"plan\(\) searches paired designs of two systems"):
        plan(Study.ratings(CrossedDesign(4, 10, items="nested"), HV, effect=0.2))
    with pytest.raises(InputError, match=r"workers_per_item is given twice"):
        plan(Study.ratings(CrossedDesign(4, 10, workers_per_item=2), HV, effect=0.2),
             planning=PlanOptions(workers_per_item=3))


def test_study_is_a_frozen_value():
    s = Study.ratings(D, HV, effect=0.2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.design = None  # type: ignore[misc]
    assert dataclasses.replace(s, analysis=Analysis(engine="lme4")).analysis.engine == "lme4"
    assert s.value("engine") == "native" and s.value("effect") == 0.2


def test_pilot_fit_with_effect_in_its_coding_same_numbers():
    from ratings_helpers import fit_pilot
    pilot = fit_pilot()
    study = Study.ratings(CrossedDesign(6, 40), pilot, effect=0.1, coding="half")
    a = power(study, sim=SimOptions(n_sims=200, rng=8))
    b = power(CrossedDesign(6, 40), pilot, effect=0.1, coding="half", n_sims=200, rng=8)
    assert (a.power, a.n_rejected, a.mean_estimate) == (b.power, b.n_rejected, b.mean_estimate)
    big = dataclasses.replace(study, truth=dataclasses.replace(study.truth, effect=0.4))
    p = plan(big, planning=PlanOptions(max_workers=20, max_items=2000))
    q = plan(pilot, effect=0.4, coding="half", max_workers=20, max_items=2000)
    assert (p.n_workers, p.n_items, p.power, p.notes) == (q.n_workers, q.n_items, q.power, q.notes)


# ---- power_curve and plan_model: a fitted model's Study or its keywords -------------------

def test_power_curve_same_numbers_both_spellings():
    fit = _sleep_fit()
    a = nlpower.power_curve(Study.model(fit, term="Days", test="z"), along="Subject",
                            breaks=[6, 12], sim=SimOptions(n_sims=15, rng=3))
    b = nlpower.power_curve(fit, along="Subject", breaks=[6, 12], term="Days", test="z",
                            n_sims=15, rng=3)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())


def test_plan_model_same_numbers_both_spellings():
    from nlpower.study import plan_model
    fit = _sleep_fit()
    a = plan_model(Study.model(fit, term="Days", test="z"), along="Subject", n_max=12,
                   sim=SimOptions(n_sims=15, rng=4))
    b = plan_model(fit, along="Subject", term="Days", test="z", n_max=12, n_sims=15, rng=4)
    assert (a.n, a.reached) == (b.n, b.reached)
    pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())


def test_fitted_model_front_doors_refuse_conflicts():
    from nlpower.study import plan_model
    study = Study.model(_sleep_fit(), term="Days", test="z")
    with pytest.raises(InputError, match=r"term='x' is given to power_curve\(\) beside a Study "
                                         r"that holds test.term='Days'"):
        nlpower.power_curve(study, along="Subject", term="x")
    with pytest.raises(InputError, match=r"engine='lme4' is given to plan_model\(\) beside a "
                                         r"Study that holds analysis.engine='native'"):
        plan_model(study, along="Subject", engine="lme4")
    with pytest.raises(InputError, match=r"plan_model\(\) does not use test.pairwise"):
        plan_model(dataclasses.replace(study, test=Test(pairwise="Days")), along="Subject")
    with pytest.raises(InputError, match=r"power_curve\(\) studies a fitted model"):
        nlpower.power_curve(Study.ratings(D, HV, effect=0.2), along="worker")
    with pytest.raises(InputError, match=r"power_curve\(\) needs a fitted model"):
        nlpower.power_curve(D, along="worker")


def test_study_package_exports_the_study_values():
    import nlpower.study as study_pkg
    assert study_pkg.Study is Study and study_pkg.Truth is Truth
    assert {"Analysis", "PlanOptions", "Study", "Test", "Truth"} <= set(study_pkg.__all__)
