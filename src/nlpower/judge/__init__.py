"""An LLM judge beside human raters: prediction-powered estimates and power.

:func:`ppi_mean` is prediction-powered inference for i.i.d. labels (PPI /
PPI++, equal to ``ppi-python``).  :func:`fit` estimates system differences
from crossed human ratings (workers x items) on a subset of items and judge
scores on all items, with the rectifier fitted as a crossed mixed model.
"""

from __future__ import annotations

from .iid import MeanEstimate, ppi_mean, tuned_lambda

__all__ = ["MeanEstimate", "ppi_mean", "tuned_lambda"]
