"""The factor of "the rest": dense ``dpotrf``, or sparse levels peeled off first.

After block 1 is eliminated, the rest of the blocked Cholesky (:mod:`.deviance`)
factors the ``N2 x N2`` Schur complement ``M`` (random-effects columns of blocks
2..k, then ``X``, then ``y``).  Its random-effects part is often sparse: in a
sparse crowd design an item shares a worker with only a few other items.  Then
most of the factorisation can be done the way block 1 is: a set of levels
(an item's ``q`` columns each) that are pairwise *not* coupled is eliminated
at once, as a batch of ``q x q`` Cholesky factors -- block diagonal, like block
1 -- and their Schur complement updates touch only their few neighbours.
Repeating this on the reduced graph (with the fill it created) peels the
sparse periphery level by level; what remains (the coupled core, then ``X``
and ``y``) is factored densely by ``dpotrf``.

The symbolic analysis -- which levels are peeled in which round, their
neighbours, the positions of every gather and update -- is done once per
structure (:func:`peel_plan`); an evaluation runs a fixed sequence of batched
numpy operations and one small ``dpotrf``.  Each round picks greedily, by
increasing degree, levels of degree at most :func:`peel_max_degree` no two of which
are coupled (an independent set of the graph of the remaining levels); the
elimination couples each one's neighbours (fill), as in any sparse Cholesky.
The plan is used when it shrinks the dense core to at most ``PEEL_MAX_CORE``
of the rest (a measured rule, see the constants).

The factor is that of the rest in the *peeled order* ``perm`` (peeled levels
round by round, then the core, then ``X``, ``y`` unchanged); the dense factor
of that permuted matrix (for the gradient and the conditional modes) is
assembled only on request (:meth:`PeelFactor.dense`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from .block1 import tri_inv
from .blocks import Blocks, sorted_unique

__all__ = ["PEEL_DEGREE_DIV", "PEEL_MAX_CORE", "PEEL_MAX_DEGREE", "PEEL_MIN_N", "PeelDirect",
           "PeelFactor", "PeelPlan", "peel_direct", "peel_factor", "peel_max_degree", "peel_plan",
           "selected_inverse"]

# Measured on one core (OpenBLAS, AMD EPYC, loaded machine): dpotrf(505) ~8 ms, (285) ~1.5 ms;
# a peeling round costs ~0.1-0.3 ms (a handful of batched numpy calls) plus one gather of
# the rest (N2^2 numbers).  So peel when the dense core shrinks to PEEL_MAX_CORE of N2 or
# less (its dpotrf to ~1/5), only for rests of PEEL_MIN_N columns or more, and only levels
# of degree PEEL_MAX_DEGREE or less (the padded batch grows with the square of the degree).
PEEL_MAX_CORE = 0.6
PEEL_MIN_N = 128
PEEL_MAX_DEGREE = 12
# ... and in larger rests up to N2 / PEEL_DEGREE_DIV: a level's padded batch costs ~r^2 (r its
# degree plus the border), the dense core saves ~N2^2 per column left out.  Measured on a
# 4,816-column rest (20 systems with (1 | worker:system), one evaluation): degree 12 peels
# 2,148 levels, core 2,668 columns, 0.42 s; 32: 3,152 levels, core 1,664, 0.14 s; 48: core
# 1,524, 0.15 s; 80: core 1,459, 0.24 s (the padding grows).  Below 1,536 columns: 12.
PEEL_DEGREE_DIV = 128
PEEL_MAX_ROUNDS = 8
PEEL_MIN_SHARE = 0.05      # a round must peel at least this share of the remaining levels
PEEL_CORE_DONE = 128       # no further round once the dense core has this many columns or fewer
_PLAN_TABLE_MAX = 6e7      # the plan's index table over (N2 + 1)^2 positions: at most this many


@dataclass(frozen=True, eq=False)
class PeelRound:
    """One round: ``npl`` levels of ``q`` columns, each with ``r`` (padded) later rows.

    All indices point into the plan's compact work vector (see :class:`PeelPlan`).
    """

    cols: np.ndarray      # (npl, q) positions (peeled order) of the levels' columns
    rows: np.ndarray      # (npl, r) positions of their neighbours' columns and the border
    pp: np.ndarray        # (npl, q, q) work indices of the levels' diagonal blocks
    rq: np.ndarray        # (npl, r, q) work indices of their later rows
    sel: np.ndarray       # entries of the (npl, r, r) update that are read later (lower triangle)
    uniq: np.ndarray      # work indices those entries update
    inv: np.ndarray       # (sel.size,) index into uniq of every selected update entry
    rr: np.ndarray        # (npl, r, r) work indices of the later rows' block (row >= column)


@dataclass(frozen=True, eq=False)
class PeelPlan:
    """Symbolic analysis (see the module docstring)."""

    N2: int
    perm: np.ndarray      # (N2,) original column at each position of the peeled order
    gather: np.ndarray    # (nw,) flat positions in M (lower triangle) of the work entries;
                          # the last two entries (a zero and a sink) read M's first entry
    rounds: tuple[PeelRound, ...]
    core: int             # first position of the dense core (core + X + y after it)
    core_idx: np.ndarray  # (nc, nc) work indices of the core block
    support: np.ndarray   # sorted flat positions (i (N2+1) + k, peeled order) of the work entries

    def index(self, a: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Work indices of the entries at peeled positions ``(a, c)`` (either orientation;
        a position ``N2`` reads the zero entry).  Entries must lie in the plan's pattern."""
        W = self.N2 + 1
        hi, lo = np.maximum(a, c), np.minimum(a, c)
        out = np.searchsorted(self.support, hi * W + lo)
        return np.where(hi == self.N2, self.support.size, out)

    @property
    def ipos(self) -> np.ndarray:
        """Position in the peeled order of every original column."""
        out = np.empty(self.N2, dtype=np.intp)
        out[self.perm] = np.arange(self.N2)
        return out


def _level_graph(b: Blocks) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
    """Adjacency of the rest's levels (nonzero off-diagonal blocks of ``M``), their columns."""
    nre2 = b.nre2
    starts, sizes = [], []
    for blk, off in b.rest:
        starts.append(off + blk.q * np.arange(blk.m))
        sizes.append(np.full(blk.m, blk.q))
    start = np.concatenate(starts)
    size = np.concatenate(sizes)
    nu = start.size
    unit_of_col = np.repeat(np.arange(nu), size)
    re = b.pair_row < nre2
    E = sp.csr_matrix((np.ones(int(re.sum())), (unit_of_col[b.pair_row[re]], b.pair_lev[re])),
                      shape=(nu, b.b1.m))
    # E E' and W'W are symmetric already
    U = (E @ E.T).tocsr()
    ai, ak = np.nonzero(b.Arr[:nre2, :nre2])
    U = U + sp.csr_matrix((np.ones(ai.size), (unit_of_col[ai], unit_of_col[ak])), shape=(nu, nu))
    return U, start, size


def _common_width(b: Blocks) -> int:
    """The width ``q`` of the most rest levels (the smallest on a tie)."""
    levels: dict[int, int] = {}
    for blk, _ in b.rest:
        levels[blk.q] = levels.get(blk.q, 0) + blk.m
    return min(levels, key=lambda q: (-levels[q], q))


def peel_max_degree(N2: int, q: int) -> int:
    """The largest degree of a level of ``q`` columns that is peeled in a rest of ``N2``
    columns (the padded batch grows with ``q^2``: wide levels stay at ``PEEL_MAX_DEGREE``)."""
    return max(PEEL_MAX_DEGREE, N2 // (PEEL_DEGREE_DIV * q * q))


def _few_low_degree(b: Blocks) -> bool:
    """The screen below without the graph (~2 ms instead of ~25 on InstEval).

    Levels of the rest that share a block-1 level are coupled, so a level's
    degree is at least the number of other levels in any of its block-1
    levels, and at least that of the levels it shares an observation with.
    When the levels whose lower bound is at most :func:`peel_max_degree` cannot
    shrink the core enough, neither can those of degree at most that.
    """
    nre2, m1 = b.nre2, b.b1.m
    size = np.concatenate([np.full(blk.m, blk.q) for blk, _ in b.rest])
    unit0 = np.concatenate([np.zeros(1, dtype=np.intp), np.cumsum([blk.m for blk, _ in b.rest])])
    unit_of_col = np.empty(nre2, dtype=np.intp)
    for j, (blk, off) in enumerate(b.rest):
        unit_of_col[off:off + blk.m * blk.q] = unit0[j] + np.arange(blk.m).repeat(blk.q)
    q = int(np.bincount(size).argmax())
    # first the levels it shares an observation with (W'W's nonzero columns outside its
    # own, over the widest level): sys20's segments, each rated by ~20 annotators
    # (though each segment:system level has only 1-2 of them), before the table below
    if int(size.max()) == 1:                  # one column per level: count W'W's rows
        n_obs = np.count_nonzero(b.Arr[:nre2, :nre2], axis=1)
    else:
        n_obs = np.logical_or.reduceat(b.Arr[:nre2, :nre2] != 0, np.cumsum(size) - size,
                                       axis=0).sum(axis=1)
    obs_bound = -(-(n_obs - size) // int(size.max()))
    few = (1.0 - PEEL_MAX_CORE) * b.N2
    dmax = peel_max_degree(b.N2, q)
    if float(size[(obs_bound <= dmax) & (size == q)].sum()) < few:
        return True
    if size.size * m1 > 5e7:                                     # no room for the table
        return False
    re = b.pair_row < nre2
    mark = np.zeros(size.size * m1, dtype=bool)                # (unit, level) pairs, sorted
    mark[unit_of_col[b.pair_row[re]].astype(np.int64) * m1 + b.pair_lev[re]] = True
    unit, lev = np.divmod(np.flatnonzero(mark), m1)
    per_level = np.bincount(lev, minlength=m1)                  # rest levels per block-1 level
    low_bound = np.zeros(size.size, dtype=np.int64)
    first = np.flatnonzero(np.diff(unit, prepend=-1))
    if first.size:
        low_bound[unit[first]] = np.maximum.reduceat(per_level[lev] - 1, first)
    low = (np.maximum(low_bound, obs_bound) <= dmax) & (size == q)
    return float(size[low].sum()) < few


def peel_plan(b: Blocks) -> PeelPlan | None:
    """The peeling plan of the rest, or ``None`` when the dense factor is as good."""
    N2, nre2 = b.N2, b.nre2
    if N2 < PEEL_MIN_N or not b.rest:
        return None
    # cheap screen before the graph: a dense Schur pattern (e.g. InstEval) cannot peel
    counts = np.bincount(b.pair_lev[b.pair_row < nre2], minlength=b.b1.m).astype(float)
    q = _common_width(b)                                # levels of this width are peeled
    dmax = peel_max_degree(N2, q)
    if float(np.sum(counts * counts)) > 2.0 * dmax * nre2 * nre2 / 4.0 + 1e6:
        return None
    if _few_low_degree(b):
        return None
    U, start, size = _level_graph(b)
    # screen: the levels of degree <= dmax now must hold enough columns to
    # shrink the core (elimination rarely lowers a degree); InstEval's lecturers do not
    deg = np.diff(U.indptr) - 1
    low = (deg <= dmax) & (size == q)
    if float(size[low].sum()) < (1.0 - PEEL_MAX_CORE) * N2:
        return None
    rounds_units, neigh, core_units = _elimination_rounds(U, size, q, N2 - nre2, dmax)
    n_core = int(size[core_units].sum()) + (N2 - nre2)
    if not rounds_units or n_core > PEEL_MAX_CORE * N2:
        return None
    # the peeled order: rounds, then the core, then X and y
    order_units = [u for P in rounds_units for u in P] + core_units
    perm = np.concatenate([start[u] + np.arange(size[u]) for u in order_units]
                          + [np.arange(nre2, N2)])
    pos = np.empty(N2, dtype=np.intp)
    pos[perm] = np.arange(N2)
    raw = _round_positions(rounds_units, neigh, start, size, pos, q, nre2, N2)
    return _compile_plan(raw, perm, n_core)


def _elimination_rounds(U: sp.csr_matrix, size: np.ndarray, q: int, n_fixed: int, dmax: int
                        ) -> tuple[list[list[int]], dict[int, list[int]], list[int]]:
    """Greedy rounds of independent levels of degree at most ``dmax`` (graph ``U``, ``size``
    columns each; ``n_fixed``: the ``X`` and ``y`` columns): ``(rounds, each peeled level's
    neighbours when it is eliminated, the core's levels)``."""
    adj = [set(U.indices[U.indptr[v]:U.indptr[v + 1]].tolist()) - {v}
           for v in range(size.size)]
    alive = set(range(size.size))
    rounds_units: list[list[int]] = []
    neigh: dict[int, list[int]] = {}
    for _ in range(PEEL_MAX_ROUNDS):
        if int(size[sorted(alive)].sum()) + n_fixed <= PEEL_CORE_DONE:
            break
        cand = sorted((v for v in alive if size[v] == q and len(adj[v]) <= dmax),
                      key=lambda v: (len(adj[v]), v))
        blocked: set[int] = set()
        P: list[int] = []
        for v in cand:
            if v in blocked:
                continue
            P.append(v)
            blocked |= adj[v]
            blocked.add(v)
        if not P or len(P) < PEEL_MIN_SHARE * len(alive):
            break
        for v in P:
            nb = adj[v]
            neigh[v] = sorted(nb)
            for a in nb:
                adj[a] |= nb
                adj[a].discard(a)
                adj[a].discard(v)
            alive.discard(v)
        rounds_units.append(P)
    return rounds_units, neigh, sorted(alive)


def _round_positions(rounds_units: list[list[int]], neigh: dict[int, list[int]],
                     start: np.ndarray, size: np.ndarray, pos: np.ndarray, q: int, nre2: int,
                     N2: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per round, the peeled levels' columns ``(npl, q)`` and the rows they couple to
    ``(npl, r)`` (their neighbours', then ``X`` and ``y``; padded with the scratch
    position ``N2``), all in the peeled order ``pos``."""
    scratch = N2
    border = np.arange(nre2, N2)
    raw = []
    for P in rounds_units:
        dmax = max(len(neigh[v]) for v in P)
        r = dmax * q + border.size
        cols = np.stack([pos[start[v] + np.arange(q)] for v in P])
        rows = np.full((len(P), r), scratch, dtype=np.intp)
        for i, v in enumerate(P):
            nc = [pos[start[u] + np.arange(size[u])] for u in neigh[v]]
            rr = np.concatenate(nc + [pos[border]]) if nc else pos[border]
            rows[i, :rr.size] = rr
        raw.append((cols, rows))
    return raw


def _compile_plan(raw: list[tuple[np.ndarray, np.ndarray]], perm: np.ndarray, n_core: int
                  ) -> PeelPlan:
    """The plan's compact work vector and each round's positions in it."""
    N2 = perm.size
    W = N2 + 1                                # positions in an (N2+1)^2 matrix, N2: scratch
    scratch = N2
    c0 = N2 - n_core
    cr = np.arange(c0, N2)
    core_flat = (cr[:, None] * W + cr[None, :]).ravel()
    # the compact work vector: every entry a round reads or updates, and the core
    pieces = [core_flat]
    for cols, rows in raw:
        pieces += [(cols[:, :, None] * W + cols[:, None, :]).ravel(),
                   (rows[:, :, None] * W + cols[:, None, :]).ravel(),
                   (rows[:, :, None] * W + rows[:, None, :]).ravel()]
    support = sorted_unique(np.concatenate(pieces))
    support = support[(support // W != scratch) & (support % W != scratch)]
    zero, sink = support.size, support.size + 1

    # each entry's index in the support: a lookup table over the (N2+1)^2 positions (int32,
    # half of Arr's bytes) where it fits, else a binary search (on a 4,816-column rest ~10^7
    # searches took ~1.3 s of the plan's ~2.4 s)
    table = None
    if W * W <= _PLAN_TABLE_MAX:
        table = np.zeros(W * W, dtype=np.int32)
        table[support] = np.arange(support.size, dtype=np.int32)

    def widx(flat: np.ndarray, scratch_to: int) -> np.ndarray:
        i, k = np.divmod(flat, W)
        out = (table[flat].astype(np.intp) if table is not None
               else np.searchsorted(support, flat))
        return np.where((i == scratch) | (k == scratch), scratch_to, out)

    rounds = []
    for cols, rows in raw:
        pp = widx(cols[:, :, None] * W + cols[:, None, :], zero)
        rq = widx(rows[:, :, None] * W + cols[:, None, :], zero)
        # only the lower triangle (row >= column) is read later: by the batched Cholesky
        # of a diagonal block, the later rows of a round, the core's dpotrf
        ri, ck = rows[:, :, None], rows[:, None, :]
        sel = np.flatnonzero(((ri >= ck) & (ri != scratch)).ravel())
        upd = widx(np.broadcast_to(ri * W + ck, (len(rows), rows.shape[1], rows.shape[1]))
                   .ravel()[sel], sink)
        uniq, inv = np.unique(upd, return_inverse=True)
        rr = widx(np.maximum(ri, ck) * W + np.minimum(ri, ck), zero)
        rounds.append(PeelRound(cols=cols, rows=rows, pp=pp, rq=rq, sel=sel, uniq=uniq, rr=rr,
                                inv=np.asarray(inv, dtype=np.intp).ravel()))
    # gather: work entry (i, k) = M[max(perm_i, perm_k), min(...)] (lower triangle valid)
    gi, gk = perm[support // W], perm[support % W]
    gather = np.concatenate([np.maximum(gi, gk) * N2 + np.minimum(gi, gk), [0, 0]])
    return PeelPlan(N2=N2, perm=perm, gather=gather, rounds=tuple(rounds), core=c0,
                    core_idx=widx(core_flat, zero).reshape(n_core, n_core), support=support)


@dataclass(eq=False)
class PeelFactor:
    """The factor at one ``theta``: per round ``(L_pp, K)`` and the dense core factor."""

    plan: PeelPlan
    parts: list[tuple[np.ndarray, np.ndarray]]   # per round: (npl, q, q) L_pp, (npl, r, q) K
    Lc: np.ndarray                               # dense lower factor of the core, X and y
    linv: list[np.ndarray] | None = None         # per round: (npl, q, q) L_pp^{-1}
    _dense: np.ndarray | None = None

    def solve_v(self) -> np.ndarray:
        """``v`` with ``L[:-1, :-1]' v = L[-1, :-1]``, in the original column order.

        Back substitution through the structure (no dense factor): the core
        block by ``dtrtrs``, then the rounds in reverse, a batch of levels at
        a time: with ``x_y = -1`` (the ``y`` position) ``x_j = -L_jj^{-T}
        sum_R K_Rj' x_R``.
        """
        plan = self.plan
        N2, c0 = plan.N2, plan.core
        x = np.zeros(N2 + 1)                          # position N2: padding, stays 0
        x[N2 - 1] = -1.0
        Lc = self.Lc
        if Lc.shape[0] > 1:
            xc, info = lapack.dtrtrs(Lc[:-1, :-1], Lc[-1, :-1], lower=1, trans=1)
            if info != 0:
                raise np.linalg.LinAlgError(f"triangular solve failed (info={info})")
            x[c0:N2 - 1] = xc
        linv = self.linv if self.linv is not None else [tri_inv(L) for L, _ in self.parts]
        for rnd, (_, K), Li in zip(reversed(plan.rounds), reversed(self.parts), reversed(linv),
                                   strict=True):
            t = np.matmul(x[rnd.rows][:, None, :], K)                # (npl, 1, q): x_R' K
            x[rnd.cols] = -np.matmul(t, Li)[:, 0, :]                 # -(L_jj^{-T} K' x_R)'
        out = np.empty(N2 - 1)
        out[plan.perm[:-1]] = x[:N2 - 1]
        return out

    def dense(self) -> np.ndarray:
        """The lower Cholesky factor of the rest in the peeled order, ``N2 x N2``."""
        if self._dense is None:
            plan = self.plan
            N2 = plan.N2
            L = np.zeros((N2 + 1, N2 + 1))
            for rnd, (Lpp, K) in zip(plan.rounds, self.parts, strict=True):
                c = rnd.cols
                L[c[:, :, None], c[:, None, :]] = Lpp
                L[rnd.rows[:, :, None], c[:, None, :]] = K
            L = L[:N2, :N2]
            L[plan.core:, plan.core:] = self.Lc
            self._dense = np.ascontiguousarray(L)
        return self._dense


def peel_gather(plan: PeelPlan, M: np.ndarray) -> np.ndarray:
    """The work vector of the plan from ``M`` (lower triangle valid, C order)."""
    return M.reshape(-1)[plan.gather]


def peel_factor(plan: PeelPlan, M: np.ndarray | None, work: np.ndarray | None = None
                ) -> tuple[PeelFactor, float] | None:
    """Factor ``M`` (or the plan's ``work`` vector, see :class:`PeelDirect`).

    Returns ``(factor, log|peeled part|^2)``, ``None`` if not positive definite.
    """
    if work is None:
        assert M is not None
        work = peel_gather(plan, M)
    work[-2] = 0.0                                    # the zero entry (padding reads it)
    ld = 0.0
    parts = []
    linv = []
    for rnd in plan.rounds:
        try:
            Lpp = np.linalg.cholesky(work[rnd.pp])
        except np.linalg.LinAlgError:
            return None
        ld += 2.0 * float(np.sum(np.log(np.diagonal(Lpp, axis1=1, axis2=2))))
        Li = tri_inv(Lpp)
        linv.append(Li)
        K = work[rnd.rq] @ np.swapaxes(Li, 1, 2)                      # (npl, r, q): B L^{-T}
        U = K @ np.swapaxes(K, 1, 2)
        work[rnd.uniq] -= np.bincount(rnd.inv, U.reshape(-1)[rnd.sel], minlength=rnd.uniq.size)
        parts.append((Lpp, K))
    Lc, info = lapack.dpotrf(work[plan.core_idx], lower=1, clean=1, overwrite_a=1)
    if info != 0:
        return None
    return PeelFactor(plan=plan, parts=parts, Lc=Lc, linv=linv), ld


def selected_inverse(fac: PeelFactor, Nr: int) -> np.ndarray:
    """``(M[:Nr, :Nr])^{-1}`` on the plan's pattern, as a work vector (Takahashi's recursion).

    ``Nr`` counts the leading columns of the peeled order (the random-effects
    part, or it and ``X``); their factor is the leading block of ``fac``'s.
    Backwards over the rounds, for a level ``j`` with later rows ``R``:
    ``Z_Rj = -Z_RR L_Rj L_jj^{-1}`` and ``Z_jj = L_jj^{-T} (L_jj^{-1} - L_Rj' Z_Rj)``;
    ``Z_RR`` lies in the pattern (``R`` is a clique after the elimination) and
    is known from later rounds or the dense core (``dpotri``).  Read it with
    :meth:`PeelPlan.index`.
    """
    plan = fac.plan
    z = np.zeros(plan.support.size + 2)
    c0 = plan.core
    k = Nr - c0
    if k > 0:
        Zc, info = lapack.dpotri(fac.Lc[:k, :k], lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"inverse from the Cholesky factor failed (info={info})")
        Zc = np.tril(Zc) + np.tril(Zc, -1).T
        z[plan.core_idx[:k, :k]] = Zc
    z[-2] = 0.0
    linv = fac.linv if fac.linv is not None else [tri_inv(L) for L, _ in fac.parts]
    for rnd, (_, K), Linv in zip(reversed(plan.rounds), reversed(fac.parts), reversed(linv),
                                 strict=True):
        Kx = np.where((rnd.rows < Nr)[:, :, None], K, 0.0)        # rows of the leading block
        ZR = -(z[rnd.rr] @ (Kx @ Linv))                            # (npl, r, q)
        Zjj = np.swapaxes(Linv, 1, 2) @ (Linv - np.swapaxes(Kx, 1, 2) @ ZR)
        z[rnd.rq] = ZR
        z[rnd.pp] = Zjj
        z[-2] = 0.0
    return z


@dataclass(eq=False)
class PeelDirect:
    """The plan's work vector straight from the sparse Schur products (no dense ``M``).

    ``M = Lambda_r' (A_rr - S) Lambda_r + I`` is needed only on the plan's
    support.  That support is covered by whole blocks between two rest levels
    (``q x q``), strips between a border row (``X``, ``y``) and a level
    (``q``) and the border itself; per evaluation the unscaled values of those
    blocks are gathered (``A_rr`` minus the Schur products ``vals`` of
    :class:`~.blocks.SparseSchur`), scaled by the levels' ``Lambda`` blocks
    (batched ``q x q`` products) and placed in the work vector.  Used when
    every rest level has the same width ``q``.
    """

    nb: int                    # unit-unit blocks
    ns: int                    # border-unit strips
    arr_idx: np.ndarray        # flat positions in A_rr of every unscaled value (lower)
    v_idx: np.ndarray          # row of the Schur products of every value (-1: none)
    bA: np.ndarray             # (nb,) rest block of each block's row level
    bC: np.ndarray             # (nb,) ... and of its column level
    sC: np.ndarray             # (ns,) rest block of each strip's level
    diag: np.ndarray           # positions (in the scaled layout) of the random-effects diagonal
    src: np.ndarray            # (support,) position in the scaled layout of each work entry
    q: int
    _u0: np.ndarray | None = None     # A_rr at arr_idx (per response)
    _version: int = -1

    def __post_init__(self) -> None:
        self._valid = np.flatnonzero(self.v_idx >= 0)
        self._vrow = self.v_idx[self._valid]

    def work(self, b: Blocks, vals: np.ndarray, lams: np.ndarray) -> np.ndarray:
        """The work vector at the Schur products ``vals`` and the rest's ``Lambda`` blocks."""
        if self._u0 is None or self._version != b.version:
            self._u0 = b.Arr.reshape(-1)[self.arr_idx]
            self._version = b.version
        u = self._u0.copy()
        u[self._valid] -= vals[self._vrow]
        q, nb, ns = self.q, self.nb, self.ns
        B = u[:nb * q * q].reshape(nb, q, q)
        out = np.empty(u.size + 2)
        e = nb * q * q + ns * q
        if q == 1:                                   # scalars: (lam_a b) lam_c elementwise
            lv = lams[:, 0, 0]
            out[:nb] = lv[self.bA] * u[:nb] * lv[self.bC]
            out[nb:e] = u[nb:e] * lv[self.sC]
        elif lams.shape[0] == 1:                     # one rest block: broadcast its Lambda
            lam = lams[0]
            out[:nb * q * q] = (lam.T @ B @ lam).reshape(-1)
            out[nb * q * q:e] = (u[nb * q * q:e].reshape(ns, q) @ lam).reshape(-1)
        else:
            out[:nb * q * q] = (np.swapaxes(lams[self.bA], 1, 2) @ B @ lams[self.bC]).reshape(-1)
            out[nb * q * q:e] = (u[nb * q * q:e].reshape(ns, 1, q) @ lams[self.sC]).reshape(-1)
        out[e:-2] = u[e:]
        out[self.diag] += 1.0
        return out[self.src]


def peel_direct(plan: PeelPlan, b: Blocks, v_rows: np.ndarray) -> PeelDirect | None:
    """The :class:`PeelDirect` of a plan; ``v_rows``: flat lower positions (``i N2 + k``) of
    the Schur products' rows (:attr:`~.blocks.SparseSchur.S_lo`).  ``None`` unless every
    rest level has the same width."""
    qs = {blk.q for blk, _ in b.rest}
    if len(qs) != 1:
        return None
    q = qs.pop()
    N2, nre2 = b.N2, b.nre2
    support = plan.gather  # flat lower positions in M of the work entries (+ zero, sink)
    # recover (row, col) in the original order of every support entry from the plan
    n_sup = support.size - 2
    hi, lo = np.divmod(support[:n_sup], N2)
    unit = np.full(N2, -1, dtype=np.intp)
    blk_of_unit: list[int] = []
    ustart: list[int] = []
    for j, (blk, off) in enumerate(b.rest):
        for lvl in range(blk.m):
            unit[off + lvl * q: off + (lvl + 1) * q] = len(ustart)
            ustart.append(off + lvl * q)
            blk_of_unit.append(j)
    ustart_a = np.array(ustart, dtype=np.intp)
    bou = np.array(blk_of_unit, dtype=np.intp)
    ua, uc = unit[hi], unit[lo]
    both = (ua >= 0) & (uc >= 0)
    strip = (ua < 0) & (uc >= 0)
    border = (ua < 0) & (uc < 0)
    # blocks: unique (row level, column level) pairs of the support (lower orientation)
    pairs, binv = np.unique(ua[both] * len(ustart) + uc[both], return_inverse=True)
    pA, pC = np.divmod(pairs, len(ustart))
    nb = pairs.size
    ar = np.arange(q)
    rowsB = ustart_a[pA][:, None, None] + ar[None, :, None]
    colsB = ustart_a[pC][:, None, None] + ar[None, None, :]
    rowsB, colsB = np.broadcast_arrays(rowsB, colsB)
    srows, sinv = np.unique(hi[strip] * len(ustart) + uc[strip], return_inverse=True)
    sT, sU = np.divmod(srows, len(ustart))
    ns = srows.size
    rowsS = np.repeat(sT, q)
    colsS = (ustart_a[sU][:, None] + ar[None, :]).ravel()
    bb = np.flatnonzero(border)
    rowsD, colsD = hi[bb], lo[bb]
    R = np.concatenate([rowsB.ravel(), rowsS, rowsD])
    C = np.concatenate([colsB.ravel(), colsS, colsD])
    hiR, loR = np.maximum(R, C), np.minimum(R, C)
    arr_idx = hiR * N2 + loR
    key = hiR * N2 + loR
    order = np.argsort(v_rows)
    pos = np.searchsorted(v_rows[order], key)
    pos = np.minimum(pos, max(v_rows.size - 1, 0))
    v_idx = np.where((v_rows.size > 0) & (v_rows[order][pos] == key), order[pos], -1)
    diag = np.flatnonzero((R == C) & (R < nre2))
    # each support entry's place in the scaled layout
    src = np.empty(n_sup + 2, dtype=np.intp)
    wb = np.flatnonzero(both)
    src[wb] = (binv * q + (hi[wb] - ustart_a[ua[wb]])) * q + (lo[wb] - ustart_a[uc[wb]])
    ws = np.flatnonzero(strip)
    src[ws] = nb * q * q + sinv * q + (lo[ws] - ustart_a[uc[ws]])
    src[bb] = nb * q * q + ns * q + np.arange(bb.size)
    total = R.size
    src[n_sup] = total          # the zero entry
    src[n_sup + 1] = total + 1  # the sink
    return PeelDirect(nb=nb, ns=ns, arr_idx=arr_idx, v_idx=v_idx, bA=bou[pA], bC=bou[pC],
                      sC=bou[sU], diag=diag, src=src, q=q)
