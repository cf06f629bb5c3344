"""Assurance from ordinal (clmm) and binary (glmer) pilots: converters, bootstrap, errors."""

from __future__ import annotations

import types
import warnings

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, fit_ratings, read_ratings
from nlpower.convert_outcomes import OrdinalPilot, binary_params
from nlpower.errors import InputError
from nlpower.glmm import glmer
from nlpower.ordinal import clmm
from nlpower.outcomes import HeadToHeadParams, LikertParams, simulate_likert
from nlpower.outcomes.headtohead import _pairs, simulate_judgements
from nlpower.pilot import assurance
from nlpower.pilot.outcome_assurance import POINT_SIMS, OutcomePilot

TRUTH = LikertParams(thresholds=(-1.5, -0.5, 0.5, 1.5), effect=0.4, sd_worker=0.5,
                     sd_worker_slope=0.3, sd_item=0.7, sd_item_slope=0.3, link="logit")


@pytest.fixture(scope="module")
def likert_pilot() -> pd.DataFrame:
    df = simulate_likert(CrossedDesign(6, 25), TRUTH, rng=11)
    return df.drop(columns="x")


@pytest.fixture(scope="module")
def ordinal_fit(likert_pilot):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_ratings(read_ratings(likert_pilot, scale=(1, 5)), family="ordinal")


@pytest.fixture(scope="module")
def judgements() -> pd.DataFrame:
    d = CrossedDesign(8, 30)
    p = HeadToHeadParams(effect=0.4, sd_worker=0.6, sd_item=0.5, position=0.3, p_draw=0.15)
    win, draw = simulate_judgements(d, p, np.random.default_rng(5))
    return _pairs(d)[3].assign(win=win.astype(float), w=(~draw).astype(float))


@pytest.fixture(scope="module")
def binary_fit(judgements):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glmer("win ~ 1 + pos + (1 | worker) + (1 | item)", judgements, weights="w")


# -- converters ----------------------------------------------------------------------


def test_ordinal_params_do_not_depend_on_the_fit_coding(likert_pilot):
    """Sum and treatment coding of the system describe one model: same centred thresholds, SDs."""
    fits = {c: clmm("rating ~ system + (1 | worker) + (1 | item)", likert_pilot,
                    contrasts={"system": c}) for c in ("sum", "treatment")}
    ps = {c: OrdinalPilot(f).to_params(f.fit if hasattr(f, "fit") else f)
          for c, f in fits.items()}
    np.testing.assert_allclose(ps["sum"].thresholds, ps["treatment"].thresholds, atol=2e-3)
    # sum coding: the two systems' latent locations average to 0, so the thresholds are the fit's
    np.testing.assert_allclose(ps["sum"].thresholds, fits["sum"].thresholds.to_numpy(), atol=1e-10)
    vc = fits["sum"].varcorr().set_index("grp")["sdcor"]
    assert ps["sum"].sd_worker == pytest.approx(vc["worker"], rel=1e-10)
    assert ps["sum"].sd_item == pytest.approx(vc["item"], rel=1e-10)
    assert ps["sum"].sd_worker_slope == 0.0 and ps["sum"].sd_item_slope == 0.0
    assert ps["sum"].effect == 0.0 and ps["sum"].link == "logit"


def test_binary_params_rescale_the_position_coding(judgements):
    """pos coded +-1 instead of +-1/2: the same HeadToHeadParams (per +-1/2), p_draw = share of draws."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        half = glmer("win ~ 1 + pos + (1 | worker) + (1 | item) + (0 + pos | item)", judgements,
                     weights="w")
        one = glmer("win ~ 1 + pos + (1 | worker) + (1 | item) + (0 + pos | item)",
                    judgements.assign(pos=2 * judgements["pos"]), weights="w")
    a, b = binary_params(half), binary_params(one)
    assert a.position == pytest.approx(float(half.fixef["pos"]), rel=1e-12)
    assert b.position == pytest.approx(a.position, rel=1e-3, abs=1e-4)
    assert b.sd_item_position == pytest.approx(a.sd_item_position, rel=1e-2, abs=1e-3)
    assert b.sd_worker == pytest.approx(a.sd_worker, rel=1e-3, abs=1e-4)
    assert a.p_draw == pytest.approx(float(np.mean(judgements["w"] == 0)))
    assert a.effect == 0.0


# -- assurance -----------------------------------------------------------------------


def test_ordinal_assurance_is_reproducible_sized_and_tracks_the_effect(ordinal_fit):
    """Same seed, same numbers; a latent effect of 2 logits is detected under every draw."""
    kw = dict(effect=2.0, n_boot=20, n_sims=4, analysis="lmm")
    a = assurance(ordinal_fit, CrossedDesign(6, 30), rng=3, **kw)
    b = assurance(ordinal_fit, CrossedDesign(6, 30), rng=3, **kw)
    assert a.assurance == b.assurance and a.power == b.power
    assert a.outcome == "likert" and a.analysis == "lmm" and a.n_sims == 4
    assert 10 <= a.n_boot <= 20 and len(a.power_draws) == a.n_boot
    assert a.assurance == pytest.approx(float(np.mean(a.power_draws)))
    assert a.point_sims == 4 * a.n_boot
    assert set(a.sd_point) == {"sd_worker", "sd_worker_slope", "sd_item", "sd_item_slope"}
    assert all(a.sd_upper[k] >= a.sd_point[k] * 0.999 for k in a.sd_point)
    assert "ordinal pilot" in a.summary() and list(a.to_frame().columns)[-1] == "power"
    assert a.assurance > 0.9


def test_binary_assurance_runs_glmer(binary_fit):
    a = assurance(binary_fit, CrossedDesign(6, 20), effect=1.5, n_boot=20, n_sims=1, rng=2)
    assert a.outcome == "preference" and a.analysis == "glmer" and a.test == "z"
    assert set(a.sd_point) == {"sd_worker", "sd_item", "sd_worker_position", "sd_item_position"}
    assert a.assurance > 0.7          # 1.5 logits (82% prefer B), 120 judgements: power near 1
    assert a.point_sims == a.n_boot
    assert "head-to-head pilot" in a.pilot


# -- bad input -----------------------------------------------------------------------


def test_ordinal_pilot_with_gaussian_outcome_is_refused(ordinal_fit):
    with pytest.raises(InputError, match=r"outcome='gaussian' cannot use this pilot.*"
                                         r"outcome='likert'"):
        assurance(ordinal_fit, CrossedDesign(6, 30), effect=0.4, outcome="gaussian")


def test_gaussian_pilot_with_likert_outcome_is_refused(likert_pilot):
    fit = fit_ratings(read_ratings(likert_pilot, scale=(1, 5)))
    with pytest.raises(InputError, match=r"family='ordinal'"):
        assurance(fit, CrossedDesign(6, 30), effect=0.1, outcome="likert")
    with pytest.raises(InputError, match=r"analysis='clmm' is not an analysis of "
                                         r"outcome='gaussian'"):
        assurance(fit, CrossedDesign(6, 30), effect=0.1, analysis="clmm")


def test_binary_pilot_errors(binary_fit, judgements):
    d = CrossedDesign(6, 20)
    with pytest.raises(InputError, match="analysis='clmm' is not an analysis of "
                                         "outcome='preference'"):
        assurance(binary_fit, d, effect=0.5, analysis="clmm")
    with pytest.raises(InputError, match="logit of the share preferring B"):
        assurance(binary_fit, d, effect=0.5, coding="half")
    with pytest.raises(InputError, match="use method='bootstrap'"):
        assurance(binary_fit, d, effect=0.5, method="asymptotic")
    with pytest.raises(InputError, match="finite non-zero number on the logit scale"):
        assurance(binary_fit, d, effect=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        extra = glmer("win ~ 1 + pos + worker_x + (1 | worker)",
                      judgements.assign(worker_x=np.arange(len(judgements)) % 3), weights="w")
    with pytest.raises(InputError, match="at most a position column"):
        OutcomePilot(extra)


def test_ordinal_pilot_with_more_systems_needs_a_contrast(likert_pilot):
    df = likert_pilot.copy()
    df["system"] = np.where((df["item"].astype(str).str[-1] == "1") & (df["system"] == "B"), "C",
                            df["system"])
    fit = clmm("rating ~ system + (1 | worker) + (1 | item)", df)
    with pytest.raises(InputError, match="name the comparison the study plans"):
        OrdinalPilot(fit)
    p = OrdinalPilot(fit, contrast=("B", "A"))
    assert p.systems == ("A", "B")


# -- plans ---------------------------------------------------------------------------


def test_plan_from_an_ordinal_pilot_reaches_the_target_by_simulation(ordinal_fit, capsys):
    from nlpower.pilot import plan_with_assurance

    res = plan_with_assurance(ordinal_fit, effect=1.0, analysis="lmm", n_boot=20, n_sims=2,
                              max_workers=12, cost_per_worker=10, rng=5, progress=True)
    # every stage shows its total, so the bar can show the time left: worker counts searched,
    # replicates of the designs checked (POINT_SIMS each) and of the assurance
    err = capsys.readouterr().err
    lines = err.replace("\r", "\n").split("\n")
    assert any(" 0/11 [" in x for x in lines if x.startswith("searching point-plan"))  # 2..12
    assert any(f" 0/{POINT_SIMS} [" in x for x in lines
               if x.startswith("checking point-plan designs by simulation"))
    n_assured = 20 * 2 + POINT_SIMS                     # draws x n_sims, and the upper bounds' power
    assert any(f" 0/{n_assured} [" in x for x in lines
               if x.startswith(f"assurance of {res.point.n_workers} workers"))
    pt = res.point
    # the plan's power is the one its search simulated (POINT_SIMS replicates), reported as it
    # is -- never a second, noisier estimate that could fall below the target it was chosen by
    assert res.point_assurance.point_sims == POINT_SIMS
    assert pt.power >= 0.8
    assert res.point_assurance.power == pt.power
    assert res.safeguard is None or res.safeguard.cost >= pt.cost * 0.9
    assert "latent scale" in res.summary() and "Gaussian stand-in" in res.note


def test_gaussian_pilot_plans_take_no_n_sims(likert_pilot):
    from nlpower.pilot import plan_with_assurance

    fit = fit_ratings(read_ratings(likert_pilot, scale=(1, 5)))
    with pytest.raises(InputError, match="n_sims is for ordinal and binary pilots"):
        plan_with_assurance(fit, effect=0.1, n_sims=10)


def test_ordinal_pilot_errors(likert_pilot):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cll = clmm("rating ~ system + (1 | worker)", likert_pilot, link="cloglog")
        plain = clmm("rating ~ system + (1 | worker)", likert_pilot)
        judge = clmm("rating ~ system + (1 | judge)", likert_pilot.rename(columns={"worker":
                                                                                 "judge"}))
    with pytest.raises(InputError, match="'cloglog' link.*link='logit' or 'probit'"):
        OrdinalPilot(cll)
    with pytest.raises(InputError, match=r"grouped by \['judge'\]"):
        OrdinalPilot(judge)
    with pytest.raises(InputError, match="contrast must name one system"):
        OrdinalPilot(plain, contrast="Z")


def test_binary_pilot_shape_errors(binary_fit, judgements):
    with pytest.raises(InputError, match="a head-to-head pilot compares its two systems"):
        OutcomePilot(binary_fit, contrast="B")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lopsided = glmer("win ~ 1 + pos + (1 | worker)",
                         judgements.assign(pos=np.where(judgements["pos"] > 0, 1.0, 0.0)),
                         weights="w")
        trials = glmer("win ~ 1 + (1 | worker)", judgements.assign(w=judgements["w"] * 2 + 1),
                       weights="w")
        grouped = glmer("win ~ 1 + (1 | judge)", judgements.rename(columns={"worker": "judge"}),
                        weights="w")
    with pytest.raises(InputError, match="must take two values -c and \\+c"):
        binary_params(lopsided)
    with pytest.raises(InputError, match="one judgement per row"):
        binary_params(trials)
    with pytest.raises(InputError, match="grouped by 'judge'"):
        binary_params(grouped)


def test_a_cheaper_safeguard_design_that_reaches_the_target_becomes_the_point_plan(
        ordinal_fit, monkeypatch):
    """The stand-in ranks designs roughly; the plan at the estimates is never dearer than a
    design that reaches the target there (as simulated)."""
    from dataclasses import replace as dc_replace

    from nlpower.pilot import outcome_plan as op

    real_choose = op._choose
    designs = iter([CrossedDesign(2, 95), CrossedDesign(11, 15)])

    def choose(params, setup, **kw):            # a dear point design, a cheap safeguard one
        plan, pw = real_choose(params, setup, **{**kw, "max_items": 20})
        d = next(designs)
        return dc_replace(plan, design=d, n_workers=d.n_workers, n_items=d.n_items,
                          cost=float(d.n_ratings)), 0.81

    assessed = []

    def assess(fit, design, **kw):
        assessed.append(design)
        return types.SimpleNamespace(power=0.83 if design.n_workers == 11 else 0.81,
                                     point_sims=200, design=repr(design))

    monkeypatch.setattr(op, "_choose", choose)
    monkeypatch.setattr(op, "outcome_assurance", assess)
    monkeypatch.setattr(op, "PilotPlanResult", lambda **kw: types.SimpleNamespace(**kw))
    res = op.outcome_plan(
        ordinal_fit, effect=1.0, coding="sum", contrast=None, outcome=None, analysis="lmm",
        test=None, target_power=0.8, cost_per_rating=1.0, cost_per_worker=0.0,
        confidence_level=0.8, method="bootstrap", n_boot=20, n_sims=1, alpha=0.05,
        alternative="two-sided", min_workers=2, max_workers=12, max_items=200,
        workers_per_item=None, seq=np.random.SeedSequence(1), seed={})
    assert res.point.design == CrossedDesign(11, 15) and res.point.power == 0.83
    assert assessed == [CrossedDesign(11, 15)]     # the replaced point design is not assessed
    assert res.point_assurance is res.safeguard_assurance
    assert "also the point plan" in res.note
