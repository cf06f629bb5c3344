"""Cumulative link (mixed) models for ordinal ratings: :func:`clmm`.

``P(Y <= j) = F(theta_j - eta)`` (``ordinal``'s parameterisation) with
lme4-style random terms, the Laplace approximation (conditional modes by
Newton steps over a blockwise sparse Cholesky) and adaptive Gauss-Hermite
quadrature for one scalar term.  See ``docs/ordinal.md``.
"""

from __future__ import annotations

from .api import clmm, prepare_clmm, prepare_spec
from .model import ClmmCore, ClmmModel
from .response import OrdinalResponse, ordinal_response
from .result import ClmmFit
from .thresholds import Thresholds, make_thresholds

__all__ = ["ClmmCore", "ClmmFit", "ClmmModel", "OrdinalResponse", "Thresholds", "clmm",
           "make_thresholds", "ordinal_response", "prepare_clmm", "prepare_spec"]
