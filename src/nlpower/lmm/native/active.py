"""Block 1's part of the gradient without ``Lambda1^{-1}``, on each level's active columns.

When a level of block 1 uses only some of its ``q1`` columns (``Z1_l`` zero
elsewhere: the "patterns" of :class:`~.blocks.Blocks`, items nested in
systems), everything block 1 contributes to the gradient lives on those ``k``
columns; otherwise all ``q1`` are active.  With ``P =
Lambda1 Lambda1'``, ``A_l = Z1_l'Z1_l`` and ``F_l = (I + A_l P)^{-1}`` (the
push-through identity, ``B_l^{-1} Lambda1' = Lambda1' F_l``):

* the spherical modes are ``u_l = Lambda1' F_l c_l`` with ``c_l =
  Z1_l'(y - W z)`` the level's part of ``W'Z1``'s ``y`` row less the rest's
  fitted part (``z``: the rest's modes and ``beta``), so ``Lambda1 u_l = P F_l
  c_l``;
* ``(m I - D_1) Lambda1^{-1} = Lambda1' Y`` with ``Y = sum_l F_l A_l - F_l H_l
  F_l'`` and ``H_l = C_l' Lambda_r S^{-1} Lambda_r' C_l`` (``C_l`` the level's
  columns of ``W'Z1``, ``S`` the rest's Schur complement) -- no ``Lambda1^{-1}``,
  so a zero pivot of block 1 needs no second factorisation.

Restricted to the active columns (``F_l``'s rows off them are the identity's
and ``A_l``, ``c_l``, ``H_l`` vanish there), every product is ``k x k``:
``k = 1`` for items nested in systems, ``q1 = 4`` for four systems.  Levels
with fewer than ``k`` active columns are padded with zeros (a padded row of
``I + A_l Q_l`` is the identity's, so the padding stays zero throughout).
Levels with the same active columns and the same ``A_l`` (a group: items
rated alike) share ``F_l``, so ``F`` and ``Y`` are formed once per group from
the group's sum of ``H_l`` (one ``bincount``): a few ``k x k`` products
instead of batched ones over the levels, which numpy runs matrix by matrix.

Two rests use this.  A rest whose inverse is gathered per level (a sparse
crowd design: each level couples to few rest rows) forms ``H_l`` from ``S^{-1}``
on those rows (``gradient._active_block1``).  A small dense rest with block 1's
``W'Z1`` dense and every column active (raters x questions, fully or nearly
crossed: :func:`dense_active`) forms the groups' sums of ``H_l`` from the
inverse of the rest's factor -- with few groups as one contraction with the
groups' products of ``W'Z1`` (:func:`grouped_c_products`) -- and takes the
residual's sums from cross-products: ``Z1'res = F c`` per level, ``W'res =
Arr [-z, 1] - W'Z1 b1`` for the rest, no residual of length ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from ...mixed.native.blocks import Blocks, DenseSchur
from ...mixed.native.grouped import unique_rows

_P4_MAX = 2_000_000     # numbers of the groups' products of C (grouped_c_products) at most


@dataclass(eq=False)
class ActivePlan:
    """Groups of levels with the same active columns (padded to ``k``) and ``Z1'Z1`` on them,
    and the scatter indices."""

    grp: np.ndarray        # (m1,) each level's group
    act: np.ndarray        # (G, k) the group's active columns (padding repeats one of them)
    A: np.ndarray          # (G, k, k) Z1_l'Z1_l on the active columns (0 on padding)
    cnt: np.ndarray        # (G,) levels per group
    flat_w: np.ndarray     # (m1, k) flat positions l q1 + act in an (m1, q1) array
    flat_y: np.ndarray     # (G, k, k) flat positions act_a q1 + act_b in a (q1, q1) array
    flat_h: np.ndarray     # (m1, k k) flat positions of a level's H_l in the (G, k, k) sums
    Ca: np.ndarray         # (pairs, k) W'Z1's pairs on their level's active columns
    CT: sp.csr_matrix      # (m1 k, N2) the same transposed: c = CT @ [-z, 1]
    full: bool             # no patterns: every level's q1 columns active, in order (k = q1)
    lact: np.ndarray       # (m1, k) each level's active columns (padded as ``act``)
    lmask: np.ndarray      # (m1, k) 1 on a level's active columns, 0 on its padding
    Cy: np.ndarray         # the response's row of C that Ca and CT hold (current_plan)


def active_plan(b: Blocks) -> ActivePlan:
    """The plan of :class:`ActivePlan` for ``b`` (once per model; without ``b.patterns``
    every level's columns are all active)."""
    m1, q1 = b.b1.m, b.b1.q
    if b.patterns is None:
        act, mask = np.tile(np.arange(q1), (m1, 1)), np.ones((m1, q1))
    else:
        kmax = max(int(p.cols.size) for p in b.patterns)
        act = np.zeros((m1, kmax), dtype=np.intp)
        mask = np.zeros((m1, kmax))
        for p in b.patterns:
            kp = int(p.cols.size)
            act[p.levels, :kp] = p.cols
            act[p.levels, kp:] = p.cols[0]
            mask[p.levels, :kp] = 1.0
    k = act.shape[1]
    lev = np.arange(m1)[:, None, None]
    A = b.A11[lev, act[:, :, None], act[:, None, :]] * mask[:, :, None] * mask[:, None, :]
    _, grp, cnt = unique_rows(np.concatenate([act, A.reshape(m1, -1)], axis=1))
    first = np.zeros(cnt.size, dtype=np.intp)
    first[grp] = np.arange(m1)                   # a level of each group (any: they are equal)
    gact = act[first]
    Ca, CT = _c_active(b, act, mask)
    return ActivePlan(grp=np.asarray(grp).ravel(), act=gact, A=A[first],
                      cnt=cnt.astype(float), flat_w=np.arange(m1)[:, None] * q1 + act,
                      flat_y=gact[:, :, None] * q1 + gact[:, None, :],
                      flat_h=np.asarray(grp).reshape(-1, 1) * (k * k) + np.arange(k * k),
                      Ca=Ca, CT=CT, full=b.patterns is None, lact=act, lmask=mask,
                      Cy=b.C[b.y_pairs].copy())


def _c_active(b: Blocks, act: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, sp.csr_matrix]:
    """``W'Z1``'s pairs on their level's active columns and the same transposed."""
    m1, k = act.shape
    Ca = np.take_along_axis(b.C, act[b.pair_lev], axis=1) * mask[b.pair_lev]
    CT = sp.csr_matrix((Ca.ravel(), ((b.pair_lev[:, None] * k + np.arange(k)).ravel(),
                                     np.repeat(b.pair_row, k))), shape=(m1 * k, b.N2))
    return Ca, CT


def current_plan(plan: ActivePlan, b: Blocks) -> ActivePlan:
    """``plan`` for ``b``'s response now: ``Ca`` and ``CT`` hold the response's row of ``C``,
    rebuilt where a refit swapped ``y`` since the plan was made (else ``plan`` itself)."""
    if np.array_equal(plan.Cy, b.C[b.y_pairs]):
        return plan
    Ca, CT = _c_active(b, plan.lact, plan.lmask)
    return replace(plan, Ca=Ca, CT=CT, Cy=b.C[b.y_pairs].copy())


def active_modes(plan: ActivePlan, lam1: np.ndarray, c: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(F, u1, b1, w)`` from ``c`` (each level's ``c_l`` on its active columns, flat
    ``(m1 k,)``: ``plan.CT @ [-z, 1]``): ``F`` per group on the active columns ``(G, k, k)``, the spherical
    modes ``u1``, the modes ``b1 = Lambda1 u1`` of block 1 and ``w = Z1'(y - W z - Z1 b1)``
    per level, each ``(m1, q1)``: ``c_l - A_l P F_l c_l = F_l c_l`` (``I - A P (I + A
    P)^{-1} = (I + A P)^{-1}``), so ``w_l = F_l c_l`` gives the residual's block-1 sums
    without the residual."""
    G, k = plan.act.shape
    m1 = plan.grp.size
    q1 = lam1.shape[0]
    P = lam1 @ lam1.T
    T = plan.A @ (P if plan.full else P[plan.act[:, :, None], plan.act[:, None, :]])
    T.reshape(G, k * k)[:, ::k + 1] += 1.0
    if G == 1 and k > 2:                        # one group: one LAPACK solve (numpy's inv ~6 us)
        F = lapack.dgesv(T[0], np.eye(k))[2][None]
    elif k == 1:
        F = 1.0 / T
    elif k == 2:                                # closed form: numpy's inv costs ~20 us a call
        det = T[:, 0, 0] * T[:, 1, 1] - T[:, 0, 1] * T[:, 1, 0]
        F = np.empty_like(T)
        F[:, 0, 0], F[:, 1, 1] = T[:, 1, 1] / det, T[:, 0, 0] / det
        F[:, 0, 1], F[:, 1, 0] = -T[:, 0, 1] / det, -T[:, 1, 0] / det
    else:
        F = np.linalg.inv(T)
    ca = c.reshape(m1, k)                                                # c_l, active columns
    if G == 1:
        w = ca @ F[0].T                                                  # F c_l
    else:
        Fl = F[plan.grp]
        w = Fl[:, :, 0] * ca[:, :1]                                      # F_l c_l
        for j in range(1, k):
            w += Fl[:, :, j] * ca[:, j:j + 1]
    wl = w if plan.full else np.bincount(plan.flat_w.ravel(), weights=w.ravel(),
                                         minlength=m1 * q1).reshape(m1, q1)
    return F, wl @ lam1, wl @ P, wl


def active_h(plan: ActivePlan, La: np.ndarray, Sg: np.ndarray, sl: slice) -> np.ndarray:
    """Per group the sum of ``H_l = La_l' Sg_l La_l`` over the levels ``sl`` (``La``:
    ``Lambda_r' C_l`` on the level's rest rows and active columns, ``(m, rmax, k)``;
    ``Sg``: ``S^{-1}`` on those rows, ``(m, rmax, rmax)``), ``(G, k, k)``."""
    G, k = plan.act.shape
    H = np.swapaxes(La, 1, 2) @ (Sg @ La)
    return np.bincount(plan.flat_h[sl].ravel(), weights=H.ravel(),
                       minlength=G * k * k).reshape(G, k, k)


def active_y(plan: ActivePlan, F: np.ndarray, Hs: np.ndarray, q1: int) -> np.ndarray:
    """``Y = sum_l F_l A_l - F_l H_l F_l'`` from the groups' ``F`` and sums ``Hs`` of
    ``H_l``, scattered to ``(q1, q1)``."""
    if F.shape[0] == 1 and plan.full:                # one group on all columns: 2-D products
        F0 = F[0]
        return plan.cnt[0] * (F0 @ plan.A[0]) - F0 @ Hs[0] @ F0.T
    Yg = plan.cnt[:, None, None] * (F @ plan.A) - F @ Hs @ np.swapaxes(F, 1, 2)
    return np.bincount(plan.flat_y.ravel(), weights=Yg.ravel(),
                       minlength=q1 * q1).reshape(q1, q1)


def c_products_pay(plan: ActivePlan, Nr: int) -> bool:
    """Whether :func:`grouped_c_products` pays: contracting them with ``Lambda_r S^{-1}
    Lambda_r'`` (``Nr^3 + Nr^2 G q1^2`` flops) costs less than forming ``X = T Lambda_r'
    C`` (``Nr^2 m1 q1``): few groups and a small rest, ``Nr + G q1^2 <= m1 q1 / 2``."""
    G, q1 = plan.A.shape[0], plan.A.shape[1]
    return (plan.full and 2 * (Nr + G * q1 * q1) <= plan.grp.size * q1
            and Nr * Nr * G * q1 * q1 <= _P4_MAX)


def grouped_c_products(plan: ActivePlan, Cd: np.ndarray, Nr: int) -> np.ndarray:
    """``P4[(i, k), (g, a, b)] = sum_{l in g} C_l[i, a] C_l[k, b]`` on the first ``Nr`` rest
    rows (``Cd``: ``C`` dense, ``(N2, m1, q1)``; no patterns), ``(Nr^2, G q1^2)``.  Theta-
    and response-free (the ``y`` row is not among the ``Nr``)."""
    G, q1 = plan.A.shape[0], plan.A.shape[1]
    out = np.empty((Nr * Nr, G, q1 * q1))
    for g in range(G):
        Cg = Cd[:Nr, plan.grp == g, :]                                   # (Nr, m_g, q1)
        Y = Cg.transpose(0, 2, 1).reshape(Nr * q1, -1)
        YY = (Y @ Y.T).reshape(Nr, q1, Nr, q1).transpose(0, 2, 1, 3)
        out[:, g, :] = YY.reshape(Nr * Nr, q1 * q1)
    return out.reshape(Nr * Nr, G * q1 * q1)


def active_c(plan: ActivePlan, Cd: np.ndarray, Nr: int) -> np.ndarray:
    """``C = W'Z1`` on the first ``Nr`` rest rows and each level's active columns (0 on the
    padding), ``(Nr, m1 k)``, from the dense ``Cd`` (``(N2, m1, q1)``)."""
    m1 = plan.grp.size
    return (Cd[:Nr, np.arange(m1)[:, None], plan.lact] * plan.lmask).reshape(Nr, -1)


# a sparse Schur's C is copied dense for the cross-products gradient up to this many rest
# columns (the reduced model of 4 nested systems and 15 workers: 65) and numbers (32 MB)
DENSE_C_MAX_N2 = 400
DENSE_C_MAX_ENTRIES = 4e6


def dense_c_fits(b: Blocks) -> bool:
    """Whether :func:`dense_c` has ``C`` dense or may copy it (a small rest, a small copy)."""
    return isinstance(b.schur, DenseSchur) or (
        b.N2 <= DENSE_C_MAX_N2 and b.N2 * b.b1.m * b.b1.q <= DENSE_C_MAX_ENTRIES)


def dense_c(b: Blocks, store: dict[str, Any]) -> np.ndarray:
    """Block 1's ``C = W'Z1`` dense, ``(N2, m1, q1)``: the dense Schur's own, else a copy
    kept in ``store`` (built once; its response row refreshed per call)."""
    if isinstance(b.schur, DenseSchur):
        return b.schur.Cd
    Cd = store.get("_dense_c")
    if Cd is None:
        Cd = store["_dense_c"] = np.zeros((b.N2, b.b1.m, b.b1.q))
        Cd[b.pair_row, b.pair_lev, :] = b.C
    else:
        Cd[-1, b.y_levels, :] = b.C[b.y_pairs]
    return Cd  # type: ignore[no-any-return]


def dense_inputs(plan: ActivePlan, b: Blocks, store: dict[str, Any], Nr: int
                 ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """:func:`dense_active`'s ``C`` (:func:`dense_c`), ``P4`` (where :func:`c_products_pay`)
    and ``Ca`` (with patterns: :func:`active_c`); the last two theta-free, kept in
    ``store`` per ``Nr``."""
    Cd = dense_c(b, store)
    cache = store.setdefault("_dense_active_c", {})
    if Nr not in cache:
        cache[Nr] = (grouped_c_products(plan, Cd, Nr) if c_products_pay(plan, Nr) else None,
                     None if plan.full else active_c(plan, Cd, Nr))
    return (Cd, *cache[Nr])


def dense_active(plan: ActivePlan, b: Blocks, theta: np.ndarray, lams: list[np.ndarray],
                 Lrr: np.ndarray, z: np.ndarray, Nr: int, P4: np.ndarray | None,
                 Ca: np.ndarray | None = None, Cd3: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Block 1's gradient pieces from cross-products only, on a small dense rest (its
    factor ``Lrr``) with block 1's ``C = W'Z1`` dense and no patterns: ``(Lambda1' Y,
    R_1, T, W'res)``.

    ``zz = [-z, 1]`` (``z``: the rest's modes and ``beta``) gives ``c = C' zz`` (each
    level's ``Z1'(y - W z)``) for :func:`active_modes`, whose ``F c`` is block 1's
    ``Z1'res``, so ``R_1 = sum_l (Z1'res)_l u_l'``; the rest's ``W'res = Arr zz - C b1``
    on the random-effects rows -- no residual of length ``n``.  With ``T = L22^{-1}``
    (``T'T = S^{-1}``) the groups' sums of ``H_l = C_l' Lambda_r S^{-1} Lambda_r' C_l``
    are ``<P, P4_g>`` with ``P = (T Lambda_r')'(T Lambda_r')`` where ``P4``
    (:func:`grouped_c_products`, where :func:`c_products_pay`) is given, else sums of ``X_l'X_l``, ``X = T
    Lambda_r' C``.  ``lams``: the rest blocks' ``Lambda``; ``T`` is returned for the rest
    blocks' inverse sums.  With patterns ``Ca`` is ``C`` on the active columns
    (:func:`active_c`) and ``c`` comes from ``plan.CT``.  ``Cd3``: ``C`` dense where the
    Schur strategy is sparse.
    """
    N2, m1, q1, nre2 = b.N2, b.b1.m, b.b1.q, b.nre2
    Cd = (b.schur.Cd if Cd3 is None else Cd3).reshape(N2, m1 * q1)  # type: ignore[union-attr]
    zz = np.empty(N2)
    zz[:-1] = -z
    zz[-1] = 1.0
    lam1 = b.b1.lam(theta)
    F, u1, b1m, w = active_modes(plan, lam1, zz @ Cd if plan.full else plan.CT @ zz)
    T, info = lapack.dtrtri(Lrr[:Nr, :Nr], lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"triangular inverse failed (info={info})")
    TL = np.empty_like(T)                                    # T Lambda_r', block by block
    TL[:, nre2:] = T[:, nre2:]
    for (blk, off), lam in zip(b.rest, lams, strict=True):
        c = slice(off, off + blk.m * blk.q)
        TL[:, c] = (T[:, c].reshape(Nr * blk.m, blk.q) @ lam.T).reshape(Nr, -1)
    G, k = plan.act.shape
    if P4 is not None:
        Hs = ((TL.T @ TL).reshape(-1) @ P4).reshape(G, q1, q1)
    else:
        X = TL @ (Cd[:Nr] if Ca is None else Ca)             # (Nr, m1 k): T Lambda_r' C
        if G == 1:
            Xr = X.reshape(-1, k)                            # rows (i, l)
            Hs = (Xr.T @ Xr)[None]
        else:
            Xl = X.reshape(Nr, m1, k).transpose(1, 2, 0)     # (m1, k, Nr)
            H = Xl @ np.swapaxes(Xl, 1, 2)
            Hs = np.bincount(plan.flat_h.ravel(), weights=H.ravel(),
                             minlength=G * k * k).reshape(G, k, k)
    wres = b.Arr[:nre2] @ zz - Cd[:nre2] @ b1m.ravel()
    return lam1.T @ active_y(plan, F, Hs, q1), w.T @ u1, T, wres
