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

import functools
from collections.abc import Sequence

import numpy as np

__all__ = ["block_index", "factor_theta", "fill_factor", "lower_pairs", "relative_factor",
           "theta_lower", "theta_pairs"]


@functools.lru_cache(maxsize=64)
def lower_pairs(q: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of the lower triangle of a ``q x q`` factor in ``theta``'s order.

    Read-only arrays, computed once per ``q`` (``np.triu_indices`` costs tens of
    microseconds, more than a small fit's per-term set-up).

    Examples
    --------
    >>> [r.tolist() for r in lower_pairs(3)]
    [[0, 1, 2, 1, 2, 2], [0, 0, 0, 1, 1, 2]]
    """
    r, c = np.triu_indices(q)
    rows, cols = c.astype(np.intp), r.astype(np.intp)
    rows.flags.writeable = False
    cols.flags.writeable = False
    return rows, cols


def theta_lower(q: int) -> np.ndarray:
    """Lower bounds of a ``q``-column term's ``theta``: 0 on the diagonal, ``-inf`` elsewhere.

    A new array (the caller may write to it).

    Examples
    --------
    >>> theta_lower(2).tolist()
    [0.0, -inf, 0.0]
    """
    return np.array([0.0 if i == j else -np.inf for i, j in theta_pairs(q)])


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
    flat: list[int] = []
    idx: list[int] = []
    col = 0
    for qt, off in zip(qs, offsets, strict=True):
        for i, j in theta_pairs(qt):
            flat.append((col + i) * q + (col + j))
            idx.append(off)
            off += 1
        col += qt
    return np.array(flat, dtype=np.intp), np.array(idx, dtype=np.intp)


@functools.lru_cache(maxsize=64)
def theta_pairs(q: int) -> tuple[tuple[int, int], ...]:
    """:func:`lower_pairs` as Python ``(row, column)`` pairs (for loops over a few elements).

    Examples
    --------
    >>> theta_pairs(2)
    ((0, 0), (1, 0), (1, 1))
    """
    return tuple((j + d, j) for j in range(q) for d in range(q - j))


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
