"""Random-effects structure of a cumulative link mixed model.

Terms of a :class:`~nlpower.lmm.structure.ModelSpec` that share a grouping
factor are amalgamated into one *block* (lme4's amalgamation; ``(x || g)``
becomes one block with a block-diagonal relative factor).  The spherical
random effects ``u`` of block ``b`` are an ``(L_b, q_b)`` array, ``b = u
Lambda_b'``; the linear predictor's random part is ``eta_i = sum_b
(Z_b[i] Lambda_b) . u_b[level_b(i)]``.

``theta`` holds, per term, the lower triangle of its Cholesky factor
column by column (lme4's order); diagonal elements are bounded below by 0.
On the latent scale the random effects are in units of the latent
distribution (logistic: SD ``pi / sqrt(3)``), so ``theta`` *is* the SD.

The negative Hessian of the penalised log-likelihood in ``u``, ``H = A' W A
+ I`` with ``A = Z Lambda``, is factored by the weighted blocked
factorisation every mixed-model family shares
(:mod:`nlpower.mixed.blocked`: the block with the most random effects
block-diagonal, eliminated first; the Schur complement of the others dense),
or, for large crossed designs whose rest compresses, through observation
pairs (:mod:`nlpower.mixed.pairs`); the factorisation's layout holds the
rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..lmm.structure import ReTerm
from ..mixed.blocked import BlockedLayout, Factor, ThetaProducts, factor
from ..mixed.native.blocks import GroupBlock
from ..mixed.pairs import PairPlan
from ..mixed.relfactor import block_index, fill_factor, relative_factor, theta_pairs

__all__ = ["Block", "ReStructure"]


@dataclass(frozen=True, eq=False)
class Block:
    """Terms sharing one grouping factor."""

    group: str
    codes: np.ndarray
    levels: tuple[str, ...]
    Z: np.ndarray                       # (n, q)
    terms: tuple[int, ...]              # indices into the structure's terms
    cols: tuple[slice, ...]             # each term's columns within the block

    @property
    def L(self) -> int:
        return len(self.levels)

    @property
    def q(self) -> int:
        return self.Z.shape[1]


class ReStructure:
    """Blocks, ``theta`` layout and the products with ``A = Z Lambda``.

    The per-``theta`` arrays (``Lambda``, ``A``, the factorisation's
    products, the pair strategy's part) are a one-entry memo keyed by the
    value of ``theta`` (:meth:`at_theta`; every reader sets it first), and
    the layouts one keyed by ``use_pairs``: nothing else is kept between
    fits (``tests/ordinal/test_fit_history.py``).

    ``use_pairs``: factor crossed designs through observation pairs
    (:mod:`nlpower.mixed.pairs`) where the rest compresses and the blockwise
    dense Schur complement would cost more (``None``, the default: the rule
    of :func:`nlpower.mixed.pairs.pair_plan`); ``True`` wherever the rest
    compresses; ``False`` forces the blocked factorisation (the reference
    the tests compare with).
    """

    use_pairs: bool | None = None

    def __init__(self, terms: tuple[ReTerm, ...]):
        self.terms = terms
        groups: dict[str, list[int]] = {}
        for k, t in enumerate(terms):
            groups.setdefault(t.group, []).append(k)
        blocks = []
        for g, idx in groups.items():
            if len(idx) == 1:           # (one term: its Z, copied, as column_stack would)
                Z = np.array(terms[idx[0]].Z, dtype=float, order="C")
            else:
                Z = np.column_stack([terms[k].Z for k in idx]).astype(float)
            cols, start = [], 0
            for k in idx:
                cols.append(slice(start, start + terms[k].q))
                start += terms[k].q
            t0 = terms[idx[0]]
            blocks.append(Block(g, np.asarray(t0.codes, dtype=np.intp), t0.levels, Z,
                                tuple(idx), tuple(cols)))
        # the block with the most random effects first: it is eliminated blockwise
        blocks.sort(key=lambda b: -b.L * b.q)
        self.blocks = tuple(blocks)
        self.n = terms[0].Z.shape[0] if terms else 0
        sizes = [t.q * (t.q + 1) // 2 for t in terms]
        starts = [0]
        for size in sizes:
            starts.append(starts[-1] + size)
        self.theta_slices = tuple(slice(starts[k], starts[k + 1]) for k in range(len(terms)))
        self.n_theta = starts[-1]
        self.lower = np.array([0.0 if i == j else -np.inf for t in terms for i, j in theta_pairs(t.q)])
        # each block's Lambda.flat[flat] = theta[idx], and each theta element's (block, row,
        # column) in its block's Lambda
        self._lam_index = [block_index([terms[k].q for k in blk.terms],
                                       [self.theta_slices[k].start for k in blk.terms])
                           for blk in self.blocks]
        self.theta_index: list[tuple[int, int, int]] = [(0, 0, 0)] * self.n_theta
        for bi, (blk, (flat, tix)) in enumerate(zip(self.blocks, self._lam_index, strict=True)):
            for f, pos in zip(flat.tolist(), tix.tolist(), strict=True):
                self.theta_index[pos] = (bi, f // blk.q, f % blk.q)
        offsets = [0]
        for b in self.blocks:
            offsets.append(offsets[-1] + b.L * b.q)
        self.offsets = np.array(offsets, dtype=np.int64)
        self.n_u = offsets[-1]
        # A = Z Lambda as a CSR matrix: row i holds observation i's own random effects
        # (the pattern is fixed; set_theta only refills the values)
        if not self.blocks:
            self.Acols = np.zeros((self.n, 0), int)
        elif len(self.blocks) == 1 and self.blocks[0].q == 1:     # (1 | g): its codes
            self.Acols = self.blocks[0].codes.astype(np.int64).reshape(-1, 1)
        else:
            self.Acols = np.column_stack(
                [(offsets[bi] + b.codes * b.q)[:, None] + np.arange(b.q)[None, :]
                 for bi, b in enumerate(self.blocks)])
        self._indptr = np.arange(0, self.Acols.size + 1, max(self.Acols.shape[1], 1))
        self._ZL: list[np.ndarray] = [b.Z.copy() for b in self.blocks]
        self._lams: list[np.ndarray] = [np.eye(b.q) for b in self.blocks]
        self._layouts: dict[bool | None, BlockedLayout] = {}
        self.theta: np.ndarray | None = None      # the theta of Lambda (None: unit blocks)
        self._make_A()

    # -- theta -----------------------------------------------------------------------
    def term_factor(self, k: int, theta: np.ndarray) -> np.ndarray:
        """Lower-triangular ``Lambda`` of term ``k``."""
        return relative_factor(theta[self.theta_slices[k]], self.terms[k].q)

    def block_factor(self, b: int, theta: np.ndarray) -> np.ndarray:
        """Block ``b``'s ``Lambda`` (block diagonal over its terms)."""
        return fill_factor(theta, *self._lam_index[b], self.blocks[b].q)

    def set_theta(self, theta: np.ndarray) -> None:
        """Compute ``Z_b Lambda_b`` for every block (and the sparse ``A``)."""
        self.theta = np.array(theta, dtype=float)
        self._lams = [self.block_factor(i, theta) for i in range(len(self.blocks))]
        self._ZL = [b.Z @ lam for b, lam in zip(self.blocks, self._lams, strict=True)]
        self._make_A()

    def at_theta(self, theta: np.ndarray) -> None:
        """:meth:`set_theta` unless ``Lambda`` is already that of ``theta``."""
        if self.theta is None or not np.array_equal(theta, self.theta):
            self.set_theta(theta)

    def _make_A(self) -> None:
        self.Avals = (np.concatenate(self._ZL, axis=1) if self._ZL
                      else np.zeros((self.n, 0)))
        # the sparse A, A' and the cross-product multipliers are built when first read: the
        # one-scalar-term path (:mod:`.scalar`) never reads them, and a tiny fit would spend a
        # tenth of its time on their set-up
        self._A: sp.csr_matrix | None = None
        self._AT: Any = None
        self._products: tuple[BlockedLayout, ThetaProducts] | None = None

    @property
    def A(self) -> sp.csr_matrix:
        """``A = Z Lambda`` as a CSR matrix: row ``i`` holds observation ``i``'s random effects."""
        if self._A is None:
            self._A = sp.csr_matrix((self.Avals.ravel(), self.Acols.ravel(), self._indptr),
                                    shape=(self.n, self.n_u))
        return self._A

    @property
    def AT(self) -> Any:
        """``A'`` (the transpose view of :attr:`A`)."""
        if self._AT is None:
            self._AT = self.A.T
        return self._AT

    @property
    def layout(self) -> BlockedLayout:
        """The placement of the weighted cross-products in ``H`` and the factorisation's strategy.

        Fixed by the design (and :attr:`use_pairs`): memoised per value of ``use_pairs``.
        """
        memo = self._layouts
        lay = memo.get(self.use_pairs)
        if lay is None:
            lay = memo[self.use_pairs] = BlockedLayout(
                [b.codes for b in self.blocks], [b.q for b in self.blocks],
                [b.L for b in self.blocks], designs=[b.Z for b in self.blocks],
                pairs=self.use_pairs, native=None if self.use_pairs is None else False)
            if lay.use_native:                 # the Gaussian fitter's strategies (the rule)
                lay.attach_native(self._group_blocks(), np.zeros((self.n, 0)))
        return lay

    def _group_blocks(self) -> list[GroupBlock]:
        """The blocks as :class:`~nlpower.mixed.native.blocks.GroupBlock` (``Lambda`` from this
        structure's ``theta``) for the native strategy."""
        out = []
        for blk, (flat, tix) in zip(self.blocks, self._lam_index, strict=True):
            qs = tuple(self.terms[k].q for k in blk.terms)
            out.append(GroupBlock(blk.group, blk.codes, blk.levels, blk.Z,
                                  tuple(f"z{j}" for j in range(blk.q)), blk.terms, qs,
                                  np.asarray(flat), np.asarray(tix), all(q == 1 for q in qs)))
        return out

    @property
    def products(self) -> ThetaProducts:
        """The cross-product multipliers of ``A`` at the current ``theta`` (for :attr:`layout`)."""
        lay = self.layout
        if self._products is None or self._products[0] is not lay:
            self._products = (lay, lay.products(self.Avals, self.theta))
        return self._products[1]

    def start_theta(self, sd: float = 1.0) -> np.ndarray:
        return np.where(self.lower == 0.0, sd, 0.0)

    # -- products --------------------------------------------------------------------
    def split(self, u: np.ndarray) -> list[np.ndarray]:
        return [u[self.offsets[i]:self.offsets[i + 1]].reshape(b.L, b.q)
                for i, b in enumerate(self.blocks)]

    def eta(self, u: np.ndarray) -> np.ndarray:
        """``A u`` (``u`` a vector or an ``(n_u, m)`` matrix)."""
        return np.asarray(self.A @ u)

    def At(self, v: np.ndarray) -> np.ndarray:
        """``A' v`` (``v`` a vector or an ``(n, m)`` matrix)."""
        return np.asarray(self.AT @ v)

    def pair_plan(self) -> PairPlan | None:
        """The pair strategy's plan (:mod:`nlpower.mixed.pairs`), ``None``: the blocked one."""
        return self.layout.pairs if self.blocks else None

    def factor(self, w: np.ndarray) -> Factor:
        """Factor ``H = A' diag(w) A + I`` (:func:`nlpower.mixed.blocked.factor`, its strategy)."""
        return factor(self.layout, self.products, w)
