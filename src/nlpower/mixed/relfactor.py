"""``theta`` -> ``Lambda``: the relative covariance factors of the random-effects terms.

A term with ``q`` columns has ``q (q + 1) / 2`` elements of ``theta``: its
relative covariance factor ``Lambda`` (lower triangular; the covariance is
``sigma^2 Lambda Lambda'``) filled column by column, as lme4's
``mkReTrms``.  Diagonal elements are SDs relative to ``sigma`` (bounded
below by 0); the others are free.  The terms of one grouping factor form a
block-diagonal ``Lambda`` (:func:`block_index`).  lmer, glmer and clmm fill
their factors here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["block_index", "factor_theta", "fill_factor", "lower_pairs", "relative_factor",
           "theta_lower"]


def lower_pairs(q: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of the lower triangle of a ``q x q`` factor in ``theta``'s order.

    Examples
    --------
    >>> [r.tolist() for r in lower_pairs(3)]
    [[0, 1, 2, 1, 2, 2], [0, 0, 0, 1, 1, 2]]
    """
    cols, rows = np.triu_indices(q)
    return rows, cols


def theta_lower(q: int) -> np.ndarray:
    """Lower bounds of a ``q``-column term's ``theta``: 0 on the diagonal, ``-inf`` elsewhere.

    Examples
    --------
    >>> theta_lower(2).tolist()
    [0.0, -inf, 0.0]
    """
    rows, cols = lower_pairs(q)
    return np.where(rows == cols, 0.0, -np.inf)


def relative_factor(theta: np.ndarray, q: int) -> np.ndarray:
    """A term's relative covariance factor ``Lambda`` from the start of ``theta``.

    Examples
    --------
    >>> relative_factor(np.array([1.0, 0.5, 2.0]), 2)
    array([[1. , 0. ],
           [0.5, 2. ]])
    """
    lam = np.zeros((q, q))
    rows, cols = lower_pairs(q)
    lam[rows, cols] = theta[:cols.size]
    return lam


def factor_theta(lam: np.ndarray) -> np.ndarray:
    """A term's ``theta`` from its lower-triangular factor (the inverse of :func:`relative_factor`).

    Examples
    --------
    >>> factor_theta(np.array([[1.0, 0.0], [0.5, 2.0]])).tolist()
    [1.0, 0.5, 2.0]
    """
    rows, cols = lower_pairs(lam.shape[0])
    return np.asarray(lam[rows, cols])


def block_index(qs: Sequence[int], offsets: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Where ``theta`` goes in a block-diagonal ``Lambda`` of several terms.

    ``qs``: the terms' columns (consecutive in the block); ``offsets``: where
    each term's slice of ``theta`` starts.  Returns ``(flat, theta_idx)``:
    ``Lambda.flat[flat] = theta[theta_idx]`` (:func:`fill_factor`).

    Examples
    --------
    >>> [a.tolist() for a in block_index([1, 2], [3, 0])]
    [[0, 4, 7, 8], [3, 0, 1, 2]]
    """
    q = int(sum(qs))
    flat, idx = [], []
    col = 0
    for qt, off in zip(qs, offsets, strict=True):
        rows, cols = lower_pairs(qt)
        flat.append((col + rows) * q + (col + cols))
        idx.append(off + np.arange(rows.size))
        col += qt
    return (np.concatenate(flat).astype(np.intp), np.concatenate(idx).astype(np.intp))


def fill_factor(theta: np.ndarray, flat: np.ndarray, theta_idx: np.ndarray, q: int) -> np.ndarray:
    """A block's ``Lambda`` (``q x q``) from ``theta`` and its :func:`block_index`.

    Examples
    --------
    >>> flat, idx = block_index([1, 2], [0, 1])
    >>> fill_factor(np.array([2.0, 1.0, 0.5, 3.0]), flat, idx, 3).tolist()
    [[2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.5, 3.0]]
    """
    out = np.zeros((q, q))
    out.flat[flat] = theta[theta_idx]
    return out
