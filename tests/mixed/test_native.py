"""The Gaussian fitter's strategies as a strategy of the weighted factorisation.

:class:`nlpower.mixed.native.weighted.NativePlan` feeds ``lmm/native/``'s blocked
Cholesky (dense or sparse Schur products, active-column patterns, the
closed-form ``q1 = 2`` block, the peeled rest, the uncoupled lead) with the
weighted cross-products of one PIRLS step; :class:`nlpower.mixed.blocked.BlockedFactor`
is the same factorisation written independently.  Both must give the same
``log |Lambda'Z'WZ Lambda + I|``, solves for any right-hand sides (with ``X``
eliminated last and without ``X``) and selected inverse, after a second set
of weights too (the fitter's caches keyed on the response).  The smallest
design is also checked against dense algebra on ``M`` assembled from its
definition.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.mixed.blocked import BlockedLayout, factor
from nlpower.mixed.layout import theta_layout
from nlpower.mixed.native.blocks import group_blocks
from nlpower.mixed.native.weighted import NativePlan


def _crowd(n_w: int, n_i: int, per_item: int, seed: int) -> pd.DataFrame:
    """Each item rated by ``per_item`` distinct workers, each rating under one of 4 systems."""
    g = np.random.default_rng(seed)
    rows = [(f"w{w}", f"i{i}", "ABCD"[s]) for i in range(n_i)
            for w, s in zip(g.choice(n_w, per_item, replace=False), g.integers(0, 4, per_item),
                            strict=True)]
    d = pd.DataFrame(rows, columns=["worker", "item", "system"])
    d["x"] = g.normal(size=len(d))
    d["y"] = g.normal(size=len(d))
    return d


def _crossed(workers_per_item: int | None) -> pd.DataFrame:
    design = CrossedDesign(12, 40, 2, workers_per_item=workers_per_item)
    return simulate(design, presets.high_variance(0.2), rng=7)


#: (data, formula): together they reach every strategy of the fitter listed above
DESIGNS = {
    "crossed": (lambda: _crossed(None), "rating ~ x + (1 | worker) + (1 | item)"),
    "crossed_diag2": (lambda: _crossed(None), "rating ~ x + (1 + x || worker) + (1 + x || item)"),
    "crossed_corr": (lambda: _crossed(None), "rating ~ x + (1 + x | worker) + (1 + x | item)"),
    "sparse_crowd": (lambda: _crossed(3), "rating ~ x + (1 | worker) + (1 | item)"),
    "patterns": (lambda: _crowd(40, 80, 6, 2), "y ~ system + (system || worker) + (system || item)"),
    "peeled": (lambda: _crowd(400, 300, 2, 4), "y ~ system + x + (1 | worker) + (1 | item)"),
    "lead": (lambda: _crowd(30, 100, 3, 3), "y ~ system + (1 | item) + (1 | item:system)"),
}


def _setup(spec, mode="auto"):
    blocks = group_blocks(theta_layout(spec.re_terms))
    X = np.asarray(spec.X, dtype=float)
    lay = BlockedLayout([b.codes for b in blocks], [b.q for b in blocks], [b.m for b in blocks],
                        X.shape[1], designs=[b.Z for b in blocks], pairs=False)
    return blocks, X, lay, NativePlan(blocks, X, lay, mode)


def _zl(blocks, theta):
    return np.concatenate([b.Z @ b.lam(theta) for b in blocks], axis=1)


def _theta(spec, rng):
    lower = theta_layout(spec.re_terms).lower
    return np.where(lower == 0, rng.uniform(0.3, 1.5, lower.size), rng.normal(0, 0.3, lower.size))


def _close(a, b, tol=1e-8):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    return a.shape == b.shape and (b.size == 0 or float(np.max(np.abs(a - b))) <= tol * scale)


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-300)


@pytest.mark.parametrize("first_x", [True, False])
@pytest.mark.parametrize("mode", ["auto", "dense", "sparse"])
@pytest.mark.parametrize("name", list(DESIGNS))
def test_native_factor_is_the_blocked_factor(name: str, mode: str, first_x: bool) -> None:
    data, formula = DESIGNS[name]
    spec = model_frame(formula, data())
    blocks, X, lay, plan = _setup(spec, mode)
    rng = np.random.default_rng(11)
    # a second set of weights (the caches are refreshed), X in and out of the system in turn
    for with_x in (first_x, not first_x, first_x):
        theta = _theta(spec, rng)
        w = rng.uniform(0.05, 3.0, spec.n)
        zl = _zl(blocks, theta)
        nat = plan.factor(theta, w, with_x)
        ref = (factor(lay, lay.products(zl), w, X, lay.x_products(X, zl)) if with_x
               else factor(lay, lay.products(zl), w))
        assert nat.logdet == pytest.approx(ref.logdet, rel=1e-10)
        r = rng.normal(size=(lay.q + (X.shape[1] if with_x else 0), 3))
        assert _rel(nat.solve(r), ref.solve(r)) < 1e-10
        assert _rel(nat.solve(r[:, 0]), ref.solve(r[:, 0])) < 1e-10
        assert _rel(nat.selected(zl), ref.selected(zl)) < 1e-10


def test_designs_reach_every_strategy() -> None:
    """The designs above exercise what they are meant to (else the test above checks less)."""
    seen = set()
    for data, formula in DESIGNS.values():
        spec = model_frame(formula, data())
        for mode in ("auto", "dense", "sparse"):
            plan = _setup(spec, mode)[3]
            b, ev = plan.b, plan.ev
            seen.add("dense" if b.use_dense else "sparse")
            seen |= {k for k, on in [("patterns", b.patterns is not None),
                                      ("peel", ev.peel is not None), ("lead", ev.lead is not None),
                                      ("diag2", ev._diag2 is not None)] if on}
    assert seen == {"dense", "sparse", "patterns", "peel", "lead", "diag2"}


def test_native_factor_solves_the_dense_system() -> None:
    """Against ``numpy.linalg`` on ``[A X]' W [A X] + diag(I, 0)``, ``A = Z Lambda`` (dense)."""
    data, formula = DESIGNS["crossed_corr"]
    spec = model_frame(formula, data())
    rng = np.random.default_rng(5)
    theta, w, z = _theta(spec, rng), rng.uniform(0.05, 3.0, spec.n), rng.normal(size=spec.n)
    blocks, X, lay, plan = _setup(spec)
    cols = []
    for b in blocks:                     # Z Lambda expanded over the levels, block by block
        zl = b.Z @ b.lam(theta)
        A = np.zeros((spec.n, b.m * b.q))
        for j in range(b.q):
            A[np.arange(spec.n), b.codes * b.q + j] = zl[:, j]
        cols.append(A)
    A = np.concatenate(cols, axis=1)
    AX = np.concatenate([A, X], axis=1)
    M = AX.T @ (AX * w[:, None])
    M[np.arange(A.shape[1]), np.arange(A.shape[1])] += 1.0
    rhs = AX.T @ (w * z)
    assert _rel(plan.factor(theta, w, True).solve(rhs), np.linalg.solve(M, rhs)) < 1e-10
    MA = A.T @ (A * w[:, None]) + np.eye(A.shape[1])
    fac = plan.factor(theta, w, False)
    assert _rel(fac.solve(A.T @ (w * z)), np.linalg.solve(MA, A.T @ (w * z))) < 1e-10
    assert fac.logdet == pytest.approx(np.linalg.slogdet(MA)[1], rel=1e-10)
    # the selected inverse: M^{-1} (Z Lambda)_i' at observation i's own columns
    Minv = np.linalg.inv(MA)
    slots = lay.slots
    zlo = _zl(blocks, theta)
    want = np.einsum("nst,nt->ns", Minv[slots[:, :, None], slots[:, None, :]], zlo)
    assert _rel(fac.selected(zlo), want) < 1e-10
