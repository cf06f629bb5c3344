"""The fast paths of small one-scalar-term fits give the fits of the paths they replace.

- :func:`~nlpower.ordinal.scalar.batch_nll_grad` (many points at once) against
  one-at-a-time :meth:`ClmmModel.nll_grad`;
- Newton steps with batched Hessians against the general path (L-BFGS-B, for larger data);
- ``ordinal_frame``'s column dict against ``model_frame`` on a copy of the data
  (missing rows, categorical responses, non-string column labels).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import nlpower.ordinal.newton as newton_mod
from nlpower.lmm.checkconv import hessian_from_gradient
from nlpower.lmm.frame import model_frame
from nlpower.ordinal import clmm, prepare_clmm
from nlpower.ordinal.api import ordinal_frame
from nlpower.ordinal.hessian import fd_hessian
from nlpower.ordinal.scalar import batch_nll_grad


def ratings(n_judges: int = 12, per: int = 10, *, seed: int = 0, sd: float = 1.2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    judge = np.repeat(np.arange(n_judges), per)
    rng.shuffle(judge)                      # levels not sorted: the sums must not assume it
    d = pd.DataFrame({"judge": [f"j{k:02d}" for k in judge], "x": rng.normal(size=judge.size),
                      "temp": rng.choice(["cold", "warm"], judge.size)})
    latent = (0.8 * d.x + 1.0 * (d.temp == "warm") + rng.normal(0, sd, n_judges)[judge]
              + rng.logistic(size=judge.size))
    d["rating"] = np.digitize(latent, [-1.5, -0.3, 0.8, 2.0]) + 1
    return d


@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
def test_batch_matches_one_point_at_a_time(link: str) -> None:
    m = prepare_clmm("rating ~ x + temp + (1 | judge)", ratings(seed=1), link=link)
    x0 = m.start()
    x0[-1] = 0.9
    rng = np.random.default_rng(2)
    xs = x0 + 0.05 * rng.normal(size=(6, x0.size))
    xs[:, -1] = np.abs(xs[:, -1])
    m.nll(x0)
    res = batch_nll_grad(m, xs)
    assert res is not None
    for j, x in enumerate(xs):
        m._state.last = None
        f, g = m.nll_grad(x)
        # each point's modes are solved to a decrement of 1e-15 on either path
        assert res[0][j] == pytest.approx(f, abs=1e-8)
        np.testing.assert_allclose(res[1][j], g, atol=1e-6)
    assert np.abs(res[1]).max() > 1e-2            # points away from the optimum


def test_batch_refuses_points_outside_the_parameter_space() -> None:
    m = prepare_clmm("rating ~ x + (1 | judge)", ratings(seed=3))
    x = m.start()
    bad = x.copy()
    bad[0], bad[1] = bad[1], bad[0]              # thresholds out of order
    m.nll(x)
    assert batch_nll_grad(m, np.vstack([x, bad])) is None


def test_fd_hessian_is_hessian_from_gradient() -> None:
    m = prepare_clmm("rating ~ x + temp + (1 | judge)", ratings(seed=4))
    x = m.refit().params
    f, g = m.nll_grad(x)
    H = fd_hessian(m, x, g)
    H_seq = hessian_from_gradient(lambda z: m.nll_grad(z)[1], x, delta=1e-4, g=g)
    assert H is not None
    # the same differences; each gradient's modes stop at a Newton decrement < 1e-15
    # (|du| ~ 3e-8), which leaves ~1e-9 in a gradient and so up to ~1e-5 in a difference
    # quotient whose step is 1e-4 (far below the differences' own O(delta) error, ~2e-3 here)
    np.testing.assert_allclose(H, H_seq, rtol=1e-5, atol=1e-4)
    free = np.ones(x.size, dtype=bool)
    free[1] = False
    m.nll_grad(x)
    H_free = fd_hessian(m, x, 2.0 * g[free], free=free, scale=2.0)
    assert H_free is not None
    np.testing.assert_allclose(H_free, 2.0 * H_seq[np.ix_(free, free)], rtol=1e-5, atol=2e-4)


def test_fd_hessian_only_for_one_scalar_term() -> None:
    d = ratings(seed=5)
    d["g2"] = np.arange(len(d)) % 7
    m = prepare_clmm("rating ~ x + (1 | judge) + (1 | g2)", d)
    x = m.start()
    assert fd_hessian(m, x, m.nll_grad(x)[1]) is None


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_newton_path_gives_the_general_fit(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    d = ratings(seed=seed, n_judges=15)
    m = prepare_clmm("rating ~ x + temp + (1 | judge)", d)
    assert m.spec.n * (m.n_alpha + m.p + 2) <= newton_mod.BATCH_LIMIT
    newton = m.refit()
    monkeypatch.setattr(newton_mod, "BATCH_LIMIT", 0)
    bfgs = m.refit()                    # the general path: L-BFGS-B, scaled by the start's Hessian
    assert newton.converged and bfgs.converged
    assert newton.message == "quasi-Newton steps"
    assert bfgs.message == "L-BFGS-B, then Newton steps"
    assert newton.loglik == pytest.approx(bfgs.loglik, abs=1e-8)
    np.testing.assert_allclose(newton.params, bfgs.params, atol=1e-5)
    # the Hessians are differences at points within 1e-3 of each other
    np.testing.assert_allclose(np.sqrt(np.diag(newton.vcov)), np.sqrt(np.diag(bfgs.vcov)),
                               rtol=1e-3)
    assert newton.check is not None and newton.check.ok


def _model_frame_reference(formula: str, data: pd.DataFrame):  # type: ignore[no-untyped-def]
    """The structure the way ordinal_frame built it before: codes into a copy, model_frame."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec, r, _ = ordinal_frame(formula, data, warn=False)
    d = data.copy()
    resp = formula.split("~")[0].strip()
    keep = ~data[[c for c in data.columns if str(c) in spec.data_columns]].isna().any(axis=1)
    codes = pd.Series(np.nan, index=d.index)
    codes[keep] = r.codes.astype(float)
    d[resp] = codes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model_frame(formula, d)


def test_ordinal_frame_matches_model_frame_with_missing_rows() -> None:
    d = ratings(seed=9)
    d.loc[[3, 17], "x"] = np.nan
    d.loc[[5], "judge"] = None
    d.loc[[8], "rating"] = np.nan
    d.index = d.index * 10 + 7                   # labels that are not positions
    with pytest.warns(UserWarning, match="dropped 4 of 120 rows"):
        spec, r, frame = ordinal_frame("rating ~ x + temp + (1 | judge)", d)
    ref = _model_frame_reference("rating ~ x + temp + (1 | judge)", d)
    assert spec.n == ref.n == 116 and spec.n_dropped == 4
    np.testing.assert_array_equal(spec.X, ref.X)
    np.testing.assert_array_equal(spec.y, ref.y)
    assert spec.fixef_names == ref.fixef_names
    np.testing.assert_array_equal(spec.re_terms[0].codes, ref.re_terms[0].codes)
    assert spec.re_terms[0].levels == ref.re_terms[0].levels
    assert list(frame.index) == list(range(116))
    assert frame["x"].notna().all() and len(r.codes) == 116
    np.testing.assert_array_equal(frame["x"].to_numpy(), d["x"].dropna().drop(index=[57, 87])
                                  .to_numpy())


def test_ordinal_frame_categorical_response_and_integer_labels() -> None:
    d = ratings(seed=10)
    labels = ["awful", "bad", "ok", "good", "great"]
    d["rating"] = pd.Categorical.from_codes(d["rating"] - 1, categories=labels, ordered=True)
    d[0] = np.arange(len(d)) % 3                 # a non-string column label the formula skips
    spec, r, frame = ordinal_frame("rating ~ x + (1 | judge)", d)
    assert r.levels == tuple(lv for lv in labels if lv in set(d["rating"]))
    assert list(frame.columns) == ["judge", "x", "rating"]
    assert isinstance(frame["rating"].dtype, pd.CategoricalDtype)
    np.testing.assert_array_equal(spec.y, r.codes)
    ref = _model_frame_reference("rating ~ x + (1 | judge)", d)
    np.testing.assert_array_equal(spec.X, ref.X)
    np.testing.assert_array_equal(spec.re_terms[0].codes, ref.re_terms[0].codes)
    fit = clmm("rating ~ x + (1 | judge)", d)
    assert fit.converged and fit.categories == r.levels
    # predict codes new rows against the rows fitted (the frame ordinal_frame returned)
    np.testing.assert_allclose(fit.predict(d.iloc[:7]), fit.predict()[:7], rtol=1e-12)


@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
@pytest.mark.parametrize("threshold", ["flexible", "equidistant"])
def test_agq_gradient_matches_central_differences(link: str, threshold: str) -> None:
    m = prepare_clmm("rating ~ x + temp + (1 | judge)", ratings(seed=11), link=link,
                     threshold=threshold, nAGQ=7)
    x = m.start()
    x[m.n_alpha:m.n_alpha + m.p] += 0.2
    x[-1] = 0.8
    f, g = m.nll_grad(x)

    def nll(z: np.ndarray) -> float:
        m._state.last = None
        return m.nll(z)

    h = 1e-5
    fd = np.array([(nll(x + h * e) - nll(x - h * e)) / (2 * h) for e in np.eye(x.size)])
    # central differences: O(h^2) ~ 1e-10 plus the modes' noise over 2h (~1e-12 / 1e-5)
    np.testing.assert_allclose(g, fd, atol=1e-6)
    assert np.abs(g).max() > 1e-1


def test_agq_fit_ends_where_the_gradient_vanishes() -> None:
    fit = clmm("rating ~ x + temp + (1 | judge)", ratings(seed=12), nAGQ=10)
    assert fit.converged
    g = fit.model.nll_grad(np.concatenate([fit.alpha, fit.fixef, fit.theta]))[1]
    assert np.abs(g).max() < 1e-4
    lap = clmm("rating ~ x + temp + (1 | judge)", ratings(seed=12))
    # the quadrature changes the likelihood a little, not the fit
    assert abs(fit.loglik - lap.loglik) < 0.5
    np.testing.assert_allclose(fit.fixef, lap.fixef, atol=0.05)


@pytest.mark.parametrize("seed", [5, 11, 17, 20])
@pytest.mark.parametrize("link", ["logit", "probit", "cloglog"])
def test_small_fits_at_least_as_high_as_the_general_path(seed: int, link: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # singular and near-singular SDs, 3-5 categories, equidistant thresholds: Newton steps
    # that cannot finish hand over to the general path (L-BFGS-B from the same start)
    rng = np.random.default_rng(seed)
    n_levels, per = int(rng.integers(4, 15)), int(rng.integers(4, 12))
    g = np.repeat(np.arange(n_levels), per)
    x = rng.normal(size=g.size)
    sd = [0.0, 0.3, 1.0, 2.5][seed % 4]
    n_cat = [3, 4, 5][seed % 3]
    latent = 0.7 * x + rng.normal(0, sd, n_levels)[g] + rng.logistic(size=g.size)
    d = pd.DataFrame({"y": np.digitize(latent, np.linspace(-1.5, 1.5, n_cat - 1)) + 1,
                      "x": x, "g": g})
    m = prepare_clmm("y ~ x + (1 | g)", d, link=link,
                     threshold=["flexible", "equidistant"][seed % 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = m.refit()
        monkeypatch.setattr(newton_mod, "BATCH_LIMIT", 0)
        slow = m.refit()
    assert fast.loglik >= slow.loglik - 1e-6
    assert fast.converged == slow.converged
    np.testing.assert_allclose(fast.beta, slow.beta, atol=1e-3)


def test_small_dense_helpers_match_numpy_linalg() -> None:
    from nlpower.ordinal._dense import floored, floored_solve, inv_and_cond, solve

    rng = np.random.default_rng(11)
    A = rng.normal(size=(6, 6))
    H = A @ A.T + 0.5 * np.eye(6)
    b = rng.normal(size=6)
    np.testing.assert_allclose(solve(A, b), np.linalg.solve(A, b), rtol=1e-10)
    np.testing.assert_allclose(floored(H), H, rtol=1e-15)           # no eigenvalue below the floor
    np.testing.assert_allclose(floored_solve(H, b), np.linalg.solve(H, b), rtol=1e-10)
    Hinv, cond = inv_and_cond(H)
    ev = np.linalg.eigvalsh(H)
    np.testing.assert_allclose(Hinv, np.linalg.inv(H), rtol=1e-9, atol=1e-12)
    assert cond == pytest.approx(ev[-1] / ev[0], rel=1e-10)
    # an indefinite matrix: eigenvalues floored at 1e-6 max|ev|, eigenvectors kept
    D = np.diag([4.0, 1.0, -2.0, 1e-9])
    Q = np.linalg.qr(rng.normal(size=(4, 4)))[0]
    M = Q @ D @ Q.T
    np.testing.assert_allclose(np.linalg.eigvalsh(floored(M)), [4e-6, 4e-6, 1.0, 4.0], rtol=1e-6)
    step = floored_solve(M, b[:4])
    assert float(b[:4] @ step) > 0                                    # a descent direction
    assert inv_and_cond(M)[1] == np.inf                               # not positive definite
    with pytest.raises(np.linalg.LinAlgError):
        solve(np.zeros((3, 3)), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError):
        inv_and_cond(np.diag([1.0, 0.0]))
    with pytest.raises(np.linalg.LinAlgError):
        inv_and_cond(np.array([[1.0, np.nan], [np.nan, 1.0]]))


def test_single_evaluations_start_from_the_batch_prediction_only_near_its_point(monkeypatch) -> None:
    """The last Newton batch predicts the modes near its point (line search, polish); farther
    away, and in the fallback optimisers, an evaluation starts from the last modes."""
    from nlpower.ordinal.scalar import ScalarTerm

    m = prepare_clmm("rating ~ x + (1 | judge)", ratings(seed=6))
    core = m.refit()
    assert m._state.anchor is not None          # the batched Newton steps left theirs
    xa, ua, du = m._state.anchor
    starts: list[np.ndarray] = []
    modes = ScalarTerm.modes

    def spy(self, link, B, s, u0, **kw):  # type: ignore[no-untyped-def]
        starts.append(np.array(u0))
        return modes(self, link, B, s, u0, **kw)

    monkeypatch.setattr(ScalarTerm, "modes", spy)
    near = core.params + 0.01
    m._state.last = None
    m.nll(near)
    np.testing.assert_allclose(starts[-1], ua + du @ (near - xa))
    last = m._state.u.copy()
    far = core.params.copy()
    far[-1] += 3.0                                # an SD 3 units away: beyond the prediction
    m.nll(far)
    np.testing.assert_array_equal(starts[-1], last)
    # and its value is the one a fresh model finds there from zero modes
    fresh = prepare_clmm("rating ~ x + (1 | judge)", ratings(seed=6))
    assert m.nll(far) == pytest.approx(fresh.nll(far), abs=1e-9)
