"""Analytic gradient of the profiled deviance (ML) and REML criterion in ``theta``.

With ``Lambda = sum_j theta_j E_j`` and ``A = Lambda'Z'Z Lambda + I`` the
profiled ML deviance is ``log|A| + n log r^2 + const`` (Bates et al. 2015,
eq. 34); the REML criterion is ``log|A~| + (n - p) log r^2 + const`` with the
augmented ``A~ = [[A, Lambda'Z'X], [X'Z Lambda, X'X]]`` (``|A~| = |L|^2
|R_X|^2``, eq. 41).  Two identities give the derivative cheaply:

* ``d log|A~| / d theta_j = 2 tr(A~^{-1} Lambda'Z'Z E_j)``, and
  ``A~^{-1} Lambda'Z'Z Lambda = I - A~^{-1} I~``: for a term ``t`` whose
  relative covariance factor ``L_t`` is invertible and ``theta_j = L_t[a, b]``,

      d log|A~| / d theta_j = 2 [(m_t I - D_t) L_t^{-1}][b, a],

  where ``D_t`` is the sum over the term's ``m_t`` levels of the diagonal
  blocks of ``A~^{-1}``.  Only those diagonal blocks are needed: the rest's
  from the inverse of its dense Cholesky factor, block 1's from
  ``L1_l^{-T} (I + G_l'G_l) L1_l^{-1}`` with ``G_l = L22^{-1} L21_l`` (or,
  with the rest's inverse gathered per level, ``(m I - D_1) Lambda1^{-1}``
  without ``Lambda1^{-1}``, on each level's active columns: :mod:`.active`;
  the same on a small dense rest with block 1's ``W'Z1`` dense and no
  patterns, from ``L22^{-1}`` and cross-products: :func:`.active.dense_active`).
* ``r^2`` is a minimum over ``(u, beta)`` (envelope theorem):
  ``d r^2 / d theta_j = -2 (Z E_j u)'(y - X beta - Z Lambda u)``, i.e.
  ``-2 R_t[a, b]`` with ``R_t = sum_l (Z'res)_l u_l'`` (``Z'res`` from the
  residual, or on the path of :func:`.active.dense_active` from cross-products).

Cost: one triangular inverse of the dense factor (about one deviance
evaluation) and products with the sparse block-1 cross-products.  A scalar
term at 0 has gradient exactly 0 (the criterion is even in its ``theta``).  A
rest term whose factor is singular (a zero pivot of a multi-column term) takes
``(m_t I - D_t) L_t^{-1}`` as the sum over its levels of the diagonal blocks of
``S^{-1} Lambda_r' M_u`` (``S`` the rest's scaled Schur complement, ``M_u`` the
same before the scaling, kept on the factor: ``Factor.Mu``) -- the derivative
itself, no inverse of ``L_t``; without ``M_u`` (other factorisation paths) it
is flagged as not computed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from ...mixed.native.blocks import GroupBlock, SparseSchur
from ...mixed.native.deviance import PIVOT_TOL as _PIVOT_TOL
from ...mixed.native.deviance import DevianceEvaluator, Factor
from ...mixed.native.deviance import lambda_rows as _lambda_rows
from ...mixed.native.deviance import lambda_t_entries as _lambda_t_entries
from ...mixed.native.rest import selected_inverse
from .active import (
    active_h,
    active_modes,
    active_plan,
    active_y,
    current_plan,
    dense_active,
    dense_c_fits,
    dense_inputs,
)

__all__ = ["theta_gradient"]

_CHUNK = 4_000_000     # numbers of G (block-1 levels x rows of the factor) per chunk
_DENSE_E = 200_000     # E as a dense array up to this many numbers (rest rows x block-1 columns)
_DENSE_FILL = 0.25     # ... or when at least this share of it is filled
_GATHER_MAX = 5_000_000  # peeled rests: L21 as a dense array up to this many numbers
# dense rests: S^{-1} gathered per block-1 level when each level couples to at most
# 1 / _GATHER_RATIO of the rest's rows and the rest has at most _GATHER_DENSE_NR of them
# (measured, one core: 2 systems, 1,000 items, 80 workers, Nr = 240: 12 -> 8 ms per
# gradient; 4 nested systems, Nr = 185: 6.3 -> 3.1 ms; but from Nr = 543 on, where dpotri
# costs twice T's dtrtri, slower: 23 -> 25 ms at 543, 0.48 -> 1.15 s at 2,002, 5.2 -> 7.2 s
# at 3,801 columns; those keep T L21)
_GATHER_RATIO = 4
_GATHER_DENSE_NR = 400


def _group_sums(ev: DevianceEvaluator, blk: GroupBlock, x: np.ndarray) -> np.ndarray:
    """``(m, q)``: ``sum_i Z[i, c] x[i]`` per level and column (one sparse mat-vec,
    the ``(m q, n)`` matrix ``Z'`` of the block cached on ``ev``)."""
    cache = ev.__dict__.setdefault("_zt", {})
    if id(blk) not in cache:
        n, q = blk.Z.shape
        rows = (blk.codes[:, None] * q + np.arange(q)[None, :]).ravel()
        cols = np.repeat(np.arange(n), q)
        cache[id(blk)] = (blk, sp.csr_matrix((blk.Z.ravel(), (rows, cols)), shape=(blk.m * q, n)))
    return (cache[id(blk)][1] @ x).reshape(blk.m, blk.q)


def _dense_e_index(ev: DevianceEvaluator) -> np.ndarray:
    """Flat positions of the pairs' ``E`` entries in the dense ``(N2, m1 q1)`` array (cached)."""
    cache = ev.__dict__.setdefault("_e_flat", {})
    b = ev.b
    if b.b1.q not in cache:
        q1 = b.b1.q
        cols = b.pair_lev[:, None] * q1 + np.arange(q1)
        cache[q1] = (b.pair_row[:, None] * (b.b1.m * q1) + cols).reshape(-1)
    return cache[b.b1.q]


def _lambda_t_rows(ev: DevianceEvaluator, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``Lambda_r' X`` for the first ``X.shape[0]`` rest rows (identity on the X rows)."""
    out = X.copy()
    for blk, off in ev.b.rest:
        s = slice(off, off + blk.m * blk.q)
        sub = X[s].reshape(blk.m, blk.q, -1)
        out[s] = np.matmul(blk.lam(theta).T, sub).reshape(blk.m * blk.q, -1)
    return out


def _inverse_blocks_dense(ev: DevianceEvaluator, f: Factor, L1: np.ndarray, E: Any,
                          Nr: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sums of the diagonal blocks of ``A~^{-1}``: block 1's and each rest block's.

    ``T = L22^{-1}``: a rest block's sum is ``sum_l T_l'T_l``; block 1's
    ``sum_l L1_l^{-T} (I + G_l'G_l) L1_l^{-1}`` with ``G_l = T L21_l``.
    ``E`` (``W'Z1 Lambda1 L1^{-T}``, rest rows x block-1 columns) is a dense
    array for small structures, else sparse (then ``G`` is built in chunks).
    """
    b = ev.b
    q1, m1 = b.b1.q, b.b1.m
    Lrr, perm = ev.dense_factor(f)
    T, info = lapack.dtrtri(Lrr[:Nr, :Nr], lower=1) if Nr else (np.zeros((0, 0)), 0)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular inverse failed (info={info})")
    # a peeled factor is of the permuted rest: T's columns follow perm (the first Nr
    # positions hold the first Nr original columns)
    rows = perm[:Nr] if perm is not None else slice(0, Nr)
    ip = np.arange(Nr)
    if perm is not None:
        ip[perm[:Nr]] = np.arange(Nr)
    L1inv = ev._L1(f, inverse=True)
    D1 = np.zeros((q1, q1))
    if isinstance(E, np.ndarray):
        Gf = T @ _lambda_t_rows(ev, f.theta, E[:Nr])[rows]          # (Nr, m1 q1)
        Lg = f.L1inv_g
        if Lg is not None and Lg.shape[0] == 1:
            # one group of equal Z1'Z1: one L1^{-1}, so only sum_l G_l'G_l is needed,
            # one (q1, Nr m1) x (Nr m1, q1) product instead of m1 small ones
            Gr = Gf.reshape(Nr * m1, q1)
            H1 = Gr.T @ Gr
            H1.flat[::q1 + 1] += float(m1)                           # + m1 I
            return Lg[0].T @ H1 @ Lg[0], _rest_sums(ev, T, ip, Nr)
        G = Gf.reshape(Nr, m1, q1).transpose(1, 2, 0)
        H = G @ np.swapaxes(G, 1, 2)                                 # (m1, q1, q1): G_l'G_l
        H.reshape(m1, -1)[:, ::q1 + 1] += 1.0                        # + I
        D1 = (np.swapaxes(L1inv, 1, 2) @ H @ L1inv).sum(axis=0)
    else:
        L21 = (_lambda_rows(ev, f.theta, Nr) @ E[:Nr, :]).tocsr()[rows].tocsc()  # (Nr, m1 q1)
        per = max(1, _CHUNK // max(Nr * q1, 1))
        for s0 in range(0, m1, per):
            s1 = min(m1, s0 + per)
            G = (L21[:, s0 * q1:s1 * q1].T @ T.T).reshape(s1 - s0, q1, Nr)   # rows (l, a)
            H = G @ np.swapaxes(G, 1, 2)
            H[:, np.arange(q1), np.arange(q1)] += 1.0
            Li = L1inv[s0:s1]
            D1 += (np.swapaxes(Li, 1, 2) @ H @ Li).sum(axis=0)
    return D1, _rest_sums(ev, T, ip, Nr)


def _rest_sums(ev: DevianceEvaluator, T: np.ndarray, ip: np.ndarray | None, Nr: int
               ) -> list[np.ndarray]:
    """Each rest block's ``sum_l T_l'T_l`` (``T = L22^{-1}``, columns in ``ip``'s order;
    ``None``: the original)."""
    rest = []
    for blk, off in ev.b.rest:
        c = slice(off, off + blk.m * blk.q)
        Tb = T[:, c if ip is None else ip[c]].reshape(Nr * blk.m, blk.q)
        rest.append(Tb.T @ Tb)
    return rest


def _level_rows(ev: DevianceEvaluator, Nr: int) -> np.ndarray:
    """Per block-1 level, the rest rows (``< Nr``) it couples to, whole rest levels, padded.

    ``(m1, rmax)``; padding is ``Nr`` (a zero row).  Cached per ``Nr`` on ``ev``.
    """
    cache = ev.__dict__.setdefault("_grad_rows", {})
    if Nr in cache:
        return cache[Nr]
    b = ev.b
    unit0 = np.arange(b.N2)
    width = np.ones(b.N2, dtype=np.intp)
    for blk, off in b.rest:
        cols = np.arange(off, off + blk.m * blk.q)
        unit0[cols] = off + ((cols - off) // blk.q) * blk.q
        width[cols] = blk.q
    keep = b.pair_row < Nr
    # the distinct (level, unit) pairs, by level then unit; each unit's columns in order
    key = np.unique(b.pair_lev[keep].astype(np.int64) * b.N2 + unit0[b.pair_row[keep]])
    lev, u0 = np.divmod(key, b.N2)
    w = width[u0]
    lev_c = np.repeat(lev, w)
    col = np.repeat(u0, w) + _ranks(w)
    cnt = np.bincount(lev_c, minlength=b.b1.m)
    R = np.full((b.b1.m, max(int(cnt.max(initial=0)), 1)), Nr, dtype=np.intp)
    R[lev_c, _ranks(cnt)] = col
    cache[Nr] = R
    return R


def _ranks(cnt: np.ndarray) -> np.ndarray:
    """``0, 1, .., cnt[0] - 1, 0, 1, .., cnt[1] - 1, ...`` (positions within runs)."""
    cnt = np.asarray(cnt, dtype=np.intp)
    return np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)


def _level_L21(ev: DevianceEvaluator, Nr: int, R: np.ndarray, theta: np.ndarray,
               Ep: np.ndarray) -> np.ndarray:
    """``L21 = Lambda_r' E`` gathered per block-1 level on its rows ``R``: ``(m1, rmax, q)``.

    One sparse mat-vec with the pairs' ``E`` (``Ep``, (pairs, q), ``q = q1`` or a level's
    active columns): entry
    ``(l, i, b)`` is ``sum_c Lambda'[R[l, i], c] E[c, (l, b)]`` over the rest
    rows ``c`` of ``R[l, i]``'s level (identity on the ``X`` rows).  The
    operator's structure is built once per ``(Nr, q)`` (cached on ``ev``); a call
    fills in ``theta``.
    """
    b = ev.b
    m1, q = b.b1.m, Ep.shape[1]
    cache = ev.__dict__.setdefault("_l21_op", {})
    if (Nr, q) not in cache:
        rmax = R.shape[1]
        # every (rest row r, row c of its level, theta source) with Lambda'[r, c] != 0
        r_all, c_all, s_all = _lambda_t_entries(ev, Nr)
        order = np.argsort(r_all, kind="stable")
        r_all, c_all, s_all = r_all[order], c_all[order], s_all[order]
        start = np.searchsorted(r_all, np.arange(Nr + 1))
        # positions (l, i) of R and their rows' entries
        li = np.flatnonzero(R.ravel() < Nr)
        rows_r = R.ravel()[li]
        cnt = start[rows_r + 1] - start[rows_r]
        pos = np.repeat(li, cnt)
        ent = np.repeat(start[rows_r], cnt) + _ranks(cnt)
        lev = pos // rmax
        key = c_all[ent].astype(np.int64) * m1 + lev
        pkey = b.pair_row.astype(np.int64) * m1 + b.pair_lev     # sorted (CSR order)
        pidx = np.minimum(np.searchsorted(pkey, key), pkey.size - 1)
        ok = pkey[pidx] == key
        pos, pidx, src = pos[ok], pidx[ok], s_all[ent][ok]
        rows = (pos[:, None] * q + np.arange(q)).ravel()
        cols = (pidx[:, None] * q + np.arange(q)).ravel()
        srcq = np.repeat(src, q)
        mat = sp.csr_matrix((np.arange(1.0, rows.size + 1.0), (rows, cols)),
                            shape=(m1 * rmax * q, b.pair_row.size * q))
        cache[Nr, q] = (mat, srcq[mat.data.astype(np.intp) - 1])
    mat, src = cache[Nr, q]
    mat.data = np.where(src >= 0, theta[np.maximum(src, 0)], 1.0)
    return (mat @ Ep.ravel()).reshape(m1, R.shape[1], q)


def _inverse_blocks_gather(ev: DevianceEvaluator, f: Factor, L1: np.ndarray, Ep: np.ndarray,
                           Nr: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """As :func:`_inverse_blocks_dense`, from ``S^{-1}`` gathered per block-1 level.

    ``G_l'G_l = L21_l' S^{-1} L21_l`` where ``L21_l`` (``Lambda_r' E`` at level
    ``l``'s columns) is nonzero only on the few rest levels ``l`` couples to
    (a worker's items in a sparse crowd design): a batch of small products
    instead of the dense ``T L21`` (``Nr^2 m1 q1`` flops).  For peeled rests.
    """
    b = ev.b
    q1 = b.b1.q
    R = _level_rows(ev, Nr)
    assert f.peel is not None
    plan = f.peel.plan
    # S^{-1} on the pattern only (the selected inverse of the peeled factor)
    z = selected_inverse(f.peel, Nr)
    cache = ev.__dict__.setdefault("_gather_idx", {})
    if Nr not in cache:
        ipx = np.append(plan.ipos[:Nr], plan.N2)       # row Nr (padding) -> the zero entry
        rest_idx = []
        for blk, off in b.rest:
            idx = ipx[off + np.arange(blk.m * blk.q).reshape(blk.m, blk.q)]
            rest_idx.append(plan.index(idx[:, :, None], idx[:, None, :]))
        cache[Nr] = (plan.index(ipx[R][:, :, None], ipx[R][:, None, :]), rest_idx)
    sg_idx, rest_idx = cache[Nr]
    Lg = _level_L21(ev, Nr, R, f.theta, Ep)                        # (m1, rmax, q1)
    Sg = z[sg_idx]                                                 # (m1, rmax, rmax)
    H = np.swapaxes(Lg, 1, 2) @ Sg @ Lg
    H[:, np.arange(q1), np.arange(q1)] += 1.0
    L1inv = ev._L1(f, inverse=True)
    D1 = (np.swapaxes(L1inv, 1, 2) @ H @ L1inv).sum(axis=0)
    return D1, [z[ix].sum(axis=0) for ix in rest_idx]


def _gather_dense_pays(ev: DevianceEvaluator, Nr: int) -> bool:
    """Whether the gathered inverse (:func:`_active_block1`) beats :func:`_inverse_blocks_dense`
    (a property of the structure: decided once per ``Nr``, cached on ``ev``)."""
    cache = ev.__dict__.setdefault("_gather_pays", {})
    if Nr not in cache:
        cache[Nr] = _gather_dense_decide(ev, Nr)
    return bool(cache[Nr])


def _gather_dense_decide(ev: DevianceEvaluator, Nr: int) -> bool:
    if Nr > _GATHER_DENSE_NR:
        return False
    b = ev.b
    # the rows each level couples to (a lower bound of _level_rows' width), without its loop
    inside = b.pair_row < Nr
    if _GATHER_RATIO * int(np.bincount(b.pair_lev[inside]).max(initial=0)) > Nr:
        return False
    return _GATHER_RATIO * _level_rows(ev, Nr).shape[1] <= Nr


def _dense_active_pays(ev: DevianceEvaluator) -> bool:
    """Whether :func:`_dense_active` applies: block 1's ``C`` dense (``DenseSchur``, or a
    sparse Schur's ``C`` copied dense where the rest is small, :func:`.active.dense_c`)."""
    return dense_c_fits(ev.b)


def _gathered_inverse(ev: DevianceEvaluator, f: Factor, Nr: int, R: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """``S^{-1}`` (``dpotri``) flat with a zero row ``Nr`` (padding), the flat positions of
    its blocks on each block-1 level's rows ``R`` (``(m1, rmax, rmax)``), and each rest
    block's sum of diagonal blocks."""
    b = ev.b
    # S^{-1}'s lower triangle (dpotri's) read at (max, min) of each index pair: no
    # symmetrised copy; row/column Nr is the padding (a zero)
    Sp = np.zeros((Nr + 1, Nr + 1))
    Sp[:Nr, :Nr] = ev.rest_inverse(f, Nr)
    Spf = Sp.reshape(-1)
    cache = ev.__dict__.setdefault("_gather_dense_idx", {})
    if Nr not in cache:
        def lower_flat(a: np.ndarray, c: np.ndarray) -> np.ndarray:
            return np.maximum(a, c) * (Nr + 1) + np.minimum(a, c)
        cache[Nr] = (lower_flat(R[:, :, None], R[:, None, :]),
                     [lower_flat(ix[:, :, None], ix[:, None, :]) for ix in
                      (off + np.arange(blk.m * blk.q).reshape(blk.m, blk.q)
                       for blk, off in b.rest)])
    sg_idx, rest_idx = cache[Nr]
    return Spf, sg_idx, [Spf[ix].sum(axis=0) for ix in rest_idx]


def _active_block1(ev: DevianceEvaluator, f: Factor, z: np.ndarray, Nr: int,
                   si: list[np.ndarray]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """Block 1 on its levels' active columns (:mod:`.active`) with ``S^{-1}`` in full
    (``dpotri``, ``Nr^3 / 3`` flops) gathered on the few rest rows ``R[l]`` each block-1
    level couples to (a sparse crowd design: an item's 2-4 workers; ``m1 rmax^2 k``
    flops instead of the dense ``T L21``'s ``Nr^2 m1 q1``): ``(u1, b1 modes, Lambda1' Y,
    rest blocks' inverse sums)``; ``S^{-1}`` (padded) is appended to ``si``."""
    b = ev.b
    plan = _active_plan(ev)
    lam1 = b.b1.lam(f.theta)
    F, u1, b1m, _ = active_modes(plan, lam1, plan.CT @ np.append(-z, 1.0))
    R = _level_rows(ev, Nr)
    Spf, sg_idx, rest_D = _gathered_inverse(ev, f, Nr, R)
    si.append(Spf.reshape(Nr + 1, Nr + 1))
    La = _level_L21(ev, Nr, R, f.theta, plan.Ca)           # Lambda_r' C, active: (m1, rmax, k)
    per = max(1, _CHUNK // R.shape[1] ** 2)                 # levels per chunk of S^{-1}'s blocks
    Hs = np.zeros_like(F)
    for s0 in range(0, R.shape[0], per):
        sl = slice(s0, s0 + per)
        Hs += active_h(plan, La[sl], Spf[sg_idx[sl]], sl)
    return u1, b1m, lam1.T @ active_y(plan, F, Hs, b.b1.q), rest_D


def _active_plan(ev: DevianceEvaluator) -> Any:
    """The model's :class:`.active.ActivePlan` for its current response (cached on ``ev``)."""
    plan = ev.__dict__.get("_active_plan")
    plan = ev.__dict__["_active_plan"] = (active_plan(ev.b) if plan is None
                                          else current_plan(plan, ev.b))
    return plan


def _dense_active(ev: DevianceEvaluator, f: Factor, z: np.ndarray, Nr: int,
                  lams: list[np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """Block 1 by :func:`.active.dense_active` (a small dense rest, no patterns, block 1's
    ``C = W'Z1`` dense): ``(Lambda1' Y, R_1, rest blocks' inverse sums, W'res on the
    random-effects rows)``; the groups' products of ``C`` are built once per ``Nr``."""
    plan = _active_plan(ev)
    Cd, P4, Ca = dense_inputs(plan, ev.b, ev.__dict__, Nr)
    M1, R1, T, wres = dense_active(plan, ev.b, f.theta, lams, f.Lrr, z, Nr, P4, Ca, Cd)
    return M1, R1, _rest_sums(ev, T, None, Nr), wres


def _inverse_blocks_sparse(ev: DevianceEvaluator, sparse: SparseSchur, f: Factor, L1: np.ndarray,
                           Nr: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """As :func:`_inverse_blocks_dense`, through the sparse products ``V`` (e.g. InstEval).

    With ``S^{-1}`` (``dpotri``) and ``P = Lambda_r S^{-1} Lambda_r`` (diagonal
    ``Lambda_r``) on the pattern of the Schur complement, ``Q_l = C_l' P C_l``
    for every level is one sparse product ``V' p`` (``V``'s rows are the
    ``i >= k`` entries, so off-diagonal entries count in both orders); block
    1's diagonal block of the inverse is ``B_l^{-1} + B_l^{-1} Lambda1' Q_l
    Lambda1 B_l^{-1}`` (``B_l = L1_l L1_l'``).
    """
    b = ev.b
    b1 = b.b1
    m1, q1, N2 = b1.m, b1.q, b.N2
    assert ev._scale_idx is not None            # the caller checks: diagonal Lambda_r
    # only the lower triangle of S^{-1} is read (V's rows are i >= k)
    Si = ev.rest_inverse(f, Nr)
    te = np.append(f.theta, 1.0)
    dv = te[ev._scale_idx]
    cache = ev.__dict__.setdefault("_sparse_inside", {})
    if Nr not in cache:
        i, k = np.divmod(sparse.S_lo, N2)
        inside = np.flatnonzero((i < Nr) & (k < Nr))
        cache[Nr] = (inside, i[inside], k[inside], i != k)
    inside, ii, kk, off = cache[Nr]
    pv = np.zeros(sparse.S_lo.size)
    pv[inside] = dv[ii] * dv[kk] * Si[ii, kk]
    if q1 == 1:                                 # Q = Y + Yo' in one product
        Q = (sparse.V.T @ np.where(off, 2.0 * pv, pv)).reshape(m1, 1, 1)
    else:                                       # Y and Yo in one pass over V
        YY = sparse.V.T @ np.column_stack([pv, np.where(off, pv, 0.0)])
        Q = YY[:, 0].reshape(m1, q1, q1) + np.swapaxes(YY[:, 1].reshape(m1, q1, q1), 1, 2)
    lam1 = b1.lam(f.theta)
    L1inv = ev._L1(f, inverse=True)
    Binv = np.swapaxes(L1inv, 1, 2) @ L1inv
    D1 = (Binv + Binv @ (lam1.T @ Q @ lam1) @ Binv).sum(axis=0)
    rest = []
    for blk, off in b.rest:
        idx = off + np.arange(blk.m * blk.q).reshape(blk.m, blk.q)
        hi = np.maximum(idx[:, :, None], idx[:, None, :])
        lo = np.minimum(idx[:, :, None], idx[:, None, :])
        rest.append(Si[hi, lo].sum(axis=0))
    return D1, rest


def theta_gradient(ev: DevianceEvaluator, f: Factor, REML: bool
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(gradient, exact)`` of the criterion at ``f.theta``; ``exact[j]`` False: not computed.

    ``f`` must be a successful factorisation (``f.ok``) of the current response.
    """
    b = ev.b
    b1 = b.b1
    theta = f.theta
    n, p, nre2 = b.n, b.p, b.nre2
    # -- spherical modes and residuals -------------------------------------------
    v = ev.solve_v(f)
    lams = [blk.lam(theta) for blk, _ in b.rest]
    z = v.copy()                                             # b on the RE rows, beta on X
    for (blk, off), lam in zip(b.rest, lams, strict=True):
        s = slice(off, off + blk.m * blk.q)
        z[s] = (v[s].reshape(blk.m, blk.q) @ lam.T).ravel()
    Nr = nre2 + (p if REML else 0)
    path = _inverse_path(ev, f, Nr)
    si: list[np.ndarray] = []                    # S^{-1} (lower triangle), once formed
    groups: list[tuple[GroupBlock, np.ndarray, np.ndarray, np.ndarray | None, int]] = []
    if path == "dense_active":
        M1, R1, rest_D, wres = _dense_active(ev, f, z, Nr, lams)
        groups.append((b1, M1, R1, M1, -1))
        zres = [wres[off:off + blk.m * blk.q].reshape(blk.m, blk.q) for blk, off in b.rest]
    else:
        M0: np.ndarray | None = None             # block 1's (m I - D) Lambda1^{-1}, if formed
        if path == "gather_dense":
            u1, b1m, M0, rest_D = _active_block1(ev, f, z, Nr, si)
            D1 = np.zeros((b1.q, b1.q))
        else:
            u1, b1m, D1, rest_D = _block1_levels(ev, f, z, Nr, path)
        res = b.y - b.W @ z - np.einsum("ic,ic->i", b1.Z, b1m[b1.codes])
        groups.append((b1, D1, _group_sums(ev, b1, res).T @ u1, M0, -1))
        zres = [_group_sums(ev, blk, res) for blk, _ in b.rest]
    for (blk, off), D, zr in zip(b.rest, rest_D, zres, strict=True):
        ub = v[off:off + blk.m * blk.q].reshape(blk.m, blk.q)
        groups.append((blk, D, zr.T @ ub, None, off))
    # -- assemble ----------------------------------------------------------------
    n_eff = n - p if REML else n
    g = np.zeros(theta.size)
    exact = np.ones(theta.size, dtype=bool)
    for blk, D, R, M0, off in groups:
        rows, cols, mI = _assembly_index(ev, blk)
        if M0 is not None:                       # formed without Lambda^{-1}: always exact
            g[blk.theta_idx] += 2.0 * M0[cols, rows] - (2.0 * n_eff / f.r2) * R[rows, cols]
            continue
        lam = blk.lam(theta)
        q = blk.q
        lam_inv = np.zeros((q, q))
        bad = None
        dg = lam.diagonal().tolist()
        col = 0
        for qt in blk.term_q:
            if qt == 1:                          # a scalar term at 0: its inverse is set to 0
                piv = dg[col]
                lam_inv[col, col] = 1.0 / piv if piv > _PIVOT_TOL else 0.0
            elif min(dg[col:col + qt]) > _PIVOT_TOL:
                s = slice(col, col + qt)
                lam_inv[s, s] = lapack.dtrtri(lam[s, s], lower=1)[0]
            else:                                # a zero pivot: no inverse, not computed here
                term = (cols >= col) & (cols < col + qt)
                bad = term if bad is None else bad | term
            col += qt
        M = (mI - D) @ lam_inv
        dl = 2.0 * M[cols, rows] - (2.0 * n_eff / f.r2) * R[rows, cols]
        if bad is not None and off >= 0 and f.Mu is not None and f.lead is None:
            Y = _rest_y(ev, f, blk, off, Nr, si)       # (m I - D) Lambda^{-1}, no inverse
            dl = np.where(bad, 2.0 * Y[cols, rows] - (2.0 * n_eff / f.r2) * R[rows, cols], dl)
            bad = None
        if bad is None:
            g[blk.theta_idx] += dl                     # a block's theta indices are distinct
        else:
            g[blk.theta_idx] += np.where(bad, 0.0, dl)
            exact[blk.theta_idx[bad]] = False
    return g, exact


def _rest_y(ev: DevianceEvaluator, f: Factor, blk: GroupBlock, off: int, Nr: int,
            si: list[np.ndarray]) -> np.ndarray:
    """``Y = sum_l [S^{-1} Lambda_r' M_u]_{ll}`` over the rest block's levels, ``(q, q)``.

    ``S^{-1} (S - I~) = I - S^{-1} I~`` with ``S - I~ = Lambda_r' M_u Lambda_r`` and
    ``Lambda_r`` block diagonal by term: ``(m I - D) = Y Lambda``, and ``2 Y[b, a]`` is
    the log-determinant's derivative in ``Lambda[a, b]`` whether or not ``Lambda`` is
    invertible.  ``Nr^2 q`` flops with ``S^{-1}`` (``si[0]``, lower triangle, formed here
    by ``dpotri`` if ``si`` is empty) and ``M_u`` (``f.Mu``, lower triangle).
    """
    if not si:
        si.append(ev.rest_inverse(f, Nr))
    assert f.Mu is not None
    cols = slice(off, off + blk.m * blk.q)
    X = _lambda_rows(ev, f.theta, Nr) @ _sym_cols(f.Mu, Nr, cols)     # Lambda_r' M_u[:, cols]
    Sc = _sym_cols(si[0], Nr, cols)                                   # S^{-1}[:, cols]
    m, q = blk.m, blk.q
    return (Sc.T.reshape(m, q, Nr) @ X.T.reshape(m, q, Nr).transpose(0, 2, 1)).sum(axis=0)


def _sym_cols(A: np.ndarray, Nr: int, cols: slice) -> np.ndarray:
    """Columns ``cols`` of the symmetric ``Nr x Nr`` matrix whose lower triangle ``A`` holds."""
    out = A[:Nr, cols].copy()
    up = np.arange(Nr)[:, None] < np.arange(cols.start, cols.stop)[None, :]
    np.copyto(out, A[cols, :Nr].T, where=up)
    return out


def _block1_levels(ev: DevianceEvaluator, f: Factor, z: np.ndarray, Nr: int, path: str
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray]]:
    """Block 1 level by level: ``(u1, b1 modes, D1, rest blocks' inverse sums)``."""
    b = ev.b
    b1 = b.b1
    L1 = ev._L1(f)                                            # (m1, q1, q1)
    Ep = ev.E(f)                                             # (pairs, q1)
    E: Any
    size = b.N2 * b1.m * b1.q
    if size <= _DENSE_E or Ep.size > _DENSE_FILL * size:
        E = np.zeros((b.N2, b1.m * b1.q))
        E.reshape(-1)[_dense_e_index(ev)] = Ep.reshape(-1)
        t = E[-1] - E[:-1].T @ z
    else:
        E = sp.csr_matrix((Ep.ravel(), b.indices, b.indptr), shape=(b.N2, b1.m * b1.q))
        ey = np.zeros((b1.m, b1.q))                       # E's y row: the y pairs
        ey[b.y_levels] = Ep[b.y_pairs]
        t = ey.ravel() - E.T @ np.append(z, 0.0)
    # u1 = L1^{-T} t per level
    u1 = np.einsum("lba,lb->la", ev._L1(f, inverse=True), t.reshape(b1.m, b1.q))
    b1m = u1 @ b1.lam(f.theta).T
    # -- diagonal blocks of the inverse --------------------------------------------
    if path == "gather":
        return u1, b1m, *_inverse_blocks_gather(ev, f, L1, Ep, Nr)
    if path == "lead":
        gb = ev.grouped_inverse_blocks(f, Nr)
        assert gb is not None
        return u1, b1m, *gb
    if path == "sparse":
        assert isinstance(b.schur, SparseSchur)
        return u1, b1m, *_inverse_blocks_sparse(ev, b.schur, f, L1, Nr)
    return u1, b1m, *_inverse_blocks_dense(ev, f, L1, E, Nr)


def _inverse_path(ev: DevianceEvaluator, f: Factor, Nr: int) -> str:
    """How the diagonal blocks of the inverse are formed: ``gather`` (peeled rest),
    ``lead`` (grouped levels with a lead), ``sparse`` (sparse Schur products, diagonal
    ``Lambda_r``), ``gather_dense`` (block 1 on its active columns, :mod:`.active`) or
    ``dense``."""
    b = ev.b
    # (or where the gathered blocks of S^{-1} take less room than the dense inverse would)
    if f.peel is not None and (b.N2 * b.b1.m * b.b1.q <= _GATHER_MAX
                               or _level_rows(ev, Nr).size * _level_rows(ev, Nr).shape[1]
                               * b.b1.q ** 2 <= b.N2 * b.N2):
        return "gather"
    if f.lead is not None and ev._lead_grouped and b.b1.q == 1 and Nr:
        return "lead"            # DevianceEvaluator.grouped_inverse_blocks
    if isinstance(b.schur, SparseSchur) and ev._scale_idx is not None:
        return "sparse"
    if f.peel is None and Nr and _gather_dense_pays(ev, Nr):
        return "gather_dense"
    if f.peel is None and f.lead is None and Nr and _dense_active_pays(ev):
        return "dense_active"
    return "dense"


def _assembly_index(ev: DevianceEvaluator, blk: GroupBlock
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, cols)`` of the block's ``theta`` in ``Lambda`` and ``m I`` (cached on ``ev``)."""
    cache = ev.__dict__.setdefault("_assembly", {})
    if id(blk) not in cache:
        rows, cols = np.divmod(blk.lam_idx, blk.q)
        cache[id(blk)] = (blk, rows, cols, blk.m * np.eye(blk.q))
    _, rows, cols, mI = cache[id(blk)]
    return rows, cols, mI

