"""The convergence check on the exact ridge of ``(f || g)`` terms (nlpower.lmm.native.ridge).

On the ridge the Hessian in the user's ``theta`` is singular by construction,
so lme4's check there always found "unable to evaluate scaled gradient" and a
zero or (finite-difference noise) negative eigenvalue.  The check now runs in
the identified parameters (the reduced model at the mapped point): checked
here that the bundled demo and a 6-worker x 40-item x 2-system file fit
without a ConvergenceWarning and record the ridge once as a note, that the
check ignores moves along the ridge but still fails off the optimum (and
warns), and that a model without a ridge is checked as before.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import ConvergenceWarning
from nlpower.lmm import lmer
from nlpower.lmm.checkconv import CheckConvControl, apply_policy, check_conv
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import identified as idf
from nlpower.lmm.native import ridge as rd
from nlpower.ratings import fit_ratings, read_ratings

PAPER = "rating ~ system + (system || worker) + (system || item)"
DEMO = Path(__file__).resolve().parents[3] / "fixtures" / "pilot_ratings.csv"
CTL = CheckConvControl()


def _six_by_forty(seed: int = 5) -> pd.DataFrame:
    """6 workers x 40 items x 2 systems, fully crossed, per-system worker and item effects."""
    rng = np.random.default_rng(seed)
    w, i, s = (a.ravel() for a in np.meshgrid(np.arange(6), np.arange(40), np.arange(2),
                                               indexing="ij"))
    y = (3.0 + 0.3 * s + rng.normal(0, 0.5, 6)[w] + rng.normal(0, 0.7, 40)[i]
         + rng.normal(0, 0.6, (6, 2))[w, s] + rng.normal(0, 0.8, (40, 2))[i, s]
         + rng.normal(0, 1.0, w.size))
    return pd.DataFrame({"rating": y, "system": np.array(["A", "B"])[s],
                         "worker": [f"w{v}" for v in w], "item": [f"i{v}" for v in i]})


def _quiet_fit(formula: str, data: pd.DataFrame, REML: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return lmer(formula, data, REML=REML, engine="native")


@pytest.mark.parametrize("REML", [False, True])
@pytest.mark.parametrize("data", ["demo", "six_by_forty"])
def test_paper_model_fits_without_convergence_warning(data, REML):
    df = pd.read_csv(DEMO) if data == "demo" else _six_by_forty()
    fit = _quiet_fit(PAPER, df, REML)
    assert not fit.singular and fit.converged
    cc = fit.optinfo["checkconv"]
    assert cc["code"] == 0 and cc["messages"] == [] and cc["ok"]
    # in the identified parameters the Hessian is positive definite: forward differences
    # decide, one gradient call per reduced parameter (2 x 3 of the 8)
    assert cc["n_evals"] <= 6 + 1
    assert len(fit.optsum.notes) == 2 and all("not identified" in n for n in fit.optsum.notes)
    assert all(n in fit.summary() for n in fit.optsum.notes)
    assert len(cc["gradient"]) == fit.theta.size and max(map(abs, cc["gradient"])) < 2e-3


def test_demo_through_fit_ratings_says_the_ridge_once():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        rf = fit_ratings(read_ratings(DEMO))
    text = rf.summary()
    assert "s0^2 J + Sigma is identified" in text         # the ratings note
    assert not any(n in text for n in rf.fit.optsum.notes)


def _at_optimum(df: pd.DataFrame):
    model = NativeModel(model_frame(PAPER, df, contrasts={"system": "sum"}))
    res, _ = model._optimize(False, None, None)
    return model, res


def test_the_check_ignores_the_ridge_but_not_the_identified_directions():
    model, res = _at_optimum(pd.read_csv(DEMO))
    ridges = rd.exact_ridges(model)
    red = rd._reduced_model(model)
    ok = idf.check_on_ridge(model, res, False, CTL)
    assert ok is not None and ok.ok and ok.code == 0 and ok.messages == ()
    # another split of the same covariances (the midpoint): the same deviance, the same verdict
    th_r = rd.to_reduced_theta(res.theta, red.layout, model.layout, ridges)
    mid = rd.to_full_theta(th_r, red.layout, model.layout, ridges)
    assert np.max(np.abs(mid - res.theta)) > 1e-3
    f_mid = model.ev(mid, False)
    assert f_mid == pytest.approx(res.fval, abs=1e-8)
    moved = idf.check_on_ridge(model, replace(res, theta=mid, fval=f_mid, derivatives=None,
                                             gradient=None), False, CTL)
    assert moved is not None and moved.code == 0 and moved.ok
    # off the optimum in an identified direction (a per-system SD 5 % larger): a finding
    off_theta = res.theta.copy()
    j = model.layout.names.index("worker.systemA")
    off_theta[j] *= 1.05
    off = idf.check_on_ridge(model, replace(res, theta=off_theta, fval=model.ev(off_theta, False),
                                           derivatives=None, gradient=None), False, CTL)
    assert off is not None and not off.ok and off.code == -1
    assert any(m.startswith("Model failed to converge with max|grad|") for m in off.messages)
    # ... which the policy still turns into a ConvergenceWarning (or an error)
    with pytest.warns(ConvergenceWarning, match="max\\|grad\\|"):
        apply_policy(off, CTL, where="lmer (native)")


def test_singular_fit_and_ignored_checks():
    model, res = _at_optimum(pd.read_csv(DEMO))
    # every check ignored: no derivatives, the note is still recorded
    none = idf.check_on_ridge(model, res, False, CheckConvControl("ignore", "ignore", "ignore"))
    assert none is not None and none.n_evals == 0 and none.messages == () and len(none.notes) == 2
    # a singular point (a zero intercept SD): the ordinary check (lme4 checks no derivatives)
    th = res.theta.copy()
    th[model.layout.names.index("worker.(Intercept)")] = 0.0
    assert idf.check_on_ridge(model, replace(res, theta=th), False, CTL) is None


def test_a_model_without_a_ridge_is_checked_as_before():
    df = _six_by_forty()
    for formula in ("rating ~ system + (system | worker) + (1 | item)",
                    "rating ~ system + (1 | worker) + (1 | item)"):
        model = NativeModel(model_frame(formula, df, contrasts={"system": "sum"}))
        assert rd.exact_ridges(model) == ()
        res, _ = model._optimize(False, None, None)
        assert idf.check_on_ridge(model, res, False, CTL) is None
        fit = model.fit(REML=False)
        cc = fit.optinfo["checkconv"]
        grad = (lambda th, m=model: m.value_and_gradient(th, False)[1]) if model._analytic else None
        ref = check_conv(lambda th, m=model: m.ev(th, False), fit.theta, fit.deviance,
                         model.layout.lower, CTL, grad=grad, forward=True)
        assert cc["code"] == ref.code and cc["messages"] == list(ref.messages)
        assert cc["notes"] == [] and fit.optsum.notes == ()
