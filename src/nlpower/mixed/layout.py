"""lme4's order of the random-effects terms and of ``theta`` (``mkReTrms``).

Shared by every family and engine: the native fitters, the R adapters,
parameter setting (:mod:`nlpower.lmm.setparams`) and simulation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InputError
from .relfactor import theta_pairs

if TYPE_CHECKING:
    from ..lmm.structure import ReTerm

__all__ = ["ThetaLayout", "lme4_term_order", "make_unique", "theta_layout"]


@dataclass(frozen=True, eq=False)
class ThetaLayout:
    """lme4's ordering of the random-effects terms and of ``theta``.

    lme4 (``mkReTrms``) sorts the terms by number of levels, decreasing,
    with ``rev(order(nl))`` -- only when they are not already in
    non-increasing order, and reversing ties when it does sort.  Within a
    term, ``theta`` holds the lower triangle of the relative covariance
    factor column by column.
    """

    terms: tuple[ReTerm, ...]          # in lme4 order
    term_offsets: tuple[int, ...]      # start of each term's slice of theta
    names: tuple[str, ...]             # lme4's names(getME(m, "theta"))
    lower: np.ndarray                  # 0 on diagonal elements, -inf elsewhere
    start: np.ndarray                  # 1 on the diagonal, 0 elsewhere
    diag: np.ndarray                   # bool: which theta elements are diagonal
    grp_names: tuple[str, ...]         # VarCorr's make.unique group names, per term

    @property
    def size(self) -> int:
        return int(self.lower.size)

    def check_start(self, start: Any) -> np.ndarray:
        """A user's starting ``theta`` (lme4's order) validated and moved onto the bounds."""
        try:
            s = np.asarray(start, dtype=float).ravel()
        except (TypeError, ValueError):  # e.g. ['a']: shown by the message below
            s = np.full(0, np.nan)
        if s.shape != (self.size,) or not np.all(np.isfinite(s)):
            raise InputError(
                f"start must be {self.size} finite theta values in lme4's order "
                f"({', '.join(self.names)}); got {start!r}."
            )
        return np.maximum(s, self.lower)


def lme4_term_order(nl: list[int]) -> list[int]:
    """Indices of the terms in lme4's order (``rev(order(nl))`` if needed)."""
    if any(b > a for a, b in zip(nl, nl[1:], strict=False)):
        asc = sorted(range(len(nl)), key=lambda i: nl[i])   # stable, like R's order()
        return asc[::-1]
    return list(range(len(nl)))


def make_unique(names: list[str]) -> list[str]:
    """R's ``make.unique``: ``g, g, g`` -> ``g, g.1, g.2``."""
    seen: dict[str, int] = {}
    used = set(names)
    out = []
    for name in names:
        if name not in seen:
            seen[name] = 0
            out.append(name)
            continue
        k = seen[name]
        while True:
            k += 1
            cand = f"{name}.{k}"
            if cand not in used:
                break
        seen[name] = k
        used.add(cand)
        out.append(cand)
    return out


def theta_layout(re_terms: tuple[ReTerm, ...]) -> ThetaLayout:
    """lme4's term order and the bounds / start / names of ``theta``."""
    order = lme4_term_order([t.n_levels for t in re_terms])
    terms = tuple(re_terms[i] for i in order)
    offsets, names, lower, start, diag = [], [], [], [], []
    off = 0
    for t in terms:
        offsets.append(off)
        for i, j in theta_pairs(t.q):
            names.append(f"{t.group}.{t.cnames[i]}" if i == j
                         else f"{t.group}.{t.cnames[i]}.{t.cnames[j]}")
            lower.append(0.0 if i == j else -np.inf)
            start.append(1.0 if i == j else 0.0)
            diag.append(i == j)
            off += 1
    return ThetaLayout(
        terms=terms,
        term_offsets=tuple(offsets),
        names=tuple(names),
        lower=np.array(lower),
        start=np.array(start),
        diag=np.array(diag, dtype=bool),
        grp_names=tuple(make_unique([t.group for t in terms])),
    )
