"""Threshold structures of cumulative link models (``ordinal``'s ``makeThresholds``).

The ``K - 1`` thresholds of a ``K``-category response are a linear map of
the free threshold parameters ``alpha``: ``theta = J @ alpha``.

- ``"flexible"``: ``J = I``, one free threshold per cut (names ``"1|2"``).
- ``"equidistant"``: ``theta_j = alpha_1 + (j - 1) alpha_2``
  (names ``"threshold.1"``, ``"spacing"``); needs ``K >= 3``.
- ``"symmetric"``: thresholds symmetric around a centre (one centre for an
  odd number of cuts, the pair ``central.1``/``central.2`` for an even
  number) plus spacings; needs ``K >= 3``.  The same Jacobian as
  ``ordinal`` 2022.11-16, so parameters compare one to one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["Thresholds", "make_thresholds"]


@dataclass(frozen=True, eq=False)
class Thresholds:
    """The threshold structure: ``theta = jacobian @ alpha``.

    Examples
    --------
    >>> t = make_thresholds(("1", "2", "3", "4"), "equidistant")
    >>> t.names, t.jacobian @ np.array([-1.0, 1.0])
    (('threshold.1', 'spacing'), array([-1.,  0.,  1.]))
    """

    kind: str
    jacobian: np.ndarray            # (K-1, n_alpha)
    names: tuple[str, ...]          # names of alpha
    cut_names: tuple[str, ...]      # names of theta ("1|2", ...)

    @property
    def n_alpha(self) -> int:
        return self.jacobian.shape[1]

    def theta(self, alpha: np.ndarray) -> np.ndarray:
        """The ``K - 1`` thresholds of parameters ``alpha``."""
        return np.asarray(self.jacobian @ alpha, dtype=float)

    def alpha_from_theta(self, theta: np.ndarray) -> np.ndarray:
        """Least-squares ``alpha`` for thresholds ``theta`` (start values)."""
        return np.asarray(np.linalg.lstsq(self.jacobian, theta, rcond=None)[0], dtype=float)


def make_thresholds(levels: tuple[str, ...], kind: str) -> Thresholds:
    """The :class:`Thresholds` of ``kind`` for the response categories ``levels``.

    Raises
    ------
    InputError
        Equidistant or symmetric thresholds with fewer than 3 categories.
    """
    k = len(levels) - 1
    cuts = tuple(f"{a}|{b}" for a, b in zip(levels[:-1], levels[1:], strict=True))
    if kind == "flexible":
        return Thresholds(kind, np.eye(k), cuts, cuts)
    if k < 2:
        raise InputError(
            f"threshold={kind!r} needs a response with at least 3 categories; the response has "
            f"{len(levels)} ({', '.join(map(repr, levels))}). Use threshold='flexible'.")
    if kind == "equidistant":
        J = np.column_stack([np.ones(k), np.arange(k, dtype=float)])
        return Thresholds(kind, J, ("threshold.1", "spacing"), cuts)
    # symmetric
    if k % 2:
        m = (k + 1) // 2
        J = np.zeros((k, m))
        J[:, 0] = 1.0
        for s in range(1, m):            # spacing s: -1 on cut m-1-s, +1 on cut m-1+s
            J[m - 1 - s, s] = -1.0
            J[m - 1 + s, s] = 1.0
        names = ("central", *(f"spacing.{s}" for s in range(1, m)))
    else:
        h = k // 2
        m = h + 1
        J = np.zeros((k, m))
        J[:h, 0] = 1.0
        J[h:, 1] = 1.0
        for s in range(1, h):            # spacing s: -1 on cut h-1-s, +1 on cut h+s
            J[h - 1 - s, s + 1] = -1.0
            J[h + s, s + 1] = 1.0
        names = ("central.1", "central.2", *(f"spacing.{s}" for s in range(1, m - 1)))
    return Thresholds(kind, J, names, cuts)
