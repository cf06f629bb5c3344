"""Rating files: read and validate, describe the design, fit the paper's model.

``read_ratings`` -> :class:`Ratings` (with a :class:`DesignReport`);
``fit_ratings`` -> :class:`RatingsFit` (Tables 13-15 of Card et al. 2020,
identifiable summaries, and simulation parameters for power analysis).
"""

from __future__ import annotations

from .fit import RatingsFit, fit_ratings
from .io import Ratings, RatingsWarning, read_ratings
from .report import DesignReport, design_report

__all__ = [
    "DesignReport",
    "Ratings",
    "RatingsFit",
    "RatingsWarning",
    "design_report",
    "fit_ratings",
    "read_ratings",
]
