"""The general optimiser's coordinates scaled by the start's Hessian (``nlpower.ordinal.scaling``).

- at the start, the Hessian over the scaled coordinates is the unit matrix
  (checked against central differences of the gradient over the fitter's
  own coordinates, computed here one point at a time);
- the map and its bounds: ``SD >= 0`` is a bound on one scaled coordinate;
- no scaling where the model has no batched Hessian (crossed terms);
- the scaled fit reaches the optimum of the unscaled one.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import nlpower.ordinal.model as model_mod
from nlpower.ordinal import prepare_clmm
from nlpower.ordinal.scaling import Coordinates, start_scaling


def ratings(n_judges: int = 30, per: int = 20, *, seed: int = 0, sd: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    judge = np.repeat(np.arange(n_judges), per)
    d = pd.DataFrame({"judge": [f"j{k:02d}" for k in judge], "x": rng.normal(size=judge.size),
                      "item": rng.integers(0, 15, judge.size).astype(str)})
    latent = 0.8 * d.x + rng.normal(0, sd, n_judges)[judge] + rng.logistic(size=judge.size)
    d["rating"] = np.digitize(latent, [-1.5, -0.3, 0.8, 2.0]) + 1
    return d


def _z_gradient(m, z: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    m._state.last = None
    f, g = m.nll_grad(m._from_opt(z))
    return m._grad_to_opt(z, g)


@pytest.mark.parametrize(("link", "threshold", "nAGQ"), [("logit", "flexible", 1),
                                                          ("probit", "equidistant", 1),
                                                          ("logit", "flexible", 5)])
def test_the_start_hessian_is_the_unit_matrix_in_the_scaled_coordinates(link, threshold, nAGQ):
    m = prepare_clmm("rating ~ x + (1 | judge)", ratings(seed=1), link=link,
                     threshold=threshold, nAGQ=nAGQ)
    z0 = m._to_opt(m.start())
    co = start_scaling(m, z0)
    assert co.T is not None and co.c >= 1.0
    T = co.T / co.c
    h = 1e-4
    H = np.array([(_z_gradient(m, z0 + h * e) - _z_gradient(m, z0 - h * e)) / (2 * h)
                  for e in np.eye(z0.size)])
    H = 0.5 * (H + H.T)
    # central against forward differences (step 1e-4): O(1e-4) relative to the curvatures
    np.testing.assert_allclose(T.T @ H @ T, np.eye(z0.size), atol=2e-3)
    assert np.abs(H - np.diag(np.diag(H))).max() > 0.1        # the fitter's own are not


def test_coordinates_map_and_bounds() -> None:
    m = prepare_clmm("rating ~ x + (1 | judge)", ratings(seed=2))
    z0 = m._to_opt(m.start())
    co = start_scaling(m, z0)
    assert co.T is not None
    np.testing.assert_array_equal(co.to_z(co.start()), z0)
    w = np.random.default_rng(3).normal(size=z0.size)
    np.testing.assert_allclose(co.from_z(co.to_z(w)), w, atol=1e-12)
    (lo, hi), = co.bounds(np.array([True]))[-1:]
    w_at = co.start()
    w_at[-1] = lo
    assert co.to_z(w_at)[-1] == pytest.approx(0.0, abs=1e-12)   # the SD's bound, on one coordinate
    assert hi is None and all(b == (None, None) for b in co.bounds(np.array([True]))[:-1])
    plain = Coordinates(z0, None)
    assert plain.to_z(w) is w and plain.bounds(np.array([True]))[-1] == (0.0, None)


def test_no_scaling_without_a_batched_hessian() -> None:
    m = prepare_clmm("rating ~ x + (1 | judge) + (1 | item)", ratings(seed=4))
    assert start_scaling(m, m._to_opt(m.start())).T is None


@pytest.mark.parametrize("sd", [0.0, 1.0])
def test_scaled_fit_reaches_the_unscaled_optimum(sd: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # 600 ratings: beyond the batched Newton steps, so the general path runs
    m = prepare_clmm("rating ~ x + (1 | judge)", ratings(seed=5, sd=sd))
    assert not m._batch_newton()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaled = m.refit()
        monkeypatch.setattr(model_mod, "start_scaling", lambda m, z0, *a: Coordinates(z0))
        plain = m.refit()
    assert scaled.converged == plain.converged
    assert scaled.loglik >= plain.loglik - 1e-9
    np.testing.assert_allclose(scaled.params, plain.params, atol=1e-5)
    assert scaled.n_evals < plain.n_evals or sd == 0.0


@pytest.mark.parametrize("formula", ["rating ~ x + (1 | judge)", "rating ~ x + (1 | judge) + (1 | item)"])
def test_a_gradient_asked_again_at_the_same_point_is_not_recomputed(formula: str,
                                                                    monkeypatch) -> None:
    # the optimiser's first call repeats the scaling's point, the finish the optimiser's end
    m = prepare_clmm(formula, ratings(seed=6))
    x = m.start()
    calls: list[int] = []
    grad = model_mod.gradient

    def counted(*a, **k):  # type: ignore[no-untyped-def]
        calls.append(1)
        return grad(*a, **k)

    monkeypatch.setattr(model_mod, "gradient", counted)
    f1, g1 = m.nll_grad(x)
    g1[0] += 1.0                                 # the caller's copy: the cache is not touched
    f2, g2 = m.nll_grad(x.copy())
    assert len(calls) == 1 and f1 == f2
    assert g2[0] == pytest.approx(g1[0] - 1.0, abs=0.0)
    y = x.copy()
    y[-1] += 0.1
    m.nll_grad(y)
    m.nll_grad(x)                                 # another point in between: computed again
    assert len(calls) == 3
    fresh = prepare_clmm(formula, ratings(seed=6))
    # modes from another warm start, each to a Newton decrement of 1e-15 (|du| ~ 3e-8)
    np.testing.assert_allclose(m.nll_grad(x)[1], fresh.nll_grad(x)[1], atol=1e-6)


@pytest.mark.parametrize("far", [0.1, 30.0])
def test_the_first_step_is_the_newton_step_of_the_given_hessian(far: float) -> None:
    # on a quadratic with Hessian H, L-BFGS-B's first trial point in the coordinates
    # scaled by H is H's Newton step -- the minimum -- near the start and far from it;
    # without the factor c it falls short wherever |g_w| > 1
    from scipy import optimize

    from nlpower.ordinal.scaling import HandOff

    rng = np.random.default_rng(9)
    A = rng.normal(size=(4, 4))
    H = A @ A.T + 0.5 * np.eye(4)
    z_min = np.array([0.3, -0.2, 0.5, 2.0])
    z0 = z_min + far * rng.normal(size=4)
    z0[-1] = 1.5                                   # an SD, bounded below by 0
    T = np.linalg.inv(np.linalg.cholesky(H).T)     # T' H T = I
    g_w = T.T @ H @ (z0 - z_min)

    def first_point(c: float) -> tuple[np.ndarray, bool]:
        co = Coordinates(z0, T, c)
        seen: list[np.ndarray] = []
        hand = HandOff(co, 3, np.array([True]))

        def fw(w: np.ndarray) -> tuple[float, np.ndarray]:
            z = co.to_z(w)
            seen.append(z)
            r = z - z_min
            gw = co.gradient(H @ r)
            hand.seen(w, gw)
            return 0.5 * float(r @ H @ r), gw

        optimize.minimize(fw, co.start(), method="L-BFGS-B", jac=True,
                          bounds=co.bounds(np.array([True])), callback=hand)
        return seen[1], hand.stopped

    z1, stopped = first_point(max(float(np.linalg.norm(g_w)), 1.0))
    np.testing.assert_allclose(z1, z_min, atol=1e-10)
    assert stopped                                 # the Newton step from there is 0
    if np.linalg.norm(g_w) > 1.0:
        assert np.abs(first_point(1.0)[0] - z_min).max() > 1e-2


@pytest.mark.parametrize(("sd", "stops"), [(0.5, True), (0.005, False)])
def test_no_hand_off_next_to_an_sd_bound(sd: float, stops: bool) -> None:
    # Newton steps cannot cross SD >= 0: L-BFGS-B goes on while an SD is under 1e-2
    from types import SimpleNamespace

    from nlpower.ordinal.scaling import HandOff

    z0 = np.array([0.1, 0.2, sd])
    co = Coordinates(z0, np.eye(3))
    hand = HandOff(co, 2, np.array([True]))
    w = co.start()
    hand.seen(w, np.full(3, 1e-6))                 # a predicted step of 1e-6
    if stops:
        with pytest.raises(StopIteration):
            hand(SimpleNamespace(x=w))
    else:
        hand(SimpleNamespace(x=w))
    assert hand.stopped == stops
    hand.seen(w, np.array([1e-3, 0.0, 0.0]))       # a predicted step of 1e-3: not yet
    hand.stopped = False
    hand(SimpleNamespace(x=w))
    assert not hand.stopped
