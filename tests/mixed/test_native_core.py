"""The Gaussian fitter's factorisation on weighted cross-products gives glmer's PIRLS step.

``benchmarks/native_core.py``'s ``WeightedNative`` (a measurement harness) feeds ``lmm/native/``'s blocked
Cholesky (dense or sparse Schur products, active-column patterns, the
closed-form ``q1 = 2`` block, the peeled rest, the uncoupled lead) with the
weighted cross-products of one PIRLS step; ``nlpower.mixed.blocked`` is
glmer's own factorisation, written independently (these designs are below
its pair strategy's threshold; ``benchmarks/glmm_on_native.py`` compares
with that on the 150 x 500 paper model).  Both must give the same modes ``u``, ``beta`` and
``log |Lambda'Z'WZ Lambda + I|``, with ``beta`` solved with ``u`` (``X`` in
the system) and with ``beta`` fixed; after a second set of weights too (the
fitter's caches keyed on the response).  The smallest design is also
checked against dense algebra on ``M`` assembled from its definition.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlpower import CrossedDesign, presets, simulate
from nlpower.lmm.frame import model_frame
from nlpower.lmm.layout import theta_layout
from nlpower.lmm.native.blocks import group_blocks
from nlpower.mixed.blocked import BlockedLayout, factor

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from native_core import WeightedNative  # noqa: E402


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


def _blocked_step(spec, theta, w, z, with_x):
    """``u``, ``beta``, ``log |L|^2`` of the step through ``mixed.blocked`` (glmer's factor)."""
    blocks = group_blocks(theta_layout(spec.re_terms))
    X = np.asarray(spec.X, dtype=float)
    lay = BlockedLayout([b.codes for b in blocks], [b.q for b in blocks], [b.m for b in blocks],
                        X.shape[1], designs=[b.Z for b in blocks])
    zl = np.concatenate([b.Z @ b.lam(theta) for b in blocks], axis=1)
    tp = lay.products(zl)
    wz = w * z
    if with_x:
        fac = factor(lay, tp, w, X, lay.x_products(X, zl))
        x = fac.solve(np.concatenate([lay.ztv(zl, wz), X.T @ wz]))
        return x[:lay.q], x[lay.q:], fac.logdet
    fac = factor(lay, tp, w)
    return fac.solve(lay.ztv(zl, wz)), np.zeros(0), fac.logdet


def _theta(spec, rng):
    lower = theta_layout(spec.re_terms).lower
    return np.where(lower == 0, rng.uniform(0.3, 1.5, lower.size), rng.normal(0, 0.3, lower.size))


def _close(a, b, tol=1e-8):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    scale = max(1.0, float(np.max(np.abs(b)))) if b.size else 1.0
    return a.shape == b.shape and (b.size == 0 or float(np.max(np.abs(a - b))) <= tol * scale)


@pytest.mark.parametrize("with_x", [True, False])
@pytest.mark.parametrize("mode", ["auto", "dense", "sparse"])
@pytest.mark.parametrize("name", list(DESIGNS))
def test_native_step_is_the_blocked_step(name: str, mode: str, with_x: bool) -> None:
    data, formula = DESIGNS[name]
    spec = model_frame(formula, data())
    wn = WeightedNative(spec, mode, with_x=with_x)
    rng = np.random.default_rng(11)
    for _ in range(2):                   # a second set of weights: the caches are refreshed
        theta = _theta(spec, rng)
        w = rng.uniform(0.05, 3.0, spec.n)
        z = rng.normal(size=spec.n)
        wn.set_weights(w, z)
        step = wn.solve(theta)
        u, beta, logdet = _blocked_step(spec, theta, w, z, with_x)
        assert _close(step.u, u)
        assert _close(step.beta, beta)
        assert step.logdet == pytest.approx(logdet, rel=1e-10)


def test_designs_reach_every_strategy() -> None:
    """The designs above exercise what they are meant to (else the test above checks less)."""
    seen = set()
    for data, formula in DESIGNS.values():
        spec = model_frame(formula, data())
        for mode in ("auto", "dense", "sparse"):
            wn = WeightedNative(spec, mode)
            b, ev = wn.b, wn.ev
            seen.add("dense" if b.use_dense else "sparse")
            seen |= {k for k, on in [("patterns", b.patterns is not None),
                                      ("peel", ev.peel is not None), ("lead", ev.lead is not None),
                                      ("diag2", ev._diag2 is not None)] if on}
    assert seen == {"dense", "sparse", "patterns", "peel", "lead", "diag2"}


def test_native_step_solves_the_dense_system() -> None:
    """Against ``numpy.linalg`` on ``[A X]' W [A X] + diag(I, 0)``, ``A = Z Lambda`` (dense)."""
    data, formula = DESIGNS["crossed_corr"]
    spec = model_frame(formula, data())
    rng = np.random.default_rng(5)
    theta, w, z = _theta(spec, rng), rng.uniform(0.05, 3.0, spec.n), rng.normal(size=spec.n)
    wn = WeightedNative(spec)
    wn.set_weights(w, z)
    step = wn.solve(theta)
    blocks = group_blocks(theta_layout(spec.re_terms))
    cols = []
    for b in blocks:                     # Z Lambda expanded over the levels, block by block
        zl = b.Z @ b.lam(theta)
        A = np.zeros((spec.n, b.m * b.q))
        for j in range(b.q):
            A[np.arange(spec.n), b.codes * b.q + j] = zl[:, j]
        cols.append(A)
    A = np.concatenate(cols, axis=1)
    X = np.asarray(spec.X, dtype=float)
    AX = np.concatenate([A, X], axis=1)
    M = AX.T @ (AX * w[:, None])
    M[np.arange(A.shape[1]), np.arange(A.shape[1])] += 1.0
    x = np.linalg.solve(M, AX.T @ (w * z))
    MA = A.T @ (A * w[:, None]) + np.eye(A.shape[1])
    assert _close(step.u, x[:A.shape[1]])
    assert _close(step.beta, x[A.shape[1]:])
    assert step.logdet == pytest.approx(np.linalg.slogdet(MA)[1], rel=1e-10)
