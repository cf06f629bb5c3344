"""The rest's matrix on its pattern (nlpower.mixed.native.lower) and batched triangular inverses.

InstEval-like structures (students x lecturers nested in departments, all
scalar terms, sparse Schur products) build the rest's matrix on its pattern
straight into a Fortran-ordered lower triangle.  Checked against dense
references on random structures: the matrix itself (against the full-matrix
route), the log-determinants and the deviance (against a brute-force dense
computation), the solves (beta, modes), the gradient (against central
differences) and the selected inverse the gradient uses (against
``numpy.linalg.inv``); ``tri_inv`` against ``numpy.linalg.inv``.
"""

from __future__ import annotations

import numpy as np
import pytest

from lmm_specs import _term, dense_deviance
from nlpower.lmm.native import NativeModel
from nlpower.lmm.native.gradient import theta_gradient
from nlpower.lmm.structure import ModelSpec
from nlpower.mixed.native.block1 import block1_factor, tri_inv


def insteval_like(seed: int, n_s: int = 60, n_d: int = 25, n_dept: int = 4,
                  per_student: tuple[int, int] = (1, 7)) -> ModelSpec:
    """``y ~ service + (1 | s) + (1 | d) + (1 | dept)``: each student rates a few lecturers."""
    rng = np.random.default_rng(seed)
    dept_of_d = rng.integers(0, n_dept, n_d)
    dept_of_d[:n_dept] = np.arange(n_dept)                     # every department used
    rows = [(s, d) for s in range(n_s)
            for d in rng.choice(n_d, int(rng.integers(*per_student)), replace=False)]
    s = np.array([r[0] for r in rows])
    d = np.array([r[1] for r in rows])
    d[:n_d] = np.arange(n_d)                                   # every lecturer rated
    dept = dept_of_d[d]
    n = s.size
    service = rng.integers(0, 2, n).astype(float)
    y = (3.0 + 0.2 * service + rng.normal(0, .4, n_s)[s] + rng.normal(0, .5, n_d)[d]
         + rng.normal(0, .3, n_dept)[dept] + rng.normal(0, 1.0, n))
    one = np.ones(n)
    terms = (_term("s", s, one, ("(Intercept)",)), _term("d", d, one, ("(Intercept)",)),
             _term("dept", dept, one, ("(Intercept)",)))
    return ModelSpec("y ~ service + (1 | s) + (1 | d) + (1 | dept)", "y", y,
                     np.column_stack([one, service]), ("(Intercept)", "service"), terms)


def _model(seed: int) -> NativeModel:
    model = NativeModel(insteval_like(seed), mode="sparse")
    assert model.ev._lower is not None, "the pattern route should apply to this structure"
    return model


def _full_route(model: NativeModel, theta: np.ndarray) -> np.ndarray:
    """The rest's matrix by the full-matrix route: A_rr minus the products, scaled, + I."""
    ev, b = model.ev, model.blocks
    _, K, _ = block1_factor(b, theta)
    M = ev._rest_minus_patterns(b.schur, K @ np.swapaxes(K, 1, 2))
    M = np.tril(M)
    M = M + np.tril(M, -1).T
    dv = np.append(theta, 1.0)[ev._scale_idx]
    M = M * dv[:, None] * dv[None, :]
    M[np.arange(b.nre2), np.arange(b.nre2)] += 1.0
    return M


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_pattern_matrix_equals_the_full_route(seed):
    model = _model(seed)
    ev, b = model.ev, model.blocks
    rng = np.random.default_rng(seed)
    for _ in range(3):
        theta = rng.uniform(0.05, 2.0, 3)
        _, K, _ = block1_factor(b, theta)
        te = np.append(theta, 1.0)
        M = ev._lower.matrix(b, b.schur.V @ (K @ np.swapaxes(K, 1, 2)).ravel(), te)
        assert M.flags.f_contiguous
        assert not np.triu(M, 1).any()                        # upper triangle zero
        ref = _full_route(model, theta)
        np.testing.assert_allclose(np.tril(M), np.tril(ref), rtol=1e-13, atol=1e-13)
        # the factor's log-determinant is that of the dense matrix
        f = ev.factor(theta)
        assert 2.0 * np.sum(np.log(np.diag(f.Lrr))) == pytest.approx(
            np.linalg.slogdet(ref)[1], rel=1e-11)
        assert not np.triu(f.Lrr, 1).any()


@pytest.mark.parametrize("REML", [False, True])
def test_deviance_equals_the_brute_force_formula(REML):
    for seed in (3, 4):
        model = _model(seed)
        rng = np.random.default_rng(seed)
        for _ in range(3):
            theta = rng.uniform(0.05, 2.0, 3)
            assert model.deviance(theta, REML=REML) == pytest.approx(
                dense_deviance(model, theta, REML), rel=1e-10, abs=1e-8)


def test_a_new_response_updates_the_pattern_values():
    model = _model(5)
    y2 = model.spec.y[::-1].copy()
    model._set_y(y2)
    ref = NativeModel(model.spec.with_response(y2), mode="dense")
    theta = np.array([0.7, 0.4, 0.9])
    assert model.deviance(theta) == pytest.approx(ref.deviance(theta), rel=1e-11)


def test_solves_equal_dense_linear_algebra():
    """beta and the modes equal the dense penalised least-squares solution."""
    model = _model(6)
    spec, lay = model.spec, model.layout
    theta = np.array([0.8, 0.5, 0.3])
    f = model.ev.factor(theta)
    Zs = []
    for t in lay.terms:
        Zf = np.zeros((spec.n, t.n_levels))
        Zf[np.arange(spec.n), t.codes] = t.Z[:, 0]
        Zs.append(Zf)
    lam = np.concatenate([np.full(t.n_levels, theta[k]) for k, t in enumerate(lay.terms)])
    ZL = np.hstack(Zs) * lam
    q = ZL.shape[1]
    A = np.block([[ZL.T @ ZL + np.eye(q), ZL.T @ spec.X], [spec.X.T @ ZL, spec.X.T @ spec.X]])
    sol = np.linalg.solve(A, np.concatenate([ZL.T @ spec.y, spec.X.T @ spec.y]))
    np.testing.assert_allclose(model.ev.beta(f), sol[q:], rtol=1e-9, atol=1e-12)
    b_all = np.concatenate([m.ravel() for m in model.ev.modes(f)])   # block order = lay order
    np.testing.assert_allclose(b_all, (lam * sol[:q]), rtol=1e-8, atol=1e-11)


@pytest.mark.parametrize("REML", [False, True])
def test_gradient_equals_central_differences(REML):
    model = _model(7)
    theta = np.array([0.6, 0.9, 0.4])
    g, exact = theta_gradient(model.ev, model.ev.factor(theta), REML)
    assert exact.all()
    h = 1e-5
    fd = np.array([(model.deviance(theta + h * e, REML=REML)
                    - model.deviance(theta - h * e, REML=REML)) / (2 * h) for e in np.eye(3)])
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)


def test_selected_inverse_of_the_rest_equals_numpy_inverse():
    model = _model(8)
    theta = np.array([0.5, 1.2, 0.7])
    f = model.ev.factor(theta)
    ref = np.linalg.inv(_full_route(model, theta))
    for Nr in (model.blocks.nre2, model.blocks.nre2 + model.blocks.p):
        Si = model.ev.rest_inverse(f, Nr)
        np.testing.assert_allclose(np.tril(Si), np.tril(np.linalg.inv(
            _full_route(model, theta)[:Nr, :Nr])), rtol=1e-10, atol=1e-12)
    assert ref.shape == (model.blocks.N2, model.blocks.N2)


@pytest.mark.parametrize("q", [1, 2, 3, 5, 6])
def test_tri_inv_equals_numpy_inverse(q):
    rng = np.random.default_rng(q)
    A = rng.normal(size=(40, q, q))
    L = np.linalg.cholesky(A @ np.swapaxes(A, 1, 2) + q * np.eye(q))
    np.testing.assert_allclose(tri_inv(L), np.linalg.inv(L), rtol=1e-12, atol=1e-14)
    # any leading batch shape
    np.testing.assert_allclose(tri_inv(L.reshape(4, 10, q, q)),
                               np.linalg.inv(L).reshape(4, 10, q, q), rtol=1e-12, atol=1e-14)


def test_scalar_schur_products_equal_the_general_construction(monkeypatch):
    """The q1 = 1 lookup-table construction of V gives the general path's products."""
    import nlpower.mixed.native.blocks as blocks_mod

    spec = insteval_like(9)
    fast = NativeModel(spec, mode="sparse").blocks.schur
    monkeypatch.setattr(blocks_mod, "_TABLE_MAX", 0)
    general_model = NativeModel(spec, mode="sparse")
    general = general_model.blocks.schur
    assert np.array_equal(fast.S_lo, general.S_lo)
    assert np.array_equal(fast.S_up, general.S_up)
    rng = np.random.default_rng(9)
    w = rng.uniform(size=fast.V.shape[1])
    p = rng.uniform(size=fast.V.shape[0])
    np.testing.assert_allclose(fast.V @ w, general.V @ w, rtol=1e-13)
    np.testing.assert_allclose(fast.V.T @ p, general.V.T @ p, rtol=1e-13)
    # the products of the y row follow a new response
    monkeypatch.undo()
    fast_model = NativeModel(spec, mode="sparse")
    y2 = rng.normal(size=spec.n)
    fast_model._set_y(y2)
    general_model._set_y(y2)
    np.testing.assert_allclose(fast_model.blocks.schur.V @ w, general_model.blocks.schur.V @ w,
                               rtol=1e-13)


@pytest.mark.parametrize("REML", [False, True])
def test_sparse_schur_gradient_with_two_column_block1_equals_the_dense_strategy(REML):
    """q1 = 2 (the two-column product through V' in one pass) against the dense Schur path."""
    from lmm_specs import crossed_spec

    spec = crossed_spec(n_w=7, n_i=40, seed=4)
    ms, md = NativeModel(spec, mode="sparse"), NativeModel(spec, mode="dense")
    assert not ms.blocks.use_dense and ms.blocks.b1.q == 2 and ms.ev.peel is None
    theta = np.array([0.8, 0.3, 0.6, 0.4])
    gs, _ = theta_gradient(ms.ev, ms.ev.factor(theta), REML)
    gd, _ = theta_gradient(md.ev, md.ev.factor(theta), REML)
    np.testing.assert_allclose(gs, gd, rtol=1e-9, atol=1e-9)


def test_the_cheap_peel_screen_rejects_only_what_the_graph_rejects(monkeypatch):
    """_few_low_degree (a degree lower bound) never rejects a plan the graph would accept."""
    import nlpower.mixed.native.rest as rest_mod
    from nlpower import CrossedDesign, presets, simulate
    from nlpower.lmm.frame import model_frame

    df = simulate(CrossedDesign(300, 200, 2, workers_per_item=3), presets.high_variance(0.1),
                  rng=5)
    crowd = NativeModel(model_frame("rating ~ x + (1 | item) + (1 | worker)", df)).blocks
    # students rating 15-30 of 200 lecturers: every lecturer's degree is above 12
    dense = NativeModel(insteval_like(10, n_s=400, n_d=200, n_dept=5, per_student=(15, 30)),
                        mode="sparse").blocks
    assert not rest_mod._few_low_degree(crowd)
    assert rest_mod.peel_plan(crowd) is not None
    assert rest_mod._few_low_degree(dense)
    monkeypatch.setattr(rest_mod, "_few_low_degree", lambda b: False)
    assert rest_mod.peel_plan(dense) is None                 # the graph's screen agrees
