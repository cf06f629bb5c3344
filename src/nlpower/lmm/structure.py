"""Model structure: the design matrices of a linear mixed model, without the fit.

This is the contract between the formula layer (which builds it from a
formula and a data frame) and the engines (which fit it).  Structure is
separate from the response: a power replicate swaps ``y`` and refits, nothing
about the design is rebuilt.

lme4 semantics: every random-effects term ``(expr | g)`` has an unstructured
covariance over its columns; ``(expr || g)`` is expanded by the formula layer
into one term per column of ``expr`` (one term per *term* of ``expr`` for a
factor, which keeps an unstructured covariance over the factor's indicator
columns -- lme4's behaviour), so the engines only ever see unstructured terms.
Engines may amalgamate terms that share a grouping factor into one block with
a block-diagonal relative covariance factor.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class ReTerm:
    """One random-effects term ``(cnames | group)``.

    Attributes
    ----------
    group : str
        Grouping factor name as written in the formula (``"worker"``,
        ``"worker:item"`` for an interaction).
    codes : ndarray of int, shape (n,)
        Level index (0 .. n_levels-1) of each observation.
    levels : tuple of str
        Level labels, in code order.
    Z : ndarray of float, shape (n, q)
        Per-observation model matrix of the term's columns (the "raw" Z
        before expansion by levels).  For ``(1|g)`` a column of ones.
    cnames : tuple of str
        Column names in lme4 style: ``"(Intercept)"``, ``"x"``, ``"systemB"``.
    """

    group: str
    codes: np.ndarray
    levels: tuple[str, ...]
    Z: np.ndarray
    cnames: tuple[str, ...]

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def q(self) -> int:
        return self.Z.shape[1]


@dataclass(frozen=True, eq=False)
class ModelSpec:
    """Everything an engine needs to fit ``y`` given the design.

    Attributes
    ----------
    formula : str
        The formula as given by the user.
    response : str
        Name of the response column.
    y : ndarray, shape (n,)
        Response of the data the structure was built from.
    X : ndarray, shape (n, p)
        Fixed-effects model matrix (full column rank; rank-deficient columns
        are dropped by the formula layer and listed in ``dropped``).
    fixef_names : tuple of str
        Column names of ``X`` in lme4 style (``"(Intercept)"``, ``"systemB"``),
        a sum-coded factor's by level (``"system[A]"``; :mod:`nlpower.lmm.names`).
    re_terms : tuple of ReTerm
        Random-effects terms in formula order, after ``||`` expansion.
    contrasts : dict
        Contrast used for each factor in the fixed part (``"sum"``,
        ``"treatment"``, ``"half"``) -- printed with every result.
    data_columns : tuple of str
        The data-frame columns the formula uses (for rebuilding and messages).
    dropped : tuple of str
        Fixed-effect columns dropped because ``X`` was rank deficient.
    n_dropped : int
        Rows of the data dropped because a used column had a missing value.
    aliases : dict
        lme4's name of each sum-coded column part (``"system1"``) -> its name
        here (``"system[A]"``), accepted wherever a user names a coefficient
        (:func:`nlpower.lmm.names.canonical`).
    """

    formula: str
    response: str
    y: np.ndarray
    X: np.ndarray
    fixef_names: tuple[str, ...]
    re_terms: tuple[ReTerm, ...]
    contrasts: dict[str, str] = field(default_factory=dict)
    data_columns: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    n_dropped: int = 0
    aliases: dict[str, str] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def p(self) -> int:
        return self.X.shape[1]

    def with_response(self, y: np.ndarray) -> ModelSpec:
        """The same structure with another response (no matrices rebuilt)."""
        y = np.asarray(y, dtype=float)
        if y.shape != self.y.shape:
            raise ValueError(f"y must have shape {self.y.shape}; got {y.shape}")
        return dataclasses.replace(self, y=y)
