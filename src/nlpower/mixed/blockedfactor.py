"""The blocked factor of ``M = Lambda'Z'WZ Lambda + I`` (and ``X``): solves and the selected inverse.

:func:`nlpower.mixed.blocked.factor` builds it for the blocked strategy;
:mod:`nlpower.mixed.native.weighted` from the Gaussian fitter's factors.  Its own
module so that both build it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

if TYPE_CHECKING:
    from .blocked import BlockedLayout

__all__ = ["BlockedFactor"]


@dataclass(frozen=True, eq=False)
class BlockedFactor:
    """The factor of ``M`` (and ``X``) for one set of weights.

    ``L1``: block 1's ``(m1, q1, q1)`` Cholesky factors; ``CtT = C L1^{-T}``
    (dense or sparse; ``X``'s rows after the rest's when with ``X``); ``L2``:
    the factor of the Schur complement of the rest (``None`` without a rest);
    ``logdet``: ``log |L|^2`` of the random-effects part.
    """

    layout: BlockedLayout
    L1: np.ndarray
    CtT: Any
    L2: np.ndarray | None
    logdet: float

    @property
    def Lx(self) -> np.ndarray | None:
        """The Cholesky factor of ``X``'s Schur complement (``None`` without ``X``)."""
        qr = self.layout.qr
        return None if self.L2 is None or self.L2.shape[0] == qr else self.L2[qr:, qr:]

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``M^{-1} r`` (``r``: block 1, then the rest; a vector or an ``(q, k)`` matrix)."""
        lay, L1 = self.layout, self.L1
        n1, m1, q1 = lay.n1, lay.m1, lay.q1
        r1, r2 = r[:n1], r[n1:]
        d1 = L1[:, 0, 0] if r.ndim == 1 else L1[:, 0, :1]
        if q1 == 1:
            y1 = r1 / d1
        else:
            y1 = np.linalg.solve(L1, r1.reshape(m1, q1, -1)).reshape(r1.shape)
        if self.L2 is None:
            x2 = r2
        else:
            x2 = lapack.dpotrs(self.L2, r2 - self.CtT @ y1, lower=1)[0]
        z1 = y1 - self.CtT.T @ x2 if x2.size else y1
        if q1 == 1:
            x1 = z1 / d1
        else:
            x1 = np.linalg.solve(np.swapaxes(L1, 1, 2), z1.reshape(m1, q1, -1)).reshape(r1.shape)
        return np.concatenate([x1, x2])

    def selected(self, zl: np.ndarray) -> np.ndarray:
        """``g_i``: ``M^{-1} (Z Lambda)_i'`` at observation ``i``'s own columns (``(n, s)``).

        The blocks of ``M^{-1}`` on the pattern of ``Z`` from the blocked factor:
        block 1's diagonal blocks ``L1^{-T} (I + W2'W2) L1^{-1}``
        (``W2 = L2^{-1} CtT``), the rest's ``S^{-1}`` and their coupling
        ``-S^{-1} CtT L1^{-1}``.
        """
        lay, L1 = self.layout, self.L1
        m1, q1, qr = lay.m1, lay.q1, lay.qr
        zl1, zlr = zl[:, :q1], zl[:, q1:]
        codes1 = lay.codes1
        if qr == 0:
            W2sq = np.zeros((m1, q1, q1))
        else:
            assert self.L2 is not None
            L2r = self.L2[:qr, :qr]
            CtT = self.CtT[:qr]
            CtT = CtT.toarray() if sp.issparse(CtT) else np.asarray(CtT)
            W2 = lapack.dtrtrs(L2r, CtT, lower=1)[0]                       # (qr, n1)
            P = lapack.dtrtrs(L2r, W2, lower=1, trans=1)[0]
            Sinv = lapack.dpotri(L2r, lower=1)[0]     # its upper triangle: L2's, 0 (clean)
            Sinv += Sinv.T
            Sinv[np.diag_indices(qr)] *= 0.5
            W2b = W2.reshape(qr, m1, q1)
            W2sq = np.einsum("tma,tmb->mab", W2b, W2b)
        if q1 == 1:
            d1 = L1[:, 0, 0]
            B = ((1.0 + W2sq[:, 0, 0]) / (d1 * d1))[codes1]               # (n,)
            g1 = (B * zl1[:, 0])[:, None]
        else:
            Linv = np.linalg.inv(L1)                                        # (m1, q1, q1)
            Bm = np.swapaxes(Linv, 1, 2) @ (np.eye(q1)[None] + W2sq) @ Linv
            g1 = np.einsum("nab,nb->na", Bm[codes1], zl1)
        if qr == 0:
            return g1
        colsr = lay.colsr
        if q1 == 1:
            Nsel = (-P[colsr, codes1[:, None]] / d1[codes1][:, None])[:, :, None]   # (n, sr, 1)
        else:
            # -P_g L1g^{-1} for each level g: (qr, m1, q1)
            N21 = -np.einsum("tmb,mba->tma", P.reshape(qr, m1, q1), Linv)
            Nsel = N21[colsr[:, :, None], codes1[:, None, None], np.arange(q1)[None, None, :]]
        Ssel = Sinv[colsr[:, :, None], colsr[:, None, :]]                   # (n, sr, sr)
        g1 = g1 + np.einsum("nta,nt->na", Nsel, zlr)
        g2 = np.einsum("nta,na->nt", Nsel, zl1) + np.einsum("nts,ns->nt", Ssel, zlr)
        return np.concatenate([g1, g2], axis=1)
