"""lme4's post-fit convergence checks (nlpower.lmm.checkconv).

Reference semantics: ``lme4:::checkConv``, ``lme4:::checkHess`` and
``lme4:::deriv12`` of lme4 1.1-31 (printed from R; the messages are lme4's).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower.errors import ConvergenceWarning, InputError, SingularFitWarning
from nlpower.lmm import lmer
from nlpower.lmm.checkconv import (
    CheckConvControl,
    ConvergenceError,
    apply_policy,
    check_conv,
    deriv12,
    hessian_from_gradient,
)

DATA = Path(__file__).resolve().parents[1] / "reference" / "data"
LOWER2 = np.array([0.0, -np.inf])


def quad(th: np.ndarray) -> float:
    """A smooth bowl with minimum at (1, 0.5); Hessian [[2, 1], [1, 6]]."""
    a, b = th[0] - 1.0, th[1] - 0.5
    return float(a * a + a * b + 3.0 * b * b + np.sin(a) ** 3)


def test_deriv12_matches_analytic_derivatives():
    x = np.array([1.3, 0.2])
    g, H = deriv12(quad, x, quad(x))
    a, b = 0.3, -0.3
    g_true = [2 * a + b + 3 * np.sin(a) ** 2 * np.cos(a), a + 6 * b]
    h11 = 2 + 6 * np.sin(a) * np.cos(a) ** 2 - 3 * np.sin(a) ** 3
    np.testing.assert_allclose(g, g_true, atol=1e-7)
    np.testing.assert_allclose(H, [[h11, 1.0], [1.0, 6.0]], atol=1e-5)


def quad_grad(th: np.ndarray) -> np.ndarray:
    a, b = th[0] - 1.0, th[1] - 0.5
    return np.array([2 * a + b + 3 * np.sin(a) ** 2 * np.cos(a), a + 6 * b])


def test_hessian_from_an_analytic_gradient_matches_deriv12():
    x = np.array([1.3, 0.2])
    H = hessian_from_gradient(quad_grad, x)
    np.testing.assert_allclose(H, deriv12(quad, x, quad(x))[1], atol=1e-5)
    assert np.array_equal(H, H.T)


def test_check_with_an_analytic_gradient_costs_2k_plus_1_calls_and_agrees():
    for x in (np.array([1.0, 0.5]), np.array([1.05, 0.5])):
        ref = check_conv(quad, x, quad(x), LOWER2)
        cc = check_conv(quad, x, quad(x), LOWER2, grad=quad_grad)
        assert cc.ok == ref.ok and cc.code == ref.code
        assert cc.max_grad == pytest.approx(ref.max_grad, rel=1e-4, abs=1e-7)
        assert cc.n_evals == 1 + 2 * 2
    # a gradient and Hessian handed in (the optimiser's last Newton step) are used as they are
    x = np.array([1.0, 0.5])
    cc = check_conv(quad, x, quad(x), LOWER2, grad=quad_grad, given_gradient=quad_grad(x),
                    given_hessian=deriv12(quad, x, quad(x))[1])
    assert cc.ok and cc.n_evals == 0
    # a Hessian handed in (the optimiser's last Newton step) is used as it is
    x = np.array([1.05, 0.5])
    cc = check_conv(quad, x, quad(x), LOWER2, grad=quad_grad, given_hessian=-np.eye(2))
    assert not cc.ok and "unable to evaluate scaled gradient" in cc.messages
    assert any("2 negative eigenvalues" in m for m in cc.messages)


def test_optimum_passes_and_records_gradient():
    x = np.array([1.0, 0.5])
    cc = check_conv(quad, x, quad(x), LOWER2)
    assert cc.ok and cc.code == 0 and not cc.singular
    assert cc.max_grad < 1e-6
    assert cc.hessian is not None and cc.n_evals == 2 * 2 + 2 * 2 + 2 * 2 * 1
    assert cc.to_dict()["ok"] is True


def test_point_short_of_the_optimum_fails_gradient_check():
    x = np.array([1.05, 0.5])                 # gradient 0.1, scaled ~0.07 > 2e-3
    cc = check_conv(quad, x, quad(x), LOWER2)
    assert not cc.ok and cc.code == -1
    assert cc.messages[0].startswith("Model failed to converge with max|grad| = ")
    assert "(tol = 0.002, component 1)" in cc.messages[0]


def test_gradient_only_skips_the_hessian_when_gradient_is_small():
    x = np.array([1.0, 0.5])
    cc = check_conv(quad, x, quad(x), LOWER2, {"hess": "ignore"})
    assert cc.ok and cc.hessian is None and cc.n_evals == 4


def test_saddle_fails_hessian_check():
    def saddle(th):
        return float((th[0] - 1) ** 2 - (th[1] - 0.5) ** 2)
    x = np.array([1.0, 0.5])
    cc = check_conv(saddle, x, saddle(x), LOWER2, {"grad": "ignore"})
    assert cc.code == -3
    assert "degenerate Hessian with 1 negative eigenvalues" in cc.messages[0]
    assert cc.ok          # stationary: reported and warned about, not "not converged"
    with pytest.warns(ConvergenceWarning, match="degenerate Hessian"):
        apply_policy(cc, None)


def test_flat_direction_is_a_singular_hessian():
    def ridge(th):
        return float((th[0] + th[1] - 1.5) ** 2)
    x = np.array([1.0, 0.5])
    cc = check_conv(ridge, x, ridge(x), LOWER2, {"grad": "ignore"})
    assert cc.code == -4 and "numerically singular" in cc.messages[0]
    # a flat ridge is reported, but the point is a minimum: not a convergence failure
    assert cc.ok


def test_no_scaled_gradient_falls_back_to_the_raw_gradient():
    def ridge(th):
        return float((th[0] + th[1] - 1.5) ** 2)
    at_min = check_conv(ridge, np.array([1.0, 0.5]), 0.0, LOWER2)
    assert at_min.ok and at_min.code == -4             # zero gradient: only the Hessian note
    def saddle(th):
        return float((th[0] - 1) ** 2 - (th[1] - 0.5) ** 2)
    x = np.array([1.2, 0.5])                              # gradient 0.4, H = diag(2, -2)
    off = check_conv(saddle, x, saddle(x), LOWER2)
    assert "unable to evaluate scaled gradient" in off.messages
    assert off.raw_grad_failed and not off.ok


def test_singular_fit_skips_derivative_checks_like_lme4():
    x = np.array([0.0, 3.0])                  # theta_1 on its bound; gradient not zero
    cc = check_conv(quad, x, quad(x), LOWER2)
    assert cc.singular and cc.ok and cc.n_evals == 0
    assert cc.messages == ("boundary (singular) fit: see help('isSingular')",)


def test_policies_ignore_warning_error():
    x = np.array([1.05, 0.5])
    cc = check_conv(quad, x, quad(x), LOWER2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        apply_policy(cc, "ignore")
    with pytest.warns(ConvergenceWarning, match="max.grad"):
        apply_policy(cc, "warning")
    with pytest.raises(ConvergenceError, match="policy 'error'"):
        apply_policy(cc, {"grad": "error"})
    sing = check_conv(quad, np.array([0.0, 3.0]), quad(np.array([0.0, 3.0])), LOWER2)
    with pytest.warns(SingularFitWarning):
        apply_policy(sing.to_dict(), None)


@pytest.mark.parametrize("bad, match", [
    ("stop", "checkconv"),
    ({"grad": "loud"}, "checkconv grad"),
    ({"tol": 1}, "unknown setting"),
    ({"grad_tol": -1.0}, "grad_tol must be a positive number"),
    (3, "checkconv must be None"),
])
def test_bad_control_messages(bad, match):
    with pytest.raises(InputError, match=match):
        CheckConvControl.coerce(bad)


def _sleepstudy() -> pd.DataFrame:
    d = pd.read_csv(DATA / "sleepstudy.csv")
    d["Subject"] = d["Subject"].astype(str)
    return d


def test_lmer_records_checkconv_on_the_fit():
    fit = lmer("Reaction ~ Days + (Days | Subject)", _sleepstudy(), REML=False)
    cc = fit.optinfo["checkconv"]
    assert cc["ok"] and cc["code"] == 0 and cc["max_grad"] < 2e-3
    assert fit.converged


def test_fit_stopped_early_says_so():
    """An optimiser cut short is never passed silently: the gradient check catches it."""
    data = _sleepstudy()
    ctl = {"maxeval": 8, "robust": 0}
    with pytest.warns(ConvergenceWarning) as rec:
        fit = lmer("Reaction ~ Days + (Days | Subject)", data, REML=False, control=ctl,
                   checkconv={"hess": "ignore"})
    assert not fit.converged
    assert any("Model failed to converge" in str(w.message) for w in rec)
    assert "checkConv" in fit.optinfo["message"]
    with pytest.raises(ConvergenceError):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lmer("Reaction ~ Days + (Days | Subject)", data, REML=False, control=ctl,
                 checkconv="error")


def test_power_replicate_fit_cut_short_is_flagged():
    """refit_core (the power replicates' fit) folds lme4's gradient check into
    FitCore.converged, which the power layer counts per cell (n_nonconverged)."""
    from nlpower.lmm.frame import model_frame
    from nlpower.lmm.native import NativeModel

    data = _sleepstudy()
    model = NativeModel(model_frame("Reaction ~ Days + (Days | Subject)", data))
    y = data["Reaction"].to_numpy()
    short = model.refit_core(y, control={"maxeval": 8, "robust": 0})
    assert not short.converged and "Model failed to converge" in short.message
    full = model.refit_core(y)
    assert full.converged and "checkConv" not in full.message
