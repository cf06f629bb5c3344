"""From a fitted pilot (Gaussian, ordinal or binary) to power, plans and assurance (``docs/pilot.md``).

:func:`as_params` is the one hand-off every planning entry point uses: it
takes parameters or a fitted pilot (:class:`~nlpower.ratings.RatingsFit`, or
the :class:`~nlpower.lmm.LmmFit` of the paper's model) plus the user's
effect, and returns simulation parameters.  :func:`assurance` and
:func:`plan_with_assurance` account for the pilot's uncertainty about its
variance components.
"""

from __future__ import annotations

from ..convert import PilotLike, as_params, is_pilot_fit
from .assurance import AssuranceResult, PilotPlanResult, assurance, plan_with_assurance
from .judgements import fit_judgements

__all__ = ["AssuranceResult", "PilotLike", "PilotPlanResult", "as_params", "assurance",
           "fit_judgements", "is_pilot_fit", "plan_with_assurance"]
