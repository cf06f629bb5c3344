"""The rest's matrix built straight into a zeroed Fortran-ordered lower triangle.

With sparse Schur products (:class:`~.blocks.SparseSchur`, e.g. InstEval) and
a diagonal ``Lambda_r``, the rest's matrix

    M = Lambda_r' (A_rr - S) Lambda_r + I_re

is nonzero only on a fixed pattern: the structural nonzeros of ``A_rr`` (its
``y`` row whole), the rows of the Schur products ``V`` and the
random-effects diagonal -- InstEval: 22 % of the lower triangle.  An
evaluation computes the values on that pattern only (``A_rr`` gathered once
per response, minus the products, times ``d_i d_k`` from a table of the few
distinct diagonal entries of ``Lambda_r``) and scatters them into a zeroed
array in Fortran order.  LAPACK's ``dpotrf`` then factors the lower triangle
of a Fortran-ordered array in place (faster than the upper triangle of the
transposed C-ordered copy, ~14 vs ~16 ms for InstEval's 1,145 columns on one
core), and the upper triangle stays zero, so no cleaning pass is needed.
Same numbers as the full-matrix route (the same operations on every nonzero
entry, in the same order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .blocks import Blocks, SparseSchur

__all__ = ["LowerBuild", "lower_build"]


@dataclass(eq=False)
class LowerBuild:
    """Positions and tables of the pattern (see the module docstring)."""

    N2: int
    fpos: np.ndarray        # (nnz,) Fortran-order flat positions k*N2 + i (i >= k) of the pattern
    arr_pos: np.ndarray     # (nnz,) C-order flat positions i*N2 + k of the pattern in A_rr
    s_idx: np.ndarray       # (rows of V,) pattern index of each Schur product row
    pair_type: np.ndarray   # (nnz,) index into the (T*T,) table of d_i d_k
    types: np.ndarray       # (T,) index into (theta, 1.0) of each distinct diagonal of Lambda_r
    diag: np.ndarray        # pattern indices of the random-effects diagonal
    _arr: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _version: int = -1

    def values(self, b: Blocks, vals: np.ndarray, theta_ext: np.ndarray) -> np.ndarray:
        """``M`` on the pattern, from the Schur products ``vals`` (``V @ vec(W)``)."""
        if self._version != b.version:
            self._arr = b.Arr.reshape(-1)[self.arr_pos]
            self._version = b.version
        u = self._arr.copy()
        u[self.s_idx] -= vals
        tv = theta_ext[self.types]
        u *= np.multiply.outer(tv, tv).reshape(-1)[self.pair_type]
        u[self.diag] += 1.0
        return u

    def matrix(self, b: Blocks, vals: np.ndarray, theta_ext: np.ndarray) -> np.ndarray:
        """``M`` as an ``(N2, N2)`` Fortran-ordered array, lower triangle filled, upper zero."""
        N2 = self.N2
        Mf = np.zeros(N2 * N2)
        Mf[self.fpos] = self.values(b, vals, theta_ext)
        return Mf.reshape(N2, N2).T


def lower_build(b: Blocks, scale_idx: np.ndarray) -> LowerBuild | None:
    """The :class:`LowerBuild` of ``b`` (``None`` unless its Schur products are sparse).

    ``scale_idx``: per rest column, the index into ``(theta, 1.0)`` of its
    diagonal entry of ``Lambda_r`` (:class:`~.deviance.DevianceEvaluator`'s).
    """
    if not isinstance(b.schur, SparseSchur):
        return None
    N2, nre2 = b.N2, b.nre2
    s_lo = b.schur.S_lo.astype(np.int64)
    i, k = np.nonzero(np.tril(b.Arr[:-1, :-1]))
    arr_lo = i.astype(np.int64) * N2 + k
    yrow = (N2 - 1) * np.int64(N2) + np.arange(N2, dtype=np.int64)
    rdiag = np.arange(nre2, dtype=np.int64) * (N2 + 1)
    mark = np.zeros(N2 * N2, dtype=bool)              # sorted union without a sort
    for part in (s_lo, arr_lo, yrow, rdiag):
        mark[part] = True
    pattern = np.flatnonzero(mark)
    pi, pk = np.divmod(pattern, N2)
    uT, tmap = np.unique(scale_idx, return_inverse=True)
    tmap = np.asarray(tmap).ravel()
    return LowerBuild(
        N2=N2,
        fpos=pk * N2 + pi,
        arr_pos=pattern,
        s_idx=np.searchsorted(pattern, s_lo),
        pair_type=tmap[pi] * uT.size + tmap[pk],
        types=uT.astype(np.intp),
        diag=np.searchsorted(pattern, rdiag),
    )
