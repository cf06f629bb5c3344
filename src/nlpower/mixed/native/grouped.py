"""Levels of block 1 grouped by equal ``Z1'Z1``: the products ``P`` and ``Q`` of the
grouped Schur complement, decided at set-up and built on first use.

A mixin of :class:`.deviance.DevianceEvaluator` (it reads the evaluator's
``b``, ``_grouped_ok`` and ``_scale_idx``).  The decision (which levels share
a ``Z1'Z1``, whether ``Lambda_r`` folds into ``Q``) is cheap and made at
set-up, because the evaluator's other paths depend on it; the products are
the costly part (a sparse crowd design: 50 ms, 10-30 evaluations) and are
built by the first grouped evaluation, so a model factored only once through
:meth:`.deviance.DevianceEvaluator.factor_once` never builds them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from . import block1
from .block1 import grouped_products
from .lead import LeadPlan

# the grouped Schur complement stores this many numbers at most
_GROUPED_MAX_ENTRIES = 4e6
# ... and folds the scaling by Lambda_r into the mat-vec up to this many columns
_Q_MAX_COLS = 400


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(a, axis=0, return_inverse=True, return_counts=True)`` by one ``lexsort``
    (the same rows, order, inverse and counts; numpy sorts a structured view, ~10x slower:
    1.5 ms for 1,000 rows of 4)."""
    order = np.lexsort(a.T[::-1])
    s = a[order]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (s[1:] != s[:-1]).any(axis=1)
    gid = np.cumsum(new) - 1
    inv = np.empty(len(a), dtype=np.intp)
    inv[order] = gid
    return s[new], inv, np.bincount(gid)


def sel_sparse(b: Any) -> bool:
    """Whether :func:`.block1.grouped_products` forms its products sparse (its rule)."""
    m1, q1, N2 = b.b1.m, b.b1.q, b.N2
    nnz = np.bincount(b.pair_lev, minlength=m1).astype(float) * q1
    return not float(N2 * q1) ** 2 * m1 <= 10.0 * float(nnz @ nnz)


def _group_Y(b: Any, inv: np.ndarray, sel: list[np.ndarray]) -> list[sp.csr_matrix]:
    """Per group ``Y[(i, a), l] = C_l[i, a]`` (:func:`.block1.grouped_products`'s).  With
    one column the CSR arrays are the pairs' own (they are in CSR order, and a group's
    levels keep their order: ``sel`` is sorted), so nothing is sorted."""
    m1, q1, N2 = b.b1.m, b.b1.q, b.N2
    pos = np.empty(m1, dtype=np.intp)
    for g in range(len(sel)):
        pos[sel[g]] = np.arange(sel[g].size)
    grp = inv[b.pair_lev]
    Ys = []
    for g in range(len(sel)):
        if q1 == 1:
            keep = np.flatnonzero(grp == g)
            indptr = np.concatenate([[0], np.cumsum(np.bincount(b.pair_row[keep], minlength=N2))])
            Ys.append(sp.csr_matrix((b.C[keep, 0], pos[b.pair_lev[keep]], indptr),
                                    shape=(N2, sel[g].size)))
            continue
        kq = np.repeat(grp == g, q1)
        rows = (b.pair_row[:, None] * q1 + np.arange(q1)).ravel()
        Ys.append(sp.csr_matrix((b.C.ravel()[kq], (rows[kq], np.repeat(pos[b.pair_lev], q1)[kq])),
                                shape=(N2 * q1, sel[g].size)))
    return Ys


def sel_products(b: Any, inv: np.ndarray, sel: list[np.ndarray], lead: LeadPlan
                 ) -> tuple[np.ndarray, list[sp.csr_matrix]]:
    """The grouped products ``P_g^{ab}`` at the lead plan's entries only: the lead's
    diagonal blocks and the rows after it, ``(lead.sel.size, G q1^2)``, and the ``Y``s.

    The rows of :func:`.block1.grouped_products`'s sparse ``Y Y'`` that the lead reads:
    ``Y[rows after the lead] Y'`` and the lead's block-diagonal ``Y_lead Y_lead'``, each
    row summed as in the whole product (the same numbers); the ``N2^2 G q1^2`` array
    of every entry is never formed (``sys20``: 2.9 million entries, of which 244,000
    are read).
    """
    q1, N2, nl = b.b1.q, b.N2, lead.nl
    nd, G, K = lead.m * lead.q * lead.q, len(sel), q1 * q1
    Ys = _group_Y(b, inv, sel)
    out = np.zeros((lead.sel.size, G * K))
    rows = out[nd:].reshape(N2 - nl, N2, G, q1, q1)
    ar = np.arange(q1)
    li = (lead.sel_i[:nd, None, None] * q1 + ar[:, None]).ravel()
    lk = (lead.sel_k[:nd, None, None] * q1 + ar[None, :]).ravel()
    for g, Y in enumerate(Ys):
        # Y' as CSR (a CSC copy of Y, transposed): a row's sums run over the same levels
        # in the same order as in Y Y' (scipy's own conversion of Y.T is ~4x slower)
        R = (Y[nl * q1:] @ Y.tocsc().T).toarray().reshape(N2 - nl, q1, N2, q1)
        rows[:, :, g] = R.transpose(0, 2, 1, 3)
        Yl = Y[:nl * q1]
        out[:nd, g * K:(g + 1) * K] = np.asarray((Yl @ Yl.T)[li, lk]).reshape(nd, K)
    return out, Ys


def sel_update_y(b: Any, sel: list[np.ndarray], Ys: list[sp.csr_matrix], lead: LeadPlan,
                 out: np.ndarray) -> None:
    """The ``y`` row and column of :func:`sel_products`'s ``out`` for a new response (in
    place; :meth:`GroupedLevels._grouped_update_y`'s numbers)."""
    q1, N2, nl = b.b1.q, b.N2, lead.nl
    nd = lead.m * lead.q * lead.q
    rows = out[nd:].reshape(N2 - nl, N2, len(sel), q1, q1)
    Cy = np.zeros((b.b1.m, q1))
    Cy[b.y_levels] = b.C[b.y_pairs]
    for g, s in enumerate(sel):
        Cyg = Cy[s]
        R = np.ascontiguousarray(np.swapaxes((Ys[g] @ Cyg).reshape(N2, q1, q1), 1, 2))
        R[-1] = Cyg.T @ Cyg
        rows[-1, :, g] = R
        rows[:, -1, g] = np.swapaxes(R[nl:], 1, 2)


class GroupedLevels:
    """Set-up of the grouped levels (see the module docstring)."""

    b: Any
    lead: LeadPlan | None
    _grouped_ok: bool
    _scale_idx: np.ndarray | None
    _lead_psel: np.ndarray | None

    def _init_grouped(self) -> None:
        """Levels of block 1 with equal ``Z1'Z1`` share ``W_l = Lambda1 B_l^{-1} Lambda1'``.

        Then ``S = sum_l C_l W_l C_l' = sum_g sum_ab W_g[a, b] P_g^{ab}`` with ``P_g^{ab} =
        sum_{l in g} C_l[:, a] C_l[:, b]'`` precomputed: per evaluation one ``(N2^2, G q1^2)``
        mat-vec (on the block-lower entries: :class:`.block1.GroupedLower`) instead of
        ``N2^2 m1 q1`` flops (``G`` = number of distinct ``Z1'Z1``: 1 in a balanced design).
        Only the ``y`` row/column of ``P`` changes with the response.  Here the
        groups and the paths are decided; ``P`` and ``Q`` are built on first use
        (:attr:`_grp`), so a model factored once through ``factor_once``
        never builds them."""
        b = self.b
        self._grouped, self._use_Q = False, False
        self._grp_obj: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        self._Q: np.ndarray | None = None
        if not self._grouped_ok or b.patterns is not None:
            return
        m1, q1, N2 = b.b1.m, b.b1.q, b.N2
        # one column: a plain unique (the rows' unique sorts a structured view, ~40x slower)
        uq, inv, cnt = (np.unique(b.A11.reshape(-1), return_inverse=True, return_counts=True)
                        if q1 == 1 else unique_rows(b.A11.reshape(m1, -1)))
        inv = np.asarray(inv).ravel()
        G = uq.shape[0]
        if 2 * G * q1 > m1 or N2 * N2 * G * q1 * q1 > _GROUPED_MAX_ENTRIES:
            return
        self._grouped = True
        self._grp_version = b.version         # the response the products are of (below)
        self._grp_uq, self._grp_cnt = uq.reshape(G, q1, q1), cnt.astype(float)
        self._grp_sel = [np.flatnonzero(inv == g) for g in range(G)]
        self._grp_inv = inv
        self._grp_pair = inv[b.pair_lev]
        # built on first use: the folded (_Q) and lead paths never read it
        self._grp_lower_obj: block1.GroupedLower | None = None
        # with diagonal rest blocks, fold Lambda_r' . Lambda_r and + I into the same
        # mat-vec: M = sum_{s,u,k} tv_s tv_u w_k Q_{suk} + I_re, where s, u run over the
        # distinct diagonal entries of Lambda_r (tv: theta values or 1), w = (1, W_g)
        if self._scale_idx is not None:
            uT, tmap = np.unique(self._scale_idx, return_inverse=True)
            nT, nK = uT.size, 1 + G * q1 * q1
            ncol = nT * nT * nK + 1
            if ncol <= _Q_MAX_COLS and N2 * N2 * ncol <= _GROUPED_MAX_ENTRIES:
                self._q_types = [int(t) for t in uT]
                tm = np.asarray(tmap).ravel()
                self._q_pair = (tm[:, None] * nT + tm[None, :]).ravel()
                self._use_Q, self._q_ncol = True, ncol

    @property
    def _grp(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """``(distinct Z1'Z1, levels per group, P as (N2^2, G q1^2), P as (N2, N2, G, q1, q1))``,
        the grouped products built on first use; ``None``: not grouped."""
        if self._grouped and self._grp_obj is None:
            b = self.b
            # P's y row and column are taken as of the set-up's response: when the response
            # changed since, the first evaluation recomputes them (_grouped_update_y) exactly
            # as it would have after an eager build (the same numbers, not rounding apart)
            P4, self._grp_E = grouped_products(b, self._grp_inv, self._grp_sel)
            self._grp_obj = (self._grp_uq, self._grp_cnt, P4.reshape(b.N2 * b.N2, -1), P4)
        return self._grp_obj

    @property
    def _grp_lower(self) -> block1.GroupedLower:
        """The grouped products on the block-lower entries (:class:`.block1.GroupedLower`)."""
        if self._grp_lower_obj is None:
            assert self._grp is not None
            self._grp_lower_obj = block1.GroupedLower(self.b, self._grp[2])
        return self._grp_lower_obj

    def _lead_products(self) -> np.ndarray:
        """The grouped products at the lead plan's entries (``(sel.size, G q1^2)``), for the
        current response: built on first use, after a new response only the ``y`` row and
        column recomputed (:func:`sel_products`)."""
        b, lead = self.b, self.lead
        assert lead is not None
        if self._lead_psel is None:
            if self._grp_obj is None and sel_sparse(b):
                # built from the current response; its y entries are then recomputed below
                # when the response changed since the set-up, as _grouped_update_y does
                self._lead_psel, self._grp_E = sel_products(b, self._grp_inv, self._grp_sel,
                                                            lead)
            else:                        # the whole products' entries (the same numbers)
                assert self._grp is not None
                self._lead_psel = np.take(self._grp[2], lead.sel, axis=0)   # ~20x a fancy index
        if self._grp_version != b.version:
            if self._grp_obj is not None:
                self._grouped_update_y()
                self._lead_psel = np.take(self._grp_obj[2], lead.sel, axis=0)
            else:
                sel_update_y(b, self._grp_sel, self._grp_E, lead, self._lead_psel)
                self._grp_version = b.version
        return self._lead_psel

    def _grouped_update_y(self) -> None:
        """Recompute the ``y`` row and column of ``P`` after a new response."""
        b = self.b
        assert self._grp is not None
        P4, q1 = self._grp[3], b.b1.q
        Cy = np.zeros((b.b1.m, q1))                                     # (m1, q1)
        Cy[b.y_levels] = b.C[b.y_pairs]
        for g, sel in enumerate(self._grp_sel):
            Cyg = Cy[sel]
            # R[k, a, c] = sum_l Cy_l[a] C_l[k, c]; Y's y rows are stale: R[-1] is recomputed
            R = np.ascontiguousarray(np.swapaxes((self._grp_E[g] @ Cyg).reshape(b.N2, q1, q1),
                                                 1, 2))
            R[-1] = Cyg.T @ Cyg
            P4[-1, :, g] = R
            P4[:, -1, g] = np.swapaxes(R, 1, 2)
        self._grp_version = b.version
        if self._grp_lower_obj is not None:
            self._grp_lower_obj.update_y(b, self._grp[2])
        if self._Q is not None:
            self._build_Q()

    def _build_Q(self) -> None:
        """Fill ``Q`` (see :meth:`_init_grouped`) from ``Arr`` and ``P`` (per response)."""
        b = self.b
        assert self._Q is not None and self._grp is not None
        N2, nre2 = b.N2, b.nre2
        T = len(self._q_types)
        base = np.concatenate([b.Arr.reshape(-1, 1), -self._grp[2]], axis=1)   # (N2^2, K)
        K = base.shape[1]
        Q3 = np.zeros((N2 * N2, T * T, K))
        Q3[np.arange(N2 * N2), self._q_pair, :] = base
        Q = self._Q
        Q[:, :-1] = Q3.reshape(N2 * N2, -1)
        Q[:, -1] = 0.0
        Q[np.arange(nre2) * (N2 + 1), -1] = 1.0
