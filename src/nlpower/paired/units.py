"""Evaluation units: m adjacent test instances summarised into one score.

NLPStatTest (Zhu et al. 2020, Definition 1 and sec. 3.1.1): a test set is a
set of evaluation units (EUs); with per-instance scores ``(a_k, b_k)`` the
EU value is the mean (or median) of m adjacent instances, optionally after a
seeded shuffle of the instances.  The shuffle moves *pairs*: a_k and b_k
stay together, so the comparison stays paired.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._choices import EUStat, check_choice
from .._rng import RNGLike, root_seed, seed_record
from .._validation import check_int
from ..errors import InputError

__all__ = ["EvaluationUnits", "as_scores", "evaluation_units"]


def as_scores(name: str, values: Any, *, min_size: int = 1) -> np.ndarray:
    """``values`` as a 1-d float array of finite scores (validated)."""
    if isinstance(values, (str, bytes)):
        raise InputError(f"{name} must be a sequence of numeric scores; got the string {values!r}. "
                         "Read a file with nlpower.paired.read_scores first.")
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a sequence of numeric scores; got "
                         f"{type(values).__name__} that cannot be converted to numbers.") from None
    if x.ndim != 1:
        raise InputError(f"{name} must be 1-dimensional (one score per instance); got shape {x.shape}.")
    if x.size < min_size:
        raise InputError(f"{name} needs at least {min_size} scores; got {x.size}.")
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{name} must contain finite scores; got {float(x[i])} at position {i} "
                         f"({int(bad.sum())} non-finite in all). Remove or impute them first.")
    return x


def as_pairs(a: Any, b: Any, *, min_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Two validated score arrays of equal length (paired by position)."""
    x = as_scores("a", a, min_size=min_size)
    y = as_scores("b", b, min_size=min_size)
    if x.size != y.size:
        raise InputError(f"a and b must have one score per instance each, paired by position; got "
                         f"{x.size} scores in a and {y.size} in b.")
    return x, y


@dataclass(frozen=True, eq=False)
class EvaluationUnits:
    """Paired EU scores of systems A and B.

    Attributes
    ----------
    a, b : numpy.ndarray
        EU scores, ``n_units`` each.
    n_instances : int
        Instances read; ``n_dropped`` trailing instances (fewer than
        ``eu_size`` left after the last full unit) are not used.
    eu_size, eu_stat, shuffle, seed
        How the units were formed (``seed`` is ``None`` without a shuffle).
    """

    a: np.ndarray
    b: np.ndarray
    n_instances: int
    eu_size: int
    eu_stat: EUStat
    shuffle: bool
    n_dropped: int
    seed: dict[str, Any] | None

    @property
    def n_units(self) -> int:
        return int(self.a.size)

    @property
    def diff(self) -> np.ndarray:
        """``a - b`` per unit."""
        return self.a - self.b

    def __repr__(self) -> str:
        return (f"EvaluationUnits(n_units={self.n_units}, eu_size={self.eu_size}, "
                f"eu_stat={self.eu_stat!r}, shuffle={self.shuffle}, n_dropped={self.n_dropped})")


def _group(x: np.ndarray, m: int, stat: str) -> np.ndarray:
    k = x.size // m
    blocks = x[: k * m].reshape(k, m)
    return blocks.mean(axis=1) if stat == "mean" else np.median(blocks, axis=1)


def group_units(a: np.ndarray, b: np.ndarray, eu_size: int, eu_stat: str,
                order: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """EU scores of already-validated arrays (``order``: a permutation of the pairs or None)."""
    if order is not None:
        a, b = a[order], b[order]
    return _group(a, eu_size, eu_stat), _group(b, eu_size, eu_stat)


def evaluation_units(a: Any, b: Any, *, eu_size: int = 1, eu_stat: EUStat = "mean",
                     shuffle: bool = False, rng: RNGLike = None) -> EvaluationUnits:
    """Group per-instance paired scores into evaluation units (NLPStatTest sec. 3.1.1).

    Parameters
    ----------
    a, b : array-like
        Per-instance scores of systems A and B, paired by position.
    eu_size : int
        m, the number of adjacent instances per EU (1: each instance is a unit).
        Trailing instances that do not fill a unit are dropped (counted in
        ``n_dropped``).
    eu_stat : {"mean", "median"}
        How an EU's instances are summarised.
    shuffle : bool
        Shuffle the *pairs* with ``rng`` before grouping (the same permutation
        for A and B).
    rng : seed or Generator
        Used only when ``shuffle=True`` (nlpower's rng policy).

    Examples
    --------
    >>> eu = evaluation_units([1, 2, 3, 4, 5, 6, 7], [0, 0, 1, 1, 2, 2, 9], eu_size=3)
    >>> eu.a.tolist(), eu.b.tolist(), eu.n_dropped
    ([2.0, 5.0], [0.3333333333333333, 1.6666666666666667], 1)
    """
    x, y = as_pairs(a, b)
    m = check_int("eu_size", eu_size, min=1)
    check_choice("eu_stat", eu_stat, EUStat)
    if x.size // m < 1:
        raise InputError(f"eu_size={m} is larger than the number of instances ({x.size}); "
                         "use a smaller eu_size=.")
    seed = None
    order = None
    if shuffle:
        seq = root_seed(rng)
        seed = seed_record(seq)
        order = np.random.Generator(np.random.PCG64(seq)).permutation(x.size)
    ua, ub = group_units(x, y, m, eu_stat, order)
    return EvaluationUnits(a=ua, b=ub, n_instances=int(x.size), eu_size=m, eu_stat=eu_stat,
                           shuffle=bool(shuffle), n_dropped=int(x.size - ua.size * m), seed=seed)
