"""The Gaussian fitter's factorisation fed weighted cross-products (a PIRLS step, measured).

A PIRLS step is a weighted LMM solve: with ``sqrt(W) Z``, ``sqrt(W) X`` and the
working response ``sqrt(W) z``, the system the Gaussian fitter
(:mod:`nlpower.lmm.native`) factors,

    [ Lambda'Z'WZ Lambda + I   Lambda'Z'WX   Lambda'Z'Wz ]
    [ X'WZ Lambda              X'WX          X'Wz        ]
    [ z'WZ Lambda              z'WX          z'Wz        ]

gives the modes ``u`` and ``beta`` of the step and ``log |L|^2`` of the
Laplace approximation.  :class:`WeightedNative` splits what
:func:`nlpower.lmm.native.blocks.build_blocks` and the evaluator's set-up do
into

* the part fixed by the sparsity pattern (levels, which columns meet, the
  strategy and its plans: dense or sparse Schur products, active-column
  patterns, the peeled rest, the uncoupled lead) -- built once by the
  native code itself, on rows scaled by fixed random weights (the fitter
  reads its pattern off the non-zeros of the cross-products: a sum that
  cancels at unit weights need not at a PIRLS step's);
* the weighted numbers (``Z1'WZ1`` per level, ``W'Z1`` per pair of a rest
  row and a block-1 level, the rest's ``W'WW``, the response's row, the
  sparse Schur products) -- :meth:`WeightedNative.set_weights`: the first
  three by one ``bincount`` over a table of targets fixed by the pattern,
  the rest's products with ``X`` and ``X'WX`` by matrix products.

The evaluator runs without grouped levels (weights make every level's
``Z1'WZ1`` its own).  Nothing in the Gaussian fitter changes; the numbers it
caches per response are refreshed through ``Blocks.version`` and the few
pattern-keyed caches listed in :meth:`WeightedNative.set_weights`.

This module is a measurement harness, not part of the package: glmer's
PIRLS does not use it, and it reaches into the Gaussian fitter's internals.
``benchmarks/glmm_on_native.py`` times it and ``tests/mixed/test_native_core.py``
cross-checks it against :mod:`nlpower.mixed.blocked` (two independently
written factorisations).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from nlpower.lmm.layout import theta_layout
from nlpower.lmm.native.block1 import scalar_patterns
from nlpower.lmm.native.blocks import (
    Blocks,
    DenseSchur,
    GroupBlock,
    Pattern,
    SparseSchur,
    _level_products,
    build_blocks,
    group_blocks,
)
from nlpower.lmm.native.deviance import DevianceEvaluator, Factor
from nlpower.lmm.structure import ModelSpec

__all__ = ["NativeStep", "WeightedNative"]


@dataclass(frozen=True)
class NativeStep:
    """One weighted solve: spherical modes ``u`` (block order), ``beta``, ``log |L|^2``."""

    u: np.ndarray
    beta: np.ndarray
    logdet: float
    factor: Factor


def _rest_entries(b: Blocks, rest: list[GroupBlock], X: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(observation, rest column, value)`` of every non-zero of ``W = [Z_2 .. Z_k X]``,
    in :func:`~nlpower.lmm.native.blocks.build_blocks`'s order."""
    n = X.shape[0]
    obs = np.arange(n)
    rows, cols, vals = [], [], []
    for blk, (_, off) in zip(rest, b.rest, strict=True):
        for c in range(blk.q):
            v = blk.Z[:, c]
            nz = v != 0
            rows.append(obs[nz])
            cols.append(off + blk.codes[nz] * blk.q + c)
            vals.append(v[nz])
    for c in range(X.shape[1]):
        v = X[:, c]
        nz = v != 0
        rows.append(obs[nz])
        cols.append(np.full(int(nz.sum()), b.nre2 + c))
        vals.append(v[nz])
    if not rows:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), np.zeros(0)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def _sparse_products(b: Blocks, schur: SparseSchur) -> tuple[np.ndarray, np.ndarray]:
    """Which product ``C[p1, a] C[p2, b]`` (flat positions in ``C``) each entry of the Schur products ``V`` holds.

    ``V`` is rebuilt here with its entries in a known order (rows: the sorted
    keys ``row(p1) N2 + row(p2)``, the same rows as the fitter's; within a row
    by column).  The evaluator reads ``V`` only through ``V @ vec(W)`` and
    the row keys, so it is the same operator.
    """
    q1, N2, m1 = b.b1.q, b.N2, b.b1.m
    P1, A, P2, B = _level_products(b.pair_lev, _structural(b))
    key = b.pair_row[P1].astype(np.int64) * N2 + b.pair_row[P2]
    col = b.pair_lev[P1].astype(np.int64) * (q1 * q1) + A * q1 + B
    order = np.lexsort((col, key))
    ukey, counts = np.unique(key[order], return_counts=True)
    if not np.array_equal(ukey, schur.S_lo):
        raise AssertionError("the Schur products' rows differ from the fitter's")
    indptr = np.concatenate([[0], np.cumsum(counts)])
    schur.V = sp.csr_matrix((np.ones(order.size), col[order], indptr),
                            shape=(ukey.size, m1 * q1 * q1))
    return P1[order] * q1 + A[order], P2[order] * q1 + B[order]


class WeightedNative:
    """The Gaussian fitter's blocked factorisation on weighted cross-products.

    Parameters
    ----------
    spec : ModelSpec
        The design (its response is replaced by every :meth:`set_weights`).
    mode : {"auto", "dense", "sparse"}
        The Schur strategy (:class:`~nlpower.lmm.native.model.NativeModel`'s).
    with_x : bool
        Whether ``X`` is in the system (``beta`` solved with ``u``); else the
        fixed part is given (``beta`` fixed) and only ``u`` is solved.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from nlpower.lmm.frame import model_frame
    >>> g = np.random.default_rng(1)
    >>> d = pd.DataFrame({"w": np.repeat(list("abcdef"), 10), "i": np.tile(list("pqrst"), 12),
    ...                   "y": g.normal(size=60)})
    >>> spec = model_frame("y ~ 1 + (1 | w) + (1 | i)", d)
    >>> wn = WeightedNative(spec)
    >>> wn.set_weights(g.uniform(0.1, 0.3, 60), d["y"].to_numpy())
    >>> step = wn.solve(np.array([0.8, 0.5]))
    >>> step.u.shape, step.beta.shape
    ((11,), (1,))
    """

    def __init__(self, spec: ModelSpec, mode: str = "auto", *, with_x: bool = True):
        if not with_x:
            spec = dataclasses.replace(spec, X=np.zeros((spec.n, 0)), fixef_names=())
        self.spec = spec
        # the pattern's part from generic numbers: the fitter reads its pattern off the
        # non-zeros of the cross-products, and a sum that cancels at unit weights need not
        # at the next step's
        generic = _generic(spec)
        self.b = b = build_blocks(generic, theta_layout(generic.re_terms), mode)
        self.ev = DevianceEvaluator(b, grouped=False)
        blocks = group_blocks(theta_layout(spec.re_terms))     # the same order, true numbers
        X = np.asarray(spec.X, dtype=float)
        q1, Z1 = b.b1.q, blocks[0].Z
        r_obs, r_col, r_val = ent = _rest_entries(b, blocks[1:], X)
        self._tab = _product_table(b, Z1, ent)
        # W' and its random-effects rows (true numbers): the response's row, the X products
        self._Wt = sp.csr_matrix((r_val, (r_col, r_obs)), shape=(b.N2 - 1, b.n))
        self._Wrt = self._Wt[:b.nre2]
        self._X, self._Z1 = X, Z1
        self._tY = (b.b1.codes[:, None] * q1 + np.arange(q1)[None, :]).ravel()
        # the strategy's numbers fixed by the pattern
        self._sparse: tuple[np.ndarray, np.ndarray] | None = None
        schur = b.schur
        if isinstance(schur, SparseSchur):
            self._sparse = _sparse_products(b, schur)
        self._tE = (b.pair_lev[:, None] * q1 + np.arange(q1)[None, :]).ravel()
        # the dense Schur products' positions of C (N2, m1, q1): one flat scatter
        self._cd = ((b.pair_row.astype(np.int64) * b.b1.m + b.pair_lev)[:, None] * q1
                    + np.arange(q1)[None, :]).ravel()

    # -- per PIRLS step ---------------------------------------------------------------
    def set_weights(self, w: np.ndarray, z: np.ndarray) -> None:
        """Weights ``w`` and working response ``z`` (``z - X beta`` when ``beta`` is fixed).

        Re-forms every weighted cross-product and refreshes the caches the
        evaluator keys on the response (``Blocks.version``: the peeled rest's
        and the sparse lower build's copies of ``A_rr``) or took at set-up
        (the closed-form ``q1 = 2`` arrays and the one-column patterns'
        ``Z1'WZ1``).
        """
        b, ev = self.b, self.ev
        q1, m1 = b.b1.q, b.b1.m
        N2, nre2 = b.N2, b.nre2
        tab = self._tab
        v = np.bincount(tab.target, w[tab.obs] * tab.prod, minlength=tab.size)
        nA, nC = m1 * q1 * q1, b.y_pairs.start * q1
        b.A11[...] = v[:nA].reshape(m1, q1, q1)
        b.C[: b.y_pairs.start] = v[nA:nA + nC].reshape(-1, q1)
        b.Arr[:nre2, :nre2] = v[nA + nC:].reshape(nre2, nre2)
        X = self._X
        Xw = X * w[:, None]
        RX = self._Wrt @ Xw
        b.Arr[:nre2, nre2:N2 - 1] = RX
        b.Arr[nre2:N2 - 1, :nre2] = RX.T
        b.Arr[nre2:N2 - 1, nre2:N2 - 1] = X.T @ Xw
        # the response's row: Z1'Wz per level, W'Wz, z'Wz (Blocks.set_response's, weighted)
        wz = w * z
        Cy = np.bincount(self._tY, (wz[:, None] * self._Z1).ravel(), minlength=m1 * q1)
        b.C[b.y_pairs] = Cy.reshape(m1, q1)[b.y_levels]
        wy = self._Wt @ wz
        b.Arr[-1, :-1] = wy
        b.Arr[:-1, -1] = wy
        b.Arr[-1, -1] = float(wz @ z)
        b.y = wz
        if b.patterns is not None:
            b.patterns = [Pattern(p.levels, p.cols, b.A11[p.levels][:, p.cols][:, :, p.cols],
                                  p.flat) for p in b.patterns]
            ev._scalar_pat = scalar_patterns(b.patterns)
        schur = b.schur
        if isinstance(schur, DenseSchur):
            schur.Cd.reshape(-1)[self._cd] = b.C.reshape(-1)
            for Cg, pat in zip(schur.Cg, b.patterns or (), strict=True):
                Cg[...] = schur.Cd[:, pat.levels][:, :, pat.cols]
        else:
            assert isinstance(schur, SparseSchur) and self._sparse is not None
            i1, i2 = self._sparse
            Cf = b.C.reshape(-1)
            np.multiply(Cf[i1], Cf[i2], out=schur.V.data)
        if ev._diag2 is not None:
            A11, Cd = b.A11, schur.Cd                       # type: ignore[union-attr]
            ev._diag2 = (A11[:, 0, 0].copy(), A11[:, 1, 0].copy(), A11[:, 1, 1].copy(),
                         Cd[:, :, 0], Cd[:, :, 1], ev._diag2[5])
        b.version += 1

    def solve(self, theta: np.ndarray) -> NativeStep:
        """Factor at ``theta`` and solve: the step's ``u``, ``beta`` and ``log |L|^2``.

        ``numpy.linalg.LinAlgError`` when the system is not positive definite.
        """
        ev = self.ev
        f = ev.factor(np.asarray(theta, dtype=float))
        if not f.ok:
            raise np.linalg.LinAlgError("the weighted system is not positive definite")
        return NativeStep(self.spherical_modes(f), ev.beta(f) if self.b.p else np.zeros(0),
                          f.ldL2, f)

    def spherical_modes(self, f: Factor) -> np.ndarray:
        """``u`` (block 1's levels, then the rest's, as :class:`~.blocked.BlockedLayout`)."""
        ev, b = self.ev, self.b
        b1, N2 = b.b1, b.N2
        v = ev.solve_v(f)
        zr = np.zeros(N2)
        for blk, off in b.rest:                  # Lambda_r v on the rest's random effects
            s = slice(off, off + blk.m * blk.q)
            zr[s] = (v[s].reshape(blk.m, blk.q) @ blk.lam(f.theta).T).ravel()
        zr[b.nre2:N2 - 1] = v[b.nre2:]
        # t = E_y - E' (Lambda_r v, beta) per level of block 1 (E: per pair, ev.E)
        zr[N2 - 1] = -1.0
        q1 = b1.q
        t = np.bincount(self._tE, (ev.E(f) * -zr[b.pair_row][:, None]).ravel(),
                        minlength=b1.m * q1).reshape(b1.m, q1)
        L1 = ev._L1(f)
        u1 = t[:, 0] / L1[:, 0, 0] if q1 == 1 else \
            np.linalg.solve(np.swapaxes(L1, 1, 2), t[:, :, None])[:, :, 0].ravel()
        return np.concatenate([u1, v[:b.nre2]])


class _Table(NamedTuple):
    """Every weighted product ``Z1'WZ1 | W'Z1 | W_re'W W_re`` as ``bincount`` input: each
    entry's target (offset into the three), observation and unweighted product."""

    target: np.ndarray
    obs: np.ndarray
    prod: np.ndarray
    size: int


def _product_table(b: Blocks, Z1: np.ndarray,
                   entries: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _Table:
    """The :class:`_Table` of ``b``'s layout with the true numbers: block 1's ``Z1`` and the
    rest's non-zeros (:func:`_rest_entries`)."""
    n, q1, m1, nre2 = b.n, b.b1.q, b.b1.m, b.nre2
    codes1 = b.b1.codes
    # block 1's Z1'WZ1, both halves
    ab = np.arange(q1 * q1)
    tA = (codes1[:, None] * (q1 * q1) + ab[None, :]).ravel()
    pA = (Z1[:, ab // q1] * Z1[:, ab % q1]).ravel()
    # W'Z1 per (rest row, block-1 level) pair, in the fitter's pair order (y's pairs last)
    r_obs, r_col, r_val = entries
    n_pairs = b.y_pairs.start
    ukeys = b.pair_row[:n_pairs].astype(np.int64) * m1 + b.pair_lev[:n_pairs]
    inv = np.searchsorted(ukeys, r_col.astype(np.int64) * m1 + codes1[r_obs])
    tC = (inv[:, None] * q1 + np.arange(q1)[None, :]).ravel()
    pC = (r_val[:, None] * Z1[r_obs]).ravel()
    # the rest's random-effects block: every pair of non-zeros within an observation's row
    re = r_col < nre2
    Wr = sp.csr_matrix((r_val[re], (r_obs[re], r_col[re])), shape=(n, nre2))
    Wr.sort_indices()
    cnt = np.diff(Wr.indptr)
    i_obs = np.repeat(np.arange(n), cnt * cnt)
    start = np.repeat(Wr.indptr[:-1], cnt * cnt)
    k = np.arange(i_obs.size) - np.repeat(np.cumsum(cnt * cnt) - cnt * cnt, cnt * cnt)
    kk = np.repeat(cnt, cnt * cnt)
    j1, j2 = start + k // kk, start + k % kk
    tR = Wr.indices[j1].astype(np.int64) * nre2 + Wr.indices[j2]
    pR = Wr.data[j1] * Wr.data[j2]
    nA, nC = m1 * q1 * q1, n_pairs * q1
    return _Table(np.concatenate([tA, nA + tC, nA + nC + tR]),
                  np.concatenate([np.repeat(np.arange(n), q1 * q1), np.repeat(r_obs, q1), i_obs]),
                  np.concatenate([pA, pC, pR]), nA + nC + nre2 * nre2)


def _structural(b: Blocks) -> np.ndarray:
    """Structural non-zeros of ``C`` (:func:`~nlpower.lmm.native.blocks.build_blocks`'s)."""
    q1, m1 = b.b1.q, b.b1.m
    structural = b.C != 0
    zpat = np.column_stack([np.bincount(b.b1.codes, np.abs(b.b1.Z[:, c]), minlength=m1) > 0
                            for c in range(q1)])
    structural[b.y_pairs] = zpat[b.y_levels]
    return structural


def _generic(spec: ModelSpec) -> ModelSpec:
    """``spec``'s rows scaled by fixed random weights, and a non-constant response."""
    s = np.sqrt(np.random.default_rng(20261129).uniform(0.5, 1.5, spec.n))
    terms = tuple(dataclasses.replace(t, Z=np.asarray(t.Z, dtype=float) * s[:, None])
                  for t in spec.re_terms)
    return dataclasses.replace(spec, X=np.asarray(spec.X, dtype=float) * s[:, None],
                               re_terms=terms, y=s * np.arange(spec.n, dtype=float))
