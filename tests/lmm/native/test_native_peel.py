"""The peeled factor of the rest (nlpower.mixed.native.rest) against dense Cholesky.

Sparse crowd designs (few workers per item) leave the rest's Schur
complement sparse; :func:`peel_plan` then eliminates independent sets of its
levels in rounds before a small dense ``dpotrf``.  Checked here: the factor
equals numpy's dense Cholesky of the permuted matrix on random symmetric
positive definite matrices of the plans' patterns, and the deviance, the
analytic gradient, beta, ``R_X^{-1}`` and the conditional modes equal those of
the dense factor (the same evaluator with ``peel=False``).
"""

from __future__ import annotations

import numpy as np
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native.gradient import theta_gradient
from nlpower.mixed.native.deviance import DevianceEvaluator
from nlpower.mixed.native.rest import peel_factor, peel_gather, peel_plan, selected_inverse

# sparse crowd designs: (workers, items, systems, workers per item, formula, mode)
CASES = {
    "q5-corr": (90, 40, 4, 3, "rating ~ system + (system || item) + (system || worker)", "auto"),
    "q5-corr-sparse": (90, 40, 4, 3, "rating ~ system + (system || item) + (system || worker)",
                       "sparse"),
    "q2-diag": (300, 160, 2, 3, "rating ~ x + (1 + x || item) + (1 + x || worker)", "auto"),
    "q1-dense": (300, 200, 2, 3, "rating ~ x + (1 | item) + (1 | worker)", "dense"),
    "q1-sparse": (300, 200, 2, 3, "rating ~ x + (1 | item) + (1 | worker)", "sparse"),
}


def _model(case: str) -> NativeModel:
    w, i, s, k, formula, mode = CASES[case]
    params = presets.dataset("hashimoto-reddit").params if s == 4 else presets.high_variance(0.1)
    df = simulate(CrossedDesign(w, i, s, workers_per_item=k), params, rng=5)
    spec = model_frame(formula, df, contrasts={"system": "sum"} if s == 4 else None)
    model = NativeModel(spec, mode=mode)
    model._set_y(spec.y)
    return model


def _thetas(model: NativeModel, rng: np.random.Generator, n: int) -> list[np.ndarray]:
    lay = model.layout
    return [lay.start * rng.uniform(0.1, 1.5, lay.size) + rng.normal(0, .2, lay.size) * ~lay.diag
            for _ in range(n)]


def _rest_matrix(ev: DevianceEvaluator, theta: np.ndarray) -> np.ndarray:
    """The rest's Schur complement ``M`` (full, symmetric) at ``theta`` (by the dense path)."""
    ev = DevianceEvaluator(ev.b, grouped=ev._grouped_ok, peel=False)
    seen: dict[str, np.ndarray] = {}
    finish = ev._finish

    def grab(th, M, ld1, L1, **kw):
        Mc = np.tril(M)                       # the lower triangle is valid in every path
        seen["M"] = Mc + np.tril(Mc, -1).T
        return finish(th, M, ld1, L1, **kw)

    ev._finish = grab
    try:
        ev.factor(theta)
    finally:
        ev._finish = finish
    return seen["M"]


@pytest.mark.parametrize("case", list(CASES))
def test_the_plan_applies_and_keeps_every_level(case):
    model = _model(case)
    plan = model.ev.peel
    assert plan is not None, "a sparse crowd design should be peeled"
    assert np.array_equal(np.sort(plan.perm), np.arange(model.blocks.N2))
    nre2 = model.blocks.nre2
    assert np.array_equal(plan.perm[nre2:], np.arange(nre2, model.blocks.N2))   # X, y last
    assert model.blocks.N2 - plan.core <= 0.6 * model.blocks.N2   # the dense core shrank


@pytest.mark.parametrize("case", ["q5-corr", "q2-diag", "q1-sparse"])
def test_factor_equals_dense_cholesky_on_random_spd_matrices_of_the_pattern(case):
    model = _model(case)
    plan = model.ev.peel
    rng = np.random.default_rng(11)
    M0 = _rest_matrix(model.ev, model.layout.start)
    pattern = M0 != 0
    N2 = M0.shape[0]
    for _ in range(3):
        R = np.where(pattern, rng.normal(size=(N2, N2)), 0.0)
        A = np.tril(R) + np.tril(R, -1).T
        A[np.arange(N2), np.arange(N2)] = np.abs(A).sum(axis=1) + 1.0     # diagonally dominant
        out = peel_factor(plan, A)
        assert out is not None
        fac, ld_peeled = out
        L = fac.dense()
        Ap = A[np.ix_(plan.perm, plan.perm)]
        np.testing.assert_allclose(L, np.linalg.cholesky(Ap), rtol=1e-10, atol=1e-12)
        n_peeled = plan.core
        assert ld_peeled == pytest.approx(
            2.0 * np.sum(np.log(np.diag(L)[:n_peeled])), rel=1e-12)
        assert 2.0 * np.sum(np.log(np.diag(L))) == pytest.approx(np.linalg.slogdet(A)[1],
                                                                  rel=1e-10)
        # Takahashi's selected inverse of the leading blocks, on the whole pattern
        W = N2 + 1
        a, c = np.divmod(plan.support, W)
        for Nr in (model.blocks.nre2, model.blocks.nre2 + model.blocks.p):
            Zref = np.linalg.inv(Ap[:Nr, :Nr])
            z = selected_inverse(fac, Nr)
            inside = (a < Nr) & (c < Nr)
            np.testing.assert_allclose(z[:-2][inside], Zref[a[inside], c[inside]],
                                       rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", ["q5-corr-sparse", "q1-sparse"])
def test_direct_work_vector_equals_the_gathered_dense_matrix(case):
    # sparse Schur products: the work vector is formed without M; it must be M's entries
    model = _model(case)
    ev = model.ev
    assert ev._direct is not None
    b = model.blocks
    for theta in _thetas(model, np.random.default_rng(8), 3):
        M = _rest_matrix(ev, theta)
        ref = peel_gather(ev.peel, M)
        r1 = __import__("nlpower.mixed.native.block1", fromlist=["block1_factor"]).block1_factor(
            b, theta)
        K = r1[1]
        lams = np.stack([blk.lam(theta) for blk, _ in b.rest])
        work = ev._direct.work(b, b.schur.V @ (K @ np.swapaxes(K, 1, 2)).ravel(), lams)
        np.testing.assert_allclose(work[:-2], ref[:-2], rtol=1e-12, atol=1e-12)


def test_factor_reports_a_matrix_that_is_not_positive_definite():
    model = _model("q5-corr")
    M = _rest_matrix(model.ev, model.layout.start)
    j = int(model.ev.peel.perm[0])                   # a column peeled in the first round
    M[j, j] = -1.0
    assert peel_factor(model.ev.peel, M) is None
    M = _rest_matrix(model.ev, model.layout.start)
    M[-1, -1] = -1.0                                 # the y row: fails in the dense core
    assert peel_factor(model.ev.peel, M) is None


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("REML", [False, True])
def test_deviance_gradient_and_solutions_equal_the_dense_factor(case, REML):
    model = _model(case)
    ev = model.ev
    dense = DevianceEvaluator(model.blocks, grouped=model.ev._grouped_ok, peel=False)
    assert ev.peel is not None and dense.peel is None
    for theta in _thetas(model, np.random.default_rng(4), 3):
        fp, fd = ev.factor(theta), dense.factor(theta)
        assert fp.peel is not None and fd.peel is None
        assert ev.objective(fp, REML) == pytest.approx(dense.objective(fd, REML), rel=1e-11)
        assert fp.ldRX2 == pytest.approx(fd.ldRX2, rel=1e-10)
        np.testing.assert_allclose(ev.beta(fp), dense.beta(fd), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(ev.RXinv(fp), dense.RXinv(fd), rtol=1e-8, atol=1e-12)
        np.testing.assert_allclose(ev.solve_v(fp), dense.solve_v(fd), rtol=1e-8, atol=1e-11)
        for a, b in zip(ev.modes(fp), dense.modes(fd), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-11)
        gp, ep = theta_gradient(ev, fp, REML)
        gd, ed = theta_gradient(dense, fd, REML)
        assert np.array_equal(ep, ed)
        np.testing.assert_allclose(gp, gd, rtol=1e-7, atol=1e-8 * max(1.0, np.abs(gd).max()))


def test_a_fit_reaches_the_dense_factors_optimum():
    model = _model("q2-diag")
    fit = model.fit(REML=False)
    dense = _model("q2-diag")
    dense.ev = DevianceEvaluator(dense.blocks, peel=False)
    ref = dense.fit(REML=False)
    assert fit.deviance == pytest.approx(ref.deviance, abs=1e-6)
    np.testing.assert_allclose(fit.fixef.to_numpy(), ref.fixef.to_numpy(), rtol=1e-4, atol=1e-6)


def test_dense_schur_patterns_are_not_peeled():
    # InstEval-like: every rest level coupled to most others -> no plan; tiny rests -> none
    from lmm_specs import crossed_spec
    model = NativeModel(crossed_spec())
    assert peel_plan(model.blocks) is None
