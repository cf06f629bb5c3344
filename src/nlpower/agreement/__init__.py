"""Agreement between raters and agreement as a planning input.

:func:`krippendorff_alpha` from a rating file; :func:`icc` (McGraw & Wong
forms) from a fitted crossed model; :func:`elicit` turns a target agreement
into the variance components of a power study (:func:`elicitation` keeps the
assumed split beside them).
"""

from __future__ import annotations

from .elicit import (
    AgreementSplit,
    Elicitation,
    default_split,
    designs_needed,
    elicit,
    elicitation,
    implied_agreement,
    items_needed,
)
from .icc import ICCResult, icc, icc_forms
from .krippendorff import AlphaResult, krippendorff_alpha

__all__ = ["AgreementSplit", "AlphaResult", "Elicitation", "ICCResult", "default_split",
           "designs_needed", "elicit", "elicitation", "icc", "icc_forms", "implied_agreement",
           "items_needed", "krippendorff_alpha"]
