"""Fewer gradient calls in the native optimiser: the convergence check's Hessian by forward
differences where they decide the verdict (``nlpower.lmm.checkconv.check_hessian``), the
descent's hand-over near a zero variance (``nlpower.lmm.native.optimize.log_descent``) and
Newton steps in place of L-BFGS-B after the descent of a ridge's reduced model."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from nlpower.lmm.checkconv import check_conv, check_hessian, hessian_from_gradient
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native import optimize as opt

LOWER2 = np.array([0.0, -np.inf])


def bowl_grad(th: np.ndarray) -> np.ndarray:
    """Gradient of ``a^2 + a b + 3 b^2 + sin(a)^3`` (a = th0 - 1, b = th1 - 0.5)."""
    a, b = th[0] - 1.0, th[1] - 0.5
    return np.array([2 * a + b + 3 * np.sin(a) ** 2 * np.cos(a), a + 6 * b])


def bowl(th: np.ndarray) -> float:
    a, b = th[0] - 1.0, th[1] - 0.5
    return float(a * a + a * b + 3.0 * b * b + np.sin(a) ** 3)


def ridge_grad(th: np.ndarray) -> np.ndarray:
    """Gradient of ``(th0 + th1 - 1)^2 + (th0 - th1)^4``: at (0.5, 0.5) the Hessian is singular
    (exactly flat to second order along (1, -1)), as on an ``(f || g)`` ridge."""
    s, d = th[0] + th[1] - 1.0, th[0] - th[1]
    return np.array([2 * s + 4 * d ** 3, 2 * s - 4 * d ** 3])


def counted(grad):
    calls = [0]

    def g(x: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return grad(x)

    return g, calls


def test_well_conditioned_hessian_takes_forward_differences():
    x = np.array([1.0, 0.5])
    g, calls = counted(bowl_grad)
    H, n = check_hessian(g, x, bowl_grad(x))
    assert n == 2 == calls[0]                     # k calls, not 2k
    np.testing.assert_allclose(H, [[2.0, 1.0], [1.0, 6.0]], atol=1e-3)
    assert np.array_equal(H, H.T)
    # the same verdicts as the central-difference Hessian, the scaled gradient to ~1e-4
    for x in (np.array([1.0, 0.5]), np.array([1.05, 0.5])):
        ref = check_conv(bowl, x, bowl(x), LOWER2, grad=bowl_grad)
        fw = check_conv(bowl, x, bowl(x), LOWER2, grad=bowl_grad, forward=True)
        assert (fw.ok, fw.code, len(fw.messages)) == (ref.ok, ref.code, len(ref.messages))
        assert [m[:35] for m in fw.messages] == [m[:35] for m in ref.messages]
        assert abs(fw.max_grad - ref.max_grad) <= 1e-3 * ref.max_grad + 1e-9
        assert fw.n_evals == 1 + 2 and ref.n_evals == 1 + 4


def test_near_singular_hessian_is_completed_to_central_differences():
    x = np.array([0.5, 0.5])
    g, calls = counted(ridge_grad)
    H, n = check_hessian(g, x, ridge_grad(x))
    assert n == 4 == calls[0]
    # bit for bit the central-difference Hessian the check used before
    assert np.array_equal(H, hessian_from_gradient(ridge_grad, x))
    lower = np.full(2, -np.inf)
    f = lambda th: float((th[0] + th[1] - 1) ** 2 + (th[0] - th[1]) ** 4)   # noqa: E731
    ref = check_conv(f, x, f(x), lower, grad=ridge_grad)
    fw = check_conv(f, x, f(x), lower, grad=ridge_grad, forward=True)
    assert fw.code == ref.code == -4 and fw.messages == ref.messages
    assert np.array_equal(fw.hessian, ref.hessian)


def test_indefinite_hessian_is_completed_and_reported():
    # a saddle: forward differences are not trusted with a negative eigenvalue either
    grad = lambda th: np.array([2 * th[0], -2 * th[1]])   # noqa: E731
    x = np.array([0.3, 0.2])
    H, n = check_hessian(grad, x, grad(x))
    assert n == 4
    np.testing.assert_allclose(H, [[2.0, 0.0], [0.0, -2.0]], atol=1e-9)


def test_descent_hands_over_a_vanishing_variance_to_the_bounds():
    # f = (t0 - 1)^2 + t1: t1's optimum is its bound 0; on the log scale the descent only
    # halves it per iteration, so where the mask allows it stops below DESCENT_ZERO and
    # L-BFGS-B, under the bounds, takes it to 0
    def fg(x: np.ndarray) -> tuple[float, np.ndarray, int]:
        return float((x[0] - 1) ** 2 + x[1]), np.array([2 * (x[0] - 1), 1.0]), 1

    lower = np.zeros(2)
    x0 = np.array([0.5, 1.0])
    mask = np.array([False, True])
    th, f, n = opt.log_descent(fg, x0, fg(x0)[0], lower, mask)
    th_all, f_all, n_all = opt.log_descent(fg, x0, fg(x0)[0], lower)      # no mask: no stop
    assert 0 < th[1] < opt.DESCENT_ZERO and n < n_all and th_all[1] < th[1]
    # a masked-out element does not stop it
    th_off, _, n_off = opt.log_descent(fg, x0, fg(x0)[0], lower, np.array([True, False]))
    assert n_off == n_all and np.array_equal(th_off, th_all)
    res = opt.optimize_theta(lambda x: fg(x)[0], x0, lower, fg=fg, descent_first=True,
                             descent_zero=mask)
    assert res.theta[1] == 0.0 and abs(res.theta[0] - 1.0) < 1e-4


def _two_system_ratings(seed: int = 3) -> pd.DataFrame:
    """2 systems, 70 workers, 150 items; every (item, system) cell rated by 2 random workers."""
    rng = np.random.default_rng(seed)
    nw, ni = 70, 150
    i = np.repeat(np.arange(ni), 4)
    s = np.tile([0, 0, 1, 1], ni)
    w = rng.integers(0, nw, i.size)
    y = (0.3 * np.where(s == 0, -1.0, 1.0) + 0.6 * rng.normal(size=nw)[w]
         + 0.4 * rng.normal(size=(nw, 2))[w, s] + 0.7 * rng.normal(size=ni)[i]
         + 0.3 * rng.normal(size=(ni, 2))[i, s] + rng.normal(size=i.size))
    return pd.DataFrame({"rating": y, "system": np.array(["A", "B"])[s],
                         "worker": [f"w{v:02d}" for v in w], "item": [f"i{v:03d}" for v in i]})


def test_reduced_ridge_fit_finishes_with_newton_steps_instead_of_lbfgsb():
    spec = model_frame("rating ~ system + (system || worker) + (system || item)",
                       _two_system_ratings(), contrasts={"system": "sum"})
    model = NativeModel(spec)
    assert model._ridges, "the ridge path must apply to this design"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(REML=False)
    stages = fit.optinfo["stages"]
    red = model._ridge_red
    k = red.layout.size
    assert "lbfgsb" not in stages and "bobyqa" not in stages
    # one forward-difference Hessian (k calls) and the step; the check reuses both
    assert stages["newton"]["gradients"] == k + 1
    assert stages["checkconv"]["gradients"] == 0
    # the reduced optimum is at least as low as L-BFGS-B's from the same descent
    ref = opt.optimize_theta(lambda th: red.ev(th), red.layout.start.copy(), red.layout.lower,
                             fg=lambda th: red.value_and_gradient(th), descent_first=True)
    assert any(s.startswith("newton") for s in fit.optinfo["steps"])
    res, _ = red._optimize(False, None, None)
    assert res.fval <= ref.fval + 1e-10
    assert res.gradient is not None and np.max(np.abs(res.gradient)) < 1e-4
