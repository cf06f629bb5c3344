"""One weighted blocked factorisation of ``M = Lambda'Z'WZ Lambda + I`` (optionally with ``X``).

The inner problem of every non-Gaussian mixed model (GLMM PIRLS, the
cumulative-link Laplace) factors ``M`` for weights ``w`` that change at
every Newton step, on a structure fixed by the design.  The random-effects
columns come as grouping blocks, the largest first (lme4's amalgamation,
the LMM engine's order):

* block 1 stays block diagonal: ``m1`` blocks ``D_l`` of ``q1 x q1``,
  factored by batched Cholesky ``L1`` (``q1 = 1``: a square root);
* the rest (the other blocks' ``qr`` columns, and ``X``'s ``p`` when the
  fixed effects are updated with the modes) is eliminated densely: with
  ``CtT = C L1^{-T}`` (``C``: rest x block 1) the Schur complement
  ``S = R - CtT CtT'`` (``+ I`` on the random-effects part) is factored by
  LAPACK's ``dpotrf`` as ``L2``.

``C`` is held sparse when at most :data:`SPARSE_C` of its entries can be
non-zero (nested or observation-level block 1: then ``CtT CtT'`` costs
``O(nnz)``) or when it has more than :data:`DENSE_C` entries (memory); the
one rule, :meth:`BlockedLayout.sparse_rule`.

*Strategies.*  A large crossed design whose rest blocks compress (each of
its observations' rows of ``Z_b`` one of a few patterns: factor codings)
is factored through pairs of observations instead (:mod:`.pairs`, chosen
once per layout by :func:`~.pairs.pair_plan`: the blockwise dense Schur
complement would cost more than :data:`~.pairs.PAIR_MIN_WORK`).  ``X``
then joins after ``M`` is factored (:class:`FixedLast`: its Schur
complement from ``p`` solves, the same joint factor's last block).
:func:`factor` returns either strategy's factor; all give ``logdet``,
``solve`` and ``selected``.

Every weighted cross-product is one ``np.bincount`` of ``w`` times the
per-observation products ``(Z Lambda)_ia (Z Lambda)_ib`` (fixed for a
``theta``: :meth:`BlockedLayout.products`) over a table of target positions
fixed by the design (:class:`BlockedLayout`).  The factor gives
``log |L|^2`` of the random-effects part, solves, and the selected inverse
(the entries of ``M^{-1} (Z Lambda)_i'`` at observation ``i``'s own
columns) that analytic Laplace gradients need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast, overload

import numpy as np
import scipy.sparse as sp
from scipy.linalg import lapack

from .blockedfactor import BlockedFactor
from .native.weighted import NativeFactor, NativePlan
from .pairs import PairFactor, PairTheta, pair_plan

__all__ = ["DENSE_C", "NATIVE_MIN_WORK", "SPARSE_C", "BlockedFactor", "BlockedLayout", "Factor",
           "ThetaProducts", "factor"]

#: C (rest x block 1) is stored sparse when under this share of its entries can be non-zero
#: (measured per fit: grouseticks, share 0.011, sparse faster; a 20,000-rating crowd clmm,
#: 1,000 items x 200 workers, share 0.0997, dense 15% faster)
SPARSE_C = 0.03
#: ... or when it has more entries than this (32 MB dense)
DENSE_C = 4_000_000
#: the native strategy (:mod:`.native`) is taken for a scalar block 1 whose dense Schur
#: complement's work ``n1 qr^2`` exceeds this (see :func:`native_rule`)
NATIVE_MIN_WORK = 5e7


@dataclass(frozen=True, eq=False)
class ThetaProducts:
    """``Z Lambda`` per slot at one ``theta`` and the cross-product multipliers.

    ``zl``: ``(n, s)``, block 1's ``q1`` slots first; ``mzz``: the products
    scattered into ``D | C | R`` (``D | R`` when ``C`` is sparse, whose own
    products are ``mc``; ``D`` alone with the pair strategy, whose own
    per-``theta`` part is ``pairs``).
    """

    zl: np.ndarray
    mzz: np.ndarray
    mc: np.ndarray | None
    pairs: PairTheta | None = None
    #: ``theta`` itself where the layout takes the native strategy (its products are its own)
    theta: np.ndarray | None = None


#: the factor type a layout's :func:`factor` returns: :class:`BlockedFactor` for a layout
#: built without ``designs`` (the pair strategy cannot apply), :data:`Factor` with them
F = TypeVar("F", bound="BlockedFactor | PairFactor | FixedLast | NativeFactor")


class BlockedLayout(Generic[F]):
    """Where each observation's products land in ``M`` (fixed by the design).

    Parameters
    ----------
    codes : each grouping block's level codes (``(n,)`` each), the largest block first.
    qs, ms : each block's columns per level and number of levels.
    p : columns of ``X`` that may join the factor (:func:`factor` ``with X``).
    designs : each block's ``Z`` (``(n, q_b)``): lets the pair strategy
        (:mod:`.pairs`) find the rest's patterns; without them the blocked
        factorisation is used.
    pairs : the pair strategy where the rule says so (``None``), wherever it
        applies (``True``) or never (``False``).
    native : the native strategy (:mod:`.native`, attached by :meth:`attach_native`) where
        :func:`native_rule` says so (``None``), wherever it applies (``True``) or never.
    """

    @overload
    def __init__(self: BlockedLayout[BlockedFactor], codes: Sequence[np.ndarray],
                 qs: Sequence[int], ms: Sequence[int], p: int = 0, *, designs: None = None,
                 pairs: bool | None = None) -> None: ...

    @overload
    def __init__(self: BlockedLayout[Factor], codes: Sequence[np.ndarray], qs: Sequence[int],
                 ms: Sequence[int], p: int = 0, *, designs: Sequence[np.ndarray],
                 pairs: bool | None = None, native: bool | None = None) -> None: ...

    def __init__(self, codes: Sequence[np.ndarray], qs: Sequence[int], ms: Sequence[int],
                 p: int = 0, *, designs: Sequence[np.ndarray] | None = None,
                 pairs: bool | None = None, native: bool | None = None) -> None:
        n = int(codes[0].shape[0])
        self.n, self.p = n, p
        self.codes = [np.asarray(c, dtype=np.intp) for c in codes]
        self.qs, self.ms = [int(q) for q in qs], [int(m) for m in ms]
        qs, ms = self.qs, self.ms            # (Python ints: no overflow of small numpy types)
        self.m1, self.q1 = int(ms[0]), int(qs[0])
        self.n1 = self.m1 * self.q1
        q1 = self.q1
        offs, off = [], 0
        for m, q in zip(ms[1:], qs[1:], strict=True):
            offs.append(off)
            off += m * q
        self.qr = off
        self.q = self.n1 + self.qr
        # slot columns: for each observation, its random-effects columns (block 1 first)
        cols1 = codes[0][:, None] * q1 + np.arange(q1)[None, :]
        colsr = [o + c[:, None] * q + np.arange(q)[None, :]
                 for o, c, q in zip(offs, codes[1:], qs[1:], strict=True)]
        self.codes1 = np.asarray(codes[0], dtype=np.intp)
        self.cols1 = cols1
        self.colsr = np.concatenate(colsr, axis=1) if colsr else np.zeros((n, 0), dtype=np.intp)
        self.slots = np.concatenate([cols1, self.n1 + self.colsr], axis=1)   # (n, s)
        self.sr = self.colsr.shape[1]
        self._tD = (self.codes1[:, None, None] * q1 * q1 + np.arange(q1)[None, :, None] * q1
                    + np.arange(q1)[None, None, :]).reshape(n, -1)
        self._zz_targets()
        # targets of the X-Z cross-products (beta with the modes): Cx (p x n1) | Rx (qr x p)
        tCx = np.arange(p)[None, :, None] * self.n1 + cols1[:, None, :]
        offRx = p * self.n1
        tRx = offRx + self.colsr[:, :, None] * p + np.arange(p)[None, None, :]
        self._txz = np.concatenate([tCx.reshape(n, -1), tRx.reshape(n, -1)], axis=1)
        self._nxz = offRx + self.qr * p
        #: whether the native strategy is to be taken; the plan (``None``: not attached)
        self.use_native = native_rule(self, designs is not None and pairs is not True, native)
        self.native: NativePlan | None = None
        #: the pair rule's answer, which the batched refits follow (:mod:`.pairs_batch`)
        self.pairs_rule = pair_plan(self, designs, pairs)
        #: the pair strategy's fixed part (``None``: the blocked factorisation or the native)
        self.pairs = None if self.use_native else self.pairs_rule

    def attach_native(self, blocks: Sequence[Any], X: np.ndarray) -> None:
        """Build the native strategy's plan where :attr:`use_native` (``blocks``: the grouping
        blocks with ``Lambda`` from ``theta``, this layout's; ``X``: the fixed effects)."""
        if self.use_native and self.native is None:
            self.native = NativePlan(list(blocks), X, self)

    def _zz_targets(self) -> None:
        """Targets of the Z-Z cross-products: ``D`` (m1 q1 q1) | ``C`` (qr x n1) | ``R`` (qr x qr)."""
        n, q1, cols1 = self.n, self.q1, self.cols1
        tD = self._tD
        offC = self.m1 * q1 * q1
        posC = (self.colsr[:, :, None] * self.n1 + cols1[:, None, :]).reshape(n, -1)
        self.sparse_c = False
        if self.qr > 0:
            uniq, inv = np.unique(posC.ravel(), return_inverse=True)
            if self.sparse_rule(uniq.size):
                self.sparse_c = True
                tmpl = sp.csr_matrix((np.arange(1.0, uniq.size + 1.0),
                                      (uniq // self.n1, uniq % self.n1)), shape=(self.qr, self.n1))
                self._c_inv, self._c_n = inv.ravel(), uniq.size
                self._c_perm = tmpl.data.astype(np.intp) - 1
                self._c_indices, self._c_indptr = tmpl.indices, tmpl.indptr
        if self.sparse_c:
            offR = offC
            parts = [tD.reshape(n, -1)]
        else:
            offR = offC + self.qr * self.n1
            parts = [tD.reshape(n, -1), offC + posC]
        tR = offR + self.colsr[:, :, None] * self.qr + self.colsr[:, None, :]
        self._tzz = np.concatenate([*parts, tR.reshape(n, -1)], axis=1)
        self._nzz = offR + self.qr * self.qr

    def sparse_rule(self, nnz: int) -> bool:
        """Whether ``C`` (rest x block 1) with ``nnz`` possible non-zeros is held sparse.

        Sparse when few of its entries can be non-zero (nested or
        observation-level block 1, e.g. grouseticks: then ``C C'`` costs
        ``O(nnz)``, not ``qr^2 n1``) or when dense it would be too large.
        """
        return nnz < SPARSE_C * self.qr * self.n1 or self.qr * self.n1 > DENSE_C

    def block1_matrices(self, tp: ThetaProducts, w: np.ndarray) -> np.ndarray:
        """Block 1's diagonal blocks of ``M`` alone: ``(m1, q1, q1)``."""
        q1 = self.q1
        G: np.ndarray = np.bincount(self._tD.ravel(), (w[:, None] * tp.mzz[:, :q1 * q1]).ravel(),
                                    minlength=self.m1 * q1 * q1).reshape(self.m1, q1, q1)
        G[:, np.arange(q1), np.arange(q1)] += 1.0
        return G

    # -- per theta -------------------------------------------------------------------
    def products(self, zl: np.ndarray, theta: np.ndarray | None = None) -> ThetaProducts:
        """The multipliers of the weighted cross-products for ``Z Lambda`` per slot ``zl``
        (with the native strategy attached and ``theta`` given: block 1's and ``theta``)."""
        n, q1 = self.n, self.q1
        zl1, zlr = zl[:, :q1], zl[:, q1:]
        mD = zl1[:, :, None] * zl1[:, None, :]
        if self.native is not None and theta is not None:
            return ThetaProducts(zl, mD.reshape(n, -1), None, None, np.array(theta, dtype=float))
        if self.pairs is not None:       # block 1's products and the pairs' own part
            return ThetaProducts(zl, mD.reshape(n, -1), None, self.pairs.at_theta(zl))
        mC = (zlr[:, :, None] * zl1[:, None, :]).reshape(n, -1)
        mR = zlr[:, :, None] * zlr[:, None, :]
        if self.sparse_c:
            return ThetaProducts(zl, np.concatenate([mD.reshape(n, -1), mR.reshape(n, -1)], axis=1),
                                 mC)
        return ThetaProducts(zl, np.concatenate([mD.reshape(n, -1), mC, mR.reshape(n, -1)], axis=1),
                             None)

    def x_products(self, X: np.ndarray, zl: np.ndarray) -> np.ndarray:
        """The multipliers of the ``X``-``Z`` cross-products (fixed effects with the modes)."""
        n, q1 = self.n, self.q1
        mCx = X[:, :, None] * zl[:, None, :q1]
        mRx = zl[:, q1:, None] * X[:, None, :]
        return np.concatenate([mCx.reshape(n, -1), mRx.reshape(n, -1)], axis=1)

    # -- products with Z Lambda ------------------------------------------------------
    def zu(self, zl: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``Z Lambda u``."""
        return np.einsum("ij,ij->i", zl, u[self.slots])

    def ztv(self, zl: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``Lambda' Z' v``."""
        return np.bincount(self.slots.ravel(), (zl * v[:, None]).ravel(), minlength=self.q)


def _block1(lay: BlockedLayout, tp: ThetaProducts, w: np.ndarray, vals: np.ndarray
            ) -> tuple[np.ndarray, Any, float]:
    """Block 1's factors ``L1``, ``CtT = C L1^{-T}`` and ``log |L1|^2``."""
    m1, q1, n1, qr = lay.m1, lay.q1, lay.n1, lay.qr
    offC = m1 * q1 * q1
    D = vals[:offC].reshape(m1, q1, q1)
    CtT: Any
    if q1 == 1:
        d1 = np.sqrt(D[:, 0, 0] + 1.0)
        L1 = d1.reshape(m1, 1, 1)
        ld1 = 2.0 * float(np.sum(np.log(d1)))
        if lay.sparse_c:
            cv = np.bincount(lay._c_inv, (tp.mc * w[:, None]).ravel(), minlength=lay._c_n)
            CtT = sp.csr_matrix((cv[lay._c_perm] / d1[lay._c_indices], lay._c_indices,
                                 lay._c_indptr), shape=(qr, n1))
        else:
            CtT = vals[offC:offC + qr * n1].reshape(qr, n1) / d1[None, :]
        return L1, CtT, ld1
    L1 = np.linalg.cholesky(D + np.eye(q1)[None, :, :])
    ld1 = 2.0 * float(np.sum(np.log(np.diagonal(L1, axis1=1, axis2=2))))
    if lay.sparse_c:              # C L1^{-T}: C times the block diagonal of the L1_l^{-T}
        cv = np.bincount(lay._c_inv, (tp.mc * w[:, None]).ravel(), minlength=lay._c_n)
        C = sp.csr_matrix((cv[lay._c_perm], lay._c_indices, lay._c_indptr), shape=(qr, n1))
        LinvT = np.swapaxes(np.linalg.inv(L1), 1, 2)
        CtT = (C @ sp.bsr_matrix((LinvT, np.arange(m1), np.arange(m1 + 1)), shape=(n1, n1))).tocsr()
        return L1, CtT, ld1
    Cb = vals[offC:offC + qr * n1].reshape(qr, m1, q1).transpose(1, 2, 0)   # (m1, q1, qr)
    CtT = np.linalg.solve(L1, Cb).reshape(n1, qr).T
    return L1, CtT, ld1


def _x_cross(lay: BlockedLayout, mxz: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``X'W Z Lambda`` as ``Cx`` (``p x n1``, block 1) and ``Rx`` (``qr x p``, the rest)."""
    p, n1 = lay.p, lay.n1
    xv = np.bincount(lay._txz.ravel(), (mxz * w[:, None]).ravel(), minlength=lay._nxz)
    return xv[:p * n1].reshape(p, n1), xv[p * n1:].reshape(lay.qr, p)


class FixedLast:
    """``[A X]' W [A X] + diag(I, 0)`` from a factor of ``M`` (``A = Z Lambda``): ``X`` eliminated last.

    The pair strategy factors ``M`` alone; the fixed effects join as their
    Schur complement ``Sx = X'WX - (A'WX)' M^{-1} A'WX`` (``p x p``, ``p``
    solves with ``M``), which is the joint factor's last block, so the
    solves are those of the joint system.  ``logdet`` and :meth:`selected`
    are ``M``'s (the random-effects part), as the blocked factor's with ``X``.
    """

    def __init__(self, base: PairFactor, awx: np.ndarray, xwx: np.ndarray):
        self.base, self.awx = base, awx
        self.logdet = base.logdet
        self.B = base.solve(awx)                                          # M^{-1} A'WX
        Lx, info = lapack.dpotrf(xwx - awx.T @ self.B, lower=1, clean=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"the weighted system is not positive definite (info {info})")
        self.Lx: np.ndarray = Lx

    def solve(self, r: np.ndarray) -> np.ndarray:
        """The joint system's solve (``r``: the random effects' rows, then ``X``'s)."""
        q = self.B.shape[0]
        yu = self.base.solve(r[:q])
        xx = lapack.dpotrs(self.Lx, r[q:] - self.awx.T @ yu, lower=1)[0]
        return np.concatenate([yu - self.B @ xx, xx])

    def selected(self, zl: np.ndarray) -> np.ndarray:
        """``M``'s selected inverse (:meth:`~.pairs.PairFactor.selected`)."""
        return self.base.selected(zl)


#: a factor of ``M``: the blocked one or, where the layout's rule chose it, the pair strategy's
#: (with ``X``: its :class:`FixedLast`) or the native one
Factor = BlockedFactor | PairFactor | FixedLast | NativeFactor


def native_rule(lay: BlockedLayout[Any], can: bool, use: bool | None) -> bool:
    """Whether the layout takes the native strategy (:mod:`.native`), before pairs.

    Never without the blocks' designs (``can``: also ``False`` where pairs
    are forced) or a rest; ``use=True``: everywhere else; by default
    (``use=None``) where block 1 is scalar and the dense Schur complement's
    work ``n1 qr^2`` exceeds :data:`NATIVE_MIN_WORK` (measured on crowd
    designs: faster than the blocked factor from there, and than pairs where
    they would have been taken; docs/engine.md).
    """
    if use is False or not can or lay.qr == 0:
        return False
    if use:
        return True
    return lay.q1 == 1 and lay.n1 * float(lay.qr) ** 2 > NATIVE_MIN_WORK


def factor(lay: BlockedLayout[F], tp: ThetaProducts, w: np.ndarray,
           X: np.ndarray | None = None, mxz: np.ndarray | None = None) -> F:
    """Factor ``Lambda'Z'WZ Lambda + I`` for weights ``w`` (with ``X``: ``X`` and its multipliers
    :meth:`BlockedLayout.x_products` ``mxz``, the fixed effects eliminated last).

    The strategy is the layout's (:attr:`BlockedLayout.pairs`: through pairs
    of observations, :class:`~.pairs.PairFactor`; :attr:`BlockedLayout.native`
    with ``tp`` carrying ``theta``: the Gaussian fitter's,
    :class:`~.native.NativeFactor`, ``mxz`` unused; else :class:`BlockedFactor`).

    ``numpy.linalg.LinAlgError`` when the system is not positive definite.

    Examples
    --------
    Two crossed intercepts (3 and 2 levels), ``Z Lambda`` = 0.5 and 2 per slot:

    >>> import numpy as np
    >>> lay = BlockedLayout([np.array([0, 1, 2, 0]), np.array([0, 0, 1, 1])], [1, 1], [3, 2])
    >>> zl = np.tile([0.5, 2.0], (4, 1))
    >>> fac = factor(lay, lay.products(zl), np.ones(4))
    >>> A = np.zeros((4, 5)); A[np.arange(4), lay.slots[:, 0]] = 0.5
    >>> A[np.arange(4), lay.slots[:, 1]] = 2.0
    >>> bool(np.isclose(fac.logdet, np.linalg.slogdet(A.T @ A + np.eye(5))[1]))
    True
    """
    if tp.theta is not None and lay.native is not None:
        return cast(F, lay.native.factor(tp.theta, w, X is not None))
    if tp.pairs is not None:
        pf = PairFactor(lay, tp, w)
        if X is None:
            return cast(F, pf)
        assert mxz is not None
        Cx, Rx = _x_cross(lay, mxz, w)
        return cast(F, FixedLast(pf, np.concatenate([Cx.T, Rx]), X.T @ (X * w[:, None])))
    vals = np.bincount(lay._tzz.ravel(), (tp.mzz * w[:, None]).ravel(), minlength=lay._nzz)
    n1, qr = lay.n1, lay.qr
    R = vals[lay._nzz - qr * qr:].reshape(qr, qr)
    L1, CtT, ld1 = _block1(lay, tp, w, vals)
    if X is not None:
        assert mxz is not None
        Cx, Rx = _x_cross(lay, mxz, w)
        p = lay.p
        if lay.q1 == 1:
            CtxT = Cx / L1[:, 0, 0][None, :]
        else:
            CtxT = np.linalg.solve(L1, Cx.reshape(p, lay.m1, lay.q1).transpose(1, 2, 0)
                                   ).reshape(n1, p).T
        CtT = sp.vstack([CtT, sp.csr_matrix(CtxT)], format="csr") if lay.sparse_c else \
            np.concatenate([CtT, CtxT], axis=0)
        Xw = X * w[:, None]
        S = np.block([[R, Rx], [Rx.T, X.T @ Xw]])
    else:
        S = R
    if S.shape[0] == 0:
        return cast(F, BlockedFactor(lay, L1, CtT, None, ld1))
    CC = CtT @ CtT.T
    S = S - (CC.toarray() if lay.sparse_c else CC)
    S[np.diag_indices(qr)] += 1.0
    L2, info = lapack.dpotrf(S, lower=1, clean=1, overwrite_a=1)   # no wrapper: small, often
    if info != 0:
        raise np.linalg.LinAlgError(f"the weighted system is not positive definite (info {info})")
    ld2 = 2.0 * float(np.sum(np.log(np.diag(L2)[:qr])))
    return cast(F, BlockedFactor(lay, L1, CtT, L2, ld1 + ld2))
