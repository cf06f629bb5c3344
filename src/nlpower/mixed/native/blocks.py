"""Model structure -> blocked cross-products for the profiled deviance.

Stage 2 of a native fit (after the formula layer's :class:`ModelSpec`):
order the random-effects terms as lme4 does, amalgamate terms that share a
grouping factor (MixedModels.jl's ``amalgamate``), order the grouping blocks
by size and precompute every cross-product the deviance needs, once.

Layout (see ``docs/engine.md``)::

    [ block 1 | blocks 2..k | X | y ]

Block 1 (the largest, levels x columns) stays block diagonal: its
``Z1'Z1`` is a stack ``A11`` of ``(m1, q1, q1)`` matrices.  Everything else
("the rest", ``N2`` columns) is treated densely: ``Arr`` holds ``W'W`` for
``W = [Z_2 .. Z_k  X  y]``.  The cross-product of the rest with block 1,
``W'Z1``, is sparse; it is stored as a list of (rest row, block-1 level)
pairs, each with a dense ``q1``-vector (``C``), sorted in CSR order.

A new response changes only the ``y`` row of ``C``, the ``y`` row/column of
``Arr`` -- ``O(n)`` work, see :meth:`Blocks.set_response`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import scipy.sparse as sp

from ..layout import ThetaLayout
from ..relfactor import block_index, fill_factor
from .memory import check_memory

if TYPE_CHECKING:
    from ...lmm.structure import ModelSpec


@dataclass(eq=False)
class GroupBlock:
    """All random-effects terms of one grouping factor, amalgamated.

    ``Lambda`` is block diagonal (one lower-triangular block per term); it is
    filled from ``theta`` by ``Lambda.flat[lam_idx] = theta[theta_idx]``.
    """

    group: str
    codes: np.ndarray          # (n,) level of each observation
    levels: tuple[str, ...]
    Z: np.ndarray              # (n, q) raw columns of all the group's terms
    cnames: tuple[str, ...]
    term_index: tuple[int, ...]  # indices into ThetaLayout.terms
    term_q: tuple[int, ...]    # columns of each of those terms (consecutive in Z)
    lam_idx: np.ndarray
    theta_idx: np.ndarray
    diagonal: bool             # every term is scalar -> Lambda is diagonal

    @property
    def m(self) -> int:
        return len(self.levels)

    @property
    def q(self) -> int:
        return self.Z.shape[1]

    def lam(self, theta: np.ndarray) -> np.ndarray:
        return fill_factor(theta, self.lam_idx, self.theta_idx, self.q)


def group_blocks(layout: ThetaLayout) -> list[GroupBlock]:
    """Amalgamate terms by grouping factor; order blocks by ``m * q`` descending."""
    by_group: dict[str, list[int]] = {}
    for k, t in enumerate(layout.terms):
        by_group.setdefault(t.group, []).append(k)
    blocks = []
    for group, idx in by_group.items():
        first = layout.terms[idx[0]]
        for k in idx[1:]:
            other = layout.terms[k]
            if other.levels != first.levels or not np.array_equal(other.codes, first.codes):
                raise ValueError(f"random-effects terms for {group!r} disagree on the grouping levels")
        lam_idx, theta_idx = block_index([layout.terms[k].q for k in idx],
                                         [layout.term_offsets[k] for k in idx])
        blocks.append(GroupBlock(
            group=group,
            codes=np.asarray(first.codes, dtype=np.intp),
            levels=tuple(first.levels),
            Z=np.column_stack([np.asarray(layout.terms[k].Z, dtype=float) for k in idx]),
            cnames=tuple(c for k in idx for c in layout.terms[k].cnames),
            term_index=tuple(idx),
            term_q=tuple(layout.terms[k].q for k in idx),
            lam_idx=lam_idx,
            theta_idx=theta_idx,
            diagonal=all(layout.terms[k].q == 1 for k in idx),
        ))
    # stable sort: ties keep lme4's order
    blocks.sort(key=lambda b: -b.m * b.q)
    return blocks


class Pattern(NamedTuple):
    """Block-1 levels that share their active (not identically zero) columns.

    When some level of block 1 has fewer than ``q1`` active columns (e.g.
    items nested in systems with ``(system || item)``), the levels are
    grouped by their active columns and block 1 is factored on those only.
    """

    levels: np.ndarray         # (m_g,) block-1 levels of the pattern
    cols: np.ndarray           # (k,) their active columns
    A: np.ndarray              # (m_g, k, k) Z1'Z1 restricted to the active columns
    flat: np.ndarray           # flat positions of the (m_g, k, k) entries in (m1, q1, q1)


@dataclass(eq=False)
class DenseSchur:
    """Dense Schur strategy (small ``N2``): ``C = W'Z1`` as an ``(N2, m1, q1)`` array.

    ``S = sum_l C_l W_l C_l'`` is then a batched product and one GEMM.  With
    patterns, ``Cg`` holds ``C`` restricted to each pattern's levels and
    active columns (``(N2, m_g, k)``), else it is empty.
    """

    Cd: np.ndarray
    Cg: list[np.ndarray]

    def set_response(self, blocks: Blocks) -> None:
        """Copy the new ``y`` row of ``C`` in."""
        self.Cd[-1, blocks.y_levels, :] = blocks.C[blocks.y_pairs]
        for Cg, pat in zip(self.Cg, blocks.patterns or (), strict=True):
            Cg[-1] = self.Cd[-1][np.ix_(pat.levels, pat.cols)]


@dataclass(eq=False)
class SparseSchur:
    """Sparse Schur strategy (large ``N2``, e.g. InstEval).

    ``S``'s lower triangle is a sparse matrix ``V`` (rows: the ``(i, k)``
    entries of ``S``; columns: the ``(l, a, b)`` entries of ``W``) times
    ``vec(W)`` -- one SpMV per evaluation, the products ``C[i,l,a] C[k,l,b]``
    precomputed.  ``ypos``: the entries of ``V.data`` that involve the ``y``
    row, with the pairs ``p1``, ``p2`` and columns ``a``, ``b`` of their
    products (recomputed by :meth:`set_response`); ``S_lo`` / ``S_up``: the
    flat positions ``i*N2 + k`` / ``k*N2 + i`` of each row of ``V`` in ``S``
    (``S_up`` for the off-diagonal rows, ``S_off``).
    """

    V: sp.csr_matrix
    p1: np.ndarray
    a: np.ndarray
    p2: np.ndarray
    b: np.ndarray
    ypos: np.ndarray
    S_lo: np.ndarray
    S_up: np.ndarray
    S_off: np.ndarray
    #: for callers that re-form ``C`` (new weights): the flat positions in ``C`` of the two
    #: factors of every entry of ``V.data`` (built on request, :func:`blocks_from`)
    positions: tuple[np.ndarray, np.ndarray] | None = None

    def set_response(self, blocks: Blocks) -> None:
        """Recompute the products that involve the ``y`` row."""
        C = blocks.C
        self.V.data[self.ypos] = C[self.p1, self.a] * C[self.p2, self.b]


@dataclass(eq=False)
class Blocks:
    """Precomputed cross-products (see the module docstring for the layout).

    The Schur complement needs ``S = sum_l C_l' W_l C_l`` with
    ``W_l = Lambda1 (Lambda1' A11_l Lambda1 + I)^{-1} Lambda1'``, by the
    strategy ``schur``: :class:`DenseSchur` or :class:`SparseSchur` (chosen
    by estimated cost, see :func:`build_blocks`); ``patterns`` groups the
    levels of block 1 by their active columns when some level lacks one.
    """

    n: int
    p: int
    blocks: list[GroupBlock]
    b1: GroupBlock
    A11: np.ndarray            # (m1, q1, q1)  Z1'Z1 per level
    rest: list[tuple[GroupBlock, int]]  # blocks 2..k with their column offset in the rest
    N2: int                    # number of rest columns (incl. X and y)
    nre2: int                  # random-effects columns in the rest
    W: sp.csc_matrix           # (n, N2-1) rest columns except y
    Arr: np.ndarray            # (N2, N2)  W'W incl. y
    pair_row: np.ndarray       # (P,) rest row of each pair
    pair_lev: np.ndarray       # (P,) block-1 level of each pair
    C: np.ndarray              # (P, q1) W'Z1 per pair
    y_pairs: slice             # pairs of the y row
    y_levels: np.ndarray       # block-1 levels of the y pairs
    indptr: np.ndarray         # CSR structure of E (N2 x m1*q1), pairs in order
    indices: np.ndarray
    y: np.ndarray
    use_dense: bool            # the Schur strategy: DenseSchur (True) or SparseSchur
    patterns: list[Pattern] | None = None   # None: every level of block 1 has all q1 columns
    version: int = 0                        # incremented by every set_response
    _schur: DenseSchur | SparseSchur | None = None
    # builds the SparseSchur on first use (a partial of a module function: picklable)
    schur_build: Callable[[], SparseSchur] | None = None

    @property
    def schur(self) -> DenseSchur | SparseSchur:
        """The Schur strategy's products, built on first use: the paths that never read
        them (grouped levels with a lead, e.g. ``(1 | item) + (1 | item:system)``) do not
        pay for them."""
        if self._schur is None:
            assert self.schur_build is not None
            self._schur = self.schur_build()
        return self._schur

    def set_response(self, y: np.ndarray) -> None:
        """Swap the response: recompute ``Z1'y``, ``W'y``, ``y'y`` (O(n))."""
        b1 = self.b1
        for c in range(b1.q):
            self.C[self.y_pairs, c] = np.bincount(b1.codes, y * b1.Z[:, c], minlength=b1.m)[self.y_levels]
        wy = self.W.T @ y
        self.Arr[-1, :-1] = wy
        self.Arr[:-1, -1] = wy
        self.Arr[-1, -1] = float(y @ y)
        if self._schur is not None:       # else built later from the current C
            self._schur.set_response(self)
        self.y = y
        self.version += 1


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` by a sort: numpy 2.3+ finds the distinct values of an integer
    array by hashing when no index is asked for, ~70x slower than sorting on 10^7 keys
    (17 s against 0.25 s) and ~5x on 10^4."""
    s = np.sort(a, axis=None)
    keep = np.empty(s.size, dtype=bool)
    keep[:1] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


# the dense (N2, m1, q1) array must stay below this many entries; the sparse
# product matrix V is only built (in "auto" mode) below this many nonzeros
_DENSE_MAX_ENTRIES = 2e7
_SPARSE_MAX_NNZ = 4e7
# the scalar path's lookup table over the N2^2 entries of S: at most this many entries
_TABLE_MAX = 1.6e7


def _positions(i1: np.ndarray, i2: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """:attr:`SparseSchur.positions`, as 32-bit integers where they fit (half the memory)."""
    dt = np.int32 if size < 2**31 else np.int64
    return i1.astype(dt), i2.astype(dt)


def _scalar_sparse_S(b1: GroupBlock, N2: int, pair_row: np.ndarray, C: np.ndarray,
                     p1: np.ndarray, p2: np.ndarray, seg_lev: np.ndarray, seg_len: np.ndarray,
                     positions: bool = False) -> SparseSchur:
    """:class:`SparseSchur` for a scalar block 1 (``q1 = 1``, e.g. InstEval's students).

    The products come level by level (segments ``seg_lev``, ``seg_len`` long).
    Each one's row of ``V`` is found in a lookup table over the ``N2^2``
    entries of ``S`` (no sort of the ~10^6 keys), and ``V`` is the transpose
    of the (segment x row) matrix -- scipy's counting transpose, no comparison
    sort and no duplicate summing (there are none: a level has one product
    per pair of its rows).  Same ``V`` as the general path, with the columns
    of a row unsorted.
    """
    key = pair_row[p1].astype(np.int64) * N2 + pair_row[p2]
    c0 = np.ascontiguousarray(C[:, 0])
    data0 = c0[p1] * c0[p2]
    mark = np.zeros(N2 * N2, dtype=bool)
    mark[key] = True
    ukey = np.flatnonzero(mark)
    table = np.empty(N2 * N2, dtype=np.int64)
    table[ukey] = np.arange(ukey.size)
    seg_ptr = np.concatenate([[0], np.cumsum(seg_len)]).astype(np.int64)
    # positions from 1 carried through the transpose (the conversion drops explicit zeros)
    Vt = sp.csr_matrix((np.arange(1, key.size + 1, dtype=float), table[key], seg_ptr),
                       shape=(seg_lev.size, ukey.size))
    Vc = Vt.T.tocsr()
    perm = Vc.data.astype(np.int64) - 1
    V = sp.csr_matrix((data0[perm], seg_lev[Vc.indices], Vc.indptr), shape=(ukey.size, b1.m))
    V.has_sorted_indices = False
    yrow = N2 - 1
    r0 = int(np.searchsorted(ukey, yrow * N2))
    ypos = np.arange(int(V.indptr[r0]), int(V.indptr[-1]))
    py = perm[ypos]
    zero = np.zeros(py.size, dtype=np.int64)
    i, k = ukey // N2, ukey % N2
    off = i != k
    return SparseSchur(V=V, p1=p1[py], a=zero, p2=p2[py], b=zero, ypos=ypos,
                       S_lo=ukey, S_up=(k * N2 + i)[off], S_off=off,
                       positions=_positions(p1[perm], p2[perm], C.size) if positions else None)


def _level_products(pair_lev: np.ndarray, structural: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every product ``C[p1, a] C[p2, b]`` of structural nonzeros within a level, ``p2 <= p1``.

    The structural nonzeros ("atoms" ``(pair, column)``) are listed level by
    level, pairs in increasing rest row (CSR order, stable sort); atom ``x``
    pairs with every atom of its level from the first up to the last of its
    own pair, so the products are the lower triangle ``row(p1) >= row(p2)``
    with all ``(a, b)`` on the diagonal pairs.  Their number is what ``V``
    stores -- nothing of size ``levels x q1^2`` is formed.
    """
    ap, aa = np.nonzero(structural)                   # atoms in (pair, column) order
    order = np.argsort(pair_lev[ap], kind="stable")
    ap, aa = ap[order], aa[order]
    n_at = ap.size
    lev = pair_lev[ap]
    new_lev = np.ones(n_at, dtype=bool)
    new_lev[1:] = lev[1:] != lev[:-1]
    lev_start = np.maximum.accumulate(np.where(new_lev, np.arange(n_at), 0))
    last_of_pair = np.ones(n_at, dtype=bool)
    last_of_pair[:-1] = ap[1:] != ap[:-1]
    pair_end = np.minimum.accumulate(np.where(last_of_pair, np.arange(n_at), n_at)[::-1])[::-1] + 1
    cnt = (pair_end - lev_start).astype(np.int64)
    x = np.repeat(np.arange(n_at), cnt)
    first = np.repeat(np.cumsum(cnt) - cnt, cnt)
    y = np.repeat(lev_start, cnt) + (np.arange(x.size) - first)
    return ap[x], aa[x], ap[y], aa[y]


def _build_sparse_S(b1: GroupBlock, N2: int, pair_row: np.ndarray, pair_lev: np.ndarray,
                    C: np.ndarray, structural: np.ndarray, positions: bool = False
                    ) -> SparseSchur:
    """Precompute ``V`` (see :class:`SparseSchur`) from the pairs."""
    q1 = b1.q
    if q1 == 1 and N2 * N2 <= _TABLE_MAX:
        # within a level the pairs are in increasing rest row (CSR order, stable sort), so
        # the products with row(p1) >= row(p2) are the lower triangle ia >= ib of each level
        order = np.argsort(pair_lev, kind="stable")
        lev_sorted = pair_lev[order]
        _, starts, sizes = np.unique(lev_sorted, return_index=True, return_counts=True)
        # levels grouped by their number of pairs: one tril_indices per distinct size
        p1_parts, p2_parts = [], []
        for size in np.unique(sizes):
            base = starts[sizes == size][:, None]
            ii, kk = np.tril_indices(int(size))
            p1_parts.append(order[(base + ii).ravel()])
            p2_parts.append(order[(base + kk).ravel()])
        seg_lev = np.concatenate([lev_sorted[starts[sizes == size]] for size in np.unique(sizes)])
        seg_len = np.concatenate([np.full(int(np.sum(sizes == size)), size * (size + 1) // 2)
                                  for size in np.unique(sizes)])
        return _scalar_sparse_S(b1, N2, pair_row, C, np.concatenate(p1_parts),
                                np.concatenate(p2_parts), seg_lev, seg_len, positions)
    P1, A, P2, B = _level_products(pair_lev, structural)
    key = pair_row[P1].astype(np.int64) * N2 + pair_row[P2]
    col = pair_lev[P1] if q1 == 1 else pair_lev[P1].astype(np.int64) * (q1 * q1) + A * q1 + B
    # the products in generation order (one gather of the permutation below instead of
    # four random gathers of 10^6-element arrays afterwards)
    if q1 == 1:
        c0 = np.ascontiguousarray(C[:, 0])
        data0 = c0[P1] * c0[P2]
    else:
        data0 = C[P1, A] * C[P2, B]
    # CSR over all N2^2 entries of S by a counting sort (no comparison sort: InstEval has
    # ~10^6 products); the data carry the products' positions, then empty rows are dropped
    # (positions from 1: the conversion drops explicit zeros)
    big = sp.csr_matrix((np.arange(1, key.size + 1, dtype=float), (key, col)),
                        shape=(N2 * N2, b1.m * q1 * q1))
    perm = big.data.astype(np.int64) - 1
    used = np.flatnonzero(np.diff(big.indptr))
    indptr = np.concatenate([[0], np.cumsum(np.diff(big.indptr)[used])])
    ukey = used
    V = sp.csr_matrix((data0[perm], big.indices, indptr), shape=(ukey.size, b1.m * q1 * q1))
    yrow = N2 - 1
    # rows are ordered i >= k, so a product involves y iff its row i is y's: the rows of
    # V are sorted by i * N2 + k, so those are its last rows
    r0 = int(np.searchsorted(ukey, yrow * N2))
    ypos = np.arange(int(indptr[r0]), int(indptr[-1]))
    py = perm[ypos]
    i, k = ukey // N2, ukey % N2
    off = i != k
    pos = None
    if positions:
        P1, A, P2, B = P1[perm], A[perm], P2[perm], B[perm]
        pos = _positions(P1 * q1 + A, P2 * q1 + B, C.size)
    return SparseSchur(V=V, p1=P1[py] if pos is None else P1[ypos], a=A[py] if pos is None
                       else A[ypos], p2=P2[py] if pos is None else P2[ypos],
                       b=B[py] if pos is None else B[ypos], ypos=ypos, S_lo=i * N2 + k,
                       S_up=(k * N2 + i)[off], S_off=off, positions=pos)


def _patterns(A11: np.ndarray) -> list[Pattern] | None:
    """Block-1 levels grouped by their active columns, or ``None`` if every level has all."""
    q1 = A11.shape[1]
    active = np.diagonal(A11, axis1=1, axis2=2) > 0          # (m1, q1)
    if active.all():
        return None
    keys_p = active.astype(np.int64) @ (1 << np.arange(q1, dtype=np.int64))
    pats = []
    for key in np.unique(keys_p):
        lev = np.flatnonzero(keys_p == key)
        cols = np.flatnonzero(active[lev[0]])
        sub = A11[lev][:, cols][:, :, cols]
        flat = (lev[:, None, None] * (q1 * q1) + cols[None, :, None] * q1
                + cols[None, None, :]).ravel()
        pats.append(Pattern(lev, cols, sub, flat))
    return pats


def _scatter(A: np.ndarray, P: sp.spmatrix) -> None:
    """``A[:m, :n] = P`` for a sparse product ``P`` (no duplicates) into zeros, by its
    nonzeros: no dense temporary (sys20: 61,681 of 1.4 million entries)."""
    P = P.tocoo()
    A[P.row, P.col] = P.data


def _cross_products(W: sp.csc_matrix, X: np.ndarray, nre2: int) -> np.ndarray:
    """``Arr``: ``W'W`` as a dense ``N2 x N2`` array (its ``y`` row and column are filled
    by :meth:`Blocks.set_response`).

    The random-effects columns' products sparse; ``X``'s by dense products when its
    entries are integers (factor codings: every partial sum is exact, so the numbers are
    the sparse product's), ~5x faster on ``sys20``'s 20 columns; else all sparse.
    """
    N2 = W.shape[1] + 1
    Arr = np.zeros((N2, N2))
    if X.shape[1] == 0 or not nre2 or not np.array_equal(X, np.round(X)):
        _scatter(Arr, W.T @ W)
        return Arr
    Wre = W[:, :nre2]
    _scatter(Arr, Wre.T @ Wre)
    WX = Wre.T @ X
    Arr[:nre2, nre2:-1] = WX
    Arr[nre2:-1, :nre2] = WX.T
    Arr[nre2:-1, nre2:-1] = X.T @ X
    return Arr


def build_blocks(spec: ModelSpec, layout: ThetaLayout, mode: str = "auto") -> Blocks:
    """All the cross-products of the structure (once per model).

    ``mode``: ``"auto"`` (by estimated cost), ``"dense"`` or ``"sparse"``
    (the Schur-complement strategy; both give the same numbers).
    """
    return blocks_from(group_blocks(layout), np.asarray(spec.X, dtype=float),
                       np.asarray(spec.y, dtype=float), mode, spec)


def blocks_from(blocks: list[GroupBlock], X: np.ndarray, y: np.ndarray, mode: str = "auto",
                spec: ModelSpec | None = None, positions: bool = False) -> Blocks:
    """:func:`build_blocks` from the grouping blocks, ``X`` and ``y`` (``spec``: the model the
    memory check names when it refuses; without it there is no check; ``positions``: the
    sparse Schur products keep :attr:`SparseSchur.positions`)."""
    n, p = X.shape
    b1 = blocks[0]
    m1, q1 = b1.m, b1.q
    A11 = np.empty((m1, q1, q1))
    for a in range(q1):
        for b in range(a, q1):
            v = np.bincount(b1.codes, b1.Z[:, a] * b1.Z[:, b], minlength=m1)
            A11[:, a, b] = v
            A11[:, b, a] = v

    # rest columns: blocks 2..k, then X, then y
    rest = []
    off = 0
    rows_i, cols_i, vals_i = [], [], []
    obs = np.arange(n)
    for blk in blocks[1:]:
        rest.append((blk, off))
        for c in range(blk.q):
            v = blk.Z[:, c]
            nz = v != 0
            rows_i.append(obs[nz])
            cols_i.append(off + blk.codes[nz] * blk.q + c)
            vals_i.append(v[nz])
        off += blk.m * blk.q
    nre2 = off
    xc, xr = np.nonzero(X.T)                  # X's nonzeros column by column
    rows_i.append(xr)
    cols_i.append(nre2 + xc)
    vals_i.append(X[xr, xc])
    N2 = nre2 + p + 1
    r_obs = np.concatenate(rows_i)
    r_col = np.concatenate(cols_i)
    r_val = np.concatenate(vals_i)
    W = sp.csc_matrix((r_val, (r_obs, r_col)), shape=(n, N2 - 1))
    Arr = _cross_products(W, X, nre2)

    # pairs (rest row, block-1 level) in CSR order; the y row gets every level
    y_levels = np.flatnonzero(np.bincount(b1.codes, minlength=m1))   # (np.unique: a hash)
    keys = np.concatenate([r_col.astype(np.int64) * m1 + b1.codes[r_obs],
                           (N2 - 1) * np.int64(m1) + y_levels])
    uniq, inv = np.unique(keys, return_inverse=True)
    pair_row = (uniq // m1).astype(np.intp)
    pair_lev = (uniq % m1).astype(np.intp)
    P = uniq.size
    C = np.zeros((P, q1))
    inv_w = inv[: r_obs.size]
    for c in range(q1):
        C[:, c] = np.bincount(inv_w, r_val * b1.Z[r_obs, c], minlength=P)
    y_pairs = slice(P - y_levels.size, P)
    # structural nonzeros of C: numeric for the fixed rows, Z1's pattern for y
    structural = C != 0
    zpat = np.column_stack([np.bincount(b1.codes, np.abs(b1.Z[:, c]), minlength=m1) > 0
                            for c in range(q1)])
    structural[y_pairs] = zpat[y_levels]

    counts = np.bincount(pair_row, minlength=N2) * q1
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = (pair_lev[:, None] * q1 + np.arange(q1)[None, :]).ravel()

    # nonzeros of V: per level, (structural entries of C)^2 / 2
    cnt = np.bincount(pair_lev, structural.sum(axis=1), minlength=m1)
    nnz_est = float(np.sum(cnt * (cnt + 1) / 2.0))
    dense_flops = float(N2) * N2 * m1 * q1
    dense_ok = m1 * N2 * q1 <= _DENSE_MAX_ENTRIES
    if mode == "auto":
        # dense GEMM runs ~20x faster per flop than a sparse mat-vec per nonzero
        use_dense = dense_ok and (dense_flops / 20.0 <= nnz_est or nnz_est > _SPARSE_MAX_NNZ)
    else:
        use_dense = mode == "dense"
    if spec is not None:
        check_memory(spec, b1, N2, nnz_est, use_dense)
    patterns = _patterns(A11) if q1 > 1 else None
    dense, build = None, None
    if use_dense:
        Cd = np.zeros((N2, m1, q1))
        Cd[pair_row, pair_lev, :] = C
        dense = DenseSchur(Cd=Cd, Cg=[np.ascontiguousarray(Cd[:, pat.levels][:, :, pat.cols])
                                      for pat in patterns or ()])
    else:
        build = partial(_build_sparse_S, b1, N2, pair_row, pair_lev, C, structural, positions)
    out = Blocks(
        n=n, p=p, blocks=blocks, b1=b1, A11=A11, rest=rest, N2=N2, nre2=nre2, W=W, Arr=Arr,
        pair_row=pair_row, pair_lev=pair_lev, C=C, y_pairs=y_pairs, y_levels=y_levels,
        indptr=indptr, indices=indices, y=y, use_dense=use_dense, patterns=patterns,
        _schur=dense, schur_build=build,
    )
    out.set_response(y)
    return out
