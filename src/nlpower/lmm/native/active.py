"""Block 1's part of the gradient on each level's active columns (items nested in systems).

When a level of block 1 uses only some of its ``q1`` columns (``Z1_l`` zero
elsewhere: the "patterns" of :class:`~.blocks.Blocks`), everything block 1
contributes to the gradient lives on those ``k`` columns.  With ``P =
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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .blocks import Blocks


@dataclass(eq=False)
class ActivePlan:
    """Per level its active columns (padded to ``k``), ``Z1'Z1`` on them, scatter indices."""

    act: np.ndarray        # (m1, k) active column indices (padding repeats one of them)
    mask: np.ndarray       # (m1, k) 1.0 on active entries, 0.0 on padding
    A: np.ndarray          # (m1, k, k) Z1_l'Z1_l on the active columns (0 on padding)
    flat_w: np.ndarray     # (m1, k) flat positions l q1 + act in an (m1, q1) array
    flat_y: np.ndarray     # (m1, k, k) flat positions act_a q1 + act_b in a (q1, q1) array
    Ca: np.ndarray         # (pairs, k) W'Z1's pairs on their level's active columns
    CT: sp.csr_matrix      # (m1 k, N2) the same transposed: c = CT @ [-z, 1]


def active_plan(b: Blocks) -> ActivePlan:
    """The plan of :class:`ActivePlan` for ``b`` (``b.patterns`` set; once per model)."""
    assert b.patterns is not None
    m1, q1 = b.b1.m, b.b1.q
    k = max(int(p.cols.size) for p in b.patterns)
    act = np.zeros((m1, k), dtype=np.intp)
    mask = np.zeros((m1, k))
    for p in b.patterns:
        kp = int(p.cols.size)
        act[p.levels, :kp] = p.cols
        act[p.levels, kp:] = p.cols[0]
        mask[p.levels, :kp] = 1.0
    lev = np.arange(m1)[:, None, None]
    A = b.A11[lev, act[:, :, None], act[:, None, :]] * mask[:, :, None] * mask[:, None, :]
    Ca = np.take_along_axis(b.C, act[b.pair_lev], axis=1) * mask[b.pair_lev]
    CT = sp.csr_matrix((Ca.ravel(), ((b.pair_lev[:, None] * k + np.arange(k)).ravel(),
                                     np.repeat(b.pair_row, k))), shape=(m1 * k, b.N2))
    return ActivePlan(act=act, mask=mask, A=A,
                      flat_w=np.arange(m1)[:, None] * q1 + act,
                      flat_y=act[:, :, None] * q1 + act[:, None, :], Ca=Ca, CT=CT)


def active_modes(plan: ActivePlan, lam1: np.ndarray, z: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(F, u1, b1)``: ``F_l`` on the active columns ``(m1, k, k)``, the spherical modes
    ``u1`` and the modes ``b1 = Lambda1 u1`` of block 1, each ``(m1, q1)``."""
    m1, k = plan.act.shape
    q1 = lam1.shape[0]
    P = lam1 @ lam1.T
    ca = (plan.CT @ np.append(-z, 1.0)).reshape(m1, k)                  # c_l, active columns
    if k == 1:
        F = (1.0 / (1.0 + plan.A[:, 0, 0] * P[plan.act[:, 0], plan.act[:, 0]])).reshape(m1, 1, 1)
    else:
        Q = P[plan.act[:, :, None], plan.act[:, None, :]]
        T = plan.A @ Q
        T[:, np.arange(k), np.arange(k)] += 1.0
        F = np.linalg.inv(T)
    w = (F @ ca[:, :, None])[:, :, 0]                                    # F_l c_l
    wl = np.bincount(plan.flat_w.ravel(), weights=w.ravel(), minlength=m1 * q1).reshape(m1, q1)
    return F, wl @ lam1, wl @ P


def active_y(plan: ActivePlan, F: np.ndarray, La: np.ndarray, Sg: np.ndarray, q1: int
             ) -> np.ndarray:
    """``Y = sum_l F_l A_l - F_l H_l F_l'`` scattered to ``(q1, q1)``, with ``H_l = La_l' Sg_l
    La_l`` (``La``: ``Lambda_r' C_l`` on the level's rest rows and active columns, ``(m1,
    rmax, k)``; ``Sg``: ``S^{-1}`` on those rows, ``(m1, rmax, rmax)``)."""
    H = np.swapaxes(La, 1, 2) @ (Sg @ La)
    FH = F @ H
    Yl = F @ plan.A - FH @ np.swapaxes(F, 1, 2)
    return np.bincount(plan.flat_y.ravel(), weights=Yl.ravel(), minlength=q1 * q1).reshape(q1, q1)
