"""Rating files: read and validate, describe the design, fit the paper's model.

``read_ratings`` -> :class:`Ratings` (with a :class:`DesignReport`);
``fit_ratings`` -> :class:`RatingsFit` (Tables 13-15 of Card et al. 2020,
identifiable summaries, and simulation parameters for power analysis).

Modules: ``io`` (read and validate), ``report`` (the design report),
``model`` (which model is fitted, level order, baseline), ``fit`` (the fit
through an engine), ``result`` (``RatingsFit``: tables, identified
quantities, simulation parameters).
"""

from __future__ import annotations

from .fit import fit_ratings
from .io import Ratings, RatingsWarning, read_ratings
from .model import FORMULA, choose_model
from .report import DesignReport, design_report
from .result import IdentifiableEstimates, RatingsFit, RatingsFitWarning

__all__ = [
    "FORMULA",
    "DesignReport",
    "IdentifiableEstimates",
    "Ratings",
    "RatingsFit",
    "RatingsFitWarning",
    "RatingsWarning",
    "choose_model",
    "design_report",
    "fit_ratings",
    "read_ratings",
]
